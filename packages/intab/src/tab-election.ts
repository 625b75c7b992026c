// createEngine({ share: 'origin' }) where there is no SharedWorker (Chrome on Android; a browser whose SharedWorkers
// have no WebGPU): one tab of the origin is elected host of the engine by a Web Lock per share key, and runs a
// SharedHost in its own dedicated Worker (tab-host-worker.ts); the others are sessions on it over the key's
// BroadcastChannel (@intab/engine/tab-host), through Comlink as everywhere else. Every tab waits in the lock's queue,
// so when the host tab goes (closed, crashed, navigated away) the next one is granted it, loads the model in a Worker
// of its own (from the same source: the model store's Blobs, so nothing is downloaded; restoreCache reads back what
// saveCache wrote) and announces itself; the other tabs, told by the host's life lock, move to it. Requests that were
// running on the old host end with EngineHostLostError after the text already delivered; later ones go to the new host.
// Fairness between tabs is the host's scheduler's, as in the SharedWorker.

import * as Comlink from 'comlink';
import type { Chunk, EmbedRequest, EmbedResult, EngineApi, EngineStats, EngineStatus, GenerateRequest, LoadOptions, LoadProgress, ModelInfo, ModelSource, PreloadInfo, PreloadRequest, RerankRequest, RerankResult, SaveCacheResult } from '@intab/engine/contract';
import { EngineClosedError, UnknownStreamError } from '@intab/engine/errors';
import { channelEndpoint, hostChannelName, type ChannelHere } from '@intab/engine/tab-host';
import { registerTransferHandlers } from '@intab/engine/transfer';
import { CallGuard, holdLock, watchLife, type Backend, type SessionApi } from './engine-backends.ts';
import { EngineHostLostError, WorkerError } from './errors.ts';

/** This tab's way to the host: its own Worker (host), or a session over the channel (client). */
interface Link {
  session: SessionApi;
  host: boolean;
  /** Closed with EngineHostLostError when the host goes (never, for this tab's own Worker): its calls reject then. */
  guard: CallGuard;
}

/** Settles as `p`, or rejects when the link's host goes first. */
function racing<T>(p: Promise<T>, link: Link): Promise<T> {
  return link.guard.call(() => p);
}

/** The EngineApi of a tab in election mode: calls go to the current host, and move to the next one when it goes. */
class ElectedApi implements EngineApi {
  private readonly channel: BroadcastChannel;
  private readonly stop = new AbortController();
  /** Granted the key's host lock: this tab is (or becomes) the host. */
  private readonly elected: Promise<void>;
  /** This tab's life, a Web Lock held until destroy(): a host ends this tab's sessions when it is granted it. */
  private readonly life = `intab-tab-${crypto.randomUUID()}`;
  private readonly lifeHeld: Promise<boolean>;
  private link?: Promise<Link>;
  /** The last link established (this.link may be a connection still under way). */
  private linked?: Link;
  private readonly streams = new Map<number, { link: Link; id: number; aborted?: boolean }>();
  private nextStream = 1;
  private readonly lostHosts = new Set<string>();
  private args?: { source: ModelSource; options: LoadOptions };
  private closed = false;
  /** Whether this tab hosts the engine now. */
  private mode: 'elected-host' | 'elected-client' = 'elected-client';
  /** The info of the load this tab moved to when its host went (Backend.info). */
  moved?: ModelInfo;
  /** This tab's own Worker, while it hosts the engine (Backend.worker: tests terminate it). */
  worker?: Worker;

  constructor(private readonly key: string, private readonly locks: LockManager, private readonly why: string, private readonly guard: CallGuard) {
    this.channel = new BroadcastChannel(hostChannelName(key));
    const { signal } = this.stop;
    this.elected = holdLock(locks, `intab-host-election:${key}`, signal);
    this.elected.catch(() => {});
    this.lifeHeld = holdLock(locks, this.life, signal).then(() => true, () => false);
  }

  // ---- connecting: to this tab's own host Worker, or to the host tab over the channel ----

