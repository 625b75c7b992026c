// createEngine() and the IntabEngine a web app holds: it spawns the module worker (or runs the same
// EngineApi on this thread), loads the model, and turns the pull-based EngineApi (start / next / cancel)
// into `for await` streams whose `break` cancels and whose AbortSignal ends them with finishReason 'abort',
// plus the OpenAI-compatible `chat.completions.create`. A worker that dies or an engine that is destroyed
// rejects every pending call instead of leaving it hanging.

import * as Comlink from 'comlink';
import type { Chunk, EngineApi, EngineState, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, ModelSource, PreloadInfo, PreloadRequest, SaveCacheResult } from '@intab/engine/contract';
import { EngineClosedError, EngineStateError } from '@intab/engine/errors';
import { registerTransferHandlers, releaseSignal } from '@intab/engine/transfer';
import { RemoteEngineApi } from './remote/api.ts';
import { RemoteConnectionError, RemoteHttpError, RemoteTimeoutError } from './remote/errors.ts';
import type { RemoteOptions } from './remote/http.ts';
import { localFacts, localVerdict, sourceBytes } from './route.ts';
import { isHfId, resolveModelSource, type ModelInput } from './model-source.ts';
import { modelName } from './model-name.ts';
import { modelStore, type ModelStore } from './store/model-store.ts';
import {
  completionId,
  ignoredFields,
  toChatCompletion,
  toChatCompletionChunks,
  toGenerateRequest,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParams,
  type ChatCompletionCreateParamsNonStreaming,
  type ChatCompletionCreateParamsStreaming,
} from './openai.ts';
import { InvalidArgumentError, WorkerError } from './errors.ts';

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
  /** Streams, pages and prefix-cache figures (cached pages, hits and misses in tokens, evictions). */
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

// ---- pending calls that must not outlive the engine ----

/** Every call into the engine goes through here, so a dead worker or a destroy() settles it. */
class CallGuard {
  private error?: unknown;
  private readonly pending = new Set<(e: unknown) => void>();

  get closed(): boolean {
    return this.error !== undefined;
  }

  call<T>(fn: () => Promise<T>): Promise<T> {
    if (this.error !== undefined) return Promise.reject(this.error);
    return new Promise<T>((resolve, reject) => {
      this.pending.add(reject);
      const settle = () => this.pending.delete(reject);
      let p: Promise<T>;
      try {
        p = fn();
      } catch (err) {
        settle();
        return reject(err);
      }
      p.then(resolve, reject).finally(settle);
    });
  }

  close(error: unknown): void {
    if (this.error !== undefined) return;
    this.error = error;
    for (const reject of this.pending) reject(error);
    this.pending.clear();
  }
}

// ---- the backends: a Worker, or this thread ----

interface Backend {
  api: EngineApi;
  guard: CallGuard;
  inWorker: boolean;
  /** The Worker, when there is one. */
  worker?: Worker;
  /** Ends the backend at once (a worker is terminated; an in-thread engine is destroyed when it can be). */
  kill(): void;
}

/**
 * A worker the browser kills (out of memory) or that is terminated sends nothing. It holds a Web Lock while it lives;
 * waiting here for the same lock, granted once it is gone, closes the guard (every pending call rejects) at that moment.
 */
function watchLife(worker: Worker, guard: CallGuard): void {
  const locks = globalThis.navigator?.locks;
  if (!locks) return; // no Web Locks (Safari before 15.4): a killed worker is noticed only by its error event
  const name = `intab-worker-${crypto.randomUUID()}`;
  const life = new MessageChannel();
  life.port1.onmessage = () => {
    life.port1.close();
    void locks.request(name, () => guard.close(new WorkerError('the worker ended: it was terminated, or the browser killed it (out of memory?). Call engine.restart() to load the model again')));
  };
  worker.postMessage({ type: 'intab:life-line', lock: name }, [life.port2]);
}

