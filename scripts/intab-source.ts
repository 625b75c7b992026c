// How the monorepo reads `intab` from its sources. The published package.json's `exports` name only dist/ (what the
// tarball holds); inside the repository, the tests, examples and CLI pages import 'intab' and 'intab/<entry>' from
// packages/intab/src instead, by one convention: export '.' is src/index.ts, export './<name>' is src/<name>.ts and
// dist/<name>.js. Vite configs take these aliases (vite.config.ts, examples/pwa/vite.config.ts); TypeScript reads the
// same convention from tsconfig.json's `paths`, and scripts/intab-source.test.ts holds both to the exports.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const INTAB = fileURLToPath(new URL('../packages/intab/', import.meta.url));

export interface IntabEntry {
  /** The export's key in package.json: '.', './service-worker', './vite'. */
  subpath: string;
  /** What an app imports: 'intab', 'intab/service-worker'. */
  specifier: string;
  /** Its source file, absolute. */
  source: string;
  /** Its built file, relative to the package ('./dist/index.js'). */
  dist: string;
}

/** Every entry that intab's package.json exports (not './package.json'). */
export function intabEntries(): IntabEntry[] {
  const exports = JSON.parse(readFileSync(join(INTAB, 'package.json'), 'utf8')).exports as Record<string, unknown>;
  return Object.keys(exports)
    .filter((subpath) => subpath !== './package.json')
    .map((subpath) => {
      const name = subpath === '.' ? 'index' : subpath.slice(2);
      return { subpath, specifier: subpath === '.' ? 'intab' : `intab/${name}`, source: join(INTAB, 'src', `${name}.ts`), dist: `./dist/${name}.js` };
    });
}

/**
 * Vite's `resolve.alias` entries that take each of intab's specifiers, exactly, to its source.
 * @example
 * export default defineConfig({ resolve: { alias: intabSourceAliases() } });
 */
export function intabSourceAliases(): { find: RegExp; replacement: string }[] {
  return intabEntries().map((e) => ({ find: new RegExp(`^${e.specifier.replace(/[/.]/g, '\\$&')}$`), replacement: e.source }));
}
