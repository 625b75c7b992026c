// How every child process that needs pnpm gets it: `npx -y pnpm@<version>` (npx ships with Node's npm), the version
// that the tree's package.json pins in `packageManager`, so a machine with no pnpm on its PATH runs the same commands
// as one with it, with the same pnpm. Used by `intab bench decode --compare` (installing the ref's worktree) and the
// packaging e2e spec; scripts/ensure-install.mjs, which installs the workspace before anything can run TypeScript,
// follows the same rule in plain JavaScript.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The command line that runs pnpm with `args` in the tree at `root`.
 * @example
 * const { command, args } = pnpmCommand(ROOT, ['--filter', 'intab', 'pack']);
 * spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
 */
export function pnpmCommand(root: string, args: string[]): { command: string; args: string[] } {
  const file = join(root, 'package.json');
  let pinned: unknown;
  try {
    pinned = (JSON.parse(readFileSync(file, 'utf8')) as { packageManager?: unknown }).packageManager;
  } catch (err) {
    throw new Error(`${file}: cannot read its packageManager field (${(err as Error).message})`);
  }
  if (typeof pinned !== 'string' || !/^pnpm@\d+\.\d+\.\d+/.test(pinned)) {
    throw new Error(`${file} pins no pnpm ("packageManager": ${JSON.stringify(pinned)}); set it to "pnpm@<version>", e.g. "pnpm@12.4.2"`);
  }
  // "pnpm@12.4.2+sha512...." names the same release; npx takes the version alone.
  return { command: 'npx', args: ['-y', pinned.replace(/\+.*$/, ''), ...args] };
}
