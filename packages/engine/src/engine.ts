// The Engine: everything above the runner, behind the EngineApi contract. One loop runs steps; each step
// holds every runnable sequence (continuous batching, planned by the Scheduler). Requests join at the next
// step and leave the moment they finish or are aborted, their pages freed before their stream ends. Output
// is pull-based: each sequence queues its step outputs and sits out of steps while its queue is full. The
// same class runs in the worker (worker.ts exposes it through Comlink) and in-thread (tests, no-worker pages).

import { DeviceLostError, requestGpu, type Gpu } from '@intab/gpu';
import {
  ChatTemplateError,
  encodeChat,
  renderChat,
  tokenBytes,
  type StepEntry,
  type StepResult,
  type StepRunner,
  type Tokenizer,
} from '@intab/model';
import { TokenVocabulary } from '@intab/grammar';
import type { Chunk, EngineApi, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, ModelSource, PreloadInfo, PreloadRequest, SaveCacheResult } from './contract.ts';
import {
  DeviceRecoveryError,
  IntabEngineError,
  EngineClosedError,
  EngineStateError,
  InvalidRequestError,
  DraftMismatchError,
  TokenizerRequiredError,
  UnknownStreamError,
} from './errors.ts';
import { Scheduler, plainAdmission, type Admission, type PlannedEntry } from './scheduler.ts';
import { Sequence, resolveOptions, type ResolvedOptions } from './sequence.ts';
import { checkPreload, templateMessages } from './request-checks.ts';
import { PrefixCache, type Pin, type PrefixMatch } from './prefix-cache.ts';
import { opfsFolder } from './kv-file.ts';
import { restoreKvCache, saveKvCache } from './kv-persist.ts';
import { SequenceSpeculation, Speculator, resolveSpeculative } from './speculator.ts';
import { Constraint, compileFormat, formatOf } from './constraint.ts';
import { openModel } from './open-model.ts';
import { chooseBackend, loadOnBackend, openModels, type OpenedModels, type RunnersOptions } from './load.ts';
import { LossPolicy, LossSignal, StatusBoard, reacquire } from './recovery.ts';
import { contextLimit, fitMaxTokens, truncateOldest, truncationRoom, type Truncation } from './context.ts';

export interface EngineOptions extends LoadOptions {
  /** Clock for the metrics, in ms [performance.now]. */
  now?: () => number;
  /** Seeds the requests that give no seed of their own [a random seed per engine]. */
  seed?: number;
  /** A device lost again within this many ms of the previous loss is not recovered from [60 000]. */
  lossWindowMs?: number;
}

/** What load() put on the GPU, kept to load it again on a new device after a loss. */
interface Reload {
  opened: OpenedModels;
  options: RunnersOptions & { prefixCache?: boolean };
  reason: string;
}

/** What the engine says on a DeviceLostError it recovers from. */
const RECOVERING = 'The engine is reloading the model on a new device by itself (engine.state is \'recovering\', then \'ready\'): send the request again; requests sent meanwhile wait for it.';

export interface EngineInit {
  runner?: StepRunner;
  /** A draft model's runner for speculative decoding (same vocabulary as `runner`). */
  draft?: StepRunner;
  tokenizer?: Tokenizer;
  options?: EngineOptions;
  /** Model facts for modelInfo (load() fills them in). */
  info?: ModelInfo;
}

interface Waiter {
  resolve(c: Chunk): void;
  reject(e: unknown): void;
}

interface Stream {
  seq: Sequence;
  /** When the request speculates. */
  spec?: SequenceSpeculation;
  waiters: Waiter[];
  /** Resolved once the sequence's pages are freed (finish, abort, failure). */
  released: Promise<void>;
  release(): void;
  detach?: () => void;
  /** A preload's pin, once its prefix is in the cache. */
  pin?: Pin;
}


const DEFAULTS = { maxBatch: 8, maxTokensPerStep: 256, maxQueuedChunks: 8, kvBudgetBytes: 128 << 20 };

/**
 * The worker-side engine.
 * @example
 * const engine = new Engine({ runner, tokenizer });               // in-thread, over a loaded runner
 * const id = await engine.start({ prompt: 'Once upon a time', maxTokens: 32 }, signal);
 * for (let c = await engine.next(id); ; c = await engine.next(id)) { out += c.text; if (c.finishReason) break; }
 */
export class Engine implements EngineApi {
  private runner?: StepRunner;
  private draft?: StepRunner;
  private speculator?: Speculator;
  private tokenizer?: Tokenizer;
  /** The tokenizer's vocabulary as bytes, for grammar masks (built at the first constrained request). */
  private vocabulary?: TokenVocabulary;
  private info?: ModelInfo;
  private gpu?: Gpu;
  private scheduler?: Scheduler;
  /** The prefix cache (LoadOptions.prefixCache, on by default). */
  private cache?: PrefixCache;
  /** What each waiting request matched in the cache when the scheduler last asked (admit() maps it). */
  private readonly matches = new WeakMap<Sequence, PrefixMatch>();
  /** Preloaded prefixes by id. */
  private readonly pins = new Map<number, Pin>();
  private nextPin = 0;
  private options: EngineOptions;
  private readonly now: () => number;
  private readonly seeds: () => number;
  private readonly streams = new Map<number, Stream>();
  /** Sequences in the step being run. */
  private inFlight = new Set<Sequence>();
  private loop?: Promise<void>;
  private nextId = 0;
  private closed = false;
  private loading = false;
  /** The state status() reports (device losses and recoveries). */
  private readonly board = new StatusBoard();
  private readonly losses: LossPolicy;
  /** Set when the model is on intab's WebGPU kernels: what a recovery reloads. */
  private reloadable?: Reload;
  /** The preloads' requests by id, pinned again after a recovery. */
  private readonly preloads = new Map<number, PreloadRequest>();
  /** A recovery in progress (new device, weights reloaded). */
  private recovery?: Promise<void>;
  /** The current device's loss: a step in flight races it. */
  private deviceLost?: LossSignal<DeviceLostError>;

