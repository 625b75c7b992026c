// An engine for a model in this tab: the model store first (a Hugging Face id already stored opens without the
// network; anything else is downloaded into the store, and the worker then reads Blobs over the stored files), then a
// backend (a Worker, or this thread) that loads it, with progress and an AbortSignal that stops the load and frees
// what was loaded. restart() loads the same files with the same options on a new backend.

import * as Comlink from 'comlink';
import type { LoadOptions, LoadProgress, ModelInfo, ModelSource, ShareInfo } from '@intab/engine/contract';
import { releaseSignal } from '@intab/engine/transfer';
import { isHfId, resolveModelSource, type ModelInput } from './model-source.ts';
import { modelName } from './model-name.ts';
import { modelStore } from './store/model-store.ts';
import { inThreadBackend, sharedBackend, workerBackend, type Backend } from './engine-backends.ts';
import { InvalidArgumentError } from './errors.ts';
import { EngineFacade } from './engine-facade.ts';
import { electedBackend } from './tab-election.ts';
import type { CreateEngineOptions, IntabEngine } from './engine-types.ts';

/** createEngine for a model in this tab. */
export async function createLocalEngine(options: CreateEngineOptions & { model: ModelInput }, signal?: AbortSignal): Promise<IntabEngine> {
  if (options.serveOpenAI !== undefined && typeof options.serveOpenAI !== 'boolean') {
    throw new InvalidArgumentError('createEngine', `createEngine: serveOpenAI is true or false (whether this tab answers the Service Worker's relayed OpenAI requests with the shared engine), not ${JSON.stringify(options.serveOpenAI)}.`);
  }
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
  const share = shareKey(options);
  const { backend, info } = await launchLocal(options, source, loadOptions, signal, share);
  // A restart loads the same files (Blobs over the store's copies, or the same URLs) with the same options. An engine
  // attached to the shared one answers the Service Worker's relayed requests by itself (unless serveOpenAI: false).
  const relaunch = () => launchLocal(options, source, loadOptions, undefined, share);
  return new EngineFacade(backend, stored ? { ...info, store: stored } : info, await modelName(options), relaunch, options.serveOpenAI !== false);
}

/**
 * A new backend (a Worker, a session on the origin's shared engine, or this thread) with the model loaded; aborting
 * `signal` stops the load and frees it (a shared engine's load stops only when no other tab waits for it).
 */
async function launchLocal(options: CreateEngineOptions, source: ModelSource, loadOptions: LoadOptions, signal: AbortSignal | undefined, share: ShareKey | undefined): Promise<{ backend: Backend; info: ModelInfo }> {
  const shared = share?.key === undefined ? undefined : sharedBackend(share.key);
  let why = 'this browser has no SharedWorker';
  if (shared) {
    try {
      return await launchOn(shared, options, source, loadOptions, signal);
    } catch (err) {
      // A browser whose SharedWorkers have no WebGPU where its pages and Workers do: a tab elected host instead.
      if (signal?.aborted || (err as Error)?.name !== 'WebGpuUnavailableError' || !('gpu' in navigator)) throw err;
      why = `the origin's SharedWorker has no WebGPU in this browser (${(err as Error).message})`;
    }
  }
  // No SharedWorker that can hold the engine: one tab of the origin is elected to host it (tab-election.ts).
  const elected = share?.key === undefined ? undefined : electedBackend(share.key, why);
  if (elected) return launchOn(elected, options, source, loadOptions, signal);
  const own = share ? { mode: 'own' as const, reason: share.key === undefined ? share.reason : `${why}, nor Web Locks and BroadcastChannel to elect a host tab: this tab loaded its own engine` } : undefined;
  return launchOn(options.worker === false ? await inThreadBackend() : workerBackend(), options, source, loadOptions, signal, own);
}

/** launchLocal on `backend`: the model loaded there, `share` (a tab's own engine asked to share) noted in its info. */
async function launchOn(backend: Backend, options: CreateEngineOptions, source: ModelSource, loadOptions: LoadOptions, signal: AbortSignal | undefined, share?: ShareInfo): Promise<{ backend: Backend; info: ModelInfo }> {
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
    const info = await guard.call(() => load);
    return { backend, info: share ? { ...info, share } : info };
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

/** share: 'origin': the key two tabs' loads share an engine under, or why this load cannot be shared. */
interface ShareKey {
  key?: string;
  reason: string;
}

/**
 * The key of an engine the origin's tabs share: the model (a URL or a Hugging Face id, with file and revision) and
 * every option that shapes the engine; preload and restoreCache are each tab's own (a tab that attaches preloads its
 * prefixes into the shared engine). Undefined without `share: 'origin'`; a reason instead of a key for inputs another
 * tab cannot name (Files, a folder) and for `worker: false`.
 */
function shareKey(o: CreateEngineOptions): ShareKey | undefined {
  if (o.share === undefined || o.share === false) return undefined;
  if (o.share !== 'origin') throw new InvalidArgumentError('createEngine', `createEngine: share is 'origin' or false, not ${JSON.stringify(o.share)}.`);
  if (o.worker === false) return { reason: "worker: false runs the engine on this thread, which no other tab can reach: drop it to share the engine" };
  // A Hugging Face model by its store id (file and revision folded in, as the model store names it); a URL by its href.
  const name = (m: ModelInput | undefined, hub: { file?: string; revision?: string }): string | undefined => {
    if (m === undefined) return '';
    const id = storeIdOf(m, hub);
    if (id !== undefined) return `hf:${id}`;
    if (typeof m === 'string') {
      try {
        return new URL(m, globalThis.location?.href).href;
      } catch {
        return m; // not a URL: the load says what is wrong with it
      }
    }
    return m instanceof URL ? m.href : undefined; // a File or a folder's Files: this tab's own
  };
  const model = name(o.model, o);
  const draft = name(o.draft, {});
  if (model === undefined || draft === undefined) return { reason: 'a File or a folder is this tab\'s own, which another tab cannot name: give a URL or a Hugging Face id to share the engine' };
  const settings = { backend: o.backend, quantize: o.quantize, cpuKernels: o.cpuKernels, cpuThreads: o.cpuThreads, kvBudgetBytes: o.kvBudgetBytes, maxBatch: o.maxBatch, maxTokensPerStep: o.maxTokensPerStep, maxQueuedChunks: o.maxQueuedChunks, speculative: o.speculative, prefixCache: o.prefixCache };
  return { key: JSON.stringify([model, draft, settings]), reason: '' };
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
  if (o.cpuKernels !== undefined) out.cpuKernels = o.cpuKernels;
  if (o.cpuThreads !== undefined) out.cpuThreads = o.cpuThreads;
  if (o.kvBudgetBytes !== undefined) out.kvBudgetBytes = o.kvBudgetBytes;
  if (o.maxBatch !== undefined) out.maxBatch = o.maxBatch;
  if (o.maxTokensPerStep !== undefined) out.maxTokensPerStep = o.maxTokensPerStep;
  if (o.maxQueuedChunks !== undefined) out.maxQueuedChunks = o.maxQueuedChunks;
  if (o.speculative !== undefined) out.speculative = o.speculative;
  if (o.prefixCache !== undefined) out.prefixCache = o.prefixCache;
  if (o.preload !== undefined) out.preload = o.preload;
  if (o.restoreCache !== undefined) out.restoreCache = o.restoreCache;
  if (o.stepLog !== undefined) out.stepLog = o.stepLog;
  return out;
}
