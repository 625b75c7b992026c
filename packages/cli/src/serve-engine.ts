// The engine behind `intab serve`, whichever runtime holds it: this Node process (--runtime node, the default:
// ../node/serve-engine.ts, on Dawn or onnxruntime-node) or a headless Chromium page (--runtime chromium:
// serve-bridge.ts). Either is an OpenAIEngine, what intab's one OpenAI core needs (model, info, generate, openStream),
// plus what a server needs besides: the engine's stats, whether it is alive, and close(). Both hold the same Engine and
// stream its chunks the same way (pullStreams): a request's next chunk is asked for only when the server pulls it, so a
// client that reads slowly stops its sequence in the engine (paused, its tokens coalesced), and an abort cancels the
// request, which frees its KV pages before the stream ends.

import type { Chunk, EngineStats, GenerateRequest, ModelInfo } from '@intab/engine/contract';
import type { OpenAIEngine } from 'intab';
import type { ServeJob } from '../page/serve.ts';
import type { ResolvedModel } from './model-files.ts';

/** Where the engine runs: in this Node process, or in headless Chromium. */
export type ServeRuntime = 'node' | 'chromium';
export const SERVE_RUNTIMES: readonly ServeRuntime[] = ['node', 'chromium'];

/** The engine as the server uses it. */
export interface ServeEngine extends OpenAIEngine {
  readonly runtime: ServeRuntime;
  /** The engine's ModelInfo (backend and why, adapter, contextLength, ...). */
  readonly info: ModelInfo;
  openStream(request: GenerateRequest, signal: AbortSignal): Promise<AsyncIterable<Chunk>>;
  stats(): Promise<EngineStats>;
  /** False once the engine is gone (its page died, or close()). */
  alive(): boolean;
  /** Resolves when the engine dies on its own (a page crash); never for close(). */
  died: Promise<Error>;
  /** Frees the engine (and its browser or GPU). Idempotent. */
  close(): Promise<void>;
}

/** What either runtime loads the engine with (startServer's options, checked). */
export interface ServeEngineOptions extends Pick<ServeJob, 'maxBatch' | 'kvBudgetBytes' | 'maxQueuedChunks' | 'prefixCache' | 'seed' | 'chatTemplate'> {
  model: ResolvedModel;
  /** The model's name, as /v1/models lists it. */
  name: string;
  backend: 'webgpu' | 'auto' | 'onnx-wasm' | 'onnx-webgpu';
  quantize?: 'q8_0' | 'q4_0';
  loadTimeoutMs: number;
  log: (line: string) => void;
  /** chromium: a visible browser window. */
  headed?: boolean;
  /** node: Dawn's backend ['auto'], dawn.node to load, adapter name; onnxruntime-node's threads. */
  dawnBackend?: string;
  dawnPath?: string;
  adapter?: string;
  threads?: number;
}

/**
 * Loads the model on `runtime` (each runtime's module is imported only when it is the one asked for).
 * @example
 * const engine = await startEngine('node', { model: resolveModel('m.gguf'), name: 'm', backend: 'auto', ... });
 */
export async function startEngine(runtime: ServeRuntime, o: ServeEngineOptions): Promise<ServeEngine> {
  if (runtime === 'node') return (await import('../node/serve-engine.ts')).startNodeEngine(o);
  return (await import('./serve-bridge.ts')).startChromiumEngine(o);
}

/** The pull-based calls of an EngineApi: an Engine in this process, or the page's over the bridge. */
export interface PullApi {
  /** Registers a request; refusals (a bad field, a prompt past the context) reject here. */
  start(request: GenerateRequest): Promise<number>;
  /** Everything the stream produced since the last pull (waits when nothing is ready). */
  next(id: number): Promise<Chunk>;
  /** Ends a stream early; resolves once its pages are freed. */
  cancel(id: number): Promise<void>;
}

/**
 * An OpenAIEngine's streams over a PullApi: openStream resolves once the engine accepted the request, and its chunks
 * are pulled one by one as they are read. Aborting the signal, or leaving the stream early, cancels the request.
 * @example
 * const { openStream, generate } = pullStreams(engine); // an Engine: start / next / cancel
 */
export function pullStreams(api: PullApi): Pick<ServeEngine, 'openStream' | 'generate'> {
  const openStream = async (request: GenerateRequest, signal: AbortSignal): Promise<AsyncIterable<Chunk>> => {
    signal.throwIfAborted();
    const id = await api.start(request);
    let over = false;
    let cancelled: Promise<void> | undefined;
    // Resolves once the engine freed the request's pages (or the request was over anyway).
    const cancel = () => (cancelled ??= over ? Promise.resolve() : api.cancel(id).catch(() => {}));
    if (signal.aborted) void cancel();
    else signal.addEventListener('abort', cancel, { once: true });
    return (async function* pull() {
      try {
        // After an abort, the pull in flight ends with the engine's 'abort' chunk; none is asked for after it.
        while (!over && !signal.aborted) {
          const chunk = await api.next(id);
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
  async function* generate(request: GenerateRequest, options: { signal?: AbortSignal } = {}): AsyncGenerator<Chunk, void, undefined> {
    yield* await openStream(request, options.signal ?? new AbortController().signal);
  }
  return { openStream, generate };
}
