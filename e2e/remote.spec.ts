// The remote backend from a real page: `intab serve` (stories260K in the server's own Node process, no browser: the
// default --runtime node, here on onnxruntime-node's CPU provider; CORS on) is the server, and the page's createEngine
// talks to it with the browser's fetch: greedy ids over the wire equal the golden ids, abort reaches the server, the
// server's 429 carries its Retry-After across CORS, and createEngine({ model, remote, prefer }) picks local or remote
// as the page allows, saying why in info.route.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page } from '@playwright/test';
import { startServeProcess, type ServeProcess } from '../packages/cli/src/serve-process.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL_DIR = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
const golden = JSON.parse(readFileSync(join(MODEL_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
const KEY = 'sk-page';

let server: ServeProcess;

test.beforeAll(async () => {
  server = await startServeProcess(['--model', join(MODEL_DIR, 'stories260K-vocab-ud.gguf'), '--port', '0', '--max-batch', '4', '--cors', '*', '--api-key', KEY, '--api-key', 'sk-once:rpm=1', '--grace-ms', '0']);
  expect(server.line).toMatchObject({ runtime: 'node', api_keys: 2 });
});

test.afterAll(async () => {
  await server?.close();
});

async function open(page: Page): Promise<void> {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/e2e/pages/remote.html');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
  expect(errors).toEqual([]);
}

test('a page streams from intab serve: golden ids, abort, and a 429 with Retry-After across CORS', async ({ page }) => {
  await open(page);
  const out = await page.evaluate(
    async ({ baseURL, model, key, cases }) => {
      const { createEngine, RemoteHttpError } = (window as any).intab;
      const engine = await createEngine({ remote: { baseURL, model, apiKey: key } });
      const run = async (c: { prompt: number[]; greedy: number[] }) => {
        const ids: number[] = [];
        let finish = null;
        for await (const chunk of engine.generate({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true })) {
          ids.push(...chunk.ids);
          finish = chunk.finishReason;
        }
        return { ids, finish };
      };
      const runs = await Promise.all(cases.map(run));
      const controller = new AbortController();
      let aborted = null;
      let pieces = 0;
      for await (const chunk of engine.generate({ promptIds: cases[0].prompt, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: controller.signal })) {
        if (++pieces === 2) controller.abort();
        aborted = chunk.finishReason;
      }
      const once = await createEngine({ remote: { baseURL, model, apiKey: 'sk-once', retries: { maxRetryAfterMs: 500 } } });
      for await (const _ of once.generate({ promptIds: cases[0].prompt, maxTokens: 2 }));
      const limited = await (async () => {
        try {
          for await (const _ of once.generate({ promptIds: cases[0].prompt, maxTokens: 2 }));
          return null;
        } catch (e: any) {
          return { isRemoteHttpError: e instanceof RemoteHttpError, status: e.status, retryAfterMs: e.retryAfterMs };
        }
      })();
      await once.destroy();
      await engine.destroy();
      return { backend: engine.info.backend.name, runs, aborted, limited };
    },
    { baseURL: `${server.url}/v1`, model: server.model, key: KEY, cases: golden },
  );
  expect(out.backend).toBe('remote');
  out.runs.forEach((r, i) => expect(r).toEqual({ ids: golden[i]!.greedy, finish: 'length' }));
  expect(out.aborted).toBe('abort');
  await expect.poll(async () => (await server.stats(KEY)).engine?.streams).toBe(0);
  expect(out.limited).toMatchObject({ isRemoteHttpError: true, status: 429 });
  expect(out.limited!.retryAfterMs).toBeGreaterThan(500); // Retry-After was readable across CORS
});

test('createEngine({ model, remote, prefer }) runs local where the page can, remote where asked or where local fails', async ({ page }) => {
  await open(page);
  const routes = await page.evaluate(
    async ({ baseURL, model, key }) => {
      const { createEngine } = (window as any).intab;
      const local = (window as any).MODEL as string;
      const remote = { baseURL, model, apiKey: key };
      const out: Record<string, { chosen: string; reason: string; backend: string; text: string }> = {};
      const cases: [string, Record<string, unknown>][] = [
        ['local', { model: local, remote, cache: false }],
        ['remote', { model: local, remote, prefer: 'remote', cache: false }],
        ['local-fails', { model: new URL('/missing.gguf', location.href).href, remote, cache: false }],
        ['server-down', { model: local, remote: { baseURL: 'http://127.0.0.1:9/v1', model, retries: { max: 0 } }, prefer: 'remote', cache: false }],
      ];
      for (const [name, options] of cases) {
        const engine = await createEngine(options);
        let text = '';
        for await (const c of engine.generate({ prompt: 'Once upon a time', maxTokens: 8, temperature: 0 })) text += c.text;
        out[name] = { ...engine.info.route, backend: engine.info.backend.name, text };
        await engine.destroy();
      }
      return out;
    },
    { baseURL: `${server.url}/v1`, model: server.model, key: KEY },
  );
  expect(routes.local).toMatchObject({ chosen: 'local' });
  expect(routes.local.reason).toMatch(/^prefer: 'local', and it fits this tab/);
  expect(routes.local.backend).not.toBe('remote');
  expect(routes.remote).toMatchObject({ chosen: 'remote', reason: "prefer: 'remote'", backend: 'remote' });
  expect(routes['local-fails']).toMatchObject({ chosen: 'remote', backend: 'remote' });
  expect(routes['local-fails'].reason).toMatch(/^prefer: 'local', but the local load failed/);
  expect(routes['server-down']).toMatchObject({ chosen: 'local' });
  expect(routes['server-down'].reason).toMatch(/^prefer: 'remote', but the server did not answer/);
  for (const r of Object.values(routes)) expect(r.text.length).toBeGreaterThan(0);
});
