// The engine behind `intab serve --runtime chromium`: one headless Chromium page (packages/cli/page/serve.ts) holds the
// model on the browser's WebGPU (or onnxruntime-web), and this bridge reaches it over a WebSocket on loopback (a secret
// path; the page connects to it). The bridge is the page Engine's pull-based calls (start, next, cancel, stats)
// remoted, one message each way per call, and serve-engine.ts's pullStreams turns them into the OpenAIEngine the server
// serves, exactly as it does for the Engine in Node: a chunk is asked of the page only when the server pulls it, and an
// abort cancels the request in the page, which frees its pages before it answers. One message per chunk is fast enough
// for dozens of streams (no CDP round trips, which page.evaluate per chunk would cost).
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Chunk, EmbedRequest, EmbedResult, EngineStats, GenerateRequest, RerankRequest, RerankResult } from '@intab/engine/contract';
import { base64ToVector } from 'intab';
import { deserializeError, isSerializedError } from '@intab/engine/errors';
import { openPage, type OpenPage } from './browser.ts';
import { progressLine } from './records.ts';
import { pullStreams, type ServeEngine, type ServeEngineOptions } from './serve-engine.ts';

/** The page's serialized error for a bridge that is gone (EngineClosedError: the server answers 503). */
function closedError(why: string) {
  return { __intabError: 1, name: 'EngineClosedError', message: `The engine is gone (${why}): restart intab serve.`, fields: { reason: 'destroyed' } };
}

/** An error the page sent, as its class (InvalidRequestError, EngineClosedError, ...), so the OpenAI core maps it. */
function revive(data: unknown): Error {
  return isSerializedError(data) ? deserializeError(data) : new Error(String(data));
}

/**
 * Loads the model in headless Chromium and connects to it.
 * @example
 * const engine = await startChromiumEngine({ model: resolveModel('m.gguf'), name: 'm', backend: 'webgpu', ... });
 */
export async function startChromiumEngine(o: ServeEngineOptions): Promise<ServeEngine> {
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
  let onDied = (_e: Error) => {};
  const died = new Promise<Error>((resolve) => (onDied = resolve));
  let onReady: (info: ServeEngine['info']) => void = () => {};
  let onFail: (e: Error) => void = () => {};
  const ready = new Promise<ServeEngine['info']>((resolve, reject) => {
    onReady = resolve;
    onFail = reject;
  });
  ready.catch(() => {});
  let closing = false;
  const die = (why: string) => {
    if (dead) return;
    dead = why;
    for (const p of pending.values()) p.reject(revive(closedError(why)));
    pending.clear();
    onFail(new Error(`the engine page ${why}`));
    if (!closing) onDied(new Error(`the engine page ${why}`));
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
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      closing = true;
      die('was closed');
      for (const c of wss.clients) c.terminate();
      await new Promise((resolve) => wss.close(() => resolve(undefined)));
      await page?.close();
    })());
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
    return {
      runtime: 'chromium',
      model: o.name,
      info,
      ...pullStreams({
        start: (request: GenerateRequest): Promise<number> => call('start', { request }),
        next: (sid: number): Promise<Chunk> => call('next', { sid }),
        cancel: (sid: number): Promise<void> => call('cancel', { sid }),
      }),
      // (An abort does not cross the bridge: the page embeds or ranks the inputs it was given, and the answer is dropped.)
      embed: async (request: EmbedRequest): Promise<EmbedResult> => {
        const r = await call('embed', { request });
        return { ...r, embeddings: (r.embeddings as string[]).map(base64ToVector) };
      },
      rerank: (request: RerankRequest): Promise<RerankResult> => call('rerank', { request }),
      stats: (): Promise<EngineStats> => call('stats'),
      alive: () => !dead,
      died,
      close,
    };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}
