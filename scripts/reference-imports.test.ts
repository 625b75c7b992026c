// The house rule of issue 14: reference/ folders hold the CPU twins of tests and nothing production needs, so a bug
// in a twin can never also be the kernel's. Production code (the library packages and the example apps) imports
// no reference/ module; twins import production, never the reverse. This test reads every import specifier and
// checks (1) each production file's own imports and (2) everything the published `intab` package's entries reach.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { intabEntries } from './intab-source.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CODE = /\.(ts|mts|mjs|js)$/;

/** Production: what ships (the library packages) and what users run (the example apps). */
const PRODUCTION_ROOTS = ['packages/gpu/src', 'packages/model/src', 'packages/engine/src', 'packages/grammar/src', 'packages/intab/src', 'examples/chat/src', 'examples/pwa/src'];

/**
 * Test tooling, which may use the twins, besides *.test.ts, testing.ts, test-*.ts and reference/ itself. Developer
 * tools outside PRODUCTION_ROOTS (the CLI's benchmarks, examples/kernel-lab's kernel checks, scripts/make-fixtures.mjs)
 * are tooling too and are not scanned.
 */
const TOOLING = new Set([
  'packages/engine/src/reference-runner.ts', // the CPU StepRunner of the engine's Node tests
  'packages/gpu/src/worker-check.worker.ts', // the Worker of worker.gpu.test.ts
]);

const rel = (abs: string) => relative(ROOT, abs).split(sep).join('/');
const inReference = (file: string) => /(^|\/)reference\//.test(file);
const isTooling = (file: string) =>
  /\.test\.ts$/.test(file) || /(^|\/)(testing|test-[\w-]+)\.ts$/.test(file) || inReference(file) || TOOLING.has(file);

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return CODE.test(name) && !name.endsWith('.d.ts') && !name.endsWith('.d.mts') ? [path] : [];
  });
}

/** Every module specifier: import/export ... from, bare import, dynamic import() with a literal. */
function specifiers(code: string): string[] {
  const out: string[] = [];
  const re = /\b(?:from|import)\s*\(?\s*(['"])([^'"\n]+)\1/g;
  for (const m of code.matchAll(re)) out.push(m[2]);
  return out;
}

/** @intab/<pkg>[/<sub>] through the package's exports map; relative paths against the importer. Others: null. */
function resolveSpecifier(spec: string, from: string): string | null {
  const clean = spec.replace(/\?.*$/, '');
  if (clean.startsWith('.')) {
    const abs = resolve(dirname(join(ROOT, from)), clean);
    return existsSync(abs) && statSync(abs).isFile() ? rel(abs) : null;
  }
  const m = /^@intab\/([^/]+)(?:\/(.+))?$/.exec(clean);
  if (!m) return null;
  const pkgDir = join(ROOT, 'packages', m[1]);
  const exportsMap = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).exports as Record<string, string>;
  const target = exportsMap[m[2] ? `./${m[2]}` : '.'];
  return target ? rel(join(pkgDir, target)) : null;
}

const reachesReference = (spec: string, from: string) => {
  const target = resolveSpecifier(spec, from);
  return target !== null && inReference(target);
};

describe('reference/ is test-only', () => {
  const production = PRODUCTION_ROOTS.flatMap((r) => walk(join(ROOT, r))).map(rel).filter((f) => !isTooling(f));

  test('the scan sees the production files it is meant to', () => {
    for (const f of ['packages/gpu/src/weights.ts', 'packages/model/src/load.ts', 'packages/engine/src/sequence.ts', 'packages/intab/src/index.ts']) {
      expect(production).toContain(f);
    }
    expect(specifiers(`import a from './x.ts';\nexport { b } from "@intab/gpu/reference";\nimport './y.ts';\nawait import('./z.ts');`)).toEqual([
      './x.ts',
      '@intab/gpu/reference',
      './y.ts',
      './z.ts',
    ]);
    expect(reachesReference('@intab/model/reference', 'packages/model/src/load.ts')).toBe(true);
    expect(reachesReference('./reference/llama.ts', 'packages/model/src/load.ts')).toBe(true);
    expect(reachesReference('./tensor-names.ts', 'packages/model/src/load.ts')).toBe(false);
  });

  test('no production file imports a reference/ module', () => {
    const offenders = production.flatMap((f) =>
      specifiers(readFileSync(join(ROOT, f), 'utf8'))
        .filter((s) => reachesReference(s, f))
        .map((s) => `${f} imports '${s}'`),
    );
    expect(offenders, 'move what production needs out of reference/ and import it from there').toEqual([]);
  });

  test('the published intab package reaches no reference/ module and no test tooling', () => {
    // Each export's sources, as the monorepo resolves them (scripts/intab-source.ts; dist/ is built from them).
    const entries = intabEntries().map((e) => `./${relative(join(ROOT, 'packages/intab'), e.source).split(sep).join('/')}`);
    expect(entries).toEqual(['./src/index.ts', './src/service-worker.ts', './src/vite.ts']);
    const seen = new Set<string>();
    const parent = new Map<string, string>();
    const queue = entries.map((e) => rel(join(ROOT, 'packages/intab', e)));
    for (const f of queue) seen.add(f);
    while (queue.length) {
      const f = queue.shift()!;
      if (!CODE.test(f)) continue;
      for (const s of specifiers(readFileSync(join(ROOT, f), 'utf8'))) {
        const t = resolveSpecifier(s, f);
        if (t === null || seen.has(t)) continue;
        seen.add(t);
        parent.set(t, f);
        queue.push(t);
      }
    }
    const chain = (f: string): string => (parent.has(f) ? `${chain(parent.get(f)!)} -> ${f}` : f);
    const bad = [...seen].filter(isTooling).map(chain);
    expect(bad, 'a test twin or test helper would ship in the library').toEqual([]);
    expect(seen.size).toBeGreaterThan(50); // it did follow the workspace packages
  });
});

describe("the monorepo reads intab's sources by the convention its exports follow", () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'packages/intab/package.json'), 'utf8')) as { exports: Record<string, unknown> };

  test('each export names only dist/ (what the tarball holds), and has the source the aliases take', () => {
    for (const e of intabEntries()) {
      const name = e.dist.slice('./dist/'.length, -'.js'.length);
      expect(pkg.exports[e.subpath], e.subpath).toEqual({ types: `./dist/types/intab/src/${name}.d.ts`, import: e.dist, default: e.dist });
      expect(existsSync(e.source), e.source).toBe(true);
    }
  });

  test("tsconfig.json's paths say the same to TypeScript", () => {
    // tsconfig.json is JSONC: its comments go before parsing.
    const text = readFileSync(join(ROOT, 'tsconfig.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '');
    const paths = (JSON.parse(text) as { compilerOptions: { paths: Record<string, string[]> } }).compilerOptions.paths;
    expect(paths).toMatchObject({ intab: ['./packages/intab/src/index.ts'], 'intab/*': ['./packages/intab/src/*.ts'] });
  });
});
