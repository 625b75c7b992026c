#!/usr/bin/env node
// The offline assistant (examples/pwa): a production build (app, API page, Service Worker, manifest), served by a
// static server on localhost (Service Workers need a secure origin; localhost is one). Usage:
//   node scripts/pwa.mjs [--port P]     (default 4173)
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, ensureInstall } from './ensure-install.mjs';

ensureInstall();
const args = process.argv.slice(2);
const at = args.indexOf('--port');
const port = at >= 0 ? args[at + 1] : (process.env.PORT ?? '4173');
if (!/^\d+$/.test(port ?? '')) {
  console.error('usage: node scripts/pwa.mjs [--port P]');
  process.exit(2);
}
const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
const config = join(ROOT, 'examples', 'pwa', 'vite.config.ts');
const build = spawnSync(process.execPath, [vite, 'build', '--config', config], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
console.log(`\n  intab offline assistant: http://127.0.0.1:${port}/\n  (load a model once online; it then works offline and can be installed. Ctrl+C to stop)\n`);
const server = spawn(process.execPath, [vite, 'preview', '--config', config, '--port', port, '--strictPort', '--host', '127.0.0.1'], { cwd: ROOT, stdio: 'inherit' });
server.on('exit', (code) => process.exit(code ?? 0));
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => server.kill(signal));
