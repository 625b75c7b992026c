// The public types of an engine a web app holds: createEngine()'s options, the IntabEngine it returns (generate,
// chat.completions, preload, saveCache, the device state, restart, destroy), the options of one request and a
// preloaded prefix's handle. Types only: engine-facade.ts implements IntabEngine, engine.ts creates it.

import type { Chunk, EmbedRequest, EmbedResult, EngineState, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, PreloadInfo, PreloadRequest, RerankRequest, RerankResult, SaveCacheResult } from '@intab/engine/contract';
import type { RemoteOptions } from './remote/http.ts';
import type { ModelInput } from './model-source.ts';
import type { ModelStore } from './store/model-store.ts';
import type { CreateEmbeddingResponse, EmbeddingCreateParams } from './openai-embeddings.ts';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParams, ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from './openai.ts';

export interface CreateEngineOptions extends Omit<LoadOptions, 'draft'> {
  /**
   * A GGUF URL, a Hugging Face id (`org/name`, with `file` for a GGUF in it), a GGUF File, or a folder's Files.
   * Optional with `remote`: without it the engine is the remote server's.
   */
  model?: ModelInput;
  /**
   * An OpenAI-compatible server (vLLM, SGLang, llama.cpp's server, `intab serve`, a hosted API) behind the same
   * IntabEngine: requests stream from its `/v1/chat/completions` (messages) or `/v1/completions` (prompt, ids) with
   * SSE, with connect, first-byte and idle timeouts, and retries before the first token. With `model` too, `prefer`
   * picks where requests run.
   * @example
   * const engine = await createEngine({ remote: { baseURL: 'http://localhost:8000/v1', model: 'Qwen/Qwen3-0.6B', apiKey } });
   */
  remote?: RemoteOptions;
  /**
   * With both `model` and `remote`: 'local' ['local'] runs the model in this tab when WebGPU and memory allow (and the
   * local load succeeds), else on the server; 'remote' runs on the server while it answers, else locally.
   * engine.info.route says which ran and why.
   */
  prefer?: 'local' | 'remote';
  /**
   * A smaller model with the same tokenizer, for speculative decoding (same kinds of input as `model`; a
   * Hugging Face id here loads its safetensors checkpoint, or `{ id, file }` a GGUF in it). Requests then
   * speculate with it by default ('auto'); a vocabulary that differs from the model's is a DraftMismatchError.
   */
  draft?: ModelInput;
  /** With a Hugging Face id: the GGUF file in the repository (else its safetensors checkpoint is loaded). */
  file?: string;
  /** With a Hugging Face id: branch, tag or commit [main]. */
  revision?: string;
  /** The name chat completions report as `model` [derived from `model`]. */
  name?: string;
  /** Run the engine in a dedicated module Worker [true]; false runs it on this thread (tests, workers of your own). */
  worker?: boolean;
  /**
   * 'origin': one engine for every tab and window of this origin that asks for the same model with the same settings
   * (backend, quantize, cpuKernels, cpuThreads, kvBudgetBytes, maxBatch, maxTokensPerStep, maxQueuedChunks, speculative, prefixCache, draft).
   * The first tab loads it in the origin's SharedWorker; later tabs attach to it at once, loading nothing. Requests of
   * all tabs share its steps, fairly between tabs, and its prefix cache; a tab that closes ends its own requests and
   * frees their pages. Where the browser has no SharedWorker (or its SharedWorker no WebGPU), one tab is elected host
   * by a Web Lock and the others reach its Worker over a BroadcastChannel; when that tab goes, the next one takes over
   * (the model from the store) and requests running on the old host end with EngineHostLostError. For a File or folder
   * input, or `worker: false`, the tab gets its own engine. `info.share` says which. [false: this tab's own engine]
   */
  share?: 'origin' | false;
  /**
   * With `share: 'origin'`: whether this tab, once attached to the origin's shared engine, answers the OpenAI requests
   * the origin's Service Worker relays (`relayOpenAI` from 'intab/service-worker') by itself, as `serveOpenAI(engine)`
   * would, until `destroy()`. Then any page of the origin, intab or not, gets answers from `/v1` while one tab holds or
   * attaches to the engine, and all of them share its steps. Calling serveOpenAI(engine) too still answers each
   * request once (yours is preferred: its `onRequest` sees them). A tab that got its own engine (`info.share.mode`
   * 'own') does not serve by itself; call serveOpenAI(engine) there. [true]
   * @example
   * // /v1 is then answered only by pages that call serveOpenAI(engine)
   * const engine = await createEngine({ model, share: 'origin', serveOpenAI: false });
   */
  serveOpenAI?: boolean;
  /**
   * Keep the model's files in the model store [true where the OPFS or the Cache API exists]: the first load
   * downloads them (resuming an interrupted download, checking every file's SHA-256), later loads read them from
   * disk and check them again. false streams the model from the network each time.
   */
  cache?: boolean;
  /** The store to use [modelStore, this origin's]. */
  store?: ModelStore;
  /**
   * Called as the model loads: `phase` 'download' (bytes, speed, ETA; files), 'verify' (stored files' hashes), then
   * 'upload' (weights to the GPU).
   */
  onProgress?: (p: LoadProgress) => void;
}

