// A web developer's first hour (issue 29): a fresh Vite + TypeScript app on the packed `intab` tarball, its Service
// Worker written in TypeScript and built by `serviceWorker()` from 'intab/vite', type-checked with a DOM tsconfig and a
// WebWorker one, then run as developers run it all day (`vite`, the dev server) and as it ships (`vite build` +
// `vite preview`), on intab's WebGPU kernels and on onnxruntime's wasm. On each: an AbortSignal ends generate() with
// 'abort' and every page back, `break` stops, an unknown request field and an unknown role are refused naming what was
// meant, the OpenAI stream throws AbortError when aborted, the model store answers the second load with `persisted`,
// an engine shared by the origin's tabs (the package's SharedWorker) aborts the same way,
// the Service Worker endpoint streams SSE, and the console stays free of errors (no 404 probes, no failed requests).
import { expect, test, type Page } from '@playwright/test';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { tinyChatTokenizerFiles } from '@intab/testing/tiny-tokenizer';
import { ROOT, buildApp, packIntab, serveApp, sh } from './fresh-app.ts';

const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const STORIES = join(SHARED, 'models', 'stories260K');
const BACKENDS = ['webgpu', 'onnx-wasm'] as const;

/** The app's page: every check in a row, its findings as JSON in window.firstHour. */
const MAIN_TS = `
import { createEngine, serveOpenAI, IntabError, type Chunk, type IntabEngine } from 'intab';

declare global {
  interface Window { firstHour: Promise<Record<string, unknown>> }
}

const backend = (new URLSearchParams(location.search).get('backend') ?? 'auto') as 'webgpu' | 'onnx-wasm' | 'auto';
// stories260K-vocab-ud.gguf maps '<tNNN>' pieces to ids.
const prompt = '<t40><t260><t399><t263>';
const messages = [{ role: 'user' as const, content: 'Hello there' }];

async function settled(engine: IntabEngine) {
  const s = await engine.stats();
  return { streams: s.streams, pagesBack: s.availablePages === s.totalPages };
}

function refusal(e: unknown) {
  const err = e as IntabError & { field?: string };
  return { name: err.name, code: err instanceof IntabError ? err.code : null, field: err.field ?? null, message: err.message };
}

async function run(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};

  // A GGUF file by URL: downloaded into the model store.
  const gguf = await createEngine({ model: '/model.gguf', backend });
  out.backend = gguf.info.backend.name;
  out.firstStore = gguf.info.store;

  // Abort mid-stream: the last chunk says 'abort', and the pages are back.
  const controller = new AbortController();
  let ids = 0;
  let idsAtAbort = 0;
  let finish: Chunk['finishReason'] = null;
  for await (const chunk of gguf.generate({ prompt, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: controller.signal })) {
    ids += chunk.ids.length;
    finish = chunk.finishReason;
    if (ids >= 8 && !controller.signal.aborted) {
      idsAtAbort = ids;
      controller.abort();
    }
  }
  out.abort = { ids, idsAtAbort, finish, ...(await settled(gguf)) };

  // break stops the request.
  let seen = 0;
  for await (const chunk of gguf.generate({ prompt, maxTokens: 400, ignoreEos: true })) {
    void chunk;
    if (++seen === 3) break;
  }
  out.break = { seen, ...(await settled(gguf)) };

  // A mistyped field is refused, naming the one meant.
  try {
    for await (const chunk of gguf.generate({ prompt, maxToken: 5 } as never)) void chunk;
    out.unknownField = 'accepted';
  } catch (e) {
    out.unknownField = refusal(e);
  }
  await gguf.destroy();

  // The same model again: from the store.
  const again = await createEngine({ model: '/model.gguf', backend });
  out.secondStore = again.info.store;
  await again.destroy();

  // One engine for the origin's tabs (share: 'origin'): the package's SharedWorker, as the app's Vite serves or bundles
  // it, with abort through it.
  const shared = await createEngine({ model: '/model.gguf', backend, share: 'origin' });
  const sharedStop = new AbortController();
  const s = { mode: shared.info.share?.mode, ids: 0, idsAtAbort: 0, finish: null as Chunk['finishReason'] };
  for await (const chunk of shared.generate({ prompt, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: sharedStop.signal })) {
    s.ids += chunk.ids.length;
    s.finish = chunk.finishReason;
    if (s.ids >= 8 && !sharedStop.signal.aborted) {
      s.idsAtAbort = s.ids;
      sharedStop.abort();
    }
  }
  out.shared = { ...s, sessions: (await shared.stats()).share?.sessions, ...(await settled(shared)) };
  await shared.destroy();

  // A Hugging Face folder with a chat template, through the OpenAI surface.
  const chat = await createEngine({ model: '/chat/', backend });
  const stop = new AbortController();
  let got = 0;
  try {
    const stream = await chat.chat.completions.create({ messages, stream: true, max_tokens: 200, temperature: 0, logit_bias: { '97': -100 } }, { signal: stop.signal });
    for await (const chunk of stream) {
      void chunk;
      if (++got === 3) stop.abort();
    }
    out.openaiAbort = { got, threw: null };
  } catch (e) {
    out.openaiAbort = { got, threw: (e as Error).name };
  }
  out.openaiSettled = await settled(chat);
  try {
    await chat.chat.completions.create({ messages: [{ role: 'wizard', content: 'Hello' }] as never });
    out.role = 'accepted';
  } catch (e) {
    out.role = refusal(e);
  }

  // The Service Worker's OpenAI endpoint, answered by this tab's engine.
  await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  if (!navigator.serviceWorker.controller) await new Promise((r) => navigator.serviceWorker.addEventListener('controllerchange', r, { once: true }));
  const unserve = serveOpenAI(chat);
  const res = await fetch('/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages, stream: true, max_tokens: 6, temperature: 0 }),
  });
  const sse = await res.text();
  const events = sse.split('\\n\\n').filter(Boolean);
  out.sw = { status: res.status, type: res.headers.get('content-type'), events: events.length, done: events.at(-1) === 'data: [DONE]' };
  unserve();
  await chat.destroy();
  return out;
}

window.firstHour = run().catch((e: Error) => ({ error: \`\${e?.name}: \${e?.message}\`, stack: e?.stack }));
`;

