// The offline assistant (examples/pwa, built and served by scripts/pwa.mjs) as its users meet it, with the model
// served by a local hub server (packages/intab/src/store/test-server.mjs, started here): the first visit online
// downloads the model into the store; with the network off, a reload opens from the Service Worker's precache,
// loads the model from the store and answers (streamed, stopped, a second turn). The Service Worker's OpenAI
// endpoint: the official openai client on the API page streams (and not) from the assistant's tab, an abort frees
// the engine's sequence, four clients at once share engine steps, a bad body is a 400 and no engine page a 503; another
// origin's form POST or link into the scope is a 403 and its no-cors fetch never reaches the Service Worker.
// Two tabs loading one model at once download it once.
import { expect, test, type Page } from '@playwright/test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHubServer } from '@intab/testing/hub-server';
import { storiesChatFolder } from './chat-model.ts';
import { streamThenStop } from './chat-steps.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORIES = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
/** playwright.config.ts serves the assistant here (PWA_PORT). */
const APP = 'http://127.0.0.1:4319/';

let hub: { url: string; close(): Promise<void> };
test.beforeAll(async () => {
  // A chat model for the endpoint: stories260K's Hugging Face folder with a tiny ChatML tokenizer.
  hub = await startHubServer({ 'test/stories': STORIES, 'test/stories-chat': storiesChatFolder(STORIES) });
});
test.afterAll(async () => hub?.close());

const modelUrl = (tag: string) => `${hub.url}/test/stories/resolve/main/stories260K-vocab-ud.gguf?tag=${tag}`;
const modelGets = async () => ((await (await fetch(`${hub.url}/__requests`)).json()) as Record<string, number>)['GET /test/stories/resolve/main/stories260K-vocab-ud.gguf'] ?? 0;

