// Where an engine's EngineApi runs, and the guard every call into it goes through. The backend is a module Worker
// (Comlink, with the transfer handlers that carry AbortSignals and typed errors across), an Engine on this thread, or
// an OpenAI-compatible server (RemoteEngineApi). The CallGuard settles every pending call when the backend ends (a
// dead or terminated worker, destroy(), restart()), so no call is left hanging.

import * as Comlink from 'comlink';
import type { EngineApi, LoadOptions, LoadProgress, ModelInfo, ModelSource } from '@intab/engine/contract';
import { registerTransferHandlers } from '@intab/engine/transfer';
import { WorkerError } from './errors.ts';
import { RemoteEngineApi } from './remote/api.ts';
import type { RemoteOptions } from './remote/http.ts';

// ---- pending calls that must not outlive the engine ----

/** Every call into the engine goes through here, so a dead worker or a destroy() settles it. */
export class CallGuard {
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

// ---- the backends: a Worker, this thread, or a server ----

/** Where an engine's calls go, and how to end it. */
export interface Backend {
  api: EngineApi;
  guard: CallGuard;
  inWorker: boolean;
  /** The Worker, when there is one. */
  worker?: Worker;
  /** Ends the backend at once (a worker is terminated; an in-thread engine is destroyed when it can be). */
  kill(): void;
  /** The info of the engine the backend moved to since its load (an elected host's successor), if it did. */
  info?: () => ModelInfo | undefined;
}

/**
 * Holds the Web Lock `name` from when it is granted (queued behind its holder, if any) until `signal` aborts, which also
 * takes a request still waiting out of the queue. Resolves once the lock is held; rejects where Web Locks refuse (an
 * opaque origin) or the signal aborted first. A tab's life lock, which a host waits for, and a host election are this.
 */
export function holdLock(locks: LockManager, name: string, signal: AbortSignal): Promise<void> {
  return new Promise<void>((held, refused) => {
    locks
      .request(name, { signal }, () => new Promise<void>((letGo) => {
        held();
        if (signal.aborted) letGo();
        else signal.addEventListener('abort', () => letGo(), { once: true });
      }))
      .catch(refused);
  });
}

/**
 * A worker the browser kills (out of memory) or that is terminated sends nothing. It holds a Web Lock while it lives;
 * waiting here for the same lock, granted once it is gone, closes the guard (every pending call rejects) at that moment.
 */
export function watchLife(worker: Pick<Worker, 'postMessage'>, guard: Pick<CallGuard, 'close'>): void {
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

/** A new module Worker running the engine (nothing loaded yet); its death or load failure closes the guard. */
export function workerBackend(): Backend {
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

/** What a shared engine's session answers besides the EngineApi (the SharedWorker's HostSession). */
export interface SessionApi extends EngineApi {
  attach(key: string, source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal, life?: string): Promise<ModelInfo>;
}

/**
 * A session on the engine the origin's tabs share under `key` (its load() attaches: it loads the model only when no
 * tab holds it), in the origin's SharedWorker. This tab holds a Web Lock for as long as it lives, which the host waits
 * for: when this tab closes, crashes or navigates away, the host ends its requests and frees their pages. kill() ends
 * this tab's session (never the engine the other tabs use). Undefined where there is no SharedWorker.
 */
export function sharedBackend(key: string): Backend | undefined {
  if (typeof SharedWorker === 'undefined') return undefined;
  registerTransferHandlers();
  // This exact form lets Vite, webpack 5 and Parcel find, bundle and emit the shared worker (and its imports).
  const worker = new SharedWorker(new URL('./shared-worker.ts', import.meta.url), { type: 'module', name: 'intab-shared' });
  const port = worker.port;
  const guard = new CallGuard();
  watchLife(port, guard);
  worker.addEventListener('error', () => guard.close(new WorkerError("the origin's shared worker script failed to load or threw at the top level")));
  port.addEventListener('messageerror', () => guard.close(new WorkerError('a message from the shared worker could not be deserialized')));
  const session = Comlink.wrap<SessionApi>(port) as unknown as SessionApi;
  // This tab's life, as a Web Lock the host can wait for: taken before attaching, released when the session ends.
  const life = `intab-tab-${crypto.randomUUID()}`;
  const release = new AbortController();
  const locks = globalThis.navigator?.locks;
  // Whether the lock was taken: a context that may not use Web Locks (an opaque origin) attaches without it, and its
  // session then ends only by destroy() or when its port fails.
  const held = locks ? holdLock(locks, life, release.signal).then(() => true, () => false) : Promise.resolve(false);
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    try {
      await session.destroy();
    } finally {
      release.abort();
      port.close();
    }
  };
  const api: EngineApi = {
    load: async (source, options, onProgress, signal) => session.attach(key, source, options, onProgress, signal, (await held) ? life : undefined),
    start: (request, signal) => session.start(request, signal),
    next: (stream) => session.next(stream),
    cancel: (stream) => session.cancel(stream),
    embed: (request, signal) => session.embed(request, signal),
    rerank: (request, signal) => session.rerank(request, signal),
    preload: (request, signal) => session.preload(request, signal),
    release: (preload) => session.release(preload),
    saveCache: (options) => session.saveCache(options),
    stats: () => session.stats(),
    status: (since) => session.status(since),
    destroy: end,
  };
  return { api, guard, inWorker: true, kill: () => void end().catch(() => {}) };
}

/** An engine on this thread (nothing loaded yet): tests, and pages that cannot start a Worker. */
export async function inThreadBackend(): Promise<Backend> {
  // Imported on demand, so an app that uses the worker does not carry the engine in its main bundle.
  const { Engine } = await import('@intab/engine');
  const api: EngineApi = new Engine();
  return { api, guard: new CallGuard(), inWorker: false, kill: () => void api.destroy().catch(() => {}) };
}

/** A remote server's API as a backend (nothing is loaded yet: its load() asks the server for the model). */
export function remoteBackend(remote: RemoteOptions): Backend & { api: RemoteEngineApi } {
  const api = new RemoteEngineApi(remote);
  return { api, guard: new CallGuard(), inWorker: false, kill: () => void api.destroy() };
}
