// The CLI's house rules, read from its files: every source is TypeScript that the typecheck tier reads (no .mjs and no
// hand-written .d.mts twin; the bin shim bin/intab.mjs, which builds the rest, is the one JavaScript file), nothing of
// it imports the repository's scripts/ (scripts may import the CLI, not the reverse), and every workspace package it
// imports by name is declared in its package.json.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT } from './repo.ts';

const CLI = join(ROOT, 'packages', 'cli');
const rel = (abs: string) => relative(ROOT, abs).split(sep).join('/');

/** Every file under packages/cli but its installs and builds. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist') return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** Every module specifier of a source: import/export ... from, bare import, dynamic import() with a literal. */
function specifiers(code: string): string[] {
  return [...code.matchAll(/\b(?:from|import)\s*\(?\s*(['"])([^'"\n]+)\1/g)].map((m) => m[2]);
}

const all = files(CLI);
const sources = all.filter((f) => /\.(ts|mts|mjs|js)$/.test(f));

describe('packages/cli', () => {
  test('the scan sees the CLI', () => {
    for (const f of ['packages/cli/src/main.ts', 'packages/cli/node/main.ts', 'packages/cli/page/run.ts', 'packages/cli/bin/intab.mjs']) expect(all.map(rel)).toContain(f);
    const scripts = '../../../scripts'; // not a literal import in this file: the scan below reads it too
    expect(specifiers(`import a from './x.ts';\nexport { b } from "${scripts}/y.mjs";\nawait import('vite');`)).toEqual(['./x.ts', `${scripts}/y.mjs`, 'vite']);
  });

  test('every source is TypeScript: no .mjs, .js, .cjs or .d.mts/.d.ts but the bin shim', () => {
    const javascript = all.map(rel).filter((f) => /\.(mjs|cjs|js|d\.mts|d\.ts)$/.test(f) && f !== 'packages/cli/bin/intab.mjs');
    expect(javascript, 'write these in TypeScript (tsconfig.json includes packages/cli/src, node and page) and delete their .d.mts twins').toEqual([]);
  });

  test('nothing imports the repository scripts/ folder', () => {
    const scripts = join(ROOT, 'scripts') + sep;
    const offenders = sources.flatMap((f) =>
      specifiers(readFileSync(f, 'utf8'))
        .filter((s) => s.startsWith('.') && resolve(dirname(f), s).startsWith(scripts))
        .map((s) => `${rel(f)} imports '${s}'`),
    );
    expect(offenders, 'move what the CLI needs into packages/cli (or the package that owns it); scripts/ may import the CLI, not the reverse').toEqual([]);
  });

  test('every workspace package it imports by name is declared in its package.json', () => {
    const pkg = JSON.parse(readFileSync(join(CLI, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
    const declared = new Set(Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }));
    const workspace = new Set(
      readdirSync(join(ROOT, 'packages'))
        .map((p) => join(ROOT, 'packages', p, 'package.json'))
        .filter(existsSync)
        .map((p) => (JSON.parse(readFileSync(p, 'utf8')) as { name: string }).name),
    );
    const used = new Set(
      sources.flatMap((f) => specifiers(readFileSync(f, 'utf8')).map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]))),
    );
    const undeclared = [...used].filter((name) => workspace.has(name) && !declared.has(name)).sort();
    expect(undeclared, 'add them to packages/cli/package.json (pnpm add NAME@workspace:* in packages/cli)').toEqual([]);
    expect(used.has('intab') && declared.has('intab')).toBe(true);
  });
});
