// One engine for an origin's tabs (createEngine({ share: 'origin' })), in real Chromium: three tabs of one browser
// load stories260K; the first loads it in the origin's SharedWorker, the others attach (nothing downloaded, no second
// load, the GPU buffers of one engine: as many as a tab's own engine holds). Each tab's greedy ids are the golden ones,
// alone and all at once. A tab closed mid-stream ends its request and frees its pages within a second, and so does a
// tab whose renderer process crashed (CDP Page.crash); the others go on.
// The Service Worker's OpenAI endpoint on the shared engine: two attached tabs, neither calling serveOpenAI, answer a
// page of the origin that has no intab code (golden ids, the tabs' own chat answer), on the one engine; a 503 once
// both tabs are closed.
import { join } from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { startHubServer } from '@intab/testing/hub-server';
import { storiesChatFolder } from './chat-model.ts';
import { golden, openShareTab as open, relayClient, STORIES_DIR as MODEL_DIR } from './share-tabs.ts';

let hub: { url: string; close(): Promise<void> };
test.beforeAll(async () => {
  // A chat model for the Service Worker's endpoint: stories260K's Hugging Face folder with a tiny ChatML tokenizer.
  hub = await startHubServer({ 'test/stories-chat': storiesChatFolder(MODEL_DIR) });
});
test.afterAll(async () => hub?.close());

test("three tabs share one engine: one load, one engine's GPU buffers, golden ids alone and at once; a closed tab's request ends and frees its pages, and so does a crashed tab's", async ({ context }) => {
  const errors: string[] = [];
  const [a, b, c] = [await open(await context.newPage(), errors), await open(await context.newPage(), errors), await open(await context.newPage(), errors)];
  const ia = await a.evaluate(() => window.share.load('origin'));
  const [ib, ic] = await Promise.all([b.evaluate(() => window.share.load('origin')), c.evaluate(() => window.share.load('origin'))]);
  expect(ia.share).toMatchObject({ mode: 'shared-worker', attached: false });
  for (const i of [ib, ic]) {
    expect(i.share).toMatchObject({ mode: 'shared-worker', attached: true });
    expect(i.store?.downloaded).toBe(0); // the first tab stored the file: the others read nothing from the network
  }
  const stats = await a.evaluate(() => window.share.stats());
  expect(stats.share).toMatchObject({ sessions: 3, loads: 1, requests: [0, 0, 0] });
  expect(stats.share!.bytesIfSeparate).toBe(3 * stats.share!.bytesHeld);
  for (const p of [b, c]) expect((await p.evaluate(() => window.share.stats())).gpuBuffers).toBe(stats.gpuBuffers);

  const want = golden.map((g) => g.greedy.slice(0, 24));
  for (const [k, p] of [a, b, c].entries()) expect(await p.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[k % 2].prompt] as const)).toEqual(want[k % 2]);
  const together = await Promise.all([a, b, c].map((p, k) => p.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[(k + 1) % 2].prompt] as const)));
  expect(together).toEqual([want[1], want[0], want[1]]);

  // A tab's own engine (share: false) holds as many GPU buffers as the one the three tabs share.
  const own = await open(await context.newPage(), errors);
  expect((await own.evaluate(() => window.share.load(false))).share).toBeUndefined();
  expect((await own.evaluate(() => window.share.stats())).gpuBuffers).toBe(stats.gpuBuffers);
  await own.evaluate(() => window.share.destroy());
  await own.close();

  // Tab C closes in the middle of a long answer: the host sees its Web Lock go, ends its request and frees its pages.
  expect(await c.evaluate(([ids]) => window.share.startLong(ids), [golden[0].prompt] as const)).toBeGreaterThan(0);
  // This tab's count first, then the other tabs' (B and C attached at once: in either order).
  const requests = (await a.evaluate(() => window.share.stats())).share!.requests;
  expect([requests[0], [...requests.slice(1)].sort()]).toEqual([0, [0, 1]]);
  const closed = Date.now();
  await c.close();
  await expect.poll(() => a.evaluate(() => window.share.stats().then((s) => [s.share?.sessions, s.streams, s.availablePages === s.totalPages])), { timeout: 1000, intervals: [50] }).toEqual([2, 0, true]);
  console.log(JSON.stringify({ test: 'share', closed_tab_freed_ms: Date.now() - closed }));

  // Tab D's renderer process crashes in the middle of a long answer (CDP's Page.crash, on this browser's own tab): the
  // same, though D never closed, and A and B, in renderers of their own, are untouched.
  const d = await open(await context.newPage(), errors);
  expect((await d.evaluate(() => window.share.load('origin'))).share).toMatchObject({ mode: 'shared-worker', attached: true });
  expect(await d.evaluate(([ids]) => window.share.startLong(ids), [golden[1].prompt] as const)).toBeGreaterThan(0);
  expect((await a.evaluate(() => window.share.stats())).streams).toBe(1);
  const crashed = new Promise<void>((resolve) => d.once('crash', () => resolve()));
  const cdp = await context.newCDPSession(d);
  void cdp.send('Page.crash').catch(() => {}); // answered by nobody: the renderer is gone
  await crashed;
  const crashedAt = Date.now();
  await expect.poll(() => a.evaluate(() => window.share.stats().then((s) => [s.share?.sessions, s.streams, s.availablePages === s.totalPages])), { timeout: 1000, intervals: [50] }).toEqual([2, 0, true]);
  console.log(JSON.stringify({ test: 'share', crashed_tab_freed_ms: Date.now() - crashedAt }));
  await d.close();

  for (const [k, p] of [a, b].entries()) expect(await p.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[k].prompt] as const)).toEqual(want[k]);

  for (const p of [a, b]) await p.evaluate(() => window.share.destroy());
  expect(errors).toEqual([]);
});

