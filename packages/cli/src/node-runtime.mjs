// @ts-check
// `--runtime node`: builds the Node runtime (packages/cli/node) into one file with Vite (the same resolution of the
// workspace packages and of the WGSL `?raw` imports as the browser gets), then runs it with this Node: the kernels,
// the Runner and the engine run on Dawn (the webgpu package's dawn.node) instead of headless Chromium.
// `intab bundle-node --out DIR` writes the same file with dawn.node and this node binary beside it, for a machine
// with a GPU and neither a browser nor a registry.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../../../scripts/ensure-install.mjs';

const ENTRY = join(ROOT, 'packages/cli/node/bin.ts');
/** Where `--runtime node` keeps its build (dist/ is ignored by git). */
const BUILD_DIR = join(ROOT, 'packages/cli/dist/node');
export const BUNDLE_NAME = 'intab-node.mjs';
/** Lists the build's source files, to rebuild only when one of them (or the lockfile) changed. */
const MANIFEST = 'intab-node.sources.json';

/**
 * Builds the Node runtime into `outDir`/intab-node.mjs (one ES module; node: builtins and the webgpu package stay
 * imports, every workspace and npm module is inside). With `cache`, reuses the last build while no source file
 * changed (a list of them is kept beside the bundle).
 * @param {string} [outDir]
 * @param {{ cache?: boolean }} [o]
 * @returns {Promise<string>} the bundle's path
 */
export async function buildNodeBundle(outDir = BUILD_DIR, o = { cache: true }) {
  const bundle = join(outDir, BUNDLE_NAME);
  if (o.cache && upToDate(outDir)) return bundle;
  // Built beside, then renamed into place: a concurrent run never reads a half-written bundle.
  mkdirSync(outDir, { recursive: true });
  const tmp = mkdtempSync(join(outDir, '.build-'));
  try {
    await buildInto(tmp);
    renameSync(join(tmp, BUNDLE_NAME), bundle);
    if (o.cache) renameSync(join(tmp, MANIFEST), join(outDir, MANIFEST));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return bundle;
}

/**
 * One Vite build of the Node runtime into `outDir`, with the list of its source files (MANIFEST).
 * @param {string} outDir
 */
async function buildInto(outDir) {
  const { build } = await import('vite');
  const started = Date.now(); // a source saved during the build is newer than the build
  const result = await build({
    configFile: false,
    root: ROOT,
    logLevel: 'warn',
    ssr: { noExternal: true, target: 'node' },
    build: {
      ssr: ENTRY,
      outDir,
      emptyOutDir: false,
      target: 'node20',
      minify: false,
      sourcemap: false,
      copyPublicDir: false,
      rolldownOptions: {
        external: ['webgpu', /^node:/],
        output: { entryFileNames: BUNDLE_NAME, codeSplitting: false },
      },
    },
  });
  const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => ('output' in r ? r.output : []));
  const sources = new Set();
  for (const o of outputs) if (o.type === 'chunk') for (const id of o.moduleIds) if (existsSync(id.split('?')[0])) sources.add(relative(ROOT, id.split('?')[0]));
  writeFileSync(join(outDir, MANIFEST), JSON.stringify({ built: started, sources: [...sources, 'pnpm-lock.yaml', 'packages/cli/src/node-runtime.mjs'] }));
}

/** @param {string} outDir */
function upToDate(outDir) {
  const manifest = join(outDir, MANIFEST);
  if (!existsSync(join(outDir, BUNDLE_NAME)) || !existsSync(manifest)) return false;
  try {
    const { built, sources } = JSON.parse(readFileSync(manifest, 'utf8'));
    return sources.every((/** @type {string} */ s) => existsSync(join(ROOT, s)) && statSync(join(ROOT, s)).mtimeMs < built);
  } catch {
    return false;
  }
}

/**
 * Runs `argv` (an intab command with --runtime node) through the Node runtime in a child process of this Node, so
 * Dawn's instance ends with it; stdout and stderr are the child's.
 * @param {string[]} argv
 * @returns {Promise<number>} the exit code
 */
export async function runNodeRuntime(argv) {
  const bundle = await buildNodeBundle();
  return new Promise((resolveCode, reject) => {
    const child = spawn(process.execPath, [bundle, ...argv], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolveCode(code ?? (signal ? 1 : 0)));
  });
}

/** The webgpu package's dawn.node for this platform. */
export function dawnNodePath() {
  const require = createRequire(join(ROOT, 'packages/cli/package.json'));
  const pkg = dirname(require.resolve('webgpu/package.json'));
  const arch = process.platform === 'darwin' ? 'universal' : process.arch;
  return join(pkg, 'dist', `${process.platform}-${arch}`, 'dawn.node');
}

/**
 * `intab bundle-node --out DIR [--no-node]`: DIR/intab-node.mjs, DIR/dawn.node (this platform's) and DIR/node (this
 * Node binary): what a machine without a browser or a registry needs, besides the model file, to run
 * `DIR/node DIR/intab-node.mjs bench decode --model FILE --dawn-backend vulkan --json`.
 * @param {Record<string, string | boolean>} flags
 */
export async function bundleNode(flags) {
  if (typeof flags.out !== 'string') throw new Error('--out DIR is required: the folder to write intab-node.mjs, dawn.node and node into');
  const out = resolve(flags.out);
  mkdirSync(out, { recursive: true });
  const bundle = await buildNodeBundle(out, { cache: false });
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
