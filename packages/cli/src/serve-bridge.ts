// The engine behind `intab serve`: one headless Chromium page (packages/cli/page/serve.ts) that holds the model, and
// the bridge to it, a WebSocket on loopback (a secret path; the page connects to it). The bridge is the EngineApi
// remoted, pull-based: open() starts a request and returns its chunks as an async iterator that asks the page for
// the next chunk only when it is itself pulled, so a consumer that stops pulling (its client's socket is full) stops
// the engine's output for that stream (the engine pauses the sequence and coalesces its tokens, nothing is dropped).
// An AbortSignal cancels the request in the page, which frees its pages before it answers. One message each way per
// chunk: fast enough for dozens of streams (no CDP round trips, which page.evaluate per chunk would cost).
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Chunk, EngineStats } from '@intab/engine/contract';
import { openPage, type OpenPage } from './browser.ts';
import type { ResolvedModel } from './model-files.ts';
import { progressLine, type PageRecord } from './records.ts';
import * as convert from './serve-openai.ts';

/** The engine in the page, as the server uses it. */
export interface EngineBridge {
  /** The engine's ModelInfo (backend, adapter, contextLength, vocab, ...). */
  info: Record<string, any>;
  open: (request: unknown, signal: AbortSignal) => Promise<AsyncGenerator<Chunk, void, undefined>>;
  stats: () => Promise<EngineStats>;
  alive: () => boolean;
  died: Promise<Error>;
  /** The OpenAI conversions (serve-openai.ts). */
  convert: typeof convert;
  close: () => Promise<void>;
}

/** The page's serialized error for a bridge that is gone (EngineClosedError: the server answers 503). */
function closedError(why: string) {
  return { __intabError: 1, name: 'EngineClosedError', message: `The engine is gone (${why}): restart intab serve.`, fields: { reason: 'destroyed' } };
}

/** Loads the model in headless Chromium and connects to it. */
export async function startEngine(o: {
  model: ResolvedModel;
  backend: string;
  quantize?: string;
  maxBatch: number;
  kvBudgetBytes: number;
  maxQueuedChunks: number;
  prefixCache: boolean;
  seed: number;
  chatTemplate?: string;
  headed?: boolean;
  loadTimeoutMs: number;
  log: (line: string) => void;
}): Promise<EngineBridge> {
  const secret = randomBytes(16).toString('hex');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: `/bridge/${secret}`, maxPayload: 64 << 20 });
  await new Promise((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  const address = wss.address() as AddressInfo;
  let socket: WebSocket | undefined;
  let nextId = 0;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: unknown) => void }>();
  let dead: string | undefined;
  /** The page's errors as their classes. */
  const revive = convert.reviveError;
  let onDied = (_e: Error) => {};
  const died = new Promise<Error>((resolve) => (onDied = resolve));
  let onReady: (info: Record<string, any>) => void = () => {};
  let onFail: (e: Error) => void = () => {};
  const ready = new Promise<Record<string, any>>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  ready.catch(() => {});
  const die = (why: string) => {
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
  let page: OpenPage | undefined;
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
        else if (r.type === 'progress') o.log(progressLine(r as { loaded: number; total: number }).trimEnd());
      },
    });
    page.failed.catch((e) => die(`failed: ${e.message}`));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the model did not load within ${o.loadTimeoutMs / 1000} s`)), o.loadTimeoutMs).unref());
    const info = await Promise.race([ready, page.failed, timeout]);

    const call = (op: string, args: Record<string, unknown> = {}): Promise<any> => {
      if (dead || !socket) return Promise.reject(revive(closedError(dead ?? 'is not connected')));
      const id = nextId++;
      const ws = socket;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, op, ...args }));
      });
    };

    const open: EngineBridge['open'] = async (request, signal) => {
      const sid = await call('start', { request });
      let over = false;
      let cancelled: Promise<void> | undefined;
      // Resolves once the page freed the request's pages (or the request was over anyway).
      const cancel = () => (cancelled ??= over ? Promise.resolve() : call('cancel', { sid }).catch(() => {}));
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
      return (async function* pull() {
        try {
          // After an abort, the pull in flight ends with the engine's 'abort' chunk; none is asked for after it.
          while (!over && !signal.aborted) {
            const chunk: Chunk = await call('next', { sid });
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
      info,
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