function workerBackend(): Backend {
  // Errors are rebuilt on this side as their classes: @intab/engine/errors registers every package's.
  registerTransferHandlers();
  // This exact form lets Vite, webpack 5 and Parcel find, bundle and emit the worker (and its imports).
  const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'intab' });
  const guard = new CallGuard();
  watchLife(worker, guard);
  worker.addEventListener('error', (ev: ErrorEvent) => {
    ev.preventDefault?.();
    guard.close(new WorkerError(ev.message || 'the worker script failed to load or threw at the top level'));
    worker.terminate();
  });
  worker.addEventListener('messageerror', () => guard.close(new WorkerError('a message from the worker could not be deserialized')));
  const api = Comlink.wrap<EngineApi>(worker) as unknown as EngineApi;
  return { api, guard, inWorker: true, worker, kill: () => worker.terminate() };
}

async function inThreadBackend(): Promise<Backend> {
  // Imported on demand, so an app that uses the worker does not carry the engine in its main bundle.
  const { Engine } = await import('@intab/engine');
  const api: EngineApi = new Engine();
  return { api, guard: new CallGuard(), inWorker: false, kill: () => void api.destroy().catch(() => {}) };
}

/** The model store's id of a Hugging Face model input (`org/name@revision[/file]`), or undefined for other inputs. */
function storeIdOf(model: ModelInput, o: { file?: string; revision?: string }): string | undefined {
  const ref = typeof model === 'string' ? (isHfId(model.trim()) ? { id: model.trim() } : undefined) : typeof model === 'object' && model !== null && 'id' in model && typeof model.id === 'string' && !('length' in model) ? (model as { id: string; file?: string; revision?: string }) : undefined;
  if (!ref) return undefined;
  const file = ref.file ?? o.file;
  const revision = ref.revision ?? o.revision ?? 'main';
  return file ? `${ref.id}@${revision}/${file}` : `${ref.id}@${revision}`;
}

function pickLoadOptions(o: CreateEngineOptions): LoadOptions {
  const out: LoadOptions = {};
  if (o.backend !== undefined) out.backend = o.backend;
  if (o.quantize !== undefined) out.quantize = o.quantize;
  if (o.kvBudgetBytes !== undefined) out.kvBudgetBytes = o.kvBudgetBytes;
  if (o.maxBatch !== undefined) out.maxBatch = o.maxBatch;
  if (o.maxTokensPerStep !== undefined) out.maxTokensPerStep = o.maxTokensPerStep;
  if (o.maxQueuedChunks !== undefined) out.maxQueuedChunks = o.maxQueuedChunks;
  if (o.speculative !== undefined) out.speculative = o.speculative;
  if (o.prefixCache !== undefined) out.prefixCache = o.prefixCache;
  if (o.preload !== undefined) out.preload = o.preload;
  if (o.restoreCache !== undefined) out.restoreCache = o.restoreCache;
  return out;
}

// ---- the engine ----

/** Starts a backend anew with the model loaded, as it was first (engine.restart()). */
type Relaunch = () => Promise<{ backend: Backend; info: ModelInfo }>;

const READY: EngineStatus = { version: 0, state: 'ready', losses: 0, recoveries: 0 };

class Engine implements IntabEngine {
  readonly chat: { readonly completions: ChatCompletions };
  private handles: readonly Preloaded[];
  private destroying?: Promise<void>;
  private restarting?: Promise<void>;
  private now: EngineStatus = READY;
  private readonly events = new EventTarget();

  constructor(
    private backend: Backend,
    private current: ModelInfo,
    readonly model: string,
    private readonly relaunch?: Relaunch,
  ) {
    this.follow(backend);
    const create = (body: ChatCompletionCreateParams, options?: RequestOptions) => this.createChatCompletion(body, options);
    this.chat = { completions: { create: create as ChatCompletions['create'] } };
    this.handles = (current.preloaded ?? []).map((p) => this.handle(p));
    // For tests and devtools: the Worker (to terminate it as the browser would), never enumerated.
    Object.defineProperty(this, Symbol.for('intab.worker'), { get: () => this.backend.worker });
  }

