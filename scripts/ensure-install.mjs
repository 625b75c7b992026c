// Makes the README's one-line commands self-sufficient: installs the workspace's dependencies with the pinned pnpm
// when they are missing or older than the lockfile. pnpm comes the way every child process here gets it (see
// packages/cli/src/pnpm.ts): `npx -y pnpm@<version>`, the version package.json's packageManager pins, so a machine
// with Node and no pnpm runs the same commands. This file runs before the install, so before anything can run
// TypeScript: it states that rule in plain JavaScript.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `npx -y pnpm@<packageManager's version>` and `args`, as a command and its arguments. */
function pnpm(args) {
  const pinned = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).packageManager;
  if (typeof pinned !== 'string' || !pinned.startsWith('pnpm@')) throw new Error(`package.json pins no pnpm ("packageManager": ${JSON.stringify(pinned)})`);
  return ['npx', ['-y', pinned.replace(/\+.*$/, ''), ...args]];
}

export function ensureInstall() {
  const marker = join(ROOT, 'node_modules', '.modules.yaml');
  const lock = join(ROOT, 'pnpm-lock.yaml');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  console.error('[intab] installing dependencies (pnpm install --frozen-lockfile)…');
  const [command, args] = pnpm(['install', '--frozen-lockfile']);
  const r = spawnSync(command, args, {
    cwd: ROOT,
    // pnpm's report goes to stderr: stdout stays the command's own (`node scripts/intab.mjs ... --json` prints JSON only)
    stdio: ['inherit', process.stderr, 'inherit'],
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
  });
  if (r.status !== 0) {
    console.error('[intab] dependency install failed; fix the error above and run the command again.');
    process.exit(r.status ?? 1);
  }
}
