// Where the CLI stands: the repository root, found from this module's own location (packages/cli/src when it runs
// from its sources under Vitest, packages/cli/dist/cli/<hash>/ when it runs as the bundle bin/intab.mjs builds), and
// the test models and schemas beside it (../shared, or INTAB_SHARED). The Node runtime's carried bundle
// (`intab bundle-node`) runs outside any repository and never imports this module.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (dirname(dir) === dir) throw new Error(`the intab CLI runs inside its repository, and ${from} is not in one (no pnpm-workspace.yaml above it)`);
  }
}

/** The repository root (the folder with pnpm-workspace.yaml). */
export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** ../shared beside the repository (test models, JSONSchemaBench), or INTAB_SHARED. */
export const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
