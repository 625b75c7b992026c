// The offline assistant (examples/pwa, built and served by scripts/pwa.mjs) as its users meet it, with the model
// served by a local hub server (packages/intab/src/store/test-server.mjs, started here): the first visit online
// downloads the model into the store; with the network off, a reload opens from the Service Worker's precache,
// loads the model from the store and answers (streamed, stopped, a second turn). The Service Worker's OpenAI
// endpoint: the official openai client on the API page streams (and not) from the assistant's tab, an abort frees
// the engine's sequence, four clients at once share engine steps, a bad body is a 400 and no engine page a 503; another
// origin's form POST or link into the scope is a 403 and its no-cors fetch never reaches the Service Worker.
// Two tabs loading one model at once download it once. Notes by meaning: with an embedding model (a seeded
// all-MiniLM-shaped GGUF from `intab make-model`), stored on the first visit beside the chat model, offline: the notes
// of an older version's database are kept and embedded, a note added by hand (from a file) is found by meaning and shows
// in the app's other window, search_notes returns its passage and the answer cites it, and deleting a note deletes its
// vectors (IndexedDB read from the page).
import { expect, test, type Locator, type Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHubServer } from '@intab/testing/hub-server';
import { storiesChatFolder, toolsChatFolder } from './chat-model.ts';
import { streamThenStop } from './chat-steps.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORIES = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
/** playwright.config.ts serves the assistant here (PWA_PORT). */
const APP = 'http://127.0.0.1:4319/';

let hub: { url: string; close(): Promise<void> };
test.beforeAll(async () => {
  // A chat model for the endpoint: stories260K's Hugging Face folder with a tiny ChatML tokenizer.
  // An embedding model: all-MiniLM-L6's shape cut to 2 layers, seeded weights, its WordPiece vocabulary inside (texts
  // that share most words get close vectors; meaning beyond that it has none).
  const minilm = mkdtempSync(join(tmpdir(), 'intab-pwa-minilm-'));
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'intab.mjs'), 'make-model', '--like', 'all-minilm-l6', '--layers', '2', '--dtype', 'f32', '--out', join(minilm, 'all-minilm-l6.gguf')], { cwd: ROOT, stdio: 'pipe' });
  hub = await startHubServer({ 'test/stories': STORIES, 'test/stories-chat': storiesChatFolder(STORIES), 'test/tools': toolsChatFolder(STORIES), 'test/minilm': minilm });
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

/** The notes and passages in the assistant's IndexedDB, read from the page (a database it has not created: nothing). */
async function storedNotes(page: Page): Promise<{ notes: string[]; chunks: { noteId: string; text: string; dims: number; model: string }[] }> {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const open = indexedDB.open('intab-assistant');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const out = { notes: [] as string[], chunks: [] as { noteId: string; text: string; dims: number; model: string }[] };
          const tx = db.transaction(['notes', 'chunks']);
          tx.objectStore('notes').getAll().onsuccess = (e) => (out.notes = ((e.target as IDBRequest).result as { title: string }[]).map((n) => n.title));
          tx.objectStore('chunks').getAll().onsuccess = (e) =>
            (out.chunks = ((e.target as IDBRequest).result as { noteId: string; text: string; vector: Float32Array; model: string }[]).map((c) => ({ noteId: c.noteId, text: c.text, dims: c.vector.length, model: c.model })));
          tx.oncomplete = () => {
            db.close();
            resolve(out);
          };
        };
      }),
  );
}

/** A tool call's result box, parsed (its text is `label: JSON`). */
async function resultOf(call: Locator): Promise<Record<string, unknown>> {
  const text = (await call.locator('.tool-result').textContent())!;
  return JSON.parse(text.slice(text.indexOf(':') + 1));
}

