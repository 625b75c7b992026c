// `intab` as a new user gets it: the package is built and packed into a tarball by npm and by pnpm, installed into a
// fresh Vite app outside the workspace (so nothing resolves through the monorepo), type-checked with `tsc --noEmit`
// (with every TypeScript block of the READMEs as a module of the app), built for production and served by
// `vite preview`; in Chromium the app streams stories260K's golden greedy ids from a Worker that the app's bundler
// found and emitted by itself (no worker file copied by hand), and an error raised in that worker arrives as an
// IntabError with its code.
//
// One app run covers both packers: the two tarballs are checked to hold the same files, and package.json files that
// differ only where an installing app never looks (devDependencies, which pnpm rewrites from workspace:*, and the
// prepack script pnpm drops). The app installs npm's, whose manifest is the repository's own, verbatim.
import { expect, test } from '@playwright/test';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readmeSnippets } from './readme-snippets.mjs';
import { assertDeployable } from './build-size.ts';
import { PACKAGE, ROOT, buildApp, packIntab, serveApp, sh, type Served } from './fresh-app.ts';
import { pnpmCommand } from '../packages/cli/src/pnpm.ts';

const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL = join(SHARED, 'models', 'stories260K');

/** The tarball's file list and package.json, after the checks every packer's tarball must pass. */
async function inspect(tgz: string, packer: string, cwd: string): Promise<{ listing: string[]; manifest: Record<string, any> }> {
  const listing = (await sh('tar', ['tzf', tgz], cwd)).split('\n').filter(Boolean).sort();
  for (const file of ['package/dist/index.js', 'package/dist/service-worker.js', 'package/dist/vite.js', 'package/dist/types/intab/src/service-worker.d.ts', 'package/dist/types/intab/src/vite.d.ts', 'package/dist/types/intab/src/index.d.ts', 'package/dist/types/errors/src/index.d.ts']) {
    expect(listing, `${packer}: ${file}`).toContain(file);
  }
  expect(listing.some((f) => /^package\/dist\/worker-[\w-]+\.js$/.test(f)), `${packer}: the worker chunk`).toBe(true);
  expect(listing.filter((f) => f.startsWith('package/src/')), packer).toEqual([]);
  const manifest = JSON.parse(await sh('tar', ['xzfO', tgz, 'package/package.json'], cwd));
  // The published conditions name dist/ only: the repository reads its sources through aliases (scripts/intab-source.ts).
  expect(manifest.exports['.'], packer).toEqual({ types: './dist/types/intab/src/index.d.ts', import: './dist/index.js', default: './dist/index.js' });
  expect(manifest.exports['./service-worker'], packer).toEqual({ types: './dist/types/intab/src/service-worker.d.ts', import: './dist/service-worker.js', default: './dist/service-worker.js' });
  expect(manifest.exports['./vite'], packer).toEqual({ types: './dist/types/intab/src/vite.d.ts', import: './dist/vite.js', default: './dist/vite.js' });
  expect(Object.keys(manifest.exports).sort(), packer).toEqual(['.', './package.json', './service-worker', './vite']);
  // intab/vite runs in the app's vite.config with the app's Vite: a peer, optional (an app without Vite never imports it).
  expect(manifest.peerDependencies, packer).toEqual({ vite: '^8.0.0' });
  expect(manifest.peerDependenciesMeta, packer).toEqual({ vite: { optional: true } });
  expect(manifest.types, packer).toBe('./dist/types/intab/src/index.d.ts');
  expect(manifest.module, packer).toBe('./dist/index.js');
  expect(manifest.publishConfig, packer).toBeUndefined();
  expect(manifest.files, packer).toEqual(['dist']);
  expect(Object.keys(manifest.dependencies).sort(), packer).toEqual(['@cfworker/json-schema', '@huggingface/jinja', '@huggingface/tokenizers', 'comlink', 'eventsource-parser', 'hash-wasm', 'idb', 'onnxruntime-web']);
  const index = await sh('tar', ['xzfO', tgz, 'package/dist/index.js'], cwd);
  // The canonical form every bundler recognizes, relative to the module.
  expect(index, packer).toMatch(/new Worker\(new URL\("\.\/worker-[\w-]+\.js", import\.meta\.url\s*\)/);
  expect(index, packer).not.toMatch(/["']@intab\//);
  return { listing, manifest };
}

test('intab packed by npm and by pnpm: a fresh Vite app type-checks, builds, streams golden ids from its bundled worker', async ({ page }) => {
  test.setTimeout(300_000);
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1] as { prompt: number[]; greedy: number[] };
  const expected = golden.greedy.slice(0, 8);
  // The vocabulary GGUF maps `<tNNN>` pieces to ids and adds BOS: this text is golden.prompt exactly.
  const prompt = golden.prompt.slice(1).map((id) => `<t${id}>`).join('');

  const tmp = mkdtempSync(join(tmpdir(), 'intab-packaging-'));
  let preview: Served | undefined;
  try {
    // 1. Pack with each packer, as `npm publish` and `pnpm publish` would. No dist/ beforehand: npm's tarball having
    //    one shows that npm ran the prepack build itself. pnpm's runs it again (the build is deterministic).
    rmSync(join(PACKAGE, 'dist'), { recursive: true, force: true });
    const packed: Record<'npm' | 'pnpm', string> = { npm: '', pnpm: '' };
    for (const packer of ['npm', 'pnpm'] as const) {
      const dir = join(tmp, packer);
      mkdirSync(dir);
      if (packer === 'npm') packed.npm = await packIntab(dir);
      else {
        const pack = pnpmCommand(ROOT, ['--filter', 'intab', 'pack', '--pack-destination', dir]);
        await sh(pack.command, pack.args, ROOT);
        const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
        expect(tarball, 'pnpm pack wrote no tarball').toBeTruthy();
        packed.pnpm = join(dir, tarball!);
      }
      if (packer === 'npm') expect(existsSync(join(PACKAGE, 'dist', 'index.js')), 'npm pack ran the prepack build').toBe(true);
    }
    const npm = await inspect(packed.npm, 'npm', tmp);
    const pnpm = await inspect(packed.pnpm, 'pnpm', tmp);
    expect(pnpm.listing).toEqual(npm.listing);
    for (const file of npm.listing.filter((f) => /^package\/dist\/[^/]+\.js$/.test(f))) {
      expect(await sh('tar', ['xzfO', packed.pnpm, file], tmp), file).toBe(await sh('tar', ['xzfO', packed.npm, file], tmp));
    }
    const installed = (m: Record<string, any>) => ({ ...m, devDependencies: undefined, scripts: { ...m.scripts, prepack: undefined } });
    expect(installed(pnpm.manifest)).toEqual(installed(npm.manifest));
    // What npm ships verbatim: the workspace links, only in devDependencies, which no installing app resolves (the
    // others there are the tests' pinned packages); never in what an app installs.
    const links = (deps?: Record<string, string>) => Object.keys(deps ?? {}).filter((k) => deps![k].startsWith('workspace:'));
    expect(links(npm.manifest.dependencies)).toEqual([]);
    expect(links(npm.manifest.peerDependencies)).toEqual([]);
    expect(links(npm.manifest.devDependencies)).toContain('@intab/engine');
    const tgz = packed.npm;

    // 2. A fresh app outside the workspace: only the tarball and Vite, from the registry.
    const app = join(tmp, 'app');
    mkdirSync(join(app, 'src'), { recursive: true });
    mkdirSync(join(app, 'public'));
    copyFileSync(join(MODEL, 'stories260K-vocab-ud.gguf'), join(app, 'public', 'model.gguf'));
    writeFileSync(join(app, 'package.json'), JSON.stringify({
      name: 'intab-packaging-app',
      private: true,
      type: 'module',
      dependencies: { intab: `file:${tgz}` },
      // openai: a README block uses the official client against the Service Worker's endpoint.
      devDependencies: { vite: '8.3.8', openai: '7.59.0' },
    }, null, 2));
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2023', 'DOM', 'DOM.Iterable'],
        strict: true, noEmit: true, skipLibCheck: false, types: [],
      },
      include: ['src'],
    }, null, 2));
    writeFileSync(join(app, 'index.html'), '<!doctype html>\n<html><body><pre id="out">loading</pre><script type="module" src="/src/main.ts"></script></body></html>\n');
    writeFileSync(join(app, 'src', 'main.ts'), `
import { ContextLengthExceededError, createEngine, IntabEngineError, IntabError, type Chunk, type GenerateRequest, type IntabEngine, type LoadProgress } from 'intab';

const out = document.getElementById('out')!;
const progress: LoadProgress[] = [];
try {
  const engine: IntabEngine = await createEngine({ model: new URL('/model.gguf', location.href).href, onProgress: (p) => progress.push(p) });
  const request: GenerateRequest = { prompt: ${JSON.stringify(prompt)}, maxTokens: 8, temperature: 0 };
  // @ts-expect-error maxTokens is a number: the published types must reject this.
  const wrong: GenerateRequest = { prompt: 'x', maxTokens: 'eight' };
  void wrong;
  const ids: number[] = [];
  let chunks = 0;
  let finish: Chunk['finishReason'] = null;
  for await (const chunk of engine.generate(request)) {
    chunks++;
    ids.push(...chunk.ids);
    finish = chunk.finishReason;
  }
  // An error raised in the worker: its own class, an IntabError, with its stable code.
  let refused = 'nothing thrown';
  try {
    for await (const chunk of engine.generate({ prompt: 'x', maxTokens: 1_000_000, strictContext: true })) void chunk;
  } catch (e) {
    refused = e instanceof ContextLengthExceededError && e instanceof IntabError ? e.code : String(e);
  }
  out.textContent = JSON.stringify({ ids, chunks, finish, refused, inWorker: engine.inWorker, progress: progress.length });
  await engine.destroy();
} catch (e) {
  out.textContent = JSON.stringify({ error: String(e), typed: e instanceof IntabEngineError, code: e instanceof IntabError ? e.code : null });
}
`);
    // Every TypeScript block of the READMEs, as a module of its own: the tsc below checks them against the package.
    const snippets = readmeSnippets(ROOT);
    expect(snippets.length).toBeGreaterThanOrEqual(8);
    snippets.forEach((s, i) => writeFileSync(join(app, 'src', `readme-${i + 1}.ts`), `// ${s.origin}\n${s.code}\n`));
    await sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], app);

    // 3. Its types, under tsc --noEmit (skipLibCheck off: our declarations themselves must check), the README's blocks too.
    await sh(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app);

    // 4. Production build: the app's Vite finds the worker through new URL(..., import.meta.url) and emits it.
    await buildApp(app);
    const assets = readdirSync(join(app, 'dist', 'assets'));
    expect(assets.some((f) => /^worker-.*\.js$/.test(f))).toBe(true);
    // No file past static hosts' 25 MiB (onnxruntime's asyncify wasm was 26.8 MB), and the size of what a build adds.
    const size = assertDeployable(join(app, 'dist'));
    console.log(JSON.stringify({ bench: 'build-size', largest: size.largest, total: size.totalBytes, files: size.files }));

    // 5. Served as in production, in Chromium with WebGPU.
    preview = await serveApp(app, 'preview');
    const origin = preview.origin;

    const workers: string[] = [];
    page.on('worker', (w) => workers.push(w.url()));
    await page.goto(`${origin}/`);
    await expect(page.locator('#out')).not.toHaveText('loading', { timeout: 150_000 });
    const result = JSON.parse((await page.locator('#out').textContent())!);
    expect(result.error).toBeUndefined();
    expect(result.ids).toEqual(expected);
    expect(result.finish).toBe('length');
    expect(result.refused).toBe('context_length_exceeded');
    expect(result.chunks).toBeGreaterThanOrEqual(1);
    expect(result.inWorker).toBe(true);
    expect(result.progress).toBeGreaterThan(0);
    // The worker is the file the app's bundler emitted, served from the app's own assets.
    expect(workers.some((u) => u.startsWith(`${origin}/assets/worker-`) && u.endsWith('.js'))).toBe(true);
  } finally {
    preview?.close();
    rmSync(tmp, { recursive: true, force: true });
  }
});
