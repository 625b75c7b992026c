// Library build of the public `intab` package: bundles the private workspace packages (@intab/engine,
// @intab/model, @intab/gpu, @intab/onnx, @intab/grammar, @intab/errors) and their WGSL (`?raw`, inlined as strings) into dist/ as ESM, keeps the
// third-party dependencies external (they are real dependencies of the published package), and emits the
// module Worker as its own chunk, referenced as `new URL('./worker-xxx.js', import.meta.url)` so that an
// app's bundler finds and bundles it. Run with `pnpm --filter intab build`.
import { defineConfig, type Plugin } from 'vite';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// Bare imports that stay imports in dist: the published package depends on them.
const THIRD_PARTY = ['comlink', '@huggingface/jinja', '@huggingface/tokenizers', 'hash-wasm', 'onnxruntime-web', 'idb', '@cfworker/json-schema', 'eventsource-parser'];
// The Vite plugin (intab/vite) runs in Node, in the app's vite.config: Vite is the app's (a peer dependency), and Node's
// built-ins are Node's. Neither is ever bundled.
const NODE_SIDE = ['vite'];
const external = (id: string) => id.startsWith('node:') || [...THIRD_PARTY, ...NODE_SIDE].some((d) => id === d || id.startsWith(`${d}/`));

// Vite's worker plugin writes the emitted worker's URL for a served app: `new URL(/* @vite-ignore */
// "/worker-xxx.js", "" + import.meta.url)`, root-absolute and hidden from other bundlers. A library must ship the
// canonical relative form, which the app's bundler (Vite, webpack 5, Parcel) recognizes, bundles and re-emits.
// Line count is kept, so the source maps still line up.
const WORKER_URL_RE = /new URL\(\s*\/\*\s*@vite-ignore\s*\*\/\s*"\/?((?:shared-)?worker-[\w-]+\.js)"\s*,\s*""\s*\+\s*import\.meta\.url\s*\)/g;
function portableWorkerUrl(): Plugin {
  return {
    name: 'intab:portable-worker-url',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      let found = 0;
      for (const chunk of Object.values(bundle)) {
        if (chunk.type !== 'chunk' || !/new (Shared)?Worker\(/.test(chunk.code)) continue;
        chunk.code = chunk.code.replace(WORKER_URL_RE, (match: string, file: string) => {
          found++;
          return `new URL("./${file}", import.meta.url${'\n'.repeat(match.split('\n').length - 1)})`;
        });
      }
      if (found === 0 && Object.values(bundle).some((c) => c.type === 'chunk' && c.name === 'index')) {
        this.error('intab build: no worker URL was rewritten; Vite changed how it emits `new Worker(new URL(...))` in lib mode. Update WORKER_URL_RE in packages/intab/vite.config.ts.');
      }
    },
  };
}

/** Fails the build if the worker is ever split again (see `worker` below for why it must be one file). */
function singleWorkerFile(): Plugin {
  return {
    name: 'intab:single-worker-file',
    apply: 'build',
    generateBundle(_options, bundle) {
      const chunks = Object.values(bundle).filter((c) => c.type === 'chunk').map((c) => c.fileName);
      if (chunks.length !== 1) this.error(`intab build: the worker must be one file, and it was split into ${chunks.join(', ')}: a chunk that imports the worker's entry runs it a second time under Vite's dev server.`);
    },
  };
}

