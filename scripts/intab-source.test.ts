// The monorepo reads intab's sources by the convention its published exports follow (scripts/intab-source.ts): each
// export names only dist/ (what the tarball holds) and has the source file the Vite aliases take, and tsconfig.json's
// paths say the same to TypeScript.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { intabEntries } from './intab-source.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

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
