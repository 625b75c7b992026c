// createEngine(): where a web app's engine runs. A model runs in this tab (local-engine.ts: the model store, then a
// Worker or this thread); a `remote` server runs requests behind the same IntabEngine; with both, `prefer` picks one
// and the other is the fallback (a local load that fails, or a server that does not answer), and engine.info.route
// says which ran and why. The engine's public types are engine-types.ts's, the IntabEngine itself engine-facade.ts's.

import type { ModelInfo } from '@intab/engine/contract';
import { RemoteConnectionError, RemoteHttpError, RemoteTimeoutError } from './remote/errors.ts';
import type { RemoteOptions } from './remote/http.ts';
import { localFacts, localVerdict, sourceBytes } from './route.ts';
import { isHfId, type ModelInput } from './model-source.ts';
import { InvalidArgumentError } from './errors.ts';
import { remoteBackend } from './engine-backends.ts';
import { EngineFacade } from './engine-facade.ts';
import { createLocalEngine } from './local-engine.ts';
import type { CreateEngineOptions, IntabEngine } from './engine-types.ts';

// What tests, the OpenAI server and the CLI import from here.
export type { CreateEngineOptions, IntabEngine, RequestOptions, ChatCompletions, Preloaded } from './engine-types.ts';
export { wrapEngineApi } from './engine-facade.ts';

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
    const backend = remoteBackend(remote);
    const info = await backend.api.load(undefined, undefined, undefined, signal);
    return { backend, info: { ...info, route: { chosen: 'remote' as const, reason } } };
  };
  const { backend, info } = await launch(signal);
  return new EngineFacade(backend, info, options.name ?? remote.model, () => launch());
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