// Declarations: tsc emits intab's and, through it, the workspace packages' .d.ts into dist/types/<pkg>/src/.
// The published package cannot name the private @intab/* packages nor `.ts` files, so every specifier is
// rewritten to a relative `.js` path inside dist/types. The GPU* globals come from the consumer's lib.dom
// (TypeScript 7's includes WebGPU; forcing @webgpu/types on top collides with it).
const TYPES_DIR = here('dist/types');
const SPECIFIER_RE = /(\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\2/g;

/** The .d.ts that a workspace specifier (`@intab/engine/contract`) names, as tsconfig.build.json's paths do. */
function workspaceDeclaration(spec: string): string {
  const [, pkg, sub] = /^@intab\/([^/]+)(?:\/(.+))?$/.exec(spec)!;
  const src = join(TYPES_DIR, pkg, 'src');
  const candidates = sub ? [join(src, sub, 'index.d.ts'), join(src, `${sub}.d.ts`)] : [join(src, 'index.d.ts')];
  const hit = candidates.find((c) => existsSync(c));
  if (!hit) throw new Error(`intab build: no declaration for '${spec}' (looked for ${candidates.join(', ')}); add it to tsconfig.build.json's paths.`);
  return hit;
}

function rewriteSpecifiers(file: string): void {
  const code = readFileSync(file, 'utf8').replace(SPECIFIER_RE, (all, lead: string, q: string, spec: string) => {
    let target: string;
    if (spec.startsWith('@intab/')) target = workspaceDeclaration(spec).replace(/\.d\.ts$/, '.js');
    else if (spec.startsWith('.')) target = join(dirname(file), spec.replace(/\.ts$/, '.js'));
    else return all;
    let rel = relative(dirname(file), target).split(sep).join('/');
    if (!rel.startsWith('.')) rel = `./${rel}`;
    return `${lead}${q}${rel}${q}`;
  });
  writeFileSync(file, code);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.d.ts') ? [join(dir, e.name)] : []));
}

function declarations(): Plugin {
  return {
    name: 'intab:declarations',
    apply: 'build',
    closeBundle() {
      rmSync(TYPES_DIR, { recursive: true, force: true });
      const tsc = here('../../node_modules/.bin/tsc');
      try {
        execFileSync(tsc, ['-p', here('tsconfig.build.json')], { stdio: 'pipe' });
      } catch (e) {
        const out = e as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`intab build: tsc could not emit the declarations:\n${out.stdout ?? ''}${out.stderr ?? ''}`);
      }
      const files = walk(TYPES_DIR);
      for (const f of files) rewriteSpecifiers(f);
      // Only specifiers count: a doc comment may name a source file (`compute-mask.ts's maskFrom`).
      const leaks = files.filter((f) => [...readFileSync(f, 'utf8').matchAll(SPECIFIER_RE)].some(([, , , spec]) => spec.startsWith('@intab/') || spec.endsWith('.ts')));
      if (leaks.length) throw new Error(`intab build: declarations still import @intab/* or .ts files: ${leaks.join(', ')}`);
    },
  };
}

export default defineConfig({
  plugins: [portableWorkerUrl(), declarations()],
  root: here('.'),
  publicDir: false,
  logLevel: 'warn',
  build: {
    outDir: here('dist'),
    emptyOutDir: true,
    target: 'es2022',
    minify: false,
    sourcemap: true,
    // Workers must stay separate files, never base64 data URLs: a data-URL module worker cannot import.
    assetsInlineLimit: 0,
    lib: {
      entry: { index: here('src/index.ts'), 'service-worker': here('src/service-worker.ts'), vite: here('src/vite.ts') },
      formats: ['es'],
      fileName: (_format, name) => `${name}.js`,
    },
    rolldownOptions: { external },
  },
  // The worker is one file. Split, its lazily loaded chunks (the ONNX runner) import their shared code back from the
  // worker's entry file, which exposes the Engine when it runs. An app's production bundler sees one module graph, but
  // Vite's dev server serves the worker as `worker-x.js?worker_file&type=module` and the chunk's import of it as
  // `worker-x.js?v=<hash>`: two URLs, so the entry ran twice and exposed a second Engine on the same port, which
  // answered start() while the first one got the AbortSignal (issue 29). With no chunk, nothing can import the entry.
  worker: {
    format: 'es',
    plugins: () => [singleWorkerFile()],
    rolldownOptions: { external, output: { entryFileNames: 'worker-[hash].js', codeSplitting: false } },
  },
});
