// `intab bench embed --runtime chromium` in the page (embed.html): intab and transformers.js side by side in this one
// headless Chromium, on the same texts and batches. intab loads the GGUF the CLI serves through its public API, as a
// web app does (createEngine: its Worker, the backend asked for: onnxruntime-web's wasm or WebGPU execution provider
// on the encoder graph it writes from the weights, or intab's WebGPU kernels); transformers.js runs its
// feature-extraction pipeline (mean pooling, normalize) on the ONNX folder the CLI wrote from the same GGUF (the same
// graph), on device 'wasm' or 'webgpu'. Both run one wasm thread (the page is not cross-origin isolated). First the
// check: both embed the largest batch's texts, and their token counts and least cosine are reported (that call is the
// largest batch's untimed one); then, batch by batch, one untimed call of each (a smaller batch), and --repeats timed
// calls, alternating which goes first. Records go to the CLI
// through window.__intabReport (packages/cli/src/bench-embed-page.ts prints the lines and the ratios).

import { env, LogLevel, pipeline } from '@huggingface/transformers';
// transformers.js runs every device on onnxruntime-web/webgpu, whose wasm is the asyncify build (peers/transformers.ts).
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { createEngine } from 'intab';
import { cosine } from '@intab/testing/embed-inputs';
import type {} from './shared.ts'; // window.__intabJob, __intabReport, __intabDone

/** What the CLI sends (bench-embed-page.ts builds it). */
export interface EmbedJob {
  mode: 'embed';
  /** The GGUF, as the CLI serves it (a URL relative to the page). */
  ggufUrl: string;
  /** The ONNX folder written from it for transformers.js (ends with '/'). */
  onnxUrl: string;
  /** intab's backend; transformers.js runs 'wasm' beside onnx-wasm, 'webgpu' beside onnx-webgpu and webgpu. */
  backend: 'auto' | 'onnx-wasm' | 'onnx-webgpu' | 'webgpu';
  /** The texts of the largest batch; a batch of N takes the first N. */
  texts: string[];
  batches: number[];
  repeats: number;
  /** Run transformers.js too. */
  transformers: boolean;
  /** createEngine's `worker` (--no-worker: false, the engine on the page's thread as transformers.js is) [true]. */
  worker: boolean;
}

/** Records sent to the CLI. */
export type EmbedRecord =
  | { type: 'embed-system'; system: string; backend: string; facts: Record<string, unknown> }
  | { type: 'embed-check'; system: string; vectors_match: number; tokens_equal: boolean; tokens: number[] }
  | { type: 'embed-figure'; system: string; batch: number; tokens: number; samples_ms: number[] }
  | { type: 'error'; name: string; message: string };

interface System {
  name: string;
  /** One call over the texts, as the system's user makes it. */
  embed(texts: string[]): Promise<void>;
  /** The vectors and each text's token count ([CLS] and [SEP] included). */
  vectors(texts: string[]): Promise<{ embeddings: Float32Array[]; tokens: number[] }>;
  destroy(): Promise<void>;
}

const report = (r: EmbedRecord) => window.__intabReport?.(r);

/** The warm-up before the timed calls: calls of each system for this long, at most this many (a software adapter's take seconds). */
const WARMUP_MS = 10_000;
const WARMUP_CALLS = 200;

async function adapterName(): Promise<string | null> {
  const a = await navigator.gpu?.requestAdapter();
  if (!a) return null;
  return [a.info.vendor, a.info.architecture, a.info.description].filter(Boolean).join(' ') || 'unknown';
}

async function loadIntab(job: EmbedJob): Promise<System> {
  const t0 = performance.now();
  const engine = await createEngine({ model: new URL(job.ggufUrl, location.href).href, backend: job.backend, cache: false, worker: job.worker });
  if (!engine.info.embedding) {
    await engine.destroy();
    throw new Error(`${job.ggufUrl} is a text model (${engine.info.arch}): bench embed takes an embedding model (bert, nomic-bert), e.g. intab make-model --like all-minilm-l6`);
  }
  const backend = engine.info.backend.name;
  const name = `intab/${backend}`;
  report({
    type: 'embed-system',
    system: name,
    backend,
    facts: { backend_reason: engine.info.backend.reason, adapter: engine.info.adapter, worker: engine.inWorker, arch: engine.info.arch, layers: engine.info.layers, hidden: engine.info.hidden, load_ms: Math.round(performance.now() - t0) },
  });
  return {
    name,
    embed: async (texts) => void (await engine.embed({ input: texts, truncate: true })),
    async vectors(texts) {
      const r = await engine.embed({ input: texts, truncate: true });
      return { embeddings: r.embeddings, tokens: r.tokens ?? [] };
    },
    destroy: () => engine.destroy(),
  };
}

