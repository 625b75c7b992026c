// Election mode of createEngine({ share: 'origin' }), in real Chromium with SharedWorker hidden (as on Chrome for
// Android): three tabs load stories260K; the first is elected host (its own Worker), the others reach it over a
// BroadcastChannel; all answer the golden ids. The host tab closes while a client streams: that request ends with
// EngineHostLostError after the tokens it already had, the client next in the election takes over (loading the model
// from the model store: no request for the model file; the prefix cache the host saved restored) and answers the next
// request with the golden ids, and so does the third tab, which moved to the new host (and whose abort ends its
// request as 'abort', with no AbortSignal across the channel). When the new host's own Worker dies, that tab's engine
// ends with WorkerError and the third tab takes over in turn. The Service Worker's OpenAI endpoint is answered by the
// elected tabs by themselves (no serveOpenAI call), before and after a takeover.
import { expect, test, type Page } from '@playwright/test';
import { golden, openShareTab, relayClient } from './share-tabs.ts';

/** A tab of the share page that sees no SharedWorker: the flag that forces election mode. */
const open = (page: Page, errors: string[]) => openShareTab(page, errors, { hideSharedWorker: true });

test('no SharedWorker: a tab elected host serves the others; when it closes mid-stream the request ends with EngineHostLostError and the survivor takes over from the model store', async ({ context }) => {
  const errors: string[] = [];
  const modelRequests: string[] = [];
  context.on('request', (r) => void (r.url().includes('.gguf') && modelRequests.push(r.url())));
  const [a, b, c] = [await open(await context.newPage(), errors), await open(await context.newPage(), errors), await open(await context.newPage(), errors)];
  const ia = await a.evaluate(() => window.share.load('origin'));
  expect(modelRequests.length).toBeGreaterThan(0); // the first tab downloaded the file into the store
  const [ib, ic] = [await b.evaluate(() => window.share.load('origin')), await c.evaluate(() => window.share.load('origin'))];
  expect(ia.share).toMatchObject({ mode: 'elected-host', attached: false });
  for (const i of [ib, ic]) {
    expect(i.share).toMatchObject({ mode: 'elected-client', attached: true });
    expect(i.store?.downloaded).toBe(0);
  }
  expect((await b.evaluate(() => window.share.stats())).share).toMatchObject({ sessions: 3, loads: 1 });

  const want = golden.map((g) => g.greedy.slice(0, 24));
  for (const [k, p] of [a, b].entries()) expect(await p.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[k].prompt] as const)).toEqual(want[k]);
  // The host saves its prefix cache (both prompts' pages): the tab that takes over restores it at its load.
  expect((await a.evaluate(() => window.share.engine().saveCache({ all: true }))).pages).toBeGreaterThan(0);

  // The host tab closes while the client streams: the client's request ends typed, after what it had delivered.
  expect(await b.evaluate(([ids]) => window.share.startLong(ids), [golden[0].prompt] as const)).toBeGreaterThan(0);
  const requested = modelRequests.length;
  await a.close();
  const ended = await b.evaluate(() => window.share.endLong());
  expect(ended.error).toBe('EngineHostLostError');
  expect(ended.ids).toBeGreaterThan(0);
  expect(ended.ids).toBeLessThan(400);

  // The next request goes to the new host, this tab, which loaded the model from the store.
  expect(await b.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[1].prompt] as const)).toEqual(want[1]);
  const taken = await b.evaluate(() => window.share.engine().info);
  expect(taken.share).toMatchObject({ mode: 'elected-host', attached: false });
  expect(taken.restored?.pages).toBeGreaterThan(0);
  expect(taken.store?.downloaded).toBe(0);
  expect(modelRequests.length).toBe(requested);
  // The third tab, a client too, moved to the new host: the same golden ids, on the one engine of two sessions.
  expect(await c.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[0].prompt] as const)).toEqual(want[0]);
  expect((await c.evaluate(() => window.share.engine().info)).share).toMatchObject({ mode: 'elected-client' });
  // No AbortSignal crosses the channel: a client's abort cancels its request on the host, which ends as 'abort'.
  expect(await c.evaluate(([ids]) => window.share.abortAfterFirst(ids), [golden[1].prompt] as const)).toBe('abort');
  expect((await b.evaluate(() => window.share.stats())).share).toMatchObject({ sessions: 2, loads: 1, requests: [0, 0] });

  // The new host's own Worker dies (terminated, as the browser kills one out of memory): that tab's engine ends with
  // WorkerError as any engine whose Worker died, it lets the election go, and the last tab takes over in turn.
  expect(await b.evaluate(() => {
    const worker = (window.share.engine() as unknown as Record<symbol, Worker | undefined>)[Symbol.for('intab.worker')];
    worker?.terminate();
    return worker !== undefined;
  })).toBe(true);
  await expect.poll(() => b.evaluate(([ids]) => window.share.greedy(ids, 4).then(() => 'answered', (e: Error) => e.name), [golden[0].prompt] as const)).toBe('WorkerError');
  expect(await c.evaluate(([ids]) => window.share.greedy(ids, 24), [golden[1].prompt] as const)).toEqual(want[1]);
  expect((await c.evaluate(() => window.share.engine().info)).share).toMatchObject({ mode: 'elected-host' });
  for (const p of [c, b]) await p.evaluate(() => window.share.destroy());
  expect(errors).toEqual([]);
});

test('no SharedWorker: the Service Worker endpoint is answered by the elected tabs with no serveOpenAI call, and again by the tab that took over', async ({ context }) => {
  const errors: string[] = [];
  const [a, b] = [await open(await context.newPage(), errors), await open(await context.newPage(), errors)];
  // A page with no intab code, which reaches an engine only through the relaying Service Worker.
  const client = await relayClient(a, context);
  expect((await a.evaluate(() => window.share.load('origin'))).share).toMatchObject({ mode: 'elected-host' });
  expect((await b.evaluate(() => window.share.load('origin'))).share).toMatchObject({ mode: 'elected-client' });
  const complete = () =>
    client.evaluate(async (prompt) => {
      const res = await fetch('v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt, max_tokens: 24, temperature: 0, return_token_ids: true }) });
      return { status: res.status, ids: res.ok ? ((await res.json()) as { choices: { token_ids: number[] }[] }).choices[0].token_ids : await res.text() };
    }, golden[0].prompt);
  const want = { status: 200, ids: golden[0].greedy.slice(0, 24) };
  expect(await complete()).toEqual(want);
  // The host tab goes: the other tab takes over (at its next request) and still answers the endpoint.
  await a.close();
  await expect.poll(complete, { timeout: 60_000, intervals: [500] }).toEqual(want);
  expect((await b.evaluate(() => window.share.engine().info)).share).toMatchObject({ mode: 'elected-host' });
  await b.evaluate(() => window.share.destroy());
  expect(errors).toEqual([]);
});
