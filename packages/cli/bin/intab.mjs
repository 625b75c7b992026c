#!/usr/bin/env node
// @ts-check
// The `intab` command. The CLI is TypeScript (packages/cli/src, node/, page/) and Node 20 runs no TypeScript, so this
// file, the one piece of the CLI that stays JavaScript, builds it with the Vite already in the workspace into plain
// ES modules and runs them:
//   packages/cli/dist/cli/<key>/intab.mjs        the CLI (src/main.ts), and its chunks beside it
//   packages/cli/dist/cli/<key>/intab-node.mjs   the Node runtime (node/bin.ts, `--runtime node`) in one file, which
//                                                `intab bundle-node` copies out as it is
// <key> is the SHA-256 of every file either build read (the module graphs' own lists, kept in dist/cli/sources.json)
// and of what decides how imports resolve (the workspace's package.json files, tsconfig.json, pnpm-lock.yaml, this
// file): a folder is fresh by its name, so a stale build is never run, and a source changed since makes another key,
// hence a build. A build is written to a temporary folder and renamed into place whole, so concurrent runs never read
// a half-written one (two runs building the same key both end with the same folder). The first run, and the first
// after a source changed, pays the build (about 1.5 s on 2 cores, said on stderr); every other run pays the hashing
// (about 0.1 s).
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const ROOT = join(dirname(SELF), '..', '..', '..');
const DIST = join(ROOT, 'packages', 'cli', 'dist', 'cli');
/** The module list of the last build: which files to hash to find a fresh folder. */
const HINT = join(DIST, 'sources.json');
const ENTRY = 'intab.mjs';
const NODE_RUNTIME = 'intab-node.mjs';
/** Older builds kept after a build (the most recently run ones), besides any run within the last hour. */
const KEEP = 4;
const HOUR_MS = 3600_000;

/** Files outside the module graphs that decide how it resolves and builds. */
function resolutionFiles() {
  const packages = readdirSync(join(ROOT, 'packages')).map((p) => `packages/${p}/package.json`);
  return ['package.json', 'tsconfig.json', 'pnpm-lock.yaml', relative(ROOT, SELF), ...packages].map((f) => f.split(sep).join('/'));
}

/**
 * The key of a build from `sources` (paths relative to the root) as they are now. A file under node_modules is taken
 * by its path, which names its package's version (node_modules/.pnpm/<name>@<version>/...), the lockfile standing
 * for its content.
 * @param {string[]} sources
 */
function keyOf(sources) {
  const hash = createHash('sha256');
  for (const file of [...resolutionFiles(), ...[...sources].sort()]) {
    hash.update(`${file}\0`);
    const path = join(ROOT, file);
    if (file.includes('node_modules/')) hash.update(existsSync(path) ? 'present' : 'missing');
    else if (existsSync(path)) hash.update(readFileSync(path));
    else hash.update('\0missing');
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 24);
}

