// The engine behind `intab serve --runtime node` (the default): @intab/engine's Engine in this process, on intab's
// WebGPU kernels through Dawn where Dawn finds a hardware adapter, else on onnxruntime-node's CPU execution provider
// (backend.ts: the browser's `auto` rule). No browser, no Vite, no bridge: the server pulls the Engine's chunks
// directly (serve-engine.ts's pullStreams), so backpressure and cancellation are the Engine's own. The model is read
// from disk (or from its URLs) as the Node runtime reads it.

import { Engine, loadEncoderModel, openModels, type ModelInfo } from '@intab/engine';
import { isEmbeddingModelFiles, type EmbeddingModelFiles } from '@intab/model';
import type { Gpu } from '@intab/gpu';
import { withChatTemplate } from '../page/chat-template.ts';
import { loadEngine, setReportSink } from '../page/shared.ts';
import { progressLine } from '../src/records.ts';
import { pullStreams, type ServeEngine, type ServeEngineOptions } from '../src/serve-engine.ts';
import { chooseNodeBackend, type NodeBackendChoice } from './backend.ts';
import { DAWN_BACKENDS } from './dawn.ts';
import type { DawnBackend } from './errors.ts';
import { openAnyOnDisk } from './model-source.ts';

/**
 * Loads the model into an Engine in this process and returns it as the server's engine. Throws what the load throws
 * (DawnUnavailableError for --backend webgpu without an adapter, OrtNodeUnavailableError, a model's own errors).
 * @example
 * const engine = await startNodeEngine({ model: resolveModel('m.gguf'), name: 'm', backend: 'auto', maxBatch: 16, ... });
 * for await (const c of engine.generate({ prompt: 'Once', maxTokens: 8 })) process.stdout.write(c.text);
 */
export async function startNodeEngine(o: ServeEngineOptions): Promise<ServeEngine> {
  const dawnBackend = (o.dawnBackend ?? 'auto') as DawnBackend;
  if (!DAWN_BACKENDS.includes(dawnBackend)) throw new Error(`--dawn-backend takes ${DAWN_BACKENDS.join(', ')}`);
  const files = await openAnyOnDisk(o.model);
  // An embedding model or a reranker: its encoder answers POST /v1/embeddings or /v1/rerank (and refuses completions with a 400 wrong_model_kind).
  const opened = isEmbeddingModelFiles(files) ? undefined : await openModels(async () => files, o.model);
  let gpu: Gpu | undefined;
  const choice = await chooseNodeBackend(o.backend, opened?.model, {
    backend: dawnBackend,
    dawnPath: o.dawnPath,
    adapter: o.adapter,
    threads: o.threads,
    onLost: (e) => o.log(`intab serve: ${e.name}: ${e.message}`),
  });
  if (choice.name === 'webgpu') gpu = choice.gpu;
  const tokenizer = opened && withChatTemplate(opened.tokenizer, o.chatTemplate);
  let engine: Engine;
  let info: ServeEngine['info'];
  // The load reports its progress through the page code's report channel: here, lines on the server's log.
  setReportSink((r) => {
    const rec = r as { type?: string; loaded: number; total: number };
    if (rec.type === 'progress') o.log(progressLine(rec).trimEnd());
  });
  try {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`the model did not load within ${o.loadTimeoutMs / 1000} s`)), o.loadTimeoutMs).unref());
    const loaded = await Promise.race([
      !opened ? loadEncoderEngine(choice, files as EmbeddingModelFiles, o) : loadEngine(choice, { quantize: o.quantize, backend: o.backend }, { ...opened, tokenizer }, {
        maxBatch: o.maxBatch,
        kvBudgetBytes: o.kvBudgetBytes,
        maxQueuedChunks: o.maxQueuedChunks,
        seed: o.seed,
        prefixCache: o.prefixCache,
        restoreCache: false,
      }),
      timeout,
    ]);
    engine = loaded.engine;
    info = opened ? { ...loaded.info, hasChatTemplate: tokenizer?.chatTemplate !== undefined } : loaded.info;
  } catch (err) {
    gpu?.destroy();
    throw err;
  } finally {
    setReportSink(undefined);
  }

  let closed: Promise<void> | undefined;
  // A lost device the engine could not recover from: nothing can be served any more (the page's crash, in Node).
  let onDied = (_e: Error) => {};
  const died = new Promise<Error>((resolve) => (onDied = resolve));
  void gpu?.lost.then((e) => {
    if (!closed) onDied(e);
  });
  return {
    runtime: 'node',
    model: o.name,
    info,
    ...pullStreams(engine),
    embed: (request, options = {}) => engine.embed(request, options.signal),
    rerank: (request, options = {}) => engine.rerank(request, options.signal),
    stats: async () => engine.stats(),
    alive: () => closed === undefined && !(gpu?.destroyed ?? false),
    died,
    close: () =>
      (closed ??= (async () => {
        await engine.destroy();
        gpu?.destroy();
      })()),
  };
}

/** An embedding model's engine: its encoder on the chosen backend (intab's kernels on Dawn, or onnxruntime-node). */
async function loadEncoderEngine(choice: NodeBackendChoice, files: EmbeddingModelFiles, o: ServeEngineOptions): Promise<{ engine: Engine; info: ModelInfo }> {
  const { encoder, tokenizer, info } = await loadEncoderModel(files, choice, { quantize: o.quantize });
  return { engine: new Engine({ encoder, tokenizer, info }), info };
}