  constructor(init: EngineInit = {}) {
    this.options = init.options ?? {};
    this.now = this.options.now ?? (() => performance.now());
    let seed = this.options.seed ?? crypto.getRandomValues(new Uint32Array(1))[0];
    // Default seeds of successive requests: a simple deterministic sequence from the engine's seed.
    this.seeds = () => (seed = (Math.imul(seed ^ (seed >>> 16), 0x45d9f3b) + 0x9e3779b9) >>> 0);
    this.losses = new LossPolicy(this.options.lossWindowMs);
    if (init.runner) this.attach(init.runner, init.tokenizer, init.info, init.draft);
  }

  /**
   * Opens a model (GGUF or Hugging Face files, by URL or as blobs), uploads it to the GPU, compiles every
   * pipeline (warmup) and returns a ready engine.
   * @example
   * const engine = await Engine.load({ kind: 'url', url: 'https://host/model.gguf' }, { kvBudgetBytes: 64 << 20 }, (p) => bar(p));
   */
  static async load(source: ModelSource, options: EngineOptions = {}, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<Engine> {
    const engine = new Engine({ options });
    await engine.load(source, options, onProgress, signal);
    return engine;
  }

  /** EngineApi.load: see Engine.load. The signal stops the download and upload; what was loaded is freed. */
  async load(source: ModelSource, options: LoadOptions = {}, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<ModelInfo> {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (this.runner || this.loading) throw new EngineStateError('This engine already holds a model (or is loading one): destroy() it and create a new engine to load another.');
    this.loading = true;
    try {
      this.options = { ...this.options, ...options };
      const opened = await openModels((s: ModelSource) => openModel(s, signal), source, options.draft);
      const backend = await chooseBackend(options.backend, opened.model);
      const gpu = backend.name === 'webgpu' ? backend.gpu : undefined;
      let loaded: { runner: StepRunner; draft?: StepRunner; info: ModelInfo };
      const runnersOptions = {
        kvBudgetBytes: options.kvBudgetBytes ?? DEFAULTS.kvBudgetBytes,
        maxBatch: options.maxBatch ?? DEFAULTS.maxBatch,
        maxTokensPerStep: options.maxTokensPerStep ?? DEFAULTS.maxTokensPerStep,
        quantize: options.quantize,
        prefixCache: options.prefixCache,
      };
      try {
        loaded = await loadOnBackend(backend, opened, { ...runnersOptions, asked: options.backend, onProgress, signal });
      } catch (err) {
        gpu?.destroy();
        throw err;
      }
      const { runner, draft, info } = loaded;
      if (this.closed) {
        draft?.destroy();
        runner.destroy();
        gpu?.destroy();
        throw new EngineClosedError('destroyed');
      }
      this.gpu = gpu;
      this.attach(runner, opened.tokenizer, info, draft);
      if (gpu) {
        this.reloadable = { opened, options: runnersOptions, reason: backend.reason };
        this.watch(gpu);
      }
      if (options.restoreCache !== false) await this.restore(info);
      let preloads = options.preload === undefined ? [] : Array.isArray(options.preload) ? options.preload : [options.preload];
      // Preloading only saves time: when 'auto' chose a backend without a prefix cache, it is skipped, not fatal.
      if (preloads.length && !this.cache && backend.name !== 'webgpu' && (options.backend ?? 'auto') === 'auto') {
        info.warnings = [...(info.warnings ?? []), `preload was skipped: ${this.noCacheAdvice()}.`];
        preloads = [];
      }
      if (preloads.length) info.preloaded = [];
      for (const p of preloads) info.preloaded!.push(await this.preload(p, signal));
      return info;
    } finally {
      this.loading = false;
    }
  }

  /** The prefix cache (undefined when it is off): for tools and tests in this thread; the API is preload/release/saveCache/stats. */
  get prefixCache(): PrefixCache | undefined {
    return this.cache;
  }

  /**
   * Reads the prefix cache saved for this model back, where the OPFS exists, and notes what happened in `info`.
   * load() calls it (unless LoadOptions.restoreCache is false); in-thread users with a runner of their own may call
   * it after construction.
   */
  async restore(info: ModelInfo | undefined = this.info): Promise<void> {
    const { runner } = this.ready();
    if (!this.cache) return;
    const folder = await opfsFolder();
    if (!folder) return;
    const outcome = await restoreKvCache(this.cache, runner, folder, this.now);
    if (!info) return;
    if (outcome.restored) info.restored = outcome.restored;
    if (outcome.warning) info.warnings = [...(info.warnings ?? []), outcome.warning];
  }

  /** What load() returned (or what the constructor was told). */
  get modelInfo(): ModelInfo | undefined {
    return this.info;
  }

  /** Registers a request; its stream id is what next() and cancel() take. Validation errors throw here. */
  async start(request: GenerateRequest, signal?: AbortSignal): Promise<number> {
    await this.recovered();
    const { runner } = this.ready();
    const options = resolveOptions(request, runner.config.vocab, this.tokenizer !== undefined);
    // truncate: 'oldest' drops the chat's oldest turns until the prompt leaves room for a reply (context.ts).
    const fitted: Truncation =
      options.truncate === 'oldest'
        ? truncateOldest(request.messages!, (messages) => this.encode({ ...request, messages }), (p) => {
            const { limit } = contextLimit(runner, this.cache, p);
            return p.length + truncationRoom(options, limit) <= limit;
          })
        : { prompt: this.encode(request), dropped: 0, tokens: 0 };
    const prompt = fitted.prompt;
    if (prompt.length === 0) throw new InvalidRequestError('prompt', request.prompt, 'text that encodes to at least one token');
    const constraint = this.constraintOf(request, runner);
    // A prompt that leaves no room is refused; maxTokens past the limit is clamped (refused with strictContext).
    fitMaxTokens(prompt.length, options, contextLimit(runner, this.cache, prompt), {
      chat: request.messages !== undefined && options.truncate !== 'oldest',
      truncatedMessages: fitted.dropped,
    });
    const spec = resolveSpeculative(request.speculative ?? this.options.speculative ?? (this.draft ? 'auto' : false), {
      hasDraft: this.draft !== undefined,
      layers: runner.config.layers,
      earlyExit: runner.capabilities?.earlyExit !== false,
    });
    const truncated = fitted.dropped > 0 ? { messages: fitted.dropped, tokens: fitted.tokens } : undefined;
    return this.begin(prompt, options, signal, { constraint, spec, truncated }).id;
  }

  /**
   * Prefills a prefix (chat messages rendered up to their end, text, or ids) and pins it in the prefix cache, so
   * requests that start with it skip its prefill. It runs as a request would (sharing steps with others); the
   * part already cached is not prefilled again.
   * @example
   * const sys = await engine.preload({ messages: [{ role: 'system', content: 'You are terse.' }] });
   * // ...requests that start with that system message prefill only what follows it...
   * await engine.release(sys.id);
   */
  async preload(request: PreloadRequest, signal?: AbortSignal): Promise<PreloadInfo> {
    await this.recovered();
    const t0 = this.now();
    const { pin, tokens, cachedTokens } = await this.pinPrefix(request, signal);
    const id = this.nextPin++;
    this.pins.set(id, pin);
    this.preloads.set(id, request);
    return { id, tokens, cachedTokens, ms: this.now() - t0 };
  }

  /** Prefills a prefix as a prefill-only request, and pins it in the prefix cache. */
  private async pinPrefix(request: PreloadRequest, signal?: AbortSignal): Promise<{ pin: Pin; tokens: number; cachedTokens: number }> {
    const { runner } = this.ready();
    if (!this.cache) throw new EngineStateError(`preload() pins a prefix in the prefix cache, which this engine has off: ${this.noCacheAdvice()}.`);
    const prompt = this.encodePrefix(request);
    const options = resolveOptions({ promptIds: prompt, maxTokens: 1, temperature: 0 }, runner.config.vocab, false);
    fitMaxTokens(prompt.length, options, contextLimit(runner, this.cache, prompt));
    const { id, stream } = this.begin(prompt, options, signal, { prefillOnly: true });
    let last: Chunk;
    do last = await this.next(id);
    while (!last.finishReason);
    if (last.finishReason !== 'stop' || !stream.pin) {
      if (last.error) throw last.error;
      if (this.closed) throw new EngineClosedError('destroyed');
      throw signal?.reason ?? new DOMException('The preload was aborted.', 'AbortError');
    }
    return { pin: stream.pin, tokens: prompt.length, cachedTokens: last.metrics?.cachedTokens ?? 0 };
  }

  /** Unpins a preloaded prefix; its pages stay cached (evictable) until pages run short. Idempotent. */
  release(preload: number): void {
    const pin = this.pins.get(preload);
    this.preloads.delete(preload);
    if (!pin) return;
    this.pins.delete(preload);
    this.cache?.unpin(pin);
  }

  /**
   * Writes the pinned prefixes (with `all`, every cached page) to the Origin Private File System, so the next load of
   * the same model restores them (LoadOptions.restoreCache) instead of prefilling them again.
   * @example
   * await engine.preload({ messages: [system] });
   * await engine.saveCache(); // { file, pages, tokens, bytes, ms }
   */
  async saveCache(options: { all?: boolean } = {}): Promise<SaveCacheResult> {
    await this.recovered();
    const { runner } = this.ready();
    if (!this.cache) throw new EngineStateError(`saveCache() writes the prefix cache, which this engine has off: ${this.noCacheAdvice()}.`);
    const folder = await opfsFolder();
    if (!folder) throw new EngineStateError("saveCache() writes to the Origin Private File System, which this context lacks (navigator.storage.getDirectory): the prefix cache is kept in memory only.");
    return saveKvCache(this.cache, runner, folder, options, this.now);
  }

  /** Everything the stream produced since the last pull (waits when nothing is ready). */
  async next(id: number): Promise<Chunk> {
    const stream = this.streams.get(id);
    if (!stream) throw new UnknownStreamError(id);
    if (stream.seq.ready && stream.waiters.length === 0) return this.deliver(stream);
    return new Promise<Chunk>((resolve, reject) => {
      stream.waiters.push({ resolve, reject });
      this.notify(stream);
    });
  }

  /** Ends a stream early (what `break` out of for-await does); resolves once its pages are freed. */
  async cancel(id: number): Promise<void> {
    const stream = this.streams.get(id);
    if (!stream) return;
    if (!stream.seq.finished) this.abort(stream);
    await stream.released;
    this.streams.delete(id);
    for (const w of stream.waiters.splice(0)) w.reject(new UnknownStreamError(id));
  }

  /** Aborts every stream, waits for the step in flight, then frees the runner and the GPU. Idempotent. */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) if (!stream.seq.finished) this.abort(stream);
    await this.loop;
    await Promise.all([...this.streams.values()].map((s) => s.released));
    this.runner?.destroy();
    this.draft?.destroy();
    this.gpu?.destroy();
    this.runner = undefined;
    this.draft = undefined;
    this.gpu = undefined;
  }

