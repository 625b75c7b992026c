// An engine for a model in this tab: the model store first (a Hugging Face id already stored opens without the
// network; anything else is downloaded into the store, and the worker then reads Blobs over the stored files), then a
// backend (a Worker, or this thread) that loads it, with progress and an AbortSignal that stops the load and frees
// what was loaded. restart() loads the same files with the same options on a new backend.

import * as Comlink from 'comlink';
import type { LoadOptions, LoadProgress, ModelInfo, ModelSource } from '@intab/engine/contract';
import { releaseSignal } from '@intab/engine/transfer';
import { isHfId, resolveModelSource, type ModelInput } from './model-source.ts';
import { modelName } from './model-name.ts';
import { modelStore } from './store/model-store.ts';
import { inThreadBackend, workerBackend, type Backend } from './engine-backends.ts';
import { EngineFacade } from './engine-facade.ts';
import type { CreateEngineOptions, IntabEngine } from './engine-types.ts';

/** createEngine for a model in this tab. */
export async function createLocalEngine(options: CreateEngineOptions & { model: ModelInput }, signal?: AbortSignal): Promise<IntabEngine> {
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
  return new EngineFacade(backend, stored ? { ...info, store: stored } : info, await modelName(options), () => launchLocal(options, source, loadOptions));
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