  get info(): ModelInfo {
    return this.current;
  }

  get preloaded(): readonly Preloaded[] {
    return this.handles;
  }

  get state(): EngineState {
    return this.now.state;
  }

  get status(): EngineStatus {
    return this.now;
  }

  addEventListener(type: EngineState, listener: (event: CustomEvent<EngineStatus>) => void, options?: boolean | AddEventListenerOptions): void {
    this.events.addEventListener(type, listener as EventListener, options);
  }

  removeEventListener(type: EngineState, listener: (event: CustomEvent<EngineStatus>) => void, options?: boolean | EventListenerOptions): void {
    this.events.removeEventListener(type, listener as EventListener, options);
  }

  /** Follows the backend's status with one pending call at a time, and fires an event per change, until it ends. */
  private follow(backend: Backend): void {
    void (async () => {
      let since = -1;
      for (;;) {
        let s: EngineStatus;
        try {
          s = await backend.guard.call(() => backend.api.status(since));
        } catch {
          return; // the backend ended (destroy, restart, a dead worker): its calls reject
        }
        if (this.backend !== backend) return;
        since = s.version;
        this.now = s;
        if (s.version > 0) this.events.dispatchEvent(new CustomEvent<EngineStatus>(s.state, { detail: s }));
      }
    })();
  }

  restart(): Promise<void> {
    if (this.destroying) return Promise.reject(new EngineClosedError('destroyed'));
    const relaunch = this.relaunch;
    if (!relaunch) return Promise.reject(new EngineStateError('restart() needs an engine made by createEngine(); this one wraps an EngineApi of your own: load it again yourself.'));
    return (this.restarting ??= (async () => {
      const old = this.backend;
      old.guard.close(new WorkerError('the engine restarted: requests in flight were ended'));
      old.kill();
      const { backend, info } = await relaunch();
      if (this.destroying) {
        backend.guard.close(new EngineClosedError('destroyed'));
        backend.kill();
        throw new EngineClosedError('destroyed');
      }
      this.backend = backend;
      this.now = READY;
      this.follow(backend);
      this.current = { ...info, ...(this.current.store ? { store: this.current.store } : {}), ...(this.current.route ? { route: this.current.route } : {}) };
      this.handles = (info.preloaded ?? []).map((p) => this.handle(p));
    })().finally(() => (this.restarting = undefined)));
  }

  async preload(request: PreloadRequest, options: RequestOptions = {}): Promise<Preloaded> {
    const { api, guard } = this.backend;
    const local = new AbortController();
    const forward = () => local.abort(options.signal?.reason);
    if (options.signal?.aborted) forward();
    else options.signal?.addEventListener('abort', forward, { once: true });
    try {
      return this.handle(await guard.call(() => api.preload(request, local.signal)));
    } finally {
      options.signal?.removeEventListener('abort', forward);
      releaseSignal(local.signal);
    }
  }

  saveCache(options: { all?: boolean } = {}): Promise<SaveCacheResult> {
    const { api, guard } = this.backend;
    return guard.call(() => api.saveCache(options));
  }

  stats(): Promise<EngineStats> {
    const { api, guard } = this.backend;
    return guard.call(async () => api.stats());
  }

  private handle(p: PreloadInfo): Preloaded {
    const { api, guard } = this.backend;
    let released: Promise<void> | undefined;
    return { ...p, release: () => (released ??= guard.closed ? Promise.resolve() : guard.call(async () => api.release(p.id))) };
  }

  get inWorker(): boolean {
    return this.backend.inWorker;
  }

  generate(request: GenerateRequest, options: RequestOptions = {}): AsyncIterable<Chunk> {
    const open = () => this.open(request, options.signal);
    return {
      [Symbol.asyncIterator]: () =>
        (async function* () {
          yield* await open();
        })(),
    };
  }