  /** The engine's state once its version is past `since` (at once without it): see EngineStatus. */
  status(since?: number): Promise<EngineStatus> {
    return this.board.wait(since);
  }

  stats(): EngineStats {
    const s = this.scheduler;
    return {
      streams: this.streams.size,
      waiting: s?.waiting.length ?? 0,
      running: s?.running.length ?? 0,
      paused: s?.running.filter((q) => q.paused).length ?? 0,
      freePages: this.runner?.kv.freePageCount ?? 0,
      availablePages: this.runner?.kv.availablePageCount ?? 0,
      totalPages: this.runner?.kv.pages ?? 0,
      ...(this.cache ? { prefixCache: this.cache.stats() } : {}),
      ...(this.speculator?.draftCache ? { draftPrefixCache: this.speculator.draftCache.stats() } : {}),
      ...(this.gpu ? { gpuBuffers: this.gpu.liveBuffers } : {}),
    };
  }

  // ---- internals ----

  // ---- device loss ----

  /** Follows `gpu`'s device: its loss (not our own destroy()) ends every request and starts a recovery. */
  private watch(gpu: Gpu): void {
    const loss = (this.deviceLost = new LossSignal<DeviceLostError>());
    void gpu.device.lost.then((info) => {
      if (this.closed || gpu !== this.gpu || gpu.destroyed) return;
      const err = new DeviceLostError(info.reason ?? 'unknown', info.message, RECOVERING);
      loss.fire(err);
      this.onDeviceLost(err);
    });
  }