/** The Service Worker, in TypeScript, as the README's recipe writes it. */
const SW_TS = `
import { relayOpenAI } from 'intab/service-worker';

declare const self: ServiceWorkerGlobalScope;

relayOpenAI(self);
// Control the page that registered it at once, so its fetches reach the endpoint without a reload.
self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
export {};
`;

const VITE_CONFIG = `
import { defineConfig } from 'vite';
import { serviceWorker } from 'intab/vite';

export default defineConfig({
  plugins: [serviceWorker({ entry: 'src/sw.ts' })],
});
`;

const tsconfig = (lib: string[], include: string[], exclude: string[] = []) =>
  JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib, strict: true, noEmit: true, skipLibCheck: false, types: [] }, include, exclude }, null, 2);

let tmp: string;
let app: string;

test.beforeAll(async () => {
  test.setTimeout(300_000);
  tmp = mkdtempSync(join(tmpdir(), 'intab-first-hour-'));
  const tgz = await packIntab(tmp);
  app = join(tmp, 'app');
  for (const dir of ['src', 'public/chat']) mkdirSync(join(app, dir), { recursive: true });
  copyFileSync(join(STORIES, 'stories260K-vocab-ud.gguf'), join(app, 'public', 'model.gguf'));
  // A chat model: stories260K's Hugging Face folder with a tiny ChatML tokenizer (every id decodes to text).
  for (const f of ['config.json', 'model.safetensors']) copyFileSync(join(STORIES, 'hf', f), join(app, 'public', 'chat', f));
  const tok = tinyChatTokenizerFiles();
  const vocab = (tok.tokenizerJson.model as { vocab: Record<string, number> }).vocab;
  for (let id = 98; id < 512; id++) vocab[`t${id}`] = id;
  writeFileSync(join(app, 'public', 'chat', 'tokenizer.json'), JSON.stringify(tok.tokenizerJson));
  writeFileSync(join(app, 'public', 'chat', 'tokenizer_config.json'), JSON.stringify(tok.tokenizerConfig));
  writeFileSync(join(app, 'public', 'chat', 'generation_config.json'), JSON.stringify({ eos_token_id: 97 }));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'first-hour', private: true, type: 'module', dependencies: { intab: `file:${tgz}` }, devDependencies: { vite: '8.3.8' } }, null, 2));
  // The page has an icon of its own: a missing favicon.ico would be the app's 404, not intab's.
  writeFileSync(join(app, 'index.html'), '<!doctype html>\n<html><head><link rel="icon" href="data:,"></head><body><script type="module" src="/src/main.ts"></script></body></html>\n');
  writeFileSync(join(app, 'src', 'main.ts'), MAIN_TS);
  writeFileSync(join(app, 'src', 'sw.ts'), SW_TS);
  writeFileSync(join(app, 'vite.config.ts'), VITE_CONFIG);
  // Two tsconfigs, as the Vite template splits them: the page under DOM, the Service Worker under WebWorker.
  writeFileSync(join(app, 'tsconfig.json'), tsconfig(['ES2023', 'DOM', 'DOM.Iterable'], ['src'], ['src/sw.ts']));
  writeFileSync(join(app, 'tsconfig.sw.json'), tsconfig(['ES2023', 'WebWorker'], ['src/sw.ts']));
  writeFileSync(join(app, 'tsconfig.node.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib: ['ES2023'], strict: true, noEmit: true, types: ['node'] }, include: ['vite.config.ts'] }, null, 2));
  await sh('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', '@types/node@20'], app);
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  for (const config of ['tsconfig.json', 'tsconfig.sw.json', 'tsconfig.node.json']) await sh(process.execPath, [tsc, '-p', config], app);
});