test('the demo chat in two tabs: the second answers at once from the first one\'s engine, and says so; it keeps answering when the first closes', async ({ context, baseURL }) => {
  const model = new URL(`/@fs${join(MODEL_DIR, 'stories260K-vocab-ud.gguf')}`, baseURL).href;
  const errors: string[] = [];
  const tab = async () => {
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`/examples/chat/?backend=webgpu&model=${encodeURIComponent(model)}`);
    await page.locator('#load-remote').click();
    await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 120_000 });
    return page;
  };
  const first = await tab();
  const second = await tab();
  await expect(second.locator('#share-status')).toHaveText(/^Shared with 1 other tab of this site/);
  await expect(first.locator('#share-status')).toHaveText(/^Shared with 1 other tab of this site/, { timeout: 5000 });
  const answer = async (page: Page) => {
    await page.locator('#input').fill('Once upon a time');
    await page.locator('#max-tokens').fill('8');
    await page.locator('#send').click();
    await expect(page.locator('.msg.assistant .stats').last()).toContainText('TTFT', { timeout: 60_000 });
  };
  await answer(second);
  await first.close();
  await expect(second.locator('#share-status')).toHaveText(/^Shared with this site's other tabs as they open/, { timeout: 5000 });
  await answer(second);
  expect(errors).toEqual([]);
});

test('the Service Worker endpoint on the shared engine: a page with no intab code is answered by the attached tabs, with no serveOpenAI call; a 503 once they close', async ({ context }) => {
  const errors: string[] = [];
  const [a, b] = [await open(await context.newPage(), errors), await open(await context.newPage(), errors)];
  // A page with no intab code, which reaches an engine only through the relaying Service Worker.
  const client = await relayClient(a, context);
  const model = `${hub.url}/test/stories-chat/resolve/main/`;
  expect((await a.evaluate((m) => window.share.load('origin', m), model)).share).toMatchObject({ mode: 'shared-worker', attached: false });
  expect((await b.evaluate((m) => window.share.load('origin', m), model)).share).toMatchObject({ mode: 'shared-worker', attached: true });

  const call = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    client.evaluate(
      async ([method, path, body]) => {
        const res = await fetch(path, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: res.status, json: await res.json() };
      },
      [method, path, body] as const,
    );
  const name = await a.evaluate(() => window.share.engine().model);
  expect(await call('GET', 'v1/models')).toMatchObject({ status: 200, json: { data: [{ id: name }] } });
  const before = (await a.evaluate(() => window.share.stats())).prefixCache!;
  // Greedy ids from the prompt's ids: the golden ones.
  const ids = await call('POST', 'v1/completions', { prompt: golden[0].prompt, max_tokens: 24, temperature: 0, return_token_ids: true });
  expect(ids.status).toBe(200);
  expect(ids.json.choices[0].token_ids).toEqual(golden[0].greedy.slice(0, 24));
  const messages = [{ role: 'user', content: 'Once upon a time' }];
  const chat = await call('POST', 'v1/chat/completions', { messages, max_tokens: 8, temperature: 0 });
  expect(chat.status).toBe(200);
  // Both requests ran on the one engine the tabs share: its prefix cache saw both prompts, and nothing loaded again.
  const stats = await b.evaluate(() => window.share.stats());
  expect(stats.share).toMatchObject({ sessions: 2, loads: 1 });
  expect(stats.prefixCache!.hitTokens + stats.prefixCache!.missTokens - before.hitTokens - before.missTokens).toBe(golden[0].prompt.length + chat.json.usage.prompt_tokens);
  // The same answer as the tab's own chat.completions.
  const own = await b.evaluate(async (m) => (await window.share.engine().chat.completions.create({ messages: m, max_tokens: 8, temperature: 0 })).choices[0].message.content, messages);
  expect(chat.json.choices[0].message.content).toBe(own);

  // One attached tab is enough; with none left, a 503 that says what to open.
  await a.close();
  expect(await call('GET', 'v1/models')).toMatchObject({ status: 200, json: { data: [{ id: name }] } });
  await b.close();
  const none = await call('POST', 'v1/chat/completions', { messages, max_tokens: 8 });
  expect(none).toMatchObject({ status: 503, json: { error: { type: 'service_unavailable', code: 'no_engine' } } });
  expect(errors).toEqual([]);
});