  /**
   * Every request ends now with `err` (what they produced was delivered or is in their last chunk), the dead device's
   * objects are dropped, and the model is loaded again on a new device, unless the previous loss was too recent.
   */
  private onDeviceLost(err: DeviceLostError): void {
    const losses = this.board.current.losses + 1;
    const recover = this.losses.record(this.now());
    for (const stream of [...this.streams.values()]) {
      this.inFlight.delete(stream.seq);
      this.fail(stream.seq, err);
    }
    const { runner, draft, gpu } = this;
    this.runner = this.draft = this.scheduler = this.cache = this.speculator = undefined;
    this.gpu = undefined;
    this.deviceLost = undefined;
    this.pins.clear();
    draft?.destroy();
    runner?.destroy();
    gpu?.destroy();
    const windowMs = this.losses.windowMs;
    if (!recover) {
      this.board.set({ state: 'failed', losses, error: new DeviceRecoveryError('repeated', losses, windowMs, { cause: err }) });
      return;
    }
    this.board.set({ state: 'recovering', losses, error: err });
    const t0 = this.now();
    // A loss of the new device during this recovery is handled by its own onDeviceLost, which then owns the state.
    const current = () => this.board.current.losses === losses;
    const recovery: Promise<void> = this.reload()
      .then(
        () => {
          if (current()) this.board.set({ state: 'ready', recoveries: this.board.current.recoveries + 1, recoveryMs: this.now() - t0 });
        },
        (cause) => {
          if (current()) this.board.set({ state: 'failed', error: cause instanceof EngineClosedError ? cause : new DeviceRecoveryError('reacquire', losses, windowMs, { cause }) });
        },
      )
      .finally(() => {
        if (this.recovery === recovery) this.recovery = undefined;
      });
    this.recovery = recovery;
  }