test('notes by meaning, offline: kept from the old database and embedded, a note added by hand is found, cited, and deleted with its vectors', async ({ page, context }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const embed = `${hub.url}/test/minilm/resolve/main/all-minilm-l6.gguf`;
  const chat = `${hub.url}/test/tools/resolve/main/`;
  // The database as the assistant's version before embeddings left it (version 1: notes only), with one note.
  await page.goto(`${APP}api.html`);
  await page.evaluate(
    () =>
      new Promise<void>((resolve, reject) => {
        const open = indexedDB.open('intab-assistant', 1);
        open.onupgradeneeded = () => open.result.createObjectStore('notes', { keyPath: 'id' });
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const tx = open.result.transaction('notes', 'readwrite');
          tx.objectStore('notes').add({ id: 'old-note', title: 'Balcony plants', text: 'Water the balcony plants every Sunday morning before breakfast.', created: Date.parse('2026-01-02T09:00:00Z') });
          tx.oncomplete = () => (open.result.close(), resolve());
        };
      }),
  );

  // First visit online: both models into the store; the old note is kept and embedded.
  await page.goto(`${APP}?model=${encodeURIComponent(chat)}&embed=${encodeURIComponent(embed)}&tool_choice=search_notes`);
  await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
  await expect(page.locator('#embed-status')).toContainText('1 passage of 1 note indexed', { timeout: 120_000 });
  await expect(page.locator('#embed-status')).toContainText('Notes are searched by meaning: all-minilm-l6.gguf — bert, 384 dimensions');
  await expect(page.locator('#embed-status')).toContainText('into the model store');
  await expect(page.locator('#notes li span')).toHaveText(['Balcony plants']);
  const first = await storedNotes(page);
  expect(first.chunks).toEqual([{ noteId: 'old-note', text: 'Water the balcony plants every Sunday morning before breakfast.', dims: 384, model: `${embed}#chunks-v1` }]);

  // Offline: the app, the chat model and the embedding model all from this device.
  await context.setOffline(true);
  await page.reload();
  await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
  await expect(page.locator('#model-status')).toContainText('from the model store (verified)');
  await expect(page.locator('#embed-status')).toContainText('from the model store (verified) · 1 passage of 1 note indexed', { timeout: 120_000 });

  // Another window of the assistant (no model in it) lists the notes, and hears of the one added next.
  const other = await context.newPage();
  await other.goto(APP);
  await expect(other.locator('#notes li span')).toHaveText(['Balcony plants']);
  await expect(other.locator('#embed-status')).toContainText('No embedding model: notes are searched by keywords');

  // A note added by hand, of two paragraphs, from a Markdown file (its name the title); embedded at once.
  const locker = 'The gym locker combination is 4512, the locker by the showers.\n\nBring a towel and the blue padlock on Mondays.';
  await page.locator('#note-file').setInputFiles({ name: 'Gym locker.md', mimeType: 'text/markdown', buffer: Buffer.from(`${locker}\n`) });
  await expect(page.locator('#note-title')).toHaveValue('Gym locker');
  await expect(page.locator('#note-text')).toHaveValue(`${locker}\n`);
  await page.locator('#note-add').click();
  await expect(page.locator('#notes li span')).toHaveText(['Gym locker', 'Balcony plants']);
  await expect(page.locator('#embed-status')).toContainText('2 passages of 2 notes indexed');
  await expect(page.locator('#note-title')).toHaveValue('');
  await expect(other.locator('#notes li span')).toHaveText(['Gym locker', 'Balcony plants']);
  await other.close();
  // The sidebar's search ranks by meaning: the query shares most of its words with the locker note.
  await page.locator('#notes-search').fill('the gym locker combination by the showers');
  await page.locator('#notes-search').press('Enter');
  await expect(page.locator('#notes-found')).toHaveAttribute('data-by', 'meaning');
  await expect(page.locator('#notes-found .source')).toHaveText(['Gym locker', 'Balcony plants']);
  const scores = (await page.locator('#notes-found .score').allTextContents()).map(Number);
  expect(scores[0]).toBeGreaterThan(scores[1]);

  // Deleting the old note deletes its passage and vector, in the same transaction.
  await page.locator('#notes li', { hasText: 'Balcony plants' }).getByRole('button', { name: 'Delete' }).click();
  await expect(page.locator('#notes li span')).toHaveText(['Gym locker']);
  const afterDelete = await storedNotes(page);
  expect(afterDelete.notes).toEqual(['Gym locker']);
  expect(afterDelete.chunks.map((c) => c.text)).toEqual([locker]);
  const lockerId = afterDelete.chunks[0].noteId;

  // Asked about it, the first reply must call search_notes (the tiny model writes its own query); its result is the
  // note's passage, and the answer cites the note.
  await page.locator('#temperature').fill('0');
  await page.locator('#max-tokens').fill('300');
  await page.locator('#input').fill('What is the combination of my gym locker?');
  await page.locator('#send').click();
  await expect(page.locator('#send')).toBeHidden();
  await expect(page.locator('#send')).toBeVisible({ timeout: 180_000 });
  const replies = page.locator('.msg.assistant');
  const call = replies.first().locator('.tool-call').first();
  await expect(call.locator('.tool-name')).toHaveText('⚙ search_notes');
  await expect(call).toHaveClass(/\bdone\b/);
  const { result } = (await resultOf(call)) as { result: { query: string; by: string; found: number; results: { title: string; text: string; score?: number }[] } };
  console.log(JSON.stringify({ test: 'pwa-notes', query: result.query, by: result.by, found: result.found }));
  expect(result.results[0]).toMatchObject({ title: 'Gym locker', text: locker });
  if (result.query.trim()) {
    expect(result.by).toBe('meaning');
    expect(typeof result.results[0].score).toBe('number');
  }
  const sources = replies.last().locator('.sources');
  await expect(sources.locator('.sources-label')).toHaveText('Sources');
  await expect(sources.locator('a.source')).toHaveText(['Gym locker']);
  await sources.locator('a.source').click();
  await expect(page.locator(`#note-${lockerId}`)).toHaveClass(/\bcurrent\b/);
  await page.screenshot({ path: 'test-results/pwa-notes.png', fullPage: true });

  // Deleting the note deletes its vectors: nothing left.
  await page.locator(`#note-${lockerId}`).getByRole('button', { name: 'Delete' }).click();
  await expect(page.locator('#notes li')).toHaveCount(0);
  expect(await storedNotes(page)).toEqual({ notes: [], chunks: [] });
  await expect(page.locator('#embed-status')).toContainText('0 passages of 0 notes indexed');
  await context.setOffline(false);
  expect(errors).toEqual([]);
});
