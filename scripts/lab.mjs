#!/usr/bin/env node
// The project's main job until the chat demo exists: serve the kernel lab, which runs intab's
// correctness checks and benchmarks on this browser's GPU. Installs dependencies first if needed.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, ensureInstall } from './ensure-install.mjs';

ensureInstall();
const port = process.env.PORT ?? '5173';
console.log(`\n  intab kernel lab: http://localhost:${port}/examples/kernel-lab/\n  (needs a WebGPU browser: Chrome/Edge 113+; Ctrl+C to stop)\n`);
const child = spawn(join(ROOT, 'node_modules', '.bin', 'vite'), ['--port', port, '--strictPort', ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: 'inherit',
});
child.on('exit', (code) => process.exit(code ?? 0));