  /** A new device, the model loaded on it (the same files: the model store's, when the main thread used it), preloads pinned again. */
  private async reload(): Promise<void> {
    const r = this.reloadable!;
    const gpu = await reacquire(() => requestGpu());
    let loaded: { runner: StepRunner; draft?: StepRunner };
    try {
      loaded = await loadOnBackend({ name: 'webgpu', gpu, reason: r.reason }, r.opened, r.options);
    } catch (err) {
      gpu.destroy();
      throw err;
    }
    if (this.closed) {
      loaded.draft?.destroy();
      loaded.runner.destroy();
      gpu.destroy();
      throw new EngineClosedError('destroyed');
    }
    this.gpu = gpu;
    this.attach(loaded.runner, r.opened.tokenizer, this.info, loaded.draft);
    this.watch(gpu);
    const loss = this.deviceLost!;
    // Pinning again only saves prefill time: a preload that fails now is dropped, with a warning in info, rather than
    // failing the engine (unless the new device went too: that loss's own recovery takes over).
    for (const [id, request] of [...this.preloads]) {
      try {
        this.pins.set(id, (await this.pinPrefix(request)).pin);
      } catch (err) {
        if (loss.lost || this.closed) throw err;
        this.preloads.delete(id);
        if (this.info) this.info.warnings = [...(this.info.warnings ?? []), `preload ${id} was not pinned again after the GPU device was lost (${(err as Error).message}).`];
      }
    }
  }

  /** Waits for a recovery in progress; after a failed one, throws its DeviceRecoveryError. */
  private async recovered(): Promise<void> {
    if (this.recovery) await this.recovery;
    const s = this.board.current;
    if (s.state === 'failed' && s.error) throw s.error;
  }

  /** Why the prefix cache is off, and what turns it on. */
  private noCacheAdvice(): string {
    if (this.runner?.capabilities?.sharedPages === false) return "this backend keeps each sequence's K/V apart and cannot share prefixes: load the model with backend 'webgpu' to use it";
    return 'load it with prefixCache: true (the default)';
  }

  private attach(runner: StepRunner, tokenizer: Tokenizer | undefined, info: ModelInfo | undefined, draft?: StepRunner): void {
    this.runner = runner;
    this.draft = draft;
    if (draft && draft.config.vocab !== runner.config.vocab) throw new DraftMismatchError('vocabulary size', String(runner.config.vocab), String(draft.config.vocab));
    // A runner whose pages hold no bytes (capabilities.sharedPages false: the ONNX runner) cannot share prefixes.
    const caches = (r: StepRunner) => this.options.prefixCache !== false && r.capabilities?.sharedPages !== false;
    this.speculator = new Speculator(runner, draft, this.now, Math.min(256, draft?.maxTokens ?? Infinity), draft && caches(draft) ? new PrefixCache(draft) : undefined);
    this.tokenizer = tokenizer;
    this.info = info;
    this.cache = caches(runner) ? new PrefixCache(runner) : undefined;
    this.scheduler = new Scheduler(
      runner,
      {
        maxBatch: Math.max(1, Math.min(this.options.maxBatch ?? DEFAULTS.maxBatch, runner.maxBatch)),
        maxTokensPerStep: Math.max(1, Math.min(this.options.maxTokensPerStep ?? DEFAULTS.maxTokensPerStep, runner.maxTokens ?? Infinity)),
      },
      this.admission(runner),
    );
  }

  /**
   * How the scheduler admits requests: with the prefix cache, a request maps its prompt's longest cached prefix
   * (all of it for a preload; all but the last token otherwise, whose logits are sampled) and needs pages only for
   * the rest.
   */
  private admission(runner: StepRunner): Admission {
    const plain = plainAdmission(runner);
    const cache = this.cache;
    if (!cache) return plain;
    const matchOf = (seq: Sequence) => cache.lookup(seq.prompt, seq.prefillOnly ? seq.prompt.length : seq.prompt.length - 1);
    return {
      cost: (seq) => {
        if (!seq.options.cache) return plain.cost(seq);
        let match = matchOf(seq);
        let cost = cache.cost(match, seq.reserveLength);
        // A partly matched page stays mapped until it is copied: a request that reserves every page it can have
        // (maxTokens clamped to the KV-cache) would wait for that one page forever. It maps whole pages only then,
        // and prefills the few tokens of the partial page again.
        if (cost.need > cost.available && match.tokens % cache.pageSize !== 0) {
          const whole = Math.floor(match.tokens / cache.pageSize);
          match = { tokens: whole * cache.pageSize, nodes: match.nodes.slice(0, whole) };
          cost = cache.cost(match, seq.reserveLength);
        }
        this.matches.set(seq, match);
        return cost;
      },
      admit: (seq) => {
        if (!seq.options.cache) return plain.admit(seq);
        const match = this.matches.get(seq) ?? matchOf(seq);
        this.matches.delete(seq);
        cache.attach(seq.id, match, seq.prompt.length);
        seq.admitted(match.tokens);
      },
    };
  }

