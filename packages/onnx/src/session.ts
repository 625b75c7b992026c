// Creating an onnxruntime-web session for the runner: the execution provider the backend names (wasm, or WebGPU
// through ORT's own kernels), wasm threads only where the page is cross-origin isolated (nothing requires
// COOP/COEP), full graph optimization, external weight files handed over as bytes, and ORT's failures turned
// into typed errors that say what to do. ORT's wasm binaries come from this package's dependency, resolved by
// the app's bundler (no CDN), so an offline PWA carries them like any other asset. Each backend loads its own ORT build,
// fetched only when the backend loads: the wasm-only one for 'onnx-wasm' (measured in Chromium on stories260K: 2.2× the
// decode speed of the default build, whose JSEP wasm serves WebGPU too), the JSPI one for 'onnx-webgpu': the WebGPU EP
// of ORT's 'webgpu' build with JSPI in place of Asyncify, whose wasm is 16.8 MB where the asyncify one (26.8 MB) is
// past static hosts' 25 MiB per file. It needs WebAssembly.Suspending (Chromium 137+); elsewhere checkOrtBuild refuses it.
// Outside a browser the host hands its own onnxruntime in (an OrtRuntime: onnxruntime-node in the CLI's Node runtime,
// its CPU execution provider standing in for the wasm one): this package never names onnxruntime-node, so no browser
// bundle ever sees a native addon, and nothing here guesses at the JavaScript engine it runs in.

import type { InferenceSession } from 'onnxruntime-web';
import { OnnxFormatError, OnnxRunError, OnnxUnsupportedError } from './errors.ts';
import { readOnnxModel, type OnnxModelInfo } from './onnx-read.ts';

/** The backends that run on onnxruntime-web. */
export type OnnxBackend = 'onnx-wasm' | 'onnx-webgpu';

export interface SessionOptions {
  backend: OnnxBackend;
  /** Files the model's initializers name as external data (e.g. 'model.onnx_data'), by that name. */
  externalData?: ReadonlyMap<string, Uint8Array>;
  /** The model file's name, for error messages ['model.onnx']. */
  file?: string;
  /** readOnnxModel's answer for these bytes, when the caller already read them (they are not read again). */
  info?: OnnxModelInfo;
}

/**
 * What the runner uses of an onnxruntime module: onnxruntime-common's InferenceSession, Tensor and env, which every
 * build shares (onnxruntime-web's wasm and JSPI builds, onnxruntime-node).
 */
export type Ort = Pick<typeof import('onnxruntime-web'), 'InferenceSession' | 'Tensor' | 'env'>;

/**
 * An onnxruntime the host hands in instead of onnxruntime-web's builds: onnxruntime-node in Node (the CLI's Node
 * runtime builds one). It names the execution provider that runs each backend it can run: in Node, ORT's native CPU
 * provider runs 'onnx-wasm' (ORT on the CPU; the wasm provider is the browser's way to it).
 * @example
 * const ort = createRequire(import.meta.url)('onnxruntime-node');
 * const runtime: OrtRuntime = { name: 'onnxruntime-node 1.30.0', ort, providers: { 'onnx-wasm': 'cpu' }, threads: 1, sessionOptions: { intraOpNumThreads: 1 } };
 * const { runner } = await loadOnnxRunner(model, { backend: 'onnx-wasm', runtime });
 */
export interface OrtRuntime {
  /** Its name and version, as ModelInfo.adapter says it: 'onnxruntime-node 1.30.0'. */
  name: string;
  ort: Ort;
  /** The execution provider of each backend it runs ('onnx-wasm' → 'cpu'); a backend it lacks is refused. */
  providers: Partial<Record<OnnxBackend, string>>;
  /** Threads one session computes with (reported in ModelInfo.adapter). */
  threads: number;
  /** Session options of its own (intraOpNumThreads...), beside the ones every session gets. */
  sessionOptions?: InferenceSession.SessionOptions;
}

/** A session and the ORT that made it (its Tensor class is the one the session accepts). */
export interface OnnxSession {
  ort: Ort;
  session: InferenceSession;
  /** Where the session leaves the K/V outputs (present.*): on the GPU with onnxruntime-web's WebGPU EP. */
  kvLocation: 'cpu' | 'gpu-buffer';
  /** Which onnxruntime and execution provider run it, and with how many threads: what ModelInfo.adapter says. */
  runs: { runtime: string; provider: string; threads: number };
}

