// The engine an origin's tabs share (createEngine's `share: 'origin'`). The SharedWorker (shared-worker.ts) holds one
// SharedHost, and every tab that connects to it gets a HostSession: an EngineApi whose load is attach(key, ...). Engines
// are kept by key, which the tab computes from what makes two loads the same (the model, and the settings that shape
// the engine: backend, quantization, K/V budget, batch limits...). The first session of a key loads the model; the
// others attach to it, joining a load still in progress. Every session's requests run in the one scheduler, tagged
// with the session so that admission is fair between tabs (scheduler.ts), and the prefix cache is shared: a prefix one
// tab preloaded is a hit for the others. A session reaches only its own streams and preloads. It ends when its tab
// calls destroy(), or when the tab is gone (closed, crashed, navigated away: the Web Lock it holds is released, see
// watch()): its streams are cancelled (their pages freed) and its preloads released. The last session of an engine
// destroys it. A lost device is recovered once for every tab (each one's requests end with DeviceLostError, each
// follows the recovery through status()); an engine whose recovery failed is replaced by a new load for the next tab
// that attaches or restarts (engine.restart() re-attaches), never torn down under the tabs still on it.

import type { Chunk, EmbedRequest, EmbedResult, EngineApi, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, ModelSource, PreloadInfo, PreloadRequest, RerankRequest, RerankResult, SaveCacheResult, ShareStats } from './contract.ts';
import { Engine } from './engine.ts';
import { GpuOutOfMemoryError } from '@intab/gpu';
import { EngineClosedError, EngineStateError, SharedMemoryError, UnknownStreamError } from './errors.ts';

/** A loaded engine and what its load() said. */
export interface HostedLoad {
  engine: Engine;
  info: ModelInfo;
}

/** Loads a model for the host: a new Engine's load() unless a test gives its own. */
export type HostLoader = (source: ModelSource, options: LoadOptions, onProgress: (p: LoadProgress) => void, signal: AbortSignal) => Promise<HostedLoad>;

const engineLoader: HostLoader = async (source, options, onProgress, signal) => {
  const engine = new Engine();
  try {
    return { engine, info: await engine.load(source, options, onProgress, signal) };
  } catch (err) {
    await engine.destroy();
    throw err;
  }
};

/** One engine and the sessions attached to it. */
interface Hosted {
  readonly key: string;
  readonly sessions: Set<HostSession>;
  /** Progress listeners of the sessions waiting for the load. */
  readonly progress: Set<(p: LoadProgress) => void>;
  readonly abort: AbortController;
  readonly loading: Promise<HostedLoad>;
  loaded?: HostedLoad;
  /** Loads made for this entry (1: attaching never loads). */
  loads: number;
}

/** The engines of an origin's tabs, by key; one per SharedWorker. */
export class SharedHost {
  private readonly engines = new Map<string, Hosted>();

  constructor(private readonly loader: HostLoader = engineLoader) {}

  /** A session for a newly connected tab (nothing attached yet). */
  session(): HostSession {
    return new HostSession(this);
  }

  /** Engines held now (loaded or loading). */
  get size(): number {
    return this.engines.size;
  }