  /** Registers a checked request as a stream and hands it to the scheduler. */
  private begin(
    prompt: number[],
    options: ResolvedOptions,
    signal: AbortSignal | undefined,
    extra: { constraint?: Constraint; spec?: ReturnType<typeof resolveSpeculative>; prefillOnly?: boolean; truncated?: { messages: number; tokens: number } },
  ): { id: number; stream: Stream } {
    const { runner, scheduler } = this.ready();
    const id = this.nextId++;
    const seq = new Sequence({
      id,
      prompt,
      options,
      defaultSeed: this.seeds(),
      eosIds: [...new Set([...runner.config.eosIds, ...(this.tokenizer?.stopIds ?? [])])],
      tokenizer: extra.prefillOnly ? undefined : this.tokenizer,
      maxQueued: Math.max(1, this.options.maxQueuedChunks ?? DEFAULTS.maxQueuedChunks),
      startedAt: this.now(),
      constraint: extra.constraint,
      prefillOnly: extra.prefillOnly,
      truncated: extra.truncated,
    });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const stream: Stream = { seq, waiters: [], released, release };
    if (extra.spec) {
      stream.spec = new SequenceSpeculation(extra.spec);
      seq.speculative = stream.spec.metrics;
    }
    this.streams.set(id, stream);
    if (signal?.aborted) {
      this.abort(stream);
      return { id, stream };
    }
    if (signal) {
      const onAbort = () => this.abort(stream);
      signal.addEventListener('abort', onAbort, { once: true });
      stream.detach = () => signal.removeEventListener('abort', onAbort);
    }
    scheduler.add(seq);
    this.wake();
    return { id, stream };
  }

  private ready(): { runner: StepRunner; scheduler: Scheduler } {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (!this.runner || !this.scheduler) throw new EngineClosedError('not-loaded');
    return { runner: this.runner, scheduler: this.scheduler };
  }

  private encode(r: GenerateRequest): number[] {
    if (r.promptIds) return [...r.promptIds];
    const tok = this.tokenizer;
    if (!tok) throw new TokenizerRequiredError('tokenizer');
    if (r.messages) {
      if (tok.chatTemplate === undefined) throw ChatTemplateError.missing(tok.file);
      // Extra message fields (name, tool_calls...) reach the template as they are; 'developer' as 'system'.
      return encodeChat(tok, renderChat(tok, templateMessages(r.messages), { addGenerationPrompt: true }));
    }
    return tok.encode(r.prompt!, { addSpecialTokens: true });
  }

  /** A preload's tokens: messages rendered up to their end (no generation prompt), text with BOS, or ids. */
  private encodePrefix(r: PreloadRequest): number[] {
    checkPreload(r, this.runner!.config.vocab); // one prompt, of its shape, no other field, known roles
    const q = r as GenerateRequest;
    let ids: number[];
    if (q.messages) {
      const tok = this.tokenizer;
      if (!tok) throw new TokenizerRequiredError('tokenizer');
      if (tok.chatTemplate === undefined) throw ChatTemplateError.missing(tok.file);
      ids = encodeChat(tok, renderChat(tok, templateMessages(q.messages), { addGenerationPrompt: false }));
    } else ids = this.encode(q);
    if (ids.length === 0) throw new InvalidRequestError('preload', r, 'a prefix that encodes to at least one token');
    return ids;
  }

  /** The request's constraint (responseFormat, grammar, regex), compiled; undefined when it has none. */
  private constraintOf(request: GenerateRequest, runner: StepRunner): Constraint | undefined {
    const format = formatOf(request);
    if (!format) return undefined;
    const tok = this.tokenizer;
    if (!tok) throw new TokenizerRequiredError('tokenizer');
    const grammar = compileFormat(format);
    const eos = [...new Set([...runner.config.eosIds, ...tok.stopIds])].filter((id) => id < runner.config.vocab);
    // Masks as wide as the model's logits rows (which may be padded past the tokenizer's ids).
    this.vocabulary ??= TokenVocabulary.from(tokenBytes(tok), { eos, size: runner.config.vocab });
    return new Constraint(format, grammar, this.vocabulary);
  }