/** A preloaded prefix, pinned in the prefix cache until released. */
export interface Preloaded extends PreloadInfo {
  /** Unpins the prefix (its pages stay cached until pages run short). Idempotent. */
  release(): Promise<void>;
}

/** Options of one request; the signal is always last. */
export interface RequestOptions {
  /**
   * Aborting it stops the request between two steps and frees its pages. generate() then ends with a last chunk whose
   * finishReason is 'abort'; chat.completions.create() behaves as OpenAI's client does: a stream throws the signal's
   * reason (an AbortError unless you gave one) after the chunks before it, a non-streaming call rejects with it.
   */
  signal?: AbortSignal;
}

/** The OpenAI-style `chat.completions` namespace. */
export interface ChatCompletions {
  /**
   * OpenAI's `chat.completions.create`: with `stream: true` an async iterable of `chat.completion.chunk`
   * objects, else one `chat.completion`. The request starts before the promise resolves, so invalid
   * requests reject it.
   * @example
   * const stream = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi!' }], stream: true });
   * for await (const chunk of stream) out.textContent += chunk.choices[0]?.delta.content ?? '';
   */
  create(body: ChatCompletionCreateParamsStreaming, options?: RequestOptions): Promise<AsyncIterable<ChatCompletionChunk>>;
  create(body: ChatCompletionCreateParamsNonStreaming, options?: RequestOptions): Promise<ChatCompletion>;
  create(body: ChatCompletionCreateParams, options?: RequestOptions): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
}

/** The OpenAI-style `embeddings` namespace (an embedding model: ModelInfo.embedding). */
export interface Embeddings {
  /**
   * OpenAI's `embeddings.create`: one vector per input, as lists of numbers or (`encoding_format: 'base64'`) base64 of
   * their f32 bytes. Inputs of concurrent calls share the encoder's passes. A chat model rejects it with ModelKindError.
   * @example
   * const { data } = await engine.embeddings.create({ input: ['How do I reset my password?', 'Billing and invoices'] });
   * const [q, doc] = data.map((d) => d.embedding as number[]);
   */
  create(body: EmbeddingCreateParams, options?: RequestOptions): Promise<CreateEmbeddingResponse>;
}

