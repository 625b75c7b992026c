// `--runtime node`: runs a command through the Node runtime (packages/cli/node): the kernels, the Runner and the
// engine on Dawn (the webgpu package's dawn.node) instead of headless Chromium. bin/intab.mjs builds it, beside the
// CLI, as one file (intab-node.mjs: every workspace and npm module inside, node: builtins and the webgpu package left
// as imports), with the same resolution of the workspace packages and of the WGSL `?raw` imports as the browser gets.
// `intab bundle-node --out DIR` copies that file out with dawn.node and this node binary beside it, for a machine with
// a GPU and neither a browser nor a registry.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Flags } from './args.ts';
import { ROOT } from './repo.ts';

export const BUNDLE_NAME = 'intab-node.mjs';

/** The Node runtime's file, built beside this module's own bundle by bin/intab.mjs. */
export function builtNodeRuntime(): string {
  const bundle = fileURLToPath(new URL(`./${BUNDLE_NAME}`, import.meta.url));
  if (!existsSync(bundle)) {
    throw new Error(`the Node runtime is built with the CLI: run it through packages/cli/bin/intab.mjs (${bundle} is not there; this copy of the CLI runs from its sources)`);
  }
  return bundle;
}

/**
 * Runs `argv` (an intab command with --runtime node) through the Node runtime in a child process of this Node, so
 * Dawn's instance ends with it; stdout and stderr are the child's. Resolves with the exit code.
 */
export async function runNodeRuntime(argv: string[]): Promise<number> {
  const bundle = builtNodeRuntime();
  return new Promise((resolveCode, reject) => {
    const child = spawn(process.execPath, [bundle, ...argv], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolveCode(code ?? (signal ? 1 : 0)));
  });
}

/** The webgpu package's dawn.node for this platform. */
export function dawnNodePath(): string {
  const require = createRequire(join(ROOT, 'packages/cli/package.json'));
  const pkg = dirname(require.resolve('webgpu/package.json'));
  const arch = process.platform === 'darwin' ? 'universal' : process.arch;
  return join(pkg, 'dist', `${process.platform}-${arch}`, 'dawn.node');
}

/**
 * `intab bundle-node --out DIR [--no-node]`: DIR/intab-node.mjs, DIR/dawn.node (this platform's) and DIR/node (this
 * Node binary): what a machine without a browser or a registry needs, besides the model file, to run
 * `DIR/node DIR/intab-node.mjs bench decode --model FILE --dawn-backend vulkan --json`.
 */
export async function bundleNode(flags: Flags): Promise<number> {
  if (typeof flags.out !== 'string') throw new Error('--out DIR is required: the folder to write intab-node.mjs, dawn.node and node into');
  const out = resolve(flags.out);
  const built = builtNodeRuntime();
  mkdirSync(out, { recursive: true });
  const bundle = join(out, BUNDLE_NAME);
  copyFileSync(built, bundle);
  const dawn = dawnNodePath();
  if (!existsSync(dawn)) throw new Error(`${dawn} is missing: run pnpm install (the webgpu package ships dawn.node)`);
  copyFileSync(dawn, join(out, 'dawn.node'));
  const files = [bundle, join(out, 'dawn.node')];
  if (!flags['no-node']) {
    copyFileSync(process.execPath, join(out, 'node'));
    files.push(join(out, 'node'));
  }
  for (const f of files) console.log(`${f}\t${(statSync(f).size / 2 ** 20).toFixed(1)} MiB`);
  const node = flags['no-node'] ? 'node' : join(out, 'node');
  console.log(`carry ${out} (anywhere) and the model file; there run: ${node} ${join(out, BUNDLE_NAME)} bench decode --model MODEL.gguf --dawn-backend vulkan --json`);
  return 0;
}