  /** Starts the step loop unless it runs. */
  private wake(): void {
    if (this.loop || !this.scheduler || this.closed) return;
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      // Work may have arrived between the last plan and now.
      if (!this.closed && this.scheduler && this.scheduler.plannable) this.wake();
    });
  }

  private async run(): Promise<void> {
    const runner = this.runner!;
    const scheduler = this.scheduler!;
    const speculator = this.speculator!;
    // Yield once before the first step, so requests that arrive together (several messages from the
    // main thread in one burst) share it instead of the first prefilling alone.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const lost = this.deviceLost;
    for (;;) {
      // After a device loss the runner is gone (a recovery attaches a new one, with a loop of its own).
      if (this.runner !== runner) return;
      // Every entry takes one sampled row; proposals take the rows the runner has beyond those.
      let rowsLeft = (runner.maxRows ?? Infinity) - scheduler.limits.maxBatch;
      let plan = scheduler.plan((seq, decoding, budget) => {
        const spec = this.streams.get(seq.id)?.spec;
        const k = spec ? Math.min(rowsLeft, speculator.want(seq, spec, decoding, budget)) : 0;
        rowsLeft -= k;
        return k;
      });
      // Preloads admitted with their whole prefix cached are done without a step.
      const preloaded = scheduler.running.filter((s) => s.prefillOnly && s.prefillLeft === 0 && !s.finished);
      for (const s of preloaded) this.prefilled(s);
      if (plan.length === 0) {
        if (preloaded.length) continue;
        return;
      }
      const started = this.now();
      for (const p of plan) p.seq.scheduled(started);
      this.inFlight = new Set(plan.map((p) => p.seq));
      // Proposals first (draft steps, when a draft proposes); then one target step verifies them all.
      let proposals = new Map<Sequence, number[]>();
      const speculating = plan.filter((p) => p.lookahead > 0);
      if (speculating.length) {
        try {
          proposals = await speculator.propose(speculating.map((p) => ({ seq: p.seq, state: this.streams.get(p.seq.id)!.spec!, k: p.lookahead })));
        } catch (err) {
          if (lost && (await lost.within(LOSS_REPORT_MS))) return; // the device went: onDeviceLost ended every stream
          for (const p of speculating) this.inFlight.delete(p.seq), this.fail(p.seq, err);
          plan = plan.filter((p) => !speculating.includes(p));
        }
        // An abort that came during drafting ends the sequence now, before the verify step.
        for (const p of plan.filter((q) => q.seq.abortRequested)) {
          this.inFlight.delete(p.seq);
          const stream = this.streams.get(p.seq.id);
          if (stream) this.abort(stream);
        }
        plan = plan.filter((p) => !p.seq.finished);
        if (plan.length === 0) continue;
      }
      const entries = plan.map((p) => this.entry(p, proposals.get(p.seq) ?? []));
      const t0 = this.now();
      let results;
      try {
        // A lost device may leave the step waiting on a readback that never comes: the loss ends it at once.
        results = await (lost ? lost.race(runner.step(entries)) : runner.step(entries));
      } catch (err) {
        this.inFlight.clear();
        if (lost && (await lost.within(LOSS_REPORT_MS))) return; // the device went: onDeviceLost ended every stream
        for (const p of plan) this.fail(p.seq, err);
        continue;
      }
      const ms = this.now() - t0;
      // The cost model compares decode and verify steps: steps with a prompt chunk (one logits row for many
      // tokens) would skew it.
      if (plan.every((p) => p.samples && p.seq.prefillLeft === 0)) speculator.targetCosts.record(entries.reduce((n, e) => n + e.tokens.length, 0), ms);
      this.inFlight.clear();
      this.apply(plan, entries, results, ms);
      // A runner whose step never leaves the event loop (onnxruntime's wasm computes inside run() and resolves at
      // once) would keep the next pull, and an abort, waiting in the message queue until the loop ran dry: the
      // tokens of eight steps then arrived as one chunk, and an abort came that late. When output waits for a pull,
      // one task lets messages in: a consumer that keeps up gets a chunk per step, one that falls behind coalesced.
      if (this.awaitingPull()) await nextTask();
    }
  }

  /** Whether a stream has output ready and no pull waiting for it (its consumer's next pull may be on its way). */
  private awaitingPull(): boolean {
    for (const s of this.streams.values()) if (s.waiters.length === 0 && s.seq.ready) return true;
    return false;
  }

  /** A planned entry as the runner takes it: plain, or a verify entry when there are proposals. */
  private entry(p: PlannedEntry, proposals: number[]): StepEntry {
    const seq = p.seq;
    // Under a grammar, proposals stop at the first one it refuses (the target could never sample it).
    if (seq.constraint && proposals.length) proposals = proposals.slice(0, seq.constraint.allowedPrefix(proposals));
    // A grammar's masks are computed by the runner's call, while the GPU runs the step's forward pass.
    const c = seq.constraint;
    const rows = proposals.length + 1;
    const masks = c && p.samples ? { masks: () => Array.from({ length: rows }, (_, i) => c.mask(proposals.slice(0, i))) } : {};
    if (proposals.length === 0) return { seq: seq.id, tokens: p.tokens, ...(p.samples ? { sampling: seq.sampling(0, [], false), ...masks } : {}) };
    return {
      seq: seq.id,
      tokens: [...p.tokens, ...proposals],
      verify: Array.from({ length: rows }, (_, i) => seq.sampling(i, proposals, false)),
      ...(seq.options.logprobs ? { rows: true } : {}),
      ...masks,
    };
  }

  private apply(plan: PlannedEntry[], entries: StepEntry[], results: StepResult[], ms: number): void {
    const t = this.now();
    plan.forEach((p, i) => {
      const seq = p.seq;
      const stream = this.streams.get(seq.id);
      const e = entries[i];
      if (e.verify && stream?.spec) {
        // Roll back first, so the caches are right whatever happens to the sequence next.
        const proposed = e.tokens.length - 1;
        const accepted = results[i].accepted ?? 0;
        const valid = this.runner!.kv.length(seq.id) - (proposed - accepted);
        this.speculator!.afterVerify(seq, stream.spec, proposed, accepted, valid);
      }
      if (stream?.spec && p.samples && seq.prefillLeft === 0) {
        const m = stream.spec.metrics;
        m.targetSteps++;
        m.targetMs += ms;
        if (e.verify) m.verifyMs += ms;
      }
      if (seq.abortRequested || !stream) {
        if (stream) this.abort(stream);
        return;
      }
      const r = results[i];
      const accepted = e.verify ? (r.accepted ?? 0) : 0;
      const prefilling = seq.prefillLeft > 0;
      seq.advanced(p.tokens.length + accepted);
      if (prefilling) this.cachePrompt(seq);
      if (seq.prefillOnly && seq.prefillLeft === 0) return this.prefilled(seq);
      if (!p.samples) return this.notify(stream);
      for (let j = 0; j < accepted; j++) seq.accept(r.acceptedRows?.[j] ?? { id: e.tokens[j + 1], logprob: NaN, top: [] }, t);
      seq.accept(r, t);
      if (seq.finished) this.retire(stream);
      this.notify(stream);
    });
  }

  /** A preload's prefix is in the cache: it ends (retire() pins it). */
  private prefilled(seq: Sequence): void {
    const stream = this.streams.get(seq.id);
    seq.finish('stop', this.now());
    if (!stream) return;
    this.retire(stream);
    this.notify(stream);
  }

  /** Hands a running sequence's newly full prompt pages to the prefix cache, so requests admitted now share them. */
  private cachePrompt(seq: Sequence): void {
    if (!this.cache || !seq.options.cache || !this.runner?.kv.has(seq.id)) return;
    const full = Math.floor(seq.prefilled / this.cache.pageSize);
    if (full <= seq.cachedPages) return;
    this.cache.insert(seq.id, seq.prompt.slice(0, full * this.cache.pageSize), 'running');
    seq.cachedPages = full;
  }

  /**
   * Takes a finished sequence out of the batch and frees its pages; with the prefix cache, what its cache holds
   * (prompt and generated tokens, unless the sequence failed) stays cached first, and a preload's prefix is pinned.
   */
  private retire(stream: Stream): void {
    const seq = stream.seq;
    const admitted = this.scheduler?.remove(seq);
    const runner = this.runner;
    if (runner && (admitted || runner.kv.has(seq.id))) {
      if (this.cache && seq.options.cache && seq.finishReason !== 'error' && runner.kv.has(seq.id)) {
        const tokens = seq.text.slice(0, runner.kv.length(seq.id));
        const path = this.cache.insert(seq.id, tokens, 'finished');
        if (seq.prefillOnly && seq.finishReason === 'stop') stream.pin = this.cache.pin(path, tokens.length);
      }
      runner.free(seq.id);
    }
    this.speculator?.release(seq);
    stream.detach?.();
    stream.release();
    this.wake(); // freed pages may admit a waiting request
  }

  /** Abort: now if the sequence is not in the step in flight, else right after that step. */
  private abort(stream: Stream): void {
    const seq = stream.seq;
    if (seq.finished) return;
    seq.abortRequested = true;
    if (this.inFlight.has(seq)) return; // apply() comes back here once the step is over
    seq.finish('abort', this.now());
    this.retire(stream);
    this.notify(stream);
  }

  private fail(seq: Sequence, err: unknown): void {
    if (seq.finished) return; // a device loss ended it already
    const stream = this.streams.get(seq.id);
    seq.error = err;
    seq.finish('error', this.now());
    if (!stream) return;
    this.retire(stream);
    this.notify(stream);
  }

  /** Hands ready output to a waiting next(). */
  private notify(stream: Stream): void {
    if (stream.waiters.length === 0 || !stream.seq.ready) return;
    const w = stream.waiters.shift()!;
    try {
      w.resolve(this.deliver(stream));
    } catch (err) {
      w.reject(err);
    }
  }

  /** The next chunk; a failed request's last one carries finishReason 'error' and the error, after its text. */
  private deliver(stream: Stream): Chunk {
    const seq = stream.seq;
    const wasPaused = seq.paused;
    const chunk = seq.take(this.now());
    if (chunk.finishReason === 'error') chunk.error = asError(seq.error);
    if (chunk.finishReason) this.streams.delete(seq.id);
    else if (wasPaused) this.wake(); // the sequence rejoins the batch
    return chunk;
  }
}