async function loadTransformers(job: EmbedJob, device: 'wasm' | 'webgpu'): Promise<System> {
  const url = new URL(job.onnxUrl, location.href);
  // transformers.js takes a model id under env.localModelPath: the folder's parent, and its last segment as the id. A
  // path on this origin, not a URL: its file-metadata check (which finds tokenizer_config.json, and with it the
  // pipeline's tokenizer) looks only at local paths, and an http URL is not one to it.
  const id = decodeURIComponent(url.pathname.split('/').at(-2) ?? '');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = new URL('..', url).pathname;
  env.useBrowserCache = false;
  env.useWasmCache = false;
  env.logLevel = LogLevel.ERROR;
  const wasm = env.backends.onnx.wasm;
  if (!wasm) throw new Error('transformers.js: its onnxruntime-web build has no wasm backend settings (env.backends.onnx.wasm)');
  wasm.wasmPaths = { wasm: new URL(ortWasmUrl, location.href).href };
  wasm.numThreads = 1;
  wasm.proxy = false;
  const t0 = performance.now();
  const extractor = await pipeline('feature-extraction', id, { device, dtype: 'fp32', local_files_only: true });
  const name = `transformers.js/${device}`;
  report({
    type: 'embed-system',
    system: name,
    backend: device,
    facts: { version: `@huggingface/transformers ${env.version}`, device, dtype: 'fp32', threads: wasm.numThreads, padding: 'longest', ...(device === 'webgpu' ? { adapter: await adapterName() } : {}), load_ms: Math.round(performance.now() - t0) },
  });
  const run = async (texts: string[]) => {
    const out = await extractor(texts, { pooling: 'mean', normalize: true });
    const [B, C] = out.dims as number[];
    const data = out.data as Float32Array;
    const vectors = Array.from({ length: B }, (_, i) => data.slice(i * C, (i + 1) * C));
    out.dispose();
    return vectors;
  };
  return {
    name,
    embed: async (texts) => void (await run(texts)),
    vectors: async (texts) => ({ embeddings: await run(texts), tokens: texts.map((t) => extractor.tokenizer.encode(t).length) }),
    destroy: () => extractor.dispose(),
  };
}

export async function benchEmbedPage(job: EmbedJob): Promise<void> {
  const systems: System[] = [];
  try {
    const intab = await loadIntab(job);
    systems.push(intab);
    if (job.transformers) {
      const backend = intab.name.slice('intab/'.length);
      systems.push(await loadTransformers(job, backend === 'onnx-wasm' ? 'wasm' : 'webgpu'));
    }
    // The check (also the largest batch's first, untimed, call): tokens and vectors against intab's.
    const ours = await intab.vectors(job.texts);
    report({ type: 'embed-check', system: intab.name, vectors_match: 1, tokens_equal: true, tokens: ours.tokens });
    const tokensOf = new Map<string, number[]>([[intab.name, ours.tokens]]);
    for (const peer of systems.slice(1)) {
      const theirs = await peer.vectors(job.texts);
      tokensOf.set(peer.name, theirs.tokens);
      const match = Math.min(...theirs.embeddings.map((v, i) => cosine(v, ours.embeddings[i])));
      const equal = theirs.tokens.length === ours.tokens.length && theirs.tokens.every((n, i) => n === ours.tokens[i]);
      report({ type: 'embed-check', system: peer.name, vectors_match: match, tokens_equal: equal, tokens: theirs.tokens });
    }
    // Warm-up past the first calls: the browser compiles ORT's hot wasm functions in its optimizing tier (in background
    // threads) only after they ran a while, so a batch timed right after the check measures that compilation too
    // (all-MiniLM-L6 on wasm, 2 busy cores, --batch 2,1,2,1: 117 / 19 / 33 / 11 ms a call for both systems after a few
    // calls' warm-up). Calls of the smallest batch, alternating, for WARMUP_MS (at most WARMUP_CALLS each).
    const smallest = job.texts.slice(0, Math.min(...job.batches));
    const t0 = performance.now();
    for (let i = 0; i < WARMUP_CALLS && performance.now() - t0 < WARMUP_MS; i++) for (const s of systems) await s.embed(smallest);
    for (const batch of job.batches) {
      const texts = job.texts.slice(0, batch);
      const samples = new Map<string, number[]>(systems.map((s) => [s.name, []]));
      // Untimed first: ORT's kernels and the browser's wasm tiers for these shapes (the check was the largest batch's).
      if (batch !== job.texts.length) for (const s of systems) await s.embed(texts);
      for (let r = 0; r < job.repeats; r++) {
        // Alternating order: what one call leaves behind (GC, caches, the adapter's clocks) falls on each system alike.
        for (const s of r % 2 === 0 ? systems : [...systems].reverse()) {
          const t0 = performance.now();
          await s.embed(texts);
          samples.get(s.name)!.push(performance.now() - t0);
        }
      }
      for (const s of systems) report({ type: 'embed-figure', system: s.name, batch, tokens: tokensOf.get(s.name)!.slice(0, batch).reduce((a, b) => a + b, 0), samples_ms: samples.get(s.name)! });
    }
  } finally {
    for (const s of systems) await s.destroy();
  }
}

const job = window.__intabJob as unknown as EmbedJob | undefined;
if (job?.mode === 'embed') {
  benchEmbedPage(job)
    .catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }))
    .finally(() => (window.__intabDone = true));
} else {
  report({ type: 'error', name: 'Error', message: 'no embed job: this page is driven by intab bench embed --runtime chromium' });
  window.__intabDone = true;
}