test.afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Console errors, failed requests and page errors, from the page and its workers. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.request().method()} ${r.url()}`);
  });
  // A request the page ends itself (a body it cancels: Vite's index.html answering for a file a folder may lack) is
  // not an error; any other failure is.
  page.on('requestfailed', (r) => r.failure()?.errorText !== 'net::ERR_ABORTED' && problems.push(`failed: ${r.method()} ${r.url()} (${r.failure()?.errorText})`));
  page.on('worker', (w) => w.on('console', (m) => m.type() === 'error' && problems.push(`worker console: ${m.text()}`)));
  return problems;
}

for (const mode of ['dev', 'preview'] as const) {
  test(`a fresh Vite app under ${mode === 'dev' ? '`vite` (the dev server)' : '`vite build` + `vite preview`'}: abort, break, request checks, the store, the Service Worker endpoint, a clean console`, async ({ page }) => {
    test.setTimeout(300_000);
    if (mode === 'preview') await buildApp(app);
    const server = await serveApp(app, mode);
    try {
      if (mode === 'preview') expect(existsSync(join(app, 'dist', 'sw.js')), 'vite build emits sw.js at the root').toBe(true);
      for (const backend of BACKENDS) {
        const problems = watch(page);
        await page.goto(`${server.origin}/?backend=${backend}`);
        const r = (await page.evaluate(() => (window as unknown as { firstHour: Promise<unknown> }).firstHour)) as Record<string, any>;
        console.log(JSON.stringify({ mode, backend, ...r }));
        expect(r.error, r.stack).toBeUndefined();
        expect(r.backend).toBe(backend);

        // Abort: 'abort', within the engine's queue of the step in flight (streaming.gpu.test.ts proves one step), pages back.
        expect(r.abort.finish).toBe('abort');
        expect(r.abort.ids - r.abort.idsAtAbort).toBeLessThanOrEqual(9);
        expect(r.abort).toMatchObject({ streams: 0, pagesBack: true });
        expect(r.break).toEqual({ seen: 3, streams: 0, pagesBack: true });

        expect(r.unknownField).toMatchObject({ name: 'InvalidRequestError', code: 'invalid_request', field: 'maxToken' });
        expect(r.unknownField.message).toContain("'maxTokens'");
        expect(r.role).toMatchObject({ name: 'InvalidRequestError', code: 'invalid_request', field: 'messages[0].role' });

        expect(r.openaiAbort).toEqual({ got: 3, threw: 'AbortError' });
        expect(r.openaiSettled).toEqual({ streams: 0, pagesBack: true });

        // The second load reads the store: nothing downloaded, and `persisted` is always said.
        expect(r.secondStore).toMatchObject({ downloaded: 0, verified: true });
        expect(typeof r.secondStore.persisted).toBe('boolean');
        expect(typeof r.firstStore.persisted).toBe('boolean');

        // The shared engine in the package's SharedWorker: aborted the same way, its pages back.
        expect(r.shared).toMatchObject({ mode: 'shared-worker', finish: 'abort', sessions: 1, streams: 0, pagesBack: true });
        expect(r.shared.ids - r.shared.idsAtAbort).toBeLessThanOrEqual(9);

        expect(r.sw).toMatchObject({ status: 200, done: true });
        expect(r.sw.type).toMatch(/^text\/event-stream/);
        expect(r.sw.events).toBeGreaterThanOrEqual(3);

        expect(problems).toEqual([]);
      }
    } finally {
      server.close();
    }
    // The first-hour page's worker under dev is the package's file served by Vite, not a copy.
    expect(readFileSync(join(app, 'package.json'), 'utf8')).toContain('file:');
  });
}