/**
 * Resolves after the tasks queued before it (messages from the main thread among them) have run: a MessageChannel
 * round trip, which browsers do not throttle as they clamp nested setTimeout(0) to 4 ms.
 */
function nextTask(): Promise<void> {
  if (typeof MessageChannel === 'undefined') return new Promise((resolve) => setTimeout(resolve, 0));
  if (!ticks) {
    const channel = new MessageChannel();
    const waiting: (() => void)[] = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    // Node: an idle engine must not keep the process alive.
    (channel.port1 as { unref?: () => void }).unref?.();
    ticks = { post: () => channel.port2.postMessage(0), waiting };
  }
  const t = ticks;
  return new Promise((resolve) => {
    t.waiting.push(resolve);
    t.post();
  });
}
let ticks: { post(): void; waiting: (() => void)[] } | undefined;

/**
 * How long a failed step waits for its device's loss. A step on a device that goes away fails first (its readback is
 * aborted), and the loss is reported a moment later: the loss, not the AbortError, is what its requests end with.
 */
const LOSS_REPORT_MS = 1000;

/** A failure as an Error (a thrown string or object would not cross the worker as one). */
function asError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (err === undefined) return new IntabEngineError('The request failed without saying why: retry it, and report this if it happens again.');
  return new IntabEngineError(`The request failed: ${typeof err === 'string' ? err : JSON.stringify(err) ?? String(err)}`);
}