/** A one-page web server on a free port: another site, for the cross-origin tests. */
async function startPage(html: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function openAssistant(page: Page, tag: string, model = modelUrl(tag), backend?: string): Promise<void> {
  await page.goto(`${APP}?model=${encodeURIComponent(model)}${backend ? `&backend=${backend}` : ''}`);
  await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
}

async function ask(page: Page, text: string, maxTokens: string): Promise<string> {
  await page.locator('#max-tokens').fill(maxTokens);
  await page.locator('#input').fill(text);
  await page.locator('#send').click();
  const stats = page.locator('.msg.assistant .stats').last();
  await expect(stats).toContainText('TTFT', { timeout: 60_000 });
  return (await page.locator('.msg.assistant .body').last().textContent()) ?? '';
}

test('first visit online stores the model; offline, a reload opens from the cache and answers, stops, answers again', async ({ page, context }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const before = await modelGets();
  await openAssistant(page, 'offline');
  await expect(page.locator('#model-status')).toContainText('downloaded 1 MiB into the model store');
  expect(await modelGets()).toBe(before + 1);
  await expect(page.locator('#stored')).toContainText('stories260K-vocab-ud.gguf?tag=offline');
  expect(await ask(page, 'Hello', '8')).not.toBe('');
  // The Service Worker controls the page (the app shell is precached), and Chromium finds nothing in the app that
  // stops its installation (the test browser's own profile is incognito, which alone forbids installing).
  expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  const cdp = await context.newCDPSession(page);
  const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
  expect(installabilityErrors.map((e) => e.errorId).filter((id) => id !== 'in-incognito')).toEqual([]);

  await context.setOffline(true);
  await page.reload();
  await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
  await expect(page.locator('#model-status')).toContainText('from the model store (verified)');
  // A streamed answer, stopped mid-way.
  await page.locator('#max-tokens').fill('300');
  await streamThenStop(page, 'Tell me a story');
  // A second turn.
  expect(await ask(page, 'And then?', '6')).not.toBe('');
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
  await page.screenshot({ path: 'test-results/pwa.png', fullPage: true });
  await context.setOffline(false);
  expect(await modelGets()).toBe(before + 1); // nothing fetched again
  expect(errors).toEqual([]);
});

test('the OpenAI endpoint: the openai client streams and not, aborts free the sequence, four clients share steps, errors are OpenAI-shaped', async ({ page, context }) => {
  // A Hugging Face folder with a chat template (the endpoint serves chat completions).
  // intab's WebGPU kernels: the steps four clients share and the preload's pinned pages are what this test watches, and
  // on onnxruntime's wasm ('auto' on SwiftShader) stories260K answers 24 tokens faster than the next request arrives.
  await openAssistant(page, 'endpoint', `${hub.url}/test/stories-chat/resolve/main/`, 'webgpu');
  const api = await context.newPage();
  await api.goto(`${APP}api.html`);
  await expect.poll(() => api.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  const run = async (o: { stream: boolean; clients?: number; maxTokens?: number }) => {
    await api.locator('#stream').setChecked(o.stream);
    await api.locator('#clients').fill(String(o.clients ?? 1));
    await api.locator('#max-tokens').fill(String(o.maxTokens ?? 12));
    await api.locator('#run').click();
    await expect(api.locator('#result')).toContainText('"results"', { timeout: 60_000 });
    return JSON.parse((await api.locator('#result').textContent())!);
  };
  const streamed = await run({ stream: true });
  const whole = await run({ stream: false });
  expect(streamed.results[0].error).toBeUndefined();
  expect(streamed.results[0].text.length).toBeGreaterThan(0);
  expect(whole.results[0].text).toBe(streamed.results[0].text); // greedy: the same answer either way
  expect(whole.results[0].usage.completion_tokens).toBe(12);

  // The engine page's own fetch of its origin's /v1 (relayed back to it) gives the same answer.
  const direct = await page.evaluate(async (content) => {
    const res = await fetch('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 12, temperature: 0 }) });
    return (await res.json()).choices[0].message.content as string;
  }, await api.locator('#prompt').inputValue());
  expect(direct).toBe(streamed.results[0].text);

  // Four clients at once: the engine runs them together.
  const four = await run({ stream: true, clients: 4, maxTokens: 24 });
  expect(four.results.map((r: { text: string }) => r.text.length > 0)).toEqual([true, true, true, true]);
  await expect(page.locator('#api-status')).toContainText('engine: 0 running (most at once: 4)');

  // An abort mid-stream: the engine's sequence ends and its pages are available again (as many as before it;
  // the preloaded system prompt keeps its pinned pages).
  const available = /(\d+) of (\d+) KV pages available/.exec((await page.locator('#api-status').textContent())!)![1];
  await api.locator('#max-tokens').fill('400');
  await api.locator('#clients').fill('1');
  await api.locator('#stream').setChecked(true);
  await api.locator('#run').click();
  await expect(api.locator('.output').first()).not.toBeEmpty({ timeout: 60_000 });
  await api.locator('#abort').click();
  await expect(api.locator('#result')).toContainText('"aborted": true', { timeout: 30_000 });
  await expect(page.locator('#api-status')).toContainText(new RegExp(`0 in flight .* engine: 0 running .*, ${available} of \\d+ KV pages available`), { timeout: 10_000 });

  // A bad body: an OpenAI-shaped 400.
  const bad = await api.evaluate(async () => {
    const res = await fetch('/v1/chat/completions', { method: 'POST', body: '{"messages": [' });
    return { status: res.status, body: await res.json() };
  });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ type: 'invalid_request_error' });
  // No page holding an engine: a 503 that says what to open.
  await page.close();
  await api.locator('#models').click();
  await expect(api.locator('#result')).toContainText('"status": 503', { timeout: 30_000 });
  await expect(api.locator('#result')).toContainText("open the assistant (this site's main page)");
});

test('the endpoint answers this site only: another origin\'s form POST and link get a 403, its no-cors fetch never reaches the worker', async ({ page, context }) => {
  // The engine page is open and serving, so a relay that did not check the requester would answer with the model.
  await openAssistant(page, 'foreign', `${hub.url}/test/stories-chat/resolve/main/`);
  await expect.poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
  // Another site (localhost is not 127.0.0.1: another origin and another site): a form that POSTs a text/plain body
  // shaped as JSON into the assistant's scope, the classic cross-site request, and a no-cors fetch of the endpoint.
  const body = { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, pad: '' };
  const field = JSON.stringify(body).slice(0, -2); // ..."pad":"  then '=' and the value '"}': JSON again
  const foreign = await startPage(`<!doctype html><meta charset="utf-8"><title>another site</title>
    <form method="POST" enctype="text/plain" action="${APP}v1/chat/completions"><input name='${field}' value='"}'><button>go</button></form>`);
  try {
    const attacker = await context.newPage();
    await attacker.goto(foreign.url.replace('127.0.0.1', 'localhost'));
    const noCors = attacker.waitForResponse((r) => r.url() === `${APP}v1/chat/completions`);
    const sent = await attacker.evaluate(async (url) => {
      const res = await fetch(url, { method: 'POST', mode: 'no-cors', body: '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":4}' });
      return res.type;
    }, `${APP}v1/chat/completions`);
    expect(sent).toBe('opaque');
    // The no-cors fetch is another site's subresource request: the assistant's Service Worker never sees it, and the
    // static server behind it holds no model.
    expect((await noCors).fromServiceWorker()).toBe(false);

    const navigation = attacker.waitForResponse((r) => r.url() === `${APP}v1/chat/completions` && r.request().isNavigationRequest());
    await attacker.locator('button').click();
    const res = await navigation;
    expect(res.status()).toBe(403);
    const error = JSON.parse(await res.text()).error;
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'cross_origin' });
    expect(error.message).toMatch(/came from http:\/\/localhost:\d+: call it from a page of http:\/\/127.0.0.1:4319/);
    // A link from another site carries no Origin: refused as a navigation.
    await attacker.goto(foreign.url.replace('127.0.0.1', 'localhost'));
    const linked = attacker.waitForResponse((r) => r.url() === `${APP}v1/models` && r.request().isNavigationRequest());
    await attacker.evaluate((url) => void (location.href = url), `${APP}v1/models`);
    const link = await linked;
    expect(link.status()).toBe(403);
    expect(JSON.parse(await link.text()).error).toMatchObject({ type: 'invalid_request_error', code: 'navigation' });
    await attacker.close();
    // Nothing was relayed to the engine page; its own fetch still is.
    await expect(page.locator('#api-status')).toHaveText('Endpoint idle.');
    const own = await page.evaluate(async (b) => (await fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify(b) })).status, body);
    expect(own).toBe(200);
    await expect(page.locator('#api-status')).toContainText('Endpoint: 1 served');
  } finally {
    await foreign.close();
  }
});

test('two tabs loading one model at once download it once', async ({ context }) => {
  const before = await modelGets();
  const [a, b] = [await context.newPage(), await context.newPage()];
  await Promise.all([openAssistant(a, 'two-tabs'), openAssistant(b, 'two-tabs')]);
  expect(await modelGets()).toBe(before + 1);
  const statuses = [await a.locator('#model-status').textContent(), await b.locator('#model-status').textContent()];
  expect(statuses.filter((s) => s?.includes('downloaded 1 MiB'))).toHaveLength(1);
  expect(statuses.filter((s) => s?.includes('from the model store (verified)'))).toHaveLength(1);
});