/** A loaded model, ready for requests. Many requests may run at once: they share each GPU step. */
export interface IntabEngine {
  /** What was loaded. */
  readonly info: ModelInfo;
  /** The name chat completions report as `model`. */
  readonly model: string;
  /** Whether the engine runs in a Worker. */
  readonly inWorker: boolean;
  /**
   * Streams a completion as the worker produces it; each chunk holds everything since the previous pull.
   * The request starts on the first pull. `break` cancels it; aborting the signal ends it with
   * finishReason 'abort'.
   * @example
   * for await (const chunk of engine.generate({ prompt: 'Once upon a time', maxTokens: 64 }, { signal })) {
   *   out.textContent += chunk.text;
   *   if (chunk.finishReason) console.log(chunk.finishReason, chunk.metrics?.decodeTokensPerSecond);
   * }
   */
  generate(request: GenerateRequest, options?: RequestOptions): AsyncIterable<Chunk>;
  readonly chat: { readonly completions: ChatCompletions };
  /** OpenAI's embeddings API, for an embedding model (info.embedding). */
  readonly embeddings: Embeddings;
  /**
   * The engine's own embeddings call: one Float32Array per input, pooled and normalised as the model says (see
   * EmbedRequest: texts or token ids, `dimensions`, `truncate`). A chat model rejects it with ModelKindError.
   * @example
   * const { embeddings: [a, b] } = await engine.embed({ input: ['first note', 'second note'] });
   */
  embed(request: EmbedRequest, options?: RequestOptions): Promise<EmbedResult>;
  /**
   * Scores documents against a query with a reranker (a cross-encoder: info.rerank), best first (see RerankRequest:
   * `topN`, `truncate`). Any other model rejects it with ModelKindError.
   * @example
   * const { results } = await engine.rerank({ query: 'How do I reset my password?', documents: notes.map((n) => n.text), topN: 3 });
   * const best = notes[results[0].index];
   */
  rerank(request: RerankRequest, options?: RequestOptions): Promise<RerankResult>;
  /**
   * Prefills a prefix and pins it in the prefix cache: a system prompt (`{ messages }`, rendered up to the end of
   * the messages), text or token ids. Requests that start with it skip its prefill, so their time to first token
   * is that of their own tokens.
   * @example
   * const system = { role: 'system', content: 'You are a terse assistant.' };
   * const pinned = await engine.preload({ messages: [system] });
   * await engine.chat.completions.create({ messages: [system, { role: 'user', content: 'Hi' }] }); // usage.prompt_tokens_details.cached_tokens
   * await pinned.release();
   */
  preload(request: PreloadRequest, options?: RequestOptions): Promise<Preloaded>;
  /** The prefixes createEngine's `preload` pinned. */
  readonly preloaded: readonly Preloaded[];
  /**
   * Writes the pinned prefixes (with `all: true`, every cached page) to the origin's private file system; the next
   * createEngine() of the same model restores them instead of prefilling (`restoreCache`, on by default).
   * @example
   * await engine.preload({ messages: [system] });
   * const { pages, bytes } = await engine.saveCache();
   */
  saveCache(options?: { all?: boolean }): Promise<SaveCacheResult>;
  /**
   * Streams, pages and prefix-cache figures (cached pages, hits and misses in tokens, evictions); for a shared engine,
   * its tabs (`share`); with createEngine's `stepLog: N`, the scheduler's last N steps (`stepLog`: each step's number
   * and what each request did in it: admitted, prefilled a chunk, emitted tokens, finished).
   * @example
   * const { running, waiting, stepLog } = await engine.stats();
   */
  stats(): Promise<EngineStats>;
  /**
   * 'ready'; 'recovering' after the GPU device was lost (a GPU-process crash, a driver reset): requests in flight ended
   * with finishReason 'error' and a DeviceLostError, and the model is reloading on a new device (from the model store
   * when it is there), requests sent meanwhile wait for it; 'failed' when the device was lost again soon after, or no
   * new device could be had: requests fail with a DeviceRecoveryError until restart().
   */
  readonly state: EngineState;
  /** The state with the device's history: losses, recoveries, the last recovery's ms, and the error while not ready. */
  readonly status: EngineStatus;
  /**
   * Fires 'recovering', 'ready' (after a recovery) and 'failed' as the state changes; `event.detail` is the status.
   * @example
   * engine.addEventListener('recovering', () => (banner.textContent = 'The GPU restarted: reloading the model…'));
   * engine.addEventListener('ready', (e) => (banner.textContent = `Back after ${Math.round(e.detail.recoveryMs ?? 0)} ms`));
   */
  addEventListener(type: EngineState, listener: (event: CustomEvent<EngineStatus>) => void, options?: boolean | AddEventListenerOptions): void;
  removeEventListener(type: EngineState, listener: (event: CustomEvent<EngineStatus>) => void, options?: boolean | EventListenerOptions): void;
  /**
   * Brings the engine back after its worker died (WorkerError: terminated, or killed by the browser for memory) or when
   * you want a fresh one: requests in flight end with WorkerError, a new worker loads the same model (from the model
   * store when it is there) and the same options, and later requests run on it. Resolves once it is loaded.
   * @example
   * try { for await (const c of engine.generate(req)) show(c.text); }
   * catch (e) { if (e instanceof WorkerError) await engine.restart(); }
   */
  restart(): Promise<void>;
  /**
   * Frees every GPU resource and ends the worker; pending and later calls reject with EngineClosedError.
   * Idempotent.
   * @example
   * await engine.destroy();
   */
  destroy(): Promise<void>;
}
