// Serves one of the examples with Vite (the repository root is the Vite root, so the examples import the
// workspace packages from source). Installs dependencies first when needed.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, ensureInstall } from './ensure-install.mjs';

/**
 * @param {string} example folder under examples/
 * @param {string} what one line saying what the page does
 */
export function serveExample(example, what) {
  ensureInstall();
  const port = process.env.PORT ?? '5173';
  console.log(`\n  intab ${what}: http://localhost:${port}/examples/${example}/\n  (needs a WebGPU browser: Chrome/Edge 113+; Ctrl+C to stop)\n`);
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'vite'), ['--port', port, '--strictPort', ...process.argv.slice(2)], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  child.on('exit', (code) => process.exit(code ?? 0));
}