  /** @internal HostSession.attach: the engine under `key`, loaded by this session or joined. */
  async join(session: HostSession, key: string, source: ModelSource, options: LoadOptions, onProgress: ((p: LoadProgress) => void) | undefined, signal: AbortSignal | undefined): Promise<{ hosted: Hosted; load: HostedLoad; attached: boolean }> {
    signal?.throwIfAborted();
    let hosted = this.engines.get(key);
    // An engine whose device failed for good is left to the tabs on it (each sees 'failed' and restarts when its user
    // asks): a tab attaching now, or restarting, gets a new load, and the others move to it as they restart.
    if (hosted?.loaded?.engine.state === 'failed') {
      this.engines.delete(key);
      hosted = undefined;
    }
    const attached = hosted !== undefined;
    if (!hosted) {
      const abort = new AbortController();
      const progress = new Set<(p: LoadProgress) => void>(onProgress ? [onProgress] : []);
      const loading = this.loader(source, options, (p) => progress.forEach((f) => f(p)), abort.signal).catch((err: unknown) => {
        throw this.outOfMemory(err, key);
      });
      const entry: Hosted = { key, sessions: new Set(), progress, abort, loading, loads: 1 };
      hosted = entry;
      this.engines.set(key, entry);
      loading.then(
        (l) => {
          entry.loaded = l;
          entry.progress.clear();
          // Every session left while it loaded: nobody will use it.
          if (entry.sessions.size === 0) void l.engine.destroy();
        },
        () => {
          if (this.engines.get(key) === entry) this.engines.delete(key);
        },
      );
    }
    const entry = hosted;
    entry.sessions.add(session);
    if (onProgress && !entry.loaded) entry.progress.add(onProgress);
    // This tab's abort leaves the load; the load itself stops only when no tab waits for it.
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      if (!signal) return;
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const load = await Promise.race([entry.loading, aborted]);
      return { hosted: entry, load, attached };
    } catch (err) {
      this.leave(entry, session);
      throw err;
    } finally {
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      if (onProgress) entry.progress.delete(onProgress);
    }
  }

  /**
   * A load's failure as the tab should see it: out of GPU memory beside engines other tabs hold, a SharedMemoryError
   * that names them (which tabs to close); anything else as it is.
   */
  private outOfMemory(err: unknown, key: string): unknown {
    if (!(err instanceof GpuOutOfMemoryError)) return err;
    const held = [...this.engines.values()]
      .filter((h) => h.key !== key && h.loaded)
      .map((h) => ({ model: modelOfKey(h.key), bytes: bytesHeld(h.loaded!.info), tabs: h.sessions.size }))
      .sort((a, b) => b.bytes - a.bytes);
    return held.length === 0 ? err : new SharedMemoryError(modelOfKey(key), held, { cause: err });
  }

  /** @internal A session is gone: the last one out destroys the engine (or stops its load). */
  leave(hosted: Hosted, session: HostSession): void {
    if (!hosted.sessions.delete(session) || hosted.sessions.size > 0) return;
    if (this.engines.get(hosted.key) === hosted) this.engines.delete(hosted.key);
    if (hosted.loaded) void hosted.loaded.engine.destroy();
    else hosted.abort.abort(new EngineClosedError('destroyed'));
  }

  /** @internal EngineStats.share for `session`. */
  shareStats(hosted: Hosted, session: HostSession): ShareStats {
    const bytes = bytesHeld(hosted.loaded?.info);
    const others = [...hosted.sessions].filter((s) => s !== session);
    return {
      sessions: hosted.sessions.size,
      requests: [session, ...others].map((s) => s.streamCount),
      loads: hosted.loads,
      bytesHeld: bytes,
      bytesIfSeparate: bytes * hosted.sessions.size,
    };
  }
}

/**
 * One tab's EngineApi on a shared engine. load() is refused: a session attaches with attach(key, ...), which loads the
 * model or joins the engine already holding it. Its streams are tagged with its id (fair admission between tabs).
 */
export class HostSession implements EngineApi {
  /** Tags this session's sequences in the scheduler. */
  readonly id: string = crypto.randomUUID();
  private hosted?: Hosted;
  private engine?: Engine;
  private readonly streams = new Set<number>();
  private readonly preloads = new Set<number>();
  /** embed() and rerank() calls in flight: aborted when the tab goes, so their inputs leave the encoder's queue. */
  private readonly embeds = new Set<AbortController>();
  private closed = false;
  private closing?: Promise<void>;
  private settleEnded!: () => void;
  /** Settles once the session has ended (destroy(), or its tab gone): what serves it may let go of it then. */
  readonly ended = new Promise<void>((resolve) => (this.settleEnded = resolve));

  constructor(private readonly host: SharedHost) {}

  /** Streams of this session not yet delivered to the end. */
  get streamCount(): number {
    return this.streams.size;
  }

  /**
   * Attaches this session to the engine under `key`, loading it when no tab has (progress and `signal` as load()'s:
   * an abort leaves the load, which stops when no other tab waits for it). `life`: the name of a Web Lock the tab holds
   * for as long as it lives (taken before this call): when the host is granted it, the tab is gone and the session
   * ends. `options.preload` runs for this tab when it attaches to an engine already loaded.
   */
  async attach(key: string, source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal, life?: string): Promise<ModelInfo> {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (this.hosted) throw new EngineStateError('This tab is already attached to a shared engine: destroy() it before attaching again.');
    if (life) this.watch(life);
    const { hosted, load, attached } = await this.host.join(this, key, source, options, onProgress, signal);
    if (this.closed) {
      this.host.leave(hosted, this);
      throw new EngineClosedError('destroyed');
    }
    this.hosted = hosted;
    this.engine = load.engine;
    // The step log is not a setting that picks the engine: a tab that asks for a longer one lengthens it.
    load.engine.keepSteps(options.stepLog);
    const info: ModelInfo = {
      ...load.info,
      share: { mode: 'shared-worker', attached, reason: attached ? 'another tab of this origin had already loaded this model with these settings: this tab attached to its engine' : "share: 'origin': this tab loaded the model in the origin's SharedWorker, where the origin's other tabs attach to it" },
    };
    if (!attached) {
      for (const p of info.preloaded ?? []) this.preloads.add(p.id);
    } else {
      delete info.preloaded;
      const asked = options.preload === undefined ? [] : Array.isArray(options.preload) ? options.preload : [options.preload];
      if (asked.length) info.preloaded = [];
      for (const p of asked) info.preloaded!.push(await this.preload(p, signal));
    }
    return info;
  }

