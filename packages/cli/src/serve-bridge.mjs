// @ts-check
// The engine behind `intab serve`: one headless Chromium page (packages/cli/page/serve.ts) that holds the model, and
// the bridge to it, a WebSocket on loopback (a secret path; the page connects to it). The bridge is the EngineApi
// remoted, pull-based: open() starts a request and returns its chunks as an async iterator that asks the page for
// the next chunk only when it is itself pulled, so a consumer that stops pulling (its client's socket is full) stops
// the engine's output for that stream (the engine pauses the sequence and coalesces its tokens, nothing is dropped).
// An AbortSignal cancels the request in the page, which frees its pages before it answers. One message each way per
// chunk: fast enough for dozens of streams (no CDP round trips, which page.evaluate per chunk would cost).
import { randomBytes } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { openPage } from './browser.mjs';
import { progressLine } from './records.mjs';

/**
 * @typedef {{
 *   info: Record<string, any>,
 *   open: (request: unknown, signal: AbortSignal) => Promise<AsyncGenerator<any, void, undefined>>,
 *   stats: () => Promise<Record<string, any>>,
 *   alive: () => boolean,
 *   died: Promise<Error>,
 *   convert: typeof import('./serve-openai.ts'),
 *   close: () => Promise<void>,
 * }} EngineBridge
 */

/**
 * The page's serialized error for a bridge that is gone (EngineClosedError: the server answers 503).
 * @param {string} why
 */
function closedError(why) {
  return { __intabError: 1, name: 'EngineClosedError', message: `The engine is gone (${why}): restart intab serve.`, fields: { reason: 'destroyed' } };
}

/**
 * Loads the model in headless Chromium and connects to it.
 * @param {{
 *   model: { kind: 'gguf' | 'hf', dir?: string, files: string[], urls: string[] },
 *   backend: string, quantize?: string, maxBatch: number, kvBudgetBytes: number, maxQueuedChunks: number,
 *   prefixCache: boolean, seed: number, chatTemplate?: string, headed?: boolean, loadTimeoutMs: number,
 *   log: (line: string) => void,
 * }} o
 * @returns {Promise<EngineBridge>}
 */
export async function startEngine(o) {
  const secret = randomBytes(16).toString('hex');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: `/bridge/${secret}`, maxPayload: 64 << 20 });
  await new Promise((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const address = /** @type {import('node:net').AddressInfo} */ (wss.address());
  /** @type {import('ws').WebSocket | undefined} */
  let socket;
  let nextId = 0;
  /** @type {Map<number, { resolve: (v: any) => void, reject: (e: unknown) => void }>} */
  const pending = new Map();
  let dead = /** @type {string | undefined} */ (undefined);
  /** The page's errors as their classes, once serve-openai.ts is loaded. */
  let revive = (/** @type {unknown} */ e) => e;
  let onDied = (/** @type {Error} */ _e) => {};
  /** @type {Promise<Error>} */
  const died = new Promise((resolve) => (onDied = resolve));
  /** @type {(info: any) => void} */
  let onReady = () => {};
  /** @type {(e: Error) => void} */
  let onFail = () => {};
  const ready = new Promise((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  ready.catch(() => {});
  /** @param {string} why */
  const die = (why) => {
    if (dead) return;
    dead = why;
    for (const p of pending.values()) p.reject(revive(closedError(why)));
    pending.clear();
    onFail(new Error(`the engine page ${why}`));
    onDied(new Error(`the engine page ${why}`));
  };
  wss.on('connection', (ws) => {
    if (socket) return ws.close(1008, 'one engine page only');
    socket = ws;
    ws.on('message', (data) => {
      const m = JSON.parse(String(data));
      if (m.op === 'ready') return onReady(m.info);
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.ok) p.resolve(m.value?.error ? { ...m.value, error: revive(m.value.error) } : m.value);
      else p.reject(revive(m.error));
    });
    ws.on('close', () => die('closed its connection'));
  });

  const job = {
    kind: o.model.kind,
    files: o.model.files,
    urls: o.model.urls,
    backend: o.backend,
    quantize: o.quantize,
    bridge: `ws://127.0.0.1:${address.port}/bridge/${secret}`,
    maxBatch: o.maxBatch,
    kvBudgetBytes: o.kvBudgetBytes,
    maxQueuedChunks: o.maxQueuedChunks,
    prefixCache: o.prefixCache,
    seed: o.seed,
    chatTemplate: o.chatTemplate,
  };
  /** @type {Awaited<ReturnType<typeof openPage>> | undefined} */
  let page;
  const closeAll = async () => {
    die('was closed');
    for (const c of wss.clients) c.terminate();
    await new Promise((resolve) => wss.close(() => resolve(undefined)));
    await page?.close();
  };
  try {
    page = await openPage({
      path: '/packages/cli/page/serve.html',
      modelDir: o.model.dir,
      job,
      headed: o.headed,
      // intab serve drains on SIGINT/SIGTERM before it closes the browser itself.
      ownSignals: true,
      // A server's page is never in the foreground: its timers and work must not be throttled as a background tab's.
      args: ['--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
      onRecord(r) {
        if (r.type === 'error') onFail(new Error(`${r.name}: ${r.message}`));
        else if (r.type === 'progress') o.log(progressLine(r).trimEnd());
      },
    });
    page.failed.catch((e) => die(`failed: ${e.message}`));
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`the model did not load within ${o.loadTimeoutMs / 1000} s`)), o.loadTimeoutMs).unref());
    const [info, convert] = await Promise.all([
      Promise.race([ready, page.failed, timeout]),
      /** @type {Promise<typeof import('./serve-openai.ts')>} */ (page.server.ssrLoadModule('/packages/cli/src/serve-openai.ts')),
    ]);
    revive = convert.reviveError;

    /**
     * @param {string} op
     * @param {Record<string, unknown>} [args]
     * @returns {Promise<any>}
     */
    const call = (op, args = {}) => {
      if (dead || !socket) return Promise.reject(revive(closedError(dead ?? 'is not connected')));
      const id = nextId++;
      const ws = socket;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, op, ...args }));
      });
    };

    /** @type {EngineBridge['open']} */
    const open = async (request, signal) => {
      const sid = await call('start', { request });
      let over = false;
      /** @type {Promise<void> | undefined} */
      let cancelled;
      // Resolves once the page freed the request's pages (or the request was over anyway).
      const cancel = () => (cancelled ??= over ? Promise.resolve() : call('cancel', { sid }).catch(() => {}));
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
      return (async function* pull() {
        try {
          // After an abort, the pull in flight ends with the engine's 'abort' chunk; none is asked for after it.
          while (!over && !signal.aborted) {
            const chunk = await call('next', { sid });
            if (chunk.finishReason !== null) over = true;
            yield chunk;
          }
        } finally {
          signal.removeEventListener('abort', cancel);
          // Left early (aborted, the consumer broke off, an error): the request must not hold its pages.
          if (!over) await cancel();
        }
      })();
    };

    return {
      info: /** @type {Record<string, any>} */ (info),
      open,
      stats: () => call('stats'),
      alive: () => !dead,
      died,
      convert,
      close: closeAll,
    };
  } catch (err) {
    await closeAll().catch(() => {});
    throw err;
  }
}