const builds = new Map<OnnxBackend, Promise<typeof import('onnxruntime-web')>>();

/** Whether this JavaScript engine has WebAssembly JSPI (WebAssembly.Suspending), which ORT's JSPI build needs. */
export function hasJspi(): boolean {
  return typeof WebAssembly === 'object' && 'Suspending' in WebAssembly;
}

/**
 * Throws when `backend`'s ORT build cannot run here: 'onnx-webgpu' without JSPI. Synchronous and free (nothing is
 * fetched), so a load is refused before a byte of the model is read.
 * @example
 * checkOrtBuild('onnx-webgpu'); // OnnxUnsupportedError in a browser without WebAssembly.Suspending
 */
export function checkOrtBuild(backend: OnnxBackend): void {
  if (backend === 'onnx-webgpu' && !hasJspi()) {
    throw new OnnxUnsupportedError(
      "backend 'onnx-webgpu'",
      "it runs onnxruntime-web's JSPI build, which needs WebAssembly JSPI (WebAssembly.Suspending: Chrome and Edge 137+), and this browser lacks it. Load the model with backend 'auto' (it picks what runs here), 'onnx-wasm' (every browser), or 'webgpu' (intab's kernels, on the model's GGUF or safetensors).",
    );
  }
}

/**
 * The ORT build of a backend, loaded once, with its process-wide settings made before its first session: wasm
 * threads only where the page is cross-origin isolated (SharedArrayBuffer), elsewhere one (ORT would warn and fall
 * back), and only errors logged. Its wasm binary is fetched by ORT at the first session, not here.
 * @example
 * const ort = await loadOrt('onnx-wasm');
 */