  destroy(): Promise<void> {
    return (this.destroying ??= (async () => {
      const { api, guard, kill } = this.backend;
      try {
        if (!guard.closed) await guard.call(() => api.destroy());
      } catch {
        // A dead worker has nothing left to free; terminating it below releases its GPU device.
      } finally {
        guard.close(new EngineClosedError('destroyed'));
        if (this.backend.inWorker) kill();
      }
    })());
  }

  /** Starts a stream now (so an invalid request rejects here) and returns its chunks. */
  private async open(request: GenerateRequest, signal?: AbortSignal): Promise<AsyncGenerator<Chunk, void, undefined>> {
    const { api, guard } = this.backend;
    // A signal of our own per request: it is released when the stream ends, so the caller's long-lived
    // signal does not keep one port per finished request open.
    const local = new AbortController();
    const forward = () => local.abort(signal?.reason);
    if (signal?.aborted) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    const cleanup = () => {
      signal?.removeEventListener('abort', forward);
      releaseSignal(local.signal);
    };
    let id: number;
    try {
      id = await guard.call(() => api.start(request, local.signal));
    } catch (err) {
      cleanup();
      throw err;
    }
    return pull(api, guard, id, cleanup);
  }

  private async createChatCompletion(body: ChatCompletionCreateParams, options: RequestOptions = {}): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion> {
    const request = toGenerateRequest(body);
    warnIgnored(ignoredFields(body));
    const meta = { id: completionId(), created: Math.floor(Date.now() / 1000), model: body.model ?? this.model };
    const chunks = await this.open(request, options.signal);
    const logprobs = body.logprobs === true;
    if (body.stream) return toChatCompletionChunks(chunks, meta, { includeUsage: body.stream_options?.include_usage === true, logprobs, signal: options.signal });
    return toChatCompletion(chunks, meta, { logprobs, signal: options.signal });
  }
}

const warned = new Set<string>();

/** Says once per set of fields that chat.completions.create ignored them (as OpenAI ignores what it does not know). */
function warnIgnored(fields: string[]): void {
  const key = fields.join(',');
  if (!fields.length || warned.has(key)) return;
  warned.add(key);
  console.warn(`intab: chat.completions.create ignored ${fields.map((f) => `'${f}'`).join(', ')}: ${fields.length === 1 ? 'it is' : 'they are'} not a field intab reads (a typo, or an OpenAI feature a local model does not have).`);
}

/** Pulls one started stream; leaving early (break, throw, error) cancels it in the engine. */
async function* pull(api: EngineApi, guard: CallGuard, id: number, cleanup: () => void): AsyncGenerator<Chunk, void, undefined> {
  let over = false;
  try {
    while (!over) {
      const chunk = await guard.call(() => api.next(id));
      over = chunk.finishReason !== null;
      yield chunk;
    }
  } finally {
    try {
      // cancel() resolves once the sequence's pages are freed; a stream that already failed may be unknown.
      if (!over) await guard.call(() => api.cancel(id)).catch(() => {});
    } finally {
      cleanup();
    }
  }
}

/**
 * An IntabEngine over an EngineApi that is already loaded: an Engine built in this thread (tests), or a
 * `Comlink.wrap` of a worker of your own (call registerTransferHandlers() first). Not part of the package's
 * public entry; createEngine() is.
 * @example
 * const engine = wrapEngineApi(new Engine({ runner, tokenizer, info }), info, { name: 'fixture' });
 */
export function wrapEngineApi(api: EngineApi, info: ModelInfo, options: { name?: string; inWorker?: boolean; kill?: () => void } = {}): IntabEngine {
  const backend: Backend = { api, guard: new CallGuard(), inWorker: options.inWorker ?? false, kill: options.kill ?? (() => {}) };
  return new Engine(backend, info, options.name ?? info.arch);
}

