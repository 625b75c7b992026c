// The engine behind `intab serve --runtime chromium`, in headless Chromium: this page loads the model once (as intab
// generate's page does: files served by the CLI with Range, the Engine in this thread on the chosen backend) and
// answers the server over a loopback WebSocket (the bridge, packages/cli/src/serve-bridge.ts). The bridge is the
// EngineApi, remoted, and pull-based: the server sends `start` (a GenerateRequest) and then one `next` per chunk it
// can write to its client, so a stream whose client reads slowly is not pulled, its engine queue fills and the engine
// pauses the sequence and coalesces its tokens. `cancel` frees the sequence's pages before it is answered. Every
// request shares the one engine's steps (continuous batching). OpenAI shapes are made on the Node side (intab's one
// OpenAI core, as for the Engine in Node); this page deals in engine requests and chunks only.
//
// Wire (JSON text frames), server → page: {id, op: 'start', request} | {id, op: 'next', sid} | {id, op: 'cancel', sid}
// | {id, op: 'stats'} | {id, op: 'embed', request} (answered with base64 vectors) | {id, op: 'rerank', request}; page → server: {id, ok: true, value} | {id, ok: false, error: SerializedError}, and once, after
// the load, {op: 'ready', info}.

import { requestGpu } from '@intab/gpu';
import { Engine, chooseBackend, loadEncoderModel, openModels, serializeError, type EmbedRequest, type RerankRequest, type GenerateRequest, type ModelInfo } from '@intab/engine';
import { isEmbeddingModelFiles } from '@intab/model';
import { vectorToBase64 } from 'intab';
import { withChatTemplate } from './chat-template.ts';
import { loadEngine, openAnyModel, report, type Job, type ModelRef } from './shared.ts';

/** What `intab serve` asks of the page (serve-bridge.ts builds it; browser.ts sets it as window.__intabJob). */
export interface ServeJob extends ModelRef, Pick<Job, 'quantize' | 'backend'> {
  /** The bridge's WebSocket URL (loopback, with its secret path). */
  bridge: string;
  /** Sequences in one engine step (continuous batching). */
  maxBatch: number;
  /** KV-cache bytes. */
  kvBudgetBytes: number;
  /** Chunks a sequence may queue before the engine pauses it (LoadOptions.maxQueuedChunks). */
  maxQueuedChunks: number;
  prefixCache: boolean;
  seed: number;
  /** A Jinja chat template that replaces (or stands in for) the model's own. */
  chatTemplate?: string;
}

type Request = { id: number; op: 'start'; request: GenerateRequest } | { id: number; op: 'embed'; request: EmbedRequest } | { id: number; op: 'rerank'; request: RerankRequest } | { id: number; op: 'next'; sid: number } | { id: number; op: 'cancel'; sid: number } | { id: number; op: 'stats' };

/** Answers one bridge request. */
async function answer(engine: Engine, m: Request): Promise<unknown> {
  switch (m.op) {
    case 'start':
      return engine.start(m.request);
    case 'next':
      return engine.next(m.sid);
    case 'cancel':
      // Resolves once the sequence's pages are freed; a stream that already ended is unknown here, which is fine.
      return engine.cancel(m.sid).then(() => null);
    case 'stats':
      return engine.stats();
    case 'embed': {
      // Vectors as base64 of their f32 bytes: a quarter of a JSON list's size, and exact.
      const r = await engine.embed(m.request);
      return { ...r, embeddings: r.embeddings.map(vectorToBase64) };
    }
    case 'rerank':
      return engine.rerank(m.request);
  }
}

async function main(): Promise<void> {
  const job = window.__intabJob as unknown as ServeJob | undefined;
  if (!job?.bridge) throw new Error('no job: this page is driven by intab serve');
  const files = await openAnyModel(job);
  let engine: Engine;
  let info: ModelInfo;
  if (isEmbeddingModelFiles(files)) {
    // An embedding model: its encoder answers /v1/embeddings (the server refuses completions with it).
    const loaded = await loadEncoderModel(files, await chooseBackend(job.backend ?? 'webgpu', undefined, requestGpu), { quantize: job.quantize });
    engine = new Engine({ encoder: loaded.encoder, tokenizer: loaded.tokenizer, info: loaded.info });
    info = loaded.info;
  } else {
    const opened = await openModels(async () => files, job);
    const backend = await chooseBackend(job.backend ?? 'webgpu', opened.model, requestGpu);
    const tokenizer = withChatTemplate(opened.tokenizer, job.chatTemplate);
    ({ engine, info } = await loadEngine(backend, job, { ...opened, tokenizer }, {
      maxBatch: job.maxBatch,
      kvBudgetBytes: job.kvBudgetBytes,
      maxQueuedChunks: job.maxQueuedChunks,
      seed: job.seed,
      prefixCache: job.prefixCache,
      restoreCache: false,
    }));
    info = { ...info, hasChatTemplate: tokenizer?.chatTemplate !== undefined };
  }
  const ws = new WebSocket(job.bridge);
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error(`the page could not reach the server's bridge at ${job.bridge}`));
  });
  const started = new Set<number>();
  ws.onmessage = (e: MessageEvent<string>) => {
    const m = JSON.parse(e.data) as Request;
    answer(engine, m).then(
      (value) => {
        if (m.op === 'start') started.add(value as number);
        else if (m.op === 'cancel' || (m.op === 'next' && (value as { finishReason: unknown }).finishReason !== null)) started.delete(m.sid);
        // A failed stream's last chunk carries its error (a lost GPU device...): sent as data, rebuilt by the bridge.
        const error = (value as { error?: unknown } | null)?.error;
        ws.send(JSON.stringify({ id: m.id, ok: true, value: error ? { ...(value as object), error: serializeError(error) } : value }));
      },
      (err: unknown) => {
        if (m.op === 'next') started.delete(m.sid);
        ws.send(JSON.stringify({ id: m.id, ok: false, error: serializeError(err) }));
      },
    );
  };
  // The server went away: nothing will pull these streams again.
  ws.onclose = () => {
    for (const sid of started) void engine.cancel(sid);
    started.clear();
  };
  ws.send(JSON.stringify({ op: 'ready', info }));
}

main().catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }));