export async function loadOrt(backend: OnnxBackend): Promise<typeof import('onnxruntime-web')> {
  checkOrtBuild(backend);
  let build = builds.get(backend);
  if (!build) {
    // Two literal specifiers, one per backend: a bundler emits each build's wasm (its `new URL('x.wasm',
    // import.meta.url)`) beside a chunk loaded only here. Never 'onnxruntime-web/webgpu' (the 26.8 MB asyncify wasm).
    build = (backend === 'onnx-webgpu' ? import('onnxruntime-web/jspi') : import('onnxruntime-web/wasm')).then((ort: typeof import('onnxruntime-web')) => {
      const isolated = (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true;
      const cores = (globalThis.navigator as { hardwareConcurrency?: number } | undefined)?.hardwareConcurrency ?? 1;
      ort.env.wasm.numThreads = isolated ? Math.max(1, Math.min(4, cores)) : 1;
      ort.env.logLevel = 'error';
      return ort;
    });
    builds.set(backend, build);
  }
  return build;
}

/**
 * The execution provider of `backend` on `runtime` (onnxruntime-web's own when none is given); a backend the runtime
 * lacks is an OnnxUnsupportedError. Synchronous: a load is refused before a byte of the model is read.
 * @example
 * providerOf('onnx-wasm', nodeRuntime); // 'cpu'
 */
export function providerOf(backend: OnnxBackend, runtime?: OrtRuntime): string {
  if (!runtime) {
    checkOrtBuild(backend);
    return backend === 'onnx-webgpu' ? 'webgpu' : 'wasm';
  }
  const provider = runtime.providers[backend];
  if (provider) return provider;
  const has = Object.keys(runtime.providers).map((b) => `'${b}'`);
  throw new OnnxUnsupportedError(
    `backend '${backend}'`,
    `${runtime.name} has no execution provider for it here: load the model with ${has.length ? `backend ${has.join(' or ')}` : 'another runtime'}, or 'webgpu' (intab's kernels, on the model's GGUF or safetensors) where a GPU adapter is found.`,
  );
}

/**
 * A session over a model's bytes, on the backend's ORT build (or on `o.runtime`, the host's onnxruntime).
 * @example
 * const { ort, session } = await createSession(bytes, { backend: 'onnx-wasm', externalData: new Map([['model.onnx_data', data]]) });
 */
export async function createSession(model: Uint8Array, o: SessionOptions & { runtime?: OrtRuntime }): Promise<OnnxSession> {
  const file = o.file ?? 'model.onnx';
  const provider = providerOf(o.backend, o.runtime);
  // Our own reader first: a truncated or corrupted file is named with the field and byte where it breaks.
  const info = o.info ?? readOnnxModel(model, file);
  // On onnxruntime-web's WebGPU EP the K/V outputs stay in GPU buffers, fed back as the next step's inputs without a
  // round trip. (A host's runtime keeps them in memory: what its providers do with output locations is not ours to assume.)
  const present = info.graph.outputs.map((o) => o.name).filter((n) => n.startsWith('present.'));
  const onGpu = !o.runtime && o.backend === 'onnx-webgpu' && present.length > 0;
  const ort: Ort = o.runtime?.ort ?? (await loadOrt(o.backend));
  const options: InferenceSession.SessionOptions = {
    ...o.runtime?.sessionOptions,
    executionProviders: [provider],
    graphOptimizationLevel: 'all',
    // Warnings such as shape ops placed on the CPU beside the WebGPU EP are ORT's business, not the app's console's.
    logSeverityLevel: 3,
    ...(onGpu ? { preferredOutputLocation: Object.fromEntries(present.map((n) => [n, 'gpu-buffer' as const])) } : {}),
    ...(o.externalData?.size ? { externalData: [...o.externalData].map(([path, data]) => ({ path, data })) } : {}),
  };
  const runs = o.runtime
    ? { runtime: o.runtime.name, provider, threads: o.runtime.threads }
    : { runtime: 'onnxruntime-web', provider, threads: provider === 'wasm' ? (ort.env.wasm.numThreads ?? 1) : 1 };
  try {
    return { ort, session: await ort.InferenceSession.create(model, options), kvLocation: onGpu ? 'gpu-buffer' : 'cpu', runs };
  } catch (err) {
    throw sessionError(file, o.backend, ort.env.versions.web ?? ort.env.versions.node, err, provider);
  }
}

/** ORT's message of a failed session creation, as the typed error that names the problem (`provider`: the EP that ran it). */
export function sessionError(file: string, backend: OnnxBackend, version: string | undefined, err: unknown, provider?: string): Error {
  const message = err instanceof Error ? err.message : String(err);
  const ep = { webgpu: 'WebGPU', wasm: 'wasm', cpu: 'CPU' }[provider ?? (backend === 'onnx-webgpu' ? 'webgpu' : 'wasm')] ?? provider;
  const other = backend === 'onnx-webgpu' ? 'onnx-wasm' : 'onnx-webgpu';
  // An op no execution provider implements (ORT's three phrasings: no schema, no function, no kernel).
  const op =
    /No Op registered for (\S+) with domain_version of (\d+)/.exec(message) ??
    /(\S+)\((-?\d+)\) is not a registered function\/op/.exec(message) ??
    /Could not find an implementation for (\S+)\((\d+)\) node/.exec(message);
  if (op) {
    return new OnnxUnsupportedError(
      `op ${op[1]}`,
      `${file} uses ${op[1]} (opset ${op[2]}), which onnxruntime ${version ?? ''}'s ${ep} execution provider does not implement: try backend '${other}', or export the model with standard ops (or load its GGUF or safetensors, which intab writes as a graph it can run).`,
    );
  }
  // onnxruntime's own WebGPU (onnxruntime-node's provider: Dawn inside it) found no GPU: nothing about the model.
  if (/Failed to get a WebGPU adapter|No supported adapters/i.test(message)) {
    return new OnnxUnsupportedError(
      `backend '${backend}'`,
      `onnxruntime ${version ?? ''}'s ${ep} execution provider found no GPU adapter here (${message.split('\n')[0].slice(-120)}): load the model with backend 'onnx-wasm' (onnxruntime on the CPU) or 'auto', which picks what runs here.`,
    );
  }
  if (/Unsupported model IR version|opset .* is not supported/i.test(message)) {
    return new OnnxUnsupportedError('model', `${file}: ${message}: onnxruntime ${version ?? ''} cannot run it; re-export the model for an ONNX opset this onnxruntime supports (≤ 23).`);
  }
  if (/external data|external_data|ExternalData|Failed to load external|file not found/i.test(message)) {
    return new OnnxFormatError(file, 'external data', `onnxruntime could not read the weights the model keeps in another file (${message}); give every file the model names beside it`, -1, { cause: err });
  }
  if (/protobuf|parsing|Invalid model/i.test(message)) {
    return new OnnxFormatError(file, 'model', `onnxruntime could not parse it (${message})`, -1, { cause: err });
  }
  return new OnnxRunError(`creating a session for ${file} on ${backend}`, err, `Check that the file is a complete ONNX model, or try backend '${other}'.`);
}
