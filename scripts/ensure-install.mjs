// Makes the README's one-line commands self-sufficient: installs the workspace's dependencies with
// the pinned pnpm when they are missing or older than the lockfile, and checks for a Chromium.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export function ensureInstall() {
  const marker = join(ROOT, 'node_modules', '.modules.yaml');
  const lock = join(ROOT, 'pnpm-lock.yaml');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return;
  console.error('[intab] installing dependencies (pnpm install --frozen-lockfile)…');
  const r = spawnSync('npx', ['-y', 'pnpm@12.4.2', 'install', '--frozen-lockfile'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
  });
  if (r.status !== 0) {
    console.error('[intab] dependency install failed; fix the error above and run the command again.');
    process.exit(r.status ?? 1);
  }
}
