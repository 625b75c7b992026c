// The Engine: everything above the runner, behind the EngineApi contract. It loads a model, checks each request and
// turns it into a sequence for the scheduler, and holds the model it runs on; its parts do the rest, one job each: the
// step loop (step-loop.ts) runs the steps and ends sequences, stream delivery (stream-delivery.ts) hands their output
// to pulls, admission (admission.ts) maps cached prefixes into new requests, the prefix-cache API
// (prefix-cache-api.ts) preloads, pins and saves, and the device recovery (recovery.ts) reloads the model after a lost
// GPU device. The same class runs in the worker (worker.ts exposes it through Comlink) and in-thread (tests, no-worker
// pages).

import type { DeviceLostError, Gpu } from '@intab/gpu';
import { ChatTemplateError, encodeChat, isEmbeddingModelFiles, renderChat, tokenBytes, UnsupportedModelError, type AnyModelFiles, type EmbeddingModelFiles, type EncoderRunner, type ModelFiles, type StepRunner, type Tokenizer } from '@intab/model';
import { prepareMasks, sharedMaskCache, TokenVocabulary, type Grammar } from '@intab/grammar';
import type { ChatMessage, Chunk, EmbedRequest, EmbedResult, EngineApi, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, ModelSource, PreloadInfo, PreloadRequest, RerankRequest, RerankResult, SaveCacheResult, StepLogEntry, ToolDefinition } from './contract.ts';
import { EngineClosedError, EngineStateError, InvalidRequestError, DraftMismatchError, ModelKindError, TokenizerRequiredError } from './errors.ts';
import { Scheduler } from './scheduler.ts';
import { Sequence, resolveOptions, type ResolvedOptions, type SequenceTools } from './sequence.ts';
import { checkPreload } from './request-checks.ts';
import { PrefixCache } from './prefix-cache.ts';
import { SequenceSpeculation, Speculator, resolveSpeculative } from './speculator.ts';
import { Constraint, compileFormat, formatOf } from './constraint.ts';
import { openModel } from './open-model.ts';
import { chooseBackend, loadEncoderModel, loadOnBackend, openModels, type LoadedEncoder } from './load.ts';
import { contextLimit, fitMaxTokens, truncateOldest, truncationRoom, type Truncation } from './context.ts';
import { cacheAdmission } from './admission.ts';
import { Streams, type Stream } from './stream-delivery.ts';
import { StepLoop } from './step-loop.ts';
import { PrefixCacheApi, noCacheAdvice } from './prefix-cache-api.ts';
import { DeviceRecovery } from './recovery.ts';
import { Embedder } from './embeddings.ts';
import { StepLog, stepLogLength } from './step-log.ts';
import { TOOL_FORMATS, ToolCallParser, detectToolFormat, formatChat, templateChat, templateTools, toolGrammar, toolPlan, withGenericTools, type ToolFormat } from './tools/index.ts';

export interface EngineOptions extends LoadOptions {
  /** Clock for the metrics, in ms [performance.now]. */
  now?: () => number;
  /** Seeds the requests that give no seed of their own [a random seed per engine]. */
  seed?: number;
  /** A device lost again within this many ms of the previous loss is not recovered from [60 000]. */
  lossWindowMs?: number;
}

export interface EngineInit {
  runner?: StepRunner;
  /** An embedding model's encoder, instead of a runner: the engine then answers embed() only. */
  encoder?: EncoderRunner;
  /** A draft model's runner for speculative decoding (same vocabulary as `runner`). */
  draft?: StepRunner;
  tokenizer?: Tokenizer;
  options?: EngineOptions;
  /** Model facts for modelInfo (load() fills them in). */
  info?: ModelInfo;
}

const DEFAULTS = { maxBatch: 8, maxTokensPerStep: 256, maxQueuedChunks: 8, kvBudgetBytes: 128 << 20 };

/**
 * The worker-side engine.
 * @example
 * const engine = new Engine({ runner, tokenizer });               // in-thread, over a loaded runner
 * const id = await engine.start({ prompt: 'Once upon a time', maxTokens: 32 }, signal);
 * for (let c = await engine.next(id); ; c = await engine.next(id)) { out += c.text; if (c.finishReason) break; }
 */