/**
 * Loads a model and returns an engine for it. By default the engine lives in a module Worker (bundlers
 * resolve it from this package; nothing to copy), so the page never blocks. Aborting the signal stops the
 * load and frees what was loaded.
 * @example
 * import { createEngine } from 'intab';
 * const engine = await createEngine({
 *   model: 'HuggingFaceTB/SmolLM2-135M-Instruct',
 *   onProgress: ({ loaded, total }) => (bar.value = loaded / total),
 * });
 * const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hello!' }] });
 * console.log(reply.choices[0].message.content);
 */
export async function createEngine(options: CreateEngineOptions, { signal }: { signal?: AbortSignal } = {}): Promise<IntabEngine> {
  signal?.throwIfAborted();
  const { model, remote, prefer } = options ?? {};
  if (prefer !== undefined && prefer !== 'local' && prefer !== 'remote') throw new InvalidArgumentError('createEngine', `createEngine: prefer is 'local' or 'remote', not ${JSON.stringify(prefer)}.`);
  if (!remote) {
    if (model === undefined) throw new InvalidArgumentError('createEngine', 'createEngine needs a model (a GGUF URL, a Hugging Face id, a File or a folder) or a remote server ({ remote: { baseURL, model } }).');
    return createLocalEngine({ ...options, model }, signal);
  }
  if (model === undefined) return createRemoteEngine(options, remote, 'no local model was given', signal);
  const local = { ...options, model };
  if (prefer === 'remote') {
    try {
      return await createRemoteEngine(options, remote, "prefer: 'remote'", signal);
    } catch (err) {
      const down = err instanceof RemoteConnectionError || err instanceof RemoteTimeoutError || (err instanceof RemoteHttpError && err.status >= 500);
      if (signal?.aborted || !down) throw err;
      return routed(await createLocalEngine(local, signal), `prefer: 'remote', but the server did not answer (${(err as Error).message})`);
    }
  }
  const verdict = localVerdict(await localFacts(), await inputBytes(model, signal), options.backend);
  if (!verdict.ok) return createRemoteEngine(options, remote, `prefer: 'local', but ${verdict.reason}`, signal);
  try {
    return routed(await createLocalEngine(local, signal), `prefer: 'local', and ${verdict.reason}`);
  } catch (err) {
    // A bad option is the caller's to fix wherever it runs; anything else of the local load (no device, out of
    // memory, an unsupported architecture, a failed download) is what the remote server is there for.
    if (signal?.aborted || err instanceof InvalidArgumentError || (err as Error)?.name === 'InvalidRequestError') throw err;
    const e = err as Error;
    return createRemoteEngine(options, remote, `prefer: 'local', but the local load failed (${e?.name ?? 'Error'}: ${e?.message ?? String(err)})`, signal);
  }
}

/** The engine with engine.info.route set (a local engine that a remote one could have replaced). */
function routed(engine: IntabEngine, reason: string): IntabEngine {
  (engine.info as ModelInfo).route = { chosen: 'local', reason };
  return engine;
}

/** A remote engine: GET /models first, so an unreachable server or a refused key fails here. */
async function createRemoteEngine(options: CreateEngineOptions, remote: RemoteOptions, reason: string, signal?: AbortSignal): Promise<IntabEngine> {
  const launch = async (signal?: AbortSignal) => {
    const api = new RemoteEngineApi(remote);
    const backend: Backend = { api, guard: new CallGuard(), inWorker: false, kill: () => void api.destroy() };
    const info = await api.load(undefined, undefined, undefined, signal);
    return { backend, info: { ...info, route: { chosen: 'remote' as const, reason } } };
  };
  const { backend, info } = await launch(signal);
  return new Engine(backend, info, options.name ?? remote.model, () => launch());
}