  load(): Promise<ModelInfo> {
    return Promise.reject(new EngineStateError("A shared engine's tab attaches with attach(key, source, options), which loads the model only when no tab holds it."));
  }

  async start(request: GenerateRequest, signal?: AbortSignal): Promise<number> {
    const id = await this.ready().start(request, signal, this.id);
    this.streams.add(id);
    return id;
  }

  async next(stream: number): Promise<Chunk> {
    const engine = this.own(stream);
    try {
      const chunk = await engine.next(stream);
      if (chunk.finishReason !== null) this.streams.delete(stream);
      return chunk;
    } catch (err) {
      this.streams.delete(stream);
      throw err;
    }
  }

  async cancel(stream: number): Promise<void> {
    if (!this.streams.has(stream) || !this.engine) return;
    await this.engine.cancel(stream);
    this.streams.delete(stream);
  }

  embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult> {
    return this.encoderCall(signal, (engine, s) => engine.embed(request, s));
  }

  rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult> {
    return this.encoderCall(signal, (engine, s) => engine.rerank(request, s));
  }

  /** An embed() or rerank() call, aborted with the tab as well as by `signal`. */
  private async encoderCall<T>(signal: AbortSignal | undefined, call: (engine: Engine, signal: AbortSignal) => Promise<T>): Promise<T> {
    const engine = this.ready();
    const own = new AbortController();
    this.embeds.add(own);
    try {
      return await call(engine, signal ? AbortSignal.any([signal, own.signal]) : own.signal);
    } finally {
      this.embeds.delete(own);
    }
  }

  async preload(request: PreloadRequest, signal?: AbortSignal): Promise<PreloadInfo> {
    const p = await this.ready().preload(request, signal);
    this.preloads.add(p.id);
    return p;
  }

  release(preload: number): void {
    if (this.preloads.delete(preload)) this.engine?.release(preload);
  }

  saveCache(options?: { all?: boolean }): Promise<SaveCacheResult> {
    return this.ready().saveCache(options);
  }

  stats(): EngineStats {
    const engine = this.ready();
    const stats: EngineStats = { ...engine.stats(), share: this.host.shareStats(this.hosted!, this) };
    if (stats.stepLog) {
      // Tabs as ShareStats.requests lists them: this one first, then the others; -1 for a tab gone since.
      const order = new Map([this, ...[...this.hosted!.sessions].filter((s) => s !== this)].map((s, i) => [s.id, i]));
      stats.stepLog = engine.stepLog((id) => order.get(id) ?? -1);
    }
    return stats;
  }

  status(since?: number): Promise<EngineStatus> {
    return this.ready().status(since);
  }

  /** Ends this tab's part: its streams cancelled (pages freed), its preloads released; the last tab out frees the engine. */
  destroy(): Promise<void> {
    return (this.closing ??= (async () => {
      this.closed = true;
      for (const c of this.embeds) c.abort(new EngineClosedError('destroyed'));
      const engine = this.engine;
      if (engine) {
        await Promise.all([...this.streams].map((id) => engine.cancel(id).catch(() => {})));
        for (const p of this.preloads) engine.release(p);
      }
      this.streams.clear();
      this.preloads.clear();
      if (this.hosted) this.host.leave(this.hosted, this);
      this.engine = undefined;
      this.settleEnded();
    })());
  }

  /** Ends the session when the tab's Web Lock `life` is granted to the host: the tab that held it is gone. */
  private watch(life: string): void {
    const locks = (globalThis.navigator as Navigator | undefined)?.locks;
    if (!locks) return; // no Web Locks: a tab that goes away without destroy() is noticed when its port fails
    void locks.request(life, () => this.destroy());
  }

  private ready(): Engine {
    if (this.closed) throw new EngineClosedError('destroyed');
    if (!this.engine) throw new EngineClosedError('not-loaded');
    return this.engine;
  }

  /** The engine, for a stream of this session (a tab never reads another tab's stream). */
  private own(stream: number): Engine {
    const engine = this.ready();
    if (!this.streams.has(stream)) throw new UnknownStreamError(stream);
    return engine;
  }
}

/** GPU bytes an engine holds: its weights and the K/V cache it was granted. */
function bytesHeld(info: ModelInfo | undefined): number {
  return (info?.weightBytes ?? 0) + (info?.kvBudget?.granted ?? 0);
}

/**
 * The model a share key names, for messages: the tabs make the key as JSON [model, draft, settings] (intab's
 * local-engine.ts shareKey); any other key is shown as it is.
 */
function modelOfKey(key: string): string {
  try {
    const parsed: unknown = JSON.parse(key);
    if (Array.isArray(parsed) && typeof parsed[0] === 'string') return parsed[0].replace(/^hf:/, '');
  } catch {
    // not JSON: the key itself
  }
  return key;
}