/**
 * Grammars kept (Engine.grammarFor): each holds its mask cache, up to 1,024 masks of the vocabulary's width (19 MB at
 * Qwen3's 151k ids, when that many states were visited), so a few.
 */
const RECENT_GRAMMARS = 4;

export class Engine implements EngineApi {
  // ---- the model it runs on (attach() sets them; a device loss drops all but the tokenizer and info) ----
  private runner?: StepRunner;
  private draft?: StepRunner;
  /** An embedding model's queue and passes (instead of a runner). */
  private embedder?: Embedder;
  private speculator?: Speculator;
  private tokenizer?: Tokenizer;
  /** The tokenizer's vocabulary as bytes, for grammar masks (built at the first constrained request). */
  private vocabulary?: TokenVocabulary;
  /** The same with a tool format's special tokens spelled (their text belongs to the call syntax), by format. */
  private toolVocabularies = new Map<string, TokenVocabulary>();
  /**
   * Compiled grammars of recent formats and tool lists, their costly masks prepared for the vocabulary (grammarFor):
   * the same schema or tools on every turn of a chat share their masks, most recent last.
   */
  private grammars = new Map<string, Grammar>();
  /** Makes call ids unique across engines (with the request and call numbers). */
  private readonly callNonce = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, '0')).join('');
  private info?: ModelInfo;
  private gpu?: Gpu;
  private scheduler?: Scheduler;
  /** The prefix cache (LoadOptions.prefixCache, on by default). */
  private cache?: PrefixCache;
  /** The scheduler's last steps (LoadOptions.stepLog), when asked for. */
  private steps?: StepLog;

  private options: EngineOptions;
  private readonly now: () => number;
  private readonly seeds: () => number;
  private nextId = 0;
  private closed = false;
  private loading = false;

  // ---- its parts ----
  private readonly streams: Streams;
  private readonly loop: StepLoop;
  private readonly prefixes: PrefixCacheApi;
  private readonly devices: DeviceRecovery;

  constructor(init: EngineInit = {}) {
    this.options = init.options ?? {};
    this.now = this.options.now ?? (() => performance.now());
    let seed = this.options.seed ?? crypto.getRandomValues(new Uint32Array(1))[0];
    // Default seeds of successive requests: a simple deterministic sequence from the engine's seed.
    this.seeds = () => (seed = (Math.imul(seed ^ (seed >>> 16), 0x45d9f3b) + 0x9e3779b9) >>> 0);
    this.streams = new Streams(this.now, () => this.loop.wake());
    this.loop = new StepLoop(this.streams, {
      runner: () => this.runner,
      scheduler: () => this.scheduler,
      speculator: () => this.speculator,
      cache: () => this.cache,
      deviceLost: () => this.devices.lost,
      stepLog: () => this.steps,
      closed: () => this.closed,
      now: this.now,
    });
    this.prefixes = new PrefixCacheApi({
      now: this.now,
      closed: () => this.closed,
      ready: () => this.ready(),
      cache: () => this.cache,
      encodePrefix: (request) => this.encodePrefix(request),
      prefill: (prompt, options, signal) => this.begin(prompt, options, signal, { prefillOnly: true }),
      next: (id) => this.next(id),
    });
    this.devices = new DeviceRecovery(
      {
        now: this.now,
        closed: () => this.closed,
        gpu: () => this.gpu,
        dropModel: (err) => this.dropModel(err),
        attach: (gpu, loaded, tokenizer) => {
          this.gpu = gpu;
          this.attach(loaded.runner, tokenizer, this.info, loaded.draft);
        },
        attachEncoder: (gpu, encoder, tokenizer) => {
          this.gpu = gpu;
          this.attachEncoder(encoder, tokenizer, this.info);
        },
        pinAgain: (gone) => this.prefixes.pinAgain(gone, this.info),
      },
      this.options.lossWindowMs,
    );
    this.keepSteps(this.options.stepLog);
    if (init.runner) this.attach(init.runner, init.tokenizer, init.info, init.draft);
    else if (init.encoder) this.attachEncoder(init.encoder, init.tokenizer, init.info);
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
    if (this.runner || this.embedder || this.loading) throw new EngineStateError('This engine already holds a model (or is loading one): destroy() it and create a new engine to load another.');
    this.loading = true;
    try {
      this.options = { ...this.options, ...options };
      this.keepSteps(options.stepLog);
      const files = await openModel(source, signal);
      if (isEmbeddingModelFiles(files)) return await this.loadEncoder(files, options, signal);
      // The model's files are open already; a draft must be a text model too.
      const opened = await openModels((s: ModelSource) => (s === source ? Promise.resolve(files) : openModel(s, signal).then(decoderOnly)), source, options.draft);
      const backend = await chooseBackend(options.backend, opened.model);
      const gpu = backend.name === 'webgpu' ? backend.gpu : undefined;
      let loaded: { runner: StepRunner; draft?: StepRunner; info: ModelInfo };
      const runnersOptions = {
        kvBudgetBytes: options.kvBudgetBytes ?? DEFAULTS.kvBudgetBytes,
        maxBatch: options.maxBatch ?? DEFAULTS.maxBatch,
        maxTokensPerStep: options.maxTokensPerStep ?? DEFAULTS.maxTokensPerStep,
        quantize: options.quantize,
        cpuKernels: options.cpuKernels,
        cpuThreads: options.cpuThreads,
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
      // On intab's WebGPU kernels, a lost device is recovered from: the same files are loaded again on a new one.
      if (gpu) this.devices.watch(gpu, { opened, options: runnersOptions, reason: backend.reason });
      if (options.restoreCache !== false) await this.restore(info);
      let preloads = options.preload === undefined ? [] : Array.isArray(options.preload) ? options.preload : [options.preload];
      // Preloading only saves time: when 'auto' chose a backend without a prefix cache, it is skipped, not fatal.
      if (preloads.length && !this.cache && backend.name !== 'webgpu' && (options.backend ?? 'auto') === 'auto') {
        info.warnings = [...(info.warnings ?? []), `preload was skipped: ${noCacheAdvice(this.runner)}.`];
        preloads = [];
      }
      if (preloads.length) info.preloaded = [];
      for (const p of preloads) info.preloaded!.push(await this.preload(p, signal));
      return info;
    } finally {
      this.loading = false;
    }
  }

  /** load() of an embedding model or reranker: its encoder on the backend asked for ('auto': as for any model). */
  private async loadEncoder(files: EmbeddingModelFiles, options: LoadOptions, signal: AbortSignal | undefined): Promise<ModelInfo> {
    for (const [field, given] of [['draft', options.draft], ['preload', options.preload]] as const) {
      if (given !== undefined) throw new InvalidRequestError(field, given, `absent for an embedding model (${files.config.arch}): it embeds, and generates nothing to speculate on or prefill`);
    }
    const backend = await chooseBackend(options.backend);
    const gpu = backend.name === 'webgpu' ? backend.gpu : undefined;
    let loaded: LoadedEncoder;
    try {
      loaded = await loadEncoderModel(files, backend, { quantize: options.quantize, signal });
    } catch (err) {
      gpu?.destroy();
      throw err;
    }
    if (this.closed) {
      loaded.encoder.destroy();
      gpu?.destroy();
      throw new EngineClosedError('destroyed');
    }
    this.gpu = gpu;
    this.attachEncoder(loaded.encoder, loaded.tokenizer, loaded.info);
    // On intab's WebGPU kernels a lost device is recovered from as for a text model: the calls in flight end with the
    // DeviceLostError, and the encoder is loaded again on a new device (calls sent meanwhile wait for it).
    if (gpu) this.devices.watch(gpu, { encoder: files, options: { quantize: options.quantize }, reason: backend.reason });
    return loaded.info;
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
    return this.prefixes.restore(info);
  }

  /** What load() returned (or what the constructor was told). */
  get modelInfo(): ModelInfo | undefined {
    return this.info;
  }

  /**
   * Registers a request; its stream id is what next() and cancel() take. Validation errors throw here. `session`: the
   * tab of a shared engine that asks (shared-host.ts), so that admission is fair between tabs.
   */
  async start(request: GenerateRequest, signal?: AbortSignal, session?: string): Promise<number> {
    await this.devices.recovered();
    if (this.embedder) throw this.embeddingOnly('generate');
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
    const tools = this.toolsOf(request, runner);
    const constraint = tools?.constraint ?? this.constraintOf(request, runner);
    // A prompt that leaves no room is refused; maxTokens past the limit is clamped (refused with strictContext).
    fitMaxTokens(prompt.length, options, contextLimit(runner, this.cache, prompt), {
      chat: request.messages !== undefined && options.truncate !== 'oldest',
      truncatedMessages: fitted.dropped,
    });
    const spec = resolveSpeculative(request.speculative ?? this.options.speculative ?? (this.draft ? 'auto' : false), {
      hasDraft: this.draft !== undefined,
      layers: runner.config.layers,
      earlyExit: runner.capabilities?.earlyExit !== false,
      why: runner.capabilities?.why,
    });
    const truncated = fitted.dropped > 0 ? { messages: fitted.dropped, tokens: fitted.tokens } : undefined;
    return this.begin(prompt, options, signal, { constraint, spec, truncated, tools: tools?.sequence, session }).id;
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
    await this.devices.recovered();
    if (this.embedder) throw this.embeddingOnly('preload');
    return this.prefixes.preload(request, signal);
  }

  /** Unpins a preloaded prefix; its pages stay cached (evictable) until pages run short. Idempotent. */
  release(preload: number): void {
    this.prefixes.release(preload);
  }

  /**
   * Writes the pinned prefixes (with `all`, every cached page) to the Origin Private File System, so the next load of
   * the same model restores them (LoadOptions.restoreCache) instead of prefilling them again.
   * @example
   * await engine.preload({ messages: [system] });
   * await engine.saveCache(); // { file, pages, tokens, bytes, ms }
   */
  async saveCache(options: { all?: boolean } = {}): Promise<SaveCacheResult> {
    await this.devices.recovered();
    return this.prefixes.saveCache(options);
  }

  /** Everything the stream produced since the last pull (waits when nothing is ready). */
  async next(id: number): Promise<Chunk> {
    return this.streams.next(id);
  }

  /** Ends a stream early (what `break` out of for-await does); resolves once its pages are freed. */
  async cancel(id: number): Promise<void> {
    const stream = this.streams.get(id);
    if (!stream) return;
    if (!stream.seq.finished) this.loop.abort(stream);
    await stream.released;
    this.streams.drop(stream);
  }

  /**
   * EngineApi.embed: one vector per input, from an embedding model's encoder (see EmbedRequest); inputs of concurrent
   * requests share the encoder's passes.
   * @example
   * const { embeddings } = await engine.embed({ input: ['How do I reset my password?', 'Billing'] });
   */
  async embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult> {
    if (this.closed) throw new EngineClosedError('destroyed');
    await this.devices.recovered();
    return this.encoderFor('embed').embed(request, signal);
  }

  /**
   * EngineApi.rerank: a reranker's scores of documents against a query, best first (see RerankRequest); pairs of
   * concurrent requests share the encoder's passes.
   * @example
   * const { results } = await engine.rerank({ query: 'reset my password', documents: ['Billing', 'Account recovery'] });
   */
  async rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult> {
    if (this.closed) throw new EngineClosedError('destroyed');
    await this.devices.recovered();
    return this.encoderFor('rerank').rerank(request, signal);
  }

  /** The encoder's queue for embed() or rerank(), or the ModelKindError of a model that answers the other call (or generates). */
  private encoderFor(call: 'embed' | 'rerank'): Embedder {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (!this.embedder) {
      if (!this.runner) throw new EngineClosedError('not-loaded');
      throw new ModelKindError('generation', call, this.info?.arch ?? 'unknown');
    }
    const kind = this.embedder.encoder.facts.classifier ? 'rerank' : 'embedding';
    if ((call === 'rerank') !== (kind === 'rerank')) throw new ModelKindError(kind, call, this.info?.arch ?? this.embedder.encoder.facts.arch);
    return this.embedder;
  }

  /** What an embedding model or reranker says to a call it cannot answer. */
  private embeddingOnly(call: 'generate' | 'preload'): ModelKindError {
    return new ModelKindError(this.embedder!.encoder.facts.classifier ? 'rerank' : 'embedding', call, this.info?.arch ?? this.embedder!.encoder.facts.arch);
  }

  /** Aborts every stream, waits for the step in flight, then frees the runner and the GPU. Idempotent. */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Embeddings not yet in a pass are refused now; the pass in flight ends before the encoder is freed.
    const embedding = this.embedder?.close(new EngineClosedError('destroyed'));
    for (const stream of this.streams.all()) if (!stream.seq.finished) this.loop.abort(stream);
    await this.loop.settled();
    await Promise.all(this.streams.all().map((s) => s.released));
    await embedding;
    this.embedder?.encoder.destroy();
    this.embedder = undefined;
    this.runner?.destroy();
    this.draft?.destroy();
    this.gpu?.destroy();
    this.runner = undefined;
    this.draft = undefined;
    this.gpu = undefined;
  }

  /** The device's state now ('ready', 'recovering', 'failed'): see EngineStatus. */
  get state(): EngineStatus['state'] {
    return this.devices.board.current.state;
  }

  /** The engine's state once its version is past `since` (at once without it): see EngineStatus. */
  status(since?: number): Promise<EngineStatus> {
    return this.devices.board.wait(since);
  }

  /**
   * Keeps at least the last `n` scheduler steps in EngineStats.stepLog from now on (LoadOptions.stepLog; load() and
   * the constructor's options call it, and a shared engine's tab that attaches asking for a longer log). 0 keeps none.
   */
  keepSteps(n: number | undefined): void {
    if (this.steps) this.steps.lengthen(n ?? 0);
    else if (stepLogLength(n) > 0) this.steps = new StepLog(n!);
  }

  /** EngineStats.stepLog, with each request's session (a shared engine's tab) as `session` maps it (left out without). */
  stepLog(session?: (id: string) => number): StepLogEntry[] | undefined {
    return this.steps?.entries(session);
  }

  stats(): EngineStats {
    const s = this.scheduler;
    return {
      streams: this.streams.size,
      ...(this.embedder ? { embedQueued: this.embedder.queued } : {}),
      waiting: s?.waiting.length ?? 0,
      running: s?.running.length ?? 0,
      paused: s?.running.filter((q) => q.paused).length ?? 0,
      freePages: this.runner?.kv.freePageCount ?? 0,
      availablePages: this.runner?.kv.availablePageCount ?? 0,
      totalPages: this.runner?.kv.pages ?? 0,
      ...(this.runner?.kv.window ? { windowPages: { free: this.runner.kv.availableWindowCount, total: this.runner.kv.window.pages } } : {}),
      ...(this.cache ? { prefixCache: this.cache.stats() } : {}),
      ...(this.speculator?.draftCache ? { draftPrefixCache: this.speculator.draftCache.stats() } : {}),
      ...(this.gpu ? { gpuBuffers: this.gpu.liveBuffers } : {}),
      ...(this.steps ? { stepLog: this.steps.entries() } : {}),
    };
  }

  // ---- the model it runs on ----

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
      cacheAdmission(runner, this.cache),
    );
  }

  /** An embedding model's encoder: embed() answers, start() and preload() refuse. */
  private attachEncoder(encoder: EncoderRunner, tokenizer: Tokenizer | undefined, info: ModelInfo | undefined): void {
    this.embedder = new Embedder(encoder, tokenizer, this.now);
    this.tokenizer = tokenizer;
    this.info = info;
  }

  /** The device was lost: every request ends with `err`, and its model goes (runners, device, pins). */
  private dropModel(err: DeviceLostError): void {
    // An encoder's calls end with `err`; the encoder is freed once the pass in flight settled.
    const embedder = this.embedder;
    this.embedder = undefined;
    if (embedder) void embedder.close(err).finally(() => embedder.encoder.destroy());
    this.loop.failAll(err);
    const { runner, draft, gpu } = this;
    this.runner = this.draft = this.scheduler = this.cache = this.speculator = undefined;
    this.gpu = undefined;
    this.prefixes.dropPins();
    draft?.destroy();
    runner?.destroy();
    gpu?.destroy();
  }

  /** A recovery in progress, if any (recovery.gpu.test.ts awaits it). */
  private get recovery(): Promise<void> | undefined {
    return this.devices.inProgress;
  }

  private ready(): { runner: StepRunner; scheduler: Scheduler } {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (!this.runner || !this.scheduler) throw new EngineClosedError('not-loaded');
    return { runner: this.runner, scheduler: this.scheduler };
  }

  // ---- requests ----

  /** Registers a checked request as a stream and hands it to the scheduler. */
  private begin(
    prompt: number[],
    options: ResolvedOptions,
    signal: AbortSignal | undefined,
    extra: { constraint?: Constraint; spec?: ReturnType<typeof resolveSpeculative>; prefillOnly?: boolean; truncated?: { messages: number; tokens: number }; tools?: (id: number) => SequenceTools; session?: string },
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
      tools: extra.tools?.(id),
      session: extra.session,
    });
    const stream = this.streams.open(seq);
    if (extra.spec) {
      stream.spec = new SequenceSpeculation(extra.spec);
      seq.speculative = stream.spec.metrics;
    }
    if (signal?.aborted) {
      this.loop.abort(stream);
      return { id, stream };
    }
    if (signal) {
      const onAbort = () => this.loop.abort(stream);
      signal.addEventListener('abort', onAbort, { once: true });
      stream.detach = () => signal.removeEventListener('abort', onAbort);
    }
    scheduler.add(seq);
    this.loop.wake();
    return { id, stream };
  }

  private encode(r: GenerateRequest): number[] {
    if (r.promptIds) return [...r.promptIds];
    const tok = this.tokenizer;
    if (!tok) throw new TokenizerRequiredError('tokenizer');
    if (r.messages) {
      return this.renderMessages(tok, r.messages, r.tools, true);
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
      ids = this.renderMessages(tok, q.messages, q.tools, false);
    } else ids = this.encode(q);
    if (ids.length === 0) throw new InvalidRequestError('preload', r, 'a prefix that encodes to at least one token');
    return ids;
  }

  /**
   * A chat's prompt ids: its messages (and tools) through the model's template (tools/render.ts: toolCalls as tool_calls,
   * a tool result's tool_call_id; 'developer' as 'system'), or, for a template that knows no tools, with intab's tool
   * prompt in the system message. Requests and preloads render here alike, so a preload is a prefix of its requests.
   */
  private renderMessages(tok: Tokenizer, messages: readonly ChatMessage[], tools: readonly ToolDefinition[] | undefined, addGenerationPrompt: boolean): number[] {
    if (tok.chatTemplate === undefined) throw ChatTemplateError.missing(tok.file);
    let chat = templateChat(messages);
    if (!tools?.length && messages.some((m) => m.toolCalls?.length || m.role === 'tool')) chat = formatChat(chat, [], this.toolFormat(tok));
    const options: { addGenerationPrompt: boolean; tools?: unknown[] } = { addGenerationPrompt };
    if (tools?.length) {
      const format = this.toolFormat(tok);
      if (format.name === 'generic') chat = withGenericTools(chat, tools, format);
      else {
        chat = formatChat(chat, tools, format);
        options.tools = templateTools(tools);
      }
    }
    return encodeChat(tok, renderChat(tok, chat, options));
  }

  /** The tokenizer's tool format (tools/formats.ts), or 'generic' for a template without one. */
  private toolFormat(tok: Tokenizer): ToolFormat {
    return TOOL_FORMATS[detectToolFormat(tok.chatTemplate, tok.addedTokens.map((t) => t.content)) ?? 'generic'];
  }

  /**
   * A request with tools: its grammar (the calls in the model's format under the functions' schemas; for 'none', text
   * that cannot begin a call) as the constraint, and what each of its sequences reads calls with.
   */
  private toolsOf(request: GenerateRequest, runner: StepRunner): { constraint: Constraint; sequence: (id: number) => SequenceTools } | undefined {
    const tools = request.tools;
    if (!tools?.length) return undefined;
    const tok = this.tokenizer;
    if (!tok) throw new TokenizerRequiredError('tokenizer');
    const format = this.toolFormat(tok);
    const plan = toolPlan(tools, request.toolChoice, request.parallelToolCalls, format);
    // The format's special tokens (Mistral's [TOOL_CALLS]...) as their text: the grammar spells the syntax with them.
    const keep = new Map<number, string>();
    for (const a of tok.addedTokens) if (format.specialTokens.includes(a.content) && a.id < runner.config.vocab) keep.set(a.id, a.content);
    const vocab = this.vocabularyFor(tok, runner, format, keep);
    const key = JSON.stringify(['tools', format.name, plan.mode, plan.parallel, plan.allowed.map((t) => t.function.name), tools]);
    const constraint = new Constraint({ type: 'tools' }, this.grammarFor(key, vocab, () => toolGrammar(format, plan, tools)), vocab);
    const nonce = this.callNonce;
    return {
      constraint,
      sequence: (id) => ({
        keep: new Map([...keep].filter(([t]) => tok.isSpecial(t))),
        parser: plan.mode === 'none' ? undefined : new ToolCallParser(format, { newId: (i) => `call_${nonce}${id.toString(36)}_${i}` }),
      }),
    };
  }

  /**
   * The grammar vocabulary: the tokenizer's token bytes, with a tool format's `spelled` special tokens given their text
   * (kept per format). Masks are as wide as the model's logits rows (which may be padded past the tokenizer's ids);
   * tokenizer ids past them (Gemma 3's tokenizer has 262,145 ids for 262,144 logits) are not in it: never sampled.
   */
  private vocabularyFor(tok: Tokenizer, runner: StepRunner, format?: ToolFormat, spelled: ReadonlyMap<number, string> = new Map()): TokenVocabulary {
    const V = runner.config.vocab;
    const eos = [...new Set([...runner.config.eosIds, ...tok.stopIds])].filter((id) => id < V);
    const special = [...spelled].filter(([id]) => tok.isSpecial(id) && id < V);
    const modelIds = (bytes: (Uint8Array | null)[]) => (bytes.length > V ? bytes.slice(0, V) : bytes);
    if (!format || special.length === 0) return (this.vocabulary ??= TokenVocabulary.from(modelIds(tokenBytes(tok)), { eos, size: V }));
    let v = this.toolVocabularies.get(format.name);
    if (!v) {
      const bytes = modelIds(tokenBytes(tok));
      for (const [id, text] of special) bytes[id] = new TextEncoder().encode(text);
      v = TokenVocabulary.from(bytes, { eos, size: V });
      this.toolVocabularies.set(format.name, v);
    }
    return v;
  }

  /** The request's constraint (responseFormat, grammar, regex), compiled; undefined when it has none. */
  private constraintOf(request: GenerateRequest, runner: StepRunner): Constraint | undefined {
    const format = formatOf(request);
    if (!format) return undefined;
    const tok = this.tokenizer;
    if (!tok) throw new TokenizerRequiredError('tokenizer');
    const vocab = this.vocabularyFor(tok, runner);
    return new Constraint(format, this.grammarFor(JSON.stringify(['format', format]), vocab, () => compileFormat(format)), vocab);
  }

  /**
   * The grammar under `key` among the recent ones, else built, with the masks its segment walks make computed ahead
   * into the cache its matchers share (prepareMasks: hundreds of microseconds each at a first visit, tens of
   * milliseconds where a vocabulary walk is built), so that decoding under it does not stall on them.
   */
  private grammarFor(key: string, vocab: TokenVocabulary, build: () => Grammar): Grammar {
    let grammar = this.grammars.get(key);
    if (grammar === undefined) {
      grammar = build();
      prepareMasks(grammar, vocab, sharedMaskCache(grammar, vocab));
      if (this.grammars.size >= RECENT_GRAMMARS) this.grammars.delete(this.grammars.keys().next().value!);
    } else this.grammars.delete(key);
    this.grammars.set(key, grammar);
    return grammar;
  }
}

/** A draft model's files: a text model (an embedding model has no tokens to propose). */
function decoderOnly(files: AnyModelFiles): ModelFiles {
  if (!isEmbeddingModelFiles(files)) return files;
  throw new UnsupportedModelError(files.gguf?.source.name ?? 'config.json', 'draft', files.config.arch, 'a draft model proposes tokens for speculative decoding: pick a small text model with the same tokenizer, not an embedding model');
}