/** A local model input's bytes when they are cheap to know (Files, or a URL's Content-Length); else undefined. */
async function inputBytes(model: ModelInput, signal?: AbortSignal): Promise<number | undefined> {
  if (typeof File !== 'undefined' && model instanceof File) return model.size;
  if (typeof model === 'object' && model !== null && 'length' in model) return Array.from(model as ArrayLike<File>).reduce((n, f) => n + f.size, 0);
  const url = typeof model === 'string' && !isHfId(model.trim()) ? model : model instanceof URL ? model.href : undefined;
  if (url === undefined) return undefined;
  let href: string;
  try {
    href = new URL(url, globalThis.location?.href).href;
  } catch {
    return undefined; // not a URL: the local load says what is wrong with it
  }
  return sourceBytes({ kind: 'url', url: href }, signal);
}

/** createEngine for a model in this tab. */
async function createLocalEngine(options: CreateEngineOptions & { model: ModelInput }, signal?: AbortSignal): Promise<IntabEngine> {
  const store = options.cache === false ? undefined : (options.store ?? modelStore);
  const report = options.onProgress;
  const onProgress = report && ((p: LoadProgress) => report(p));
  // A Hugging Face id already in the store loads from it without asking the hub (offline too).
  const hubId = storeIdOf(options.model, options);
  const fromStore = store && hubId ? await store.open(hubId, { onProgress, signal }) : undefined;
  let source = fromStore?.source ?? (await resolveModelSource(options.model, { file: options.file, revision: options.revision, signal }));
  let draft = options.draft === undefined ? undefined : await resolveModelSource(options.draft, { signal });
  // The model store: files from disk when stored, else downloaded into it (the worker then reads Blobs over them).
  let stored: ModelInfo['store'];
  if (store) {
    const r = fromStore ?? (await store.ensure(source, { onProgress, signal }));
    // persisted: persist()'s answer when the store asked it now (a first download), else persisted()'s: always there.
    if (r.model.id) stored = { id: r.model.id, downloaded: r.downloaded, verified: r.verified, persisted: r.persisted };
    source = r.source;
    if (draft) draft = (await store.ensure(draft, { onProgress, signal })).source;
  }
  signal?.throwIfAborted();
  const loadOptions: LoadOptions = { ...pickLoadOptions(options), ...(draft ? { draft } : {}) };
  const { backend, info } = await launchLocal(options, source, loadOptions, signal);
  // A restart loads the same files (Blobs over the store's copies, or the same URLs) with the same options.
  return new Engine(backend, stored ? { ...info, store: stored } : info, await modelName(options), () => launchLocal(options, source, loadOptions));
}

/** A new backend (a Worker, or this thread) with the model loaded; aborting `signal` stops the load and frees it. */
async function launchLocal(options: CreateEngineOptions, source: ModelSource, loadOptions: LoadOptions, signal?: AbortSignal): Promise<{ backend: Backend; info: ModelInfo }> {
  const backend = options.worker === false ? await inThreadBackend() : workerBackend();
  const { api, guard } = backend;
  const onAbort = () => {
    guard.close(signal?.reason);
    backend.kill();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const report = options.onProgress;
    const upload = report && ((p: LoadProgress) => report({ ...p, phase: 'upload' }));
    const progress = upload && (backend.inWorker ? Comlink.proxy(upload) : upload);
    // The signal crosses to the worker (its own controller, released after the load): the worker stops the download
    // and upload and frees what it loaded; on abort the worker is terminated anyway, below.
    const local = new AbortController();
    const forward = () => local.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    const load = api.load(source, loadOptions, progress, backend.inWorker ? local.signal : signal);
    void load.finally(() => {
      signal?.removeEventListener('abort', forward);
      if (backend.inWorker) releaseSignal(local.signal);
    }).catch(() => {});
    if (!backend.inWorker) {
      // An in-thread load cannot be interrupted: when it settles after an abort, free what it loaded.
      load.then(() => signal?.aborted && backend.kill(), () => {});
    }
    return { backend, info: await guard.call(() => load) };
  } catch (err) {
    if (!signal?.aborted) {
      guard.close(err);
      backend.kill();
    }
    throw signal?.aborted ? signal.reason : err;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