/** The fresh build's folder, when there is one. */
function freshBuild() {
  if (!existsSync(HINT)) return undefined;
  let sources;
  try {
    sources = JSON.parse(readFileSync(HINT, 'utf8')).sources;
  } catch {
    return undefined;
  }
  if (!Array.isArray(sources)) return undefined;
  const dir = join(DIST, keyOf(sources));
  try {
    // Marks it used (pruning spares it); a folder pruned meanwhile is not there any more: a miss.
    const now = new Date();
    utimesSync(join(dir, ENTRY), now, now);
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * Vite's options for one of the two builds: the workspace's TypeScript (`intab` from its sources through tsconfig.json's
 * paths, the WGSL `?raw` imports) as Node ES modules; only what must load from node_modules at run time stays outside.
 * @param {string} entry
 * @param {string} outDir
 * @param {string} name the entry's file name
 * @param {boolean} oneFile the Node runtime is one file (`intab bundle-node` carries it alone)
 * @param {Set<string>} read collects every module the build read
 */
function viteOptions(entry, outDir, name, oneFile, read) {
  return /** @type {import('vite').InlineConfig} */ ({
    configFile: false,
    root: ROOT,
    logLevel: 'warn',
    resolve: { tsconfigPaths: true },
    ssr: { noExternal: true, target: 'node' },
    plugins: [
      {
        name: 'intab-cli-sources',
        buildEnd() {
          for (const id of this.getModuleIds()) {
            const file = id.split('?')[0];
            if (!id.startsWith('\0') && existsSync(file) && statSync(file).isFile()) read.add(relative(ROOT, realpathSync(file)).split(sep).join('/'));
          }
        },
      },
    ],
    build: {
      ssr: entry,
      outDir,
      emptyOutDir: false,
      target: 'node20',
      minify: false,
      sourcemap: false,
      copyPublicDir: false,
      rolldownOptions: {
        // node-llama-cpp (bench compare's llama.cpp/cpu) and @huggingface/transformers (bench embed's transformers.js,
        // which loads onnxruntime-node and sharp natively), dev dependencies, are imported where installed, when asked.
        external: oneFile ? ['webgpu', 'node-llama-cpp', '@huggingface/transformers', /^node:/] : ['webgpu', 'vite', 'playwright', 'ws', 'node-llama-cpp', '@huggingface/transformers', /^node:/],
        output: oneFile ? { entryFileNames: name, codeSplitting: false } : { entryFileNames: name, chunkFileNames: 'intab-[name]-[hash].mjs' },
      },
    },
  });
}

/** Builds the CLI and the Node runtime into a new folder named by their key; resolves with it. */
async function build() {
  const started = Date.now();
  process.stderr.write('[intab] building the CLI from its TypeScript sources (first run, or a source changed)\n');
  mkdirSync(DIST, { recursive: true });
  let viteBuild;
  try {
    ({ build: viteBuild } = await import('vite'));
  } catch (err) {
    throw new Error(`the workspace is not installed (${/** @type {Error} */ (err).message.split('\n')[0]}): run \`node scripts/intab.mjs\`, which installs it first, or \`pnpm install\``);
  }
  for (let attempt = 1; ; attempt++) {
    const begun = Date.now();
    const tmp = mkdtempSync(join(DIST, '.build-'));
    const env = { ...process.env };
    try {
      /** @type {Set<string>} */
      const read = new Set();
      await viteBuild(viteOptions(join(ROOT, 'packages/cli/src/main.ts'), tmp, ENTRY, false, read));
      await viteBuild(viteOptions(join(ROOT, 'packages/cli/node/bin.ts'), tmp, NODE_RUNTIME, true, read));
      const sources = [...read].sort();
      // A source saved while Vite read it may have gone in half old: build again.
      const changed = sources.filter((f) => !f.includes('node_modules/') && existsSync(join(ROOT, f)) && statSync(join(ROOT, f)).mtimeMs >= begun);
      if (changed.length) {
        if (attempt < 3) continue;
        throw new Error(`${changed.join(', ')} kept changing while the CLI was built; run the command again once they are saved`);
      }
      const dir = join(DIST, keyOf(sources));
      chmodSync(tmp, 0o755); // mkdtemp's folder is the owner's only; the build is as readable as the sources
      try {
        renameSync(tmp, dir);
      } catch (err) {
        // Another run built the same key first: its folder is this one.
        if (!existsSync(join(dir, ENTRY))) throw err;
      }
      const hint = join(DIST, `.sources-${process.pid}.json`);
      writeFileSync(hint, JSON.stringify({ sources }));
      renameSync(hint, HINT);
      prune(dir);
      process.stderr.write(`[intab] built ${relative(ROOT, dir)} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
      return dir;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
      // Vite's build sets NODE_ENV=production in this process; the CLI that runs next must see what it was given.
      for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
      Object.assign(process.env, env);
    }
  }
}

/**
 * Keeps the KEEP most recently run builds besides `keep` (every source edit makes a new one), and any run in the last
 * hour (a concurrent run may be about to load it); removes temporary folders a killed build left.
 * @param {string} keep
 */
function prune(keep) {
  const now = Date.now();
  /** @type {{ path: string, used: number }[]} */
  const builds = [];
  for (const name of readdirSync(DIST)) {
    const path = join(DIST, name);
    try {
      if (name.startsWith('.')) {
        if (now - statSync(path).mtimeMs > HOUR_MS) rmSync(path, { recursive: true, force: true });
      } else if (path !== keep && statSync(path).isDirectory()) builds.push({ path, used: statSync(join(path, ENTRY)).mtimeMs });
    } catch {
      // a folder without an entry (not a build of ours) or removed meanwhile: leave it
    }
  }
  builds.sort((a, b) => b.used - a.used);
  for (const b of builds.slice(KEEP)) if (now - b.used > HOUR_MS) rmSync(b.path, { recursive: true, force: true });
}

/**
 * The CLI's module (src/main.ts as built), built first when no fresh build is there.
 * @returns {Promise<{ main: (argv: string[]) => Promise<number> } & Record<string, unknown>>}
 */
export async function loadCli() {
  const dir = freshBuild() ?? (await build());
  return import(pathToFileURL(join(dir, ENTRY)).href);
}

/** Runs the CLI on `argv` and exits with its code; errors are printed as `intab: message`. @param {string[]} argv */
export function runCli(argv) {
  loadCli()
    .then(({ main }) => main(argv))
    .then(
      (code) => process.exit(code),
      (err) => {
        console.error(`intab: ${err?.message ?? err}`);
        process.exit(1);
      },
    );
}

/** Whether this file is the command being run (also through a symlinked bin), not a module imported by a script. */
function isCommand() {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === SELF;
  } catch {
    return false;
  }
}

if (isCommand()) {
  if (Number(process.versions.node.split('.')[0]) < 20) {
    console.error(`intab: Node ${process.versions.node} is too old: install Node 20 or later (22 and 24 are the current LTS releases)`);
    process.exit(1);
  }
  runCli(process.argv.slice(2));
}