  /** Waits for the election lock or a host's answer, whichever comes first, and attaches there. */
  private async connect(onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<{ link: Link; info: ModelInfo }> {
    const { source, options } = this.args!;
    const found = this.findHost();
    try {
      const which = await Promise.race([this.elected.then(() => undefined), found.here]);
      if (this.closed) throw new EngineClosedError('destroyed');
      const connected = which === undefined ? await this.hostLink(source, options, onProgress, signal) : await this.clientLink(which, source, options);
      this.linked = connected.link;
      return connected;
    } finally {
      found.cancel();
    }
  }

  /** Asks the channel for its host; resolves with the host's answer to this tab (a 'here' to all makes it ask again). */
  private findHost(): { here: Promise<ChannelHere & { self: string }>; cancel(): void } {
    const self = crypto.randomUUID();
    let onMessage: (ev: MessageEvent) => void = () => {};
    const here = new Promise<ChannelHere & { self: string }>((resolve) => {
      onMessage = (ev: MessageEvent) => {
        const d = ev.data as ChannelHere | null;
        if (d?.type !== 'here' || this.lostHosts.has(d.host)) return;
        if (d.to === self) resolve({ ...d, self });
        else if (d.to === undefined) this.channel.postMessage({ type: 'hello', from: self });
      };
      this.channel.addEventListener('message', onMessage);
      this.channel.postMessage({ type: 'hello', from: self });
    });
    return { here, cancel: () => this.channel.removeEventListener('message', onMessage) };
  }

  /** This tab won the election: the engine in a Worker of its own, served to the other tabs. */
  private async hostLink(source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<{ link: Link; info: ModelInfo }> {
    // This exact form lets Vite, webpack 5 and Parcel find, bundle and emit the worker (and its imports).
    const worker = new Worker(new URL('./tab-host-worker.ts', import.meta.url), { type: 'module', name: 'intab-host' });
    this.worker = worker;
    // This tab's own Worker failing or killed ends this backend as a Worker's end ends any engine's (restart() loads
    // again); letting the election lock go, the next tab in its queue takes over for the others.
    const fail = (err: WorkerError) => {
      if (this.closed) return;
      this.guard.close(err);
      void this.destroy();
    };
    watchLife(worker, { close: (err) => fail(err as WorkerError) });
    worker.addEventListener('error', (ev: ErrorEvent) => {
      ev.preventDefault?.();
      fail(new WorkerError(ev.message || "the host tab's worker script failed to load or threw at the top level"));
    });
    worker.postMessage({ type: 'intab:serve', key: this.key, life: `intab-host-life-${crypto.randomUUID()}` });
    const session = Comlink.wrap<SessionApi>(worker) as unknown as SessionApi;
    const link: Link = { session, host: true, guard: new CallGuard() };
    try {
      const info = await session.attach(this.key, source, options, onProgress, signal);
      this.mode = 'elected-host';
      return { link, info };
    } catch (err) {
      worker.terminate();
      throw err;
    }
  }

  /** Another tab is the host: a session on its engine over the channel, ended when its life lock is granted here. */
  private async clientLink(here: ChannelHere & { self: string }, source: ModelSource, options: LoadOptions): Promise<{ link: Link; info: ModelInfo }> {
    const session = Comlink.wrap<SessionApi>(channelEndpoint(this.channel, here.self, here.host)) as unknown as SessionApi;
    const link: Link = { session, host: false, guard: new CallGuard() };
    const current = this.link;
    void this.locks
      .request(here.life, { signal: this.stop.signal }, () => {
        this.lostHosts.add(here.host);
        link.guard.close(new EngineHostLostError(this.key));
        if (this.closed || this.link !== current) return;
        const moved = this.connect();
        this.link = moved.then((c) => c.link);
        this.link.catch(() => {});
        void moved.then((c) => (this.moved = this.described(c.info, true)), () => {});
      })
      .catch(() => {});
    // Neither the progress callback nor the signal can cross a BroadcastChannel: a client's load is only an attach.
    const info = await racing(session.attach(this.key, source, options, undefined, undefined, (await this.lifeHeld) ? this.life : undefined), link);
    this.mode = 'elected-client';
    return { link, info };
  }

  private current(): Promise<Link> {
    if (this.closed) return Promise.reject(new EngineClosedError('destroyed'));
    return this.link ?? Promise.reject(new EngineClosedError('not-loaded'));
  }

  // ---- EngineApi ----

  async load(source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<ModelInfo> {
    this.args = { source, options };
    const connected = this.connect(onProgress, signal);
    this.link = connected.then((c) => c.link);
    this.link.catch(() => {});
    const { info } = await connected;
    return this.described(info, false);
  }

  /** A (re)connection's info, with share saying where the engine runs now, and why. */
  private described(info: ModelInfo, moved: boolean): ModelInfo {
    const host = this.mode === 'elected-host';
    const reason = moved
      ? host
        ? 'the tab that hosted the engine went: this tab was next in the election and took over, loading the model from the model store'
        : 'the tab that hosted the engine went: another tab took over as host, and this tab reaches its engine over a BroadcastChannel'
      : host
        ? `${this.why}: this tab won the election (a Web Lock) and hosts the engine in its own Worker, where the origin's other tabs reach it over a BroadcastChannel`
        : `${this.why}: another tab of this origin is the elected host; this tab reaches its engine over a BroadcastChannel and takes over if that tab goes`;
    return { ...info, share: { mode: this.mode, attached: !host, reason } };
  }

  async start(request: GenerateRequest, signal?: AbortSignal): Promise<number> {
    const link = await this.current();
    // Over the channel no AbortSignal crosses: an abort here cancels the stream there.
    const id = await racing(link.session.start(request, link.host ? signal : undefined), link);
    const local = this.nextStream++;
    const entry: { link: Link; id: number; aborted?: boolean } = { link, id };
    this.streams.set(local, entry);
    if (!link.host && signal) {
      const onAbort = () => {
        entry.aborted = true;
        void link.session.cancel(id).catch(() => {});
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    return local;
  }

  async next(stream: number): Promise<Chunk> {
    const s = this.streams.get(stream);
    if (!s) throw new UnknownStreamError(stream);
    try {
      const chunk = await racing(s.link.session.next(s.id), s.link);
      if (chunk.finishReason !== null) this.streams.delete(stream);
      return chunk;
    } catch (err) {
      this.streams.delete(stream);
      // Aborted here and cancelled there: the stream ends as an aborted one does on any engine.
      if (s.aborted && !(err instanceof EngineHostLostError)) return { text: '', ids: [], finishReason: 'abort' };
      throw err;
    }
  }

  async cancel(stream: number): Promise<void> {
    const s = this.streams.get(stream);
    if (!s) return;
    this.streams.delete(stream);
    await racing(s.link.session.cancel(s.id), s.link).catch(() => {});
  }

  embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult> {
    return this.encoderCall(signal, (session, s) => session.embed(request, s));
  }

  rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult> {
    return this.encoderCall(signal, (session, s) => session.rerank(request, s));
  }

  /**
   * An embed() or rerank() call on the current host. Over the channel no AbortSignal crosses: an abort here stops the
   * wait (the host finishes the inputs it holds); in the host's own tab the signal reaches the engine.
   */
  private async encoderCall<T>(signal: AbortSignal | undefined, call: (session: SessionApi, signal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    const link = await this.current();
    signal?.throwIfAborted();
    const answer = racing(call(link.session, link.host ? signal : undefined), link);
    if (link.host || !signal) return answer;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      answer.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  async preload(request: PreloadRequest, signal?: AbortSignal): Promise<PreloadInfo> {
    const link = await this.current();
    return racing(link.session.preload(request, link.host ? signal : undefined), link);
  }

  async release(preload: number): Promise<void> {
    const link = await this.current();
    await racing(Promise.resolve(link.session.release(preload)), link).catch(() => {});
  }

  async saveCache(options?: { all?: boolean }): Promise<SaveCacheResult> {
    const link = await this.current();
    return racing(link.session.saveCache(options), link);
  }

  async stats(): Promise<EngineStats> {
    const link = await this.current();
    return racing(Promise.resolve(link.session.stats()), link);
  }

  /** The host's status; when the host goes, the new host's (from its start: versions are each host's own). */
  async status(since?: number): Promise<EngineStatus> {
    for (;;) {
      const link = await this.current();
      try {
        return await racing(link.session.status(since), link);
      } catch (err) {
        if (!(err instanceof EngineHostLostError)) throw err;
        since = -1;
      }
    }
  }

  /** Leaves the host (a host tab ends its Worker, and the next tab in the lock's queue takes over). */
  async destroy(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const link = this.linked;
    try {
      // A Worker that failed answers nothing: its session ends with it.
      if (link && !this.guard.closed) await racing(link.session.destroy(), link).catch(() => {});
    } finally {
      this.worker?.terminate();
      this.stop.abort();
      this.channel.close();
    }
  }
}

/**
 * A backend on the engine the origin's tabs share under `key`, by election (see the file's header); `why` says why
 * there is no SharedWorker to hold it (info.share.reason). Undefined where Web Locks, BroadcastChannel or Worker are
 * missing: the tab then loads its own engine.
 */
export function electedBackend(key: string, why: string): Backend | undefined {
  const locks = globalThis.navigator?.locks;
  if (!locks || typeof BroadcastChannel === 'undefined' || typeof Worker === 'undefined') return undefined;
  registerTransferHandlers();
  const guard = new CallGuard();
  const api = new ElectedApi(key, locks, why, guard);
  const backend: Backend = { api, guard, inWorker: true, kill: () => void api.destroy().catch(() => {}) };
  Object.defineProperty(backend, 'worker', { get: () => api.worker });
  backend.info = () => api.moved;
  return backend;
}
