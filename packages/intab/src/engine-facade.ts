// The IntabEngine a web app holds, over one backend (engine-backends.ts): it turns the pull-based EngineApi (start /
// next / cancel) into `for await` streams whose `break` cancels and whose AbortSignal ends them with finishReason
// 'abort', adds the OpenAI-compatible `chat.completions.create` and `embeddings.create`, preloaded prefixes' handles, the device state and its
// events (following the backend's status), restart() (a new backend from the same load) and destroy(). Every call goes
// through the backend's CallGuard, so a worker that dies rejects them instead of leaving them hanging. An engine
// attached to the origin's shared engine answers the Service Worker's relayed OpenAI requests by itself (serveRelayed).

import type { Chunk, EmbedRequest, EmbedResult, EngineApi, EngineState, EngineStats, EngineStatus, GenerateRequest, ModelInfo, PreloadInfo, PreloadRequest, RerankRequest, RerankResult, SaveCacheResult } from '@intab/engine/contract';
import { EngineClosedError, EngineStateError } from '@intab/engine/errors';
import { releaseSignal } from '@intab/engine/transfer';
import {
  completionId,
  ignoredFields,
  toChatCompletion,
  toChatCompletionChunks,
  toGenerateRequest,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParams,
} from './openai.ts';
import { WorkerError } from './errors.ts';
import { CallGuard, type Backend } from './engine-backends.ts';
import { serveRelayed } from './openai-server.ts';
import type { ChatCompletions, Embeddings, IntabEngine, Preloaded, RequestOptions } from './engine-types.ts';
import { EMBEDDING_FIELDS, toEmbedRequest, toEmbeddingResponse, type CreateEmbeddingResponse, type EmbeddingCreateParams } from './openai-embeddings.ts';

/** Starts a backend anew with the model loaded, as it was first (engine.restart()). */
export type Relaunch = () => Promise<{ backend: Backend; info: ModelInfo }>;

const READY: EngineStatus = { version: 0, state: 'ready', losses: 0, recoveries: 0 };

/**
 * The IntabEngine over a backend that has loaded its model. createEngine() builds it (with a Relaunch, for restart());
 * wrapEngineApi() wraps an EngineApi of your own.
 */
export class EngineFacade implements IntabEngine {
  readonly chat: { readonly completions: ChatCompletions };
  readonly embeddings: Embeddings;
  private handles: readonly Preloaded[];
  private destroying?: Promise<void>;
  private restarting?: Promise<void>;
  private now: EngineStatus = READY;
  private readonly events = new EventTarget();
  /** Stops answering the Service Worker's relayed requests (autoServe). */
  private readonly unserve?: () => void;

  /**
   * `autoServe`: when the load attached to the origin's shared engine (info.share.mode 'shared-worker', or by election
   * 'elected-host' / 'elected-client'), answer the Service Worker's relayed OpenAI requests (relayOpenAI) from this
   * page as serveOpenAI(this) would, for as long as the engine is shared and alive: not while it restarts, nor once its
   * backend died, fell back to this tab's own engine or was destroyed.
   */
  constructor(
    private backend: Backend,
    private current: ModelInfo,
    readonly model: string,
    private readonly relaunch?: Relaunch,
    autoServe = false,
  ) {
    this.follow(backend);
    if (autoServe && sharedMode(current)) this.unserve = serveRelayed(this, { automatic: true, serving: () => this.shared() });
    const create = (body: ChatCompletionCreateParams, options?: RequestOptions) => this.createChatCompletion(body, options);
    this.chat = { completions: { create: create as ChatCompletions['create'] } };
    this.embeddings = { create: (body, options) => this.createEmbedding(body, options) };
    this.handles = (current.preloaded ?? []).map((p) => this.handle(p));
    // For tests and devtools: the Worker (to terminate it as the browser would), never enumerated.
    Object.defineProperty(this, Symbol.for('intab.worker'), { get: () => this.backend.worker });
  }

  get info(): ModelInfo {
    // A tab whose elected host went moved to the next one: that load's figures and share, this tab's store and route.
    const moved = this.backend.info?.();
    return moved ? { ...moved, ...(this.current.store ? { store: this.current.store } : {}), ...(this.current.route ? { route: this.current.route } : {}) } : this.current;
  }

  /** Whether this is a live session on the origin's shared engine (what autoServe serves). */
  private shared(): boolean {
    return !this.destroying && !this.backend.guard.closed && sharedMode(this.current);
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
    return this.handle(await this.call(options.signal, (api, signal) => api.preload(request, signal)));
  }

  embed(request: EmbedRequest, options: RequestOptions = {}): Promise<EmbedResult> {
    return this.call(options.signal, (api, signal) => api.embed(request, signal));
  }

  rerank(request: RerankRequest, options: RequestOptions = {}): Promise<RerankResult> {
    return this.call(options.signal, (api, signal) => api.rerank(request, signal));
  }

  private async createEmbedding(body: EmbeddingCreateParams, options: RequestOptions = {}): Promise<CreateEmbeddingResponse> {
    const { request, format, model } = toEmbedRequest(body);
    warnIgnored(ignoredFields(body, EMBEDDING_FIELDS), 'embeddings.create');
    return toEmbeddingResponse(await this.embed(request, options), model ?? this.model, format);
  }

  /**
   * One call into the backend with a signal of its own, released when the call settles (the caller's long-lived signal
   * does not keep one port per call open), aborted when the caller's is.
   */
  private async call<T>(signal: AbortSignal | undefined, run: (api: EngineApi, signal: AbortSignal) => Promise<T>): Promise<T> {
    const { api, guard } = this.backend;
    const local = new AbortController();
    const forward = () => local.abort(signal?.reason);
    if (signal?.aborted) forward();
    else signal?.addEventListener('abort', forward, { once: true });
    try {
      return await guard.call(() => run(api, local.signal));
    } finally {
      signal?.removeEventListener('abort', forward);
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
      this.unserve?.();
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

/** Says once per set of fields that a call (chat.completions.create) ignored them (as OpenAI ignores what it does not know). */
function warnIgnored(fields: string[], call = 'chat.completions.create'): void {
  const key = `${call}:${fields.join(',')}`;
  if (!fields.length || warned.has(key)) return;
  warned.add(key);
  console.warn(`intab: ${call} ignored ${fields.map((f) => `'${f}'`).join(', ')}: ${fields.length === 1 ? 'it is' : 'they are'} not a field intab reads (a typo, or an OpenAI feature a local model does not have).`);
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
  return new EngineFacade(backend, info, options.name ?? info.arch);
}

/** Whether a load runs on the engine the origin's tabs share: in its SharedWorker, or in a tab elected to host it. */
function sharedMode(info: ModelInfo): boolean {
  const mode = info.share?.mode;
  return mode === 'shared-worker' || mode === 'elected-host' || mode === 'elected-client';
}
