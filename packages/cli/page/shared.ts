// What every mode of the CLI's page (run.ts) shares: the job the CLI sends, the report channel back to it, opening
// and loading the model (engine, runners, progress), the facts each bench record carries, consuming one stream the
// way a user of the engine would, and the figures' arithmetic. Mode modules import this one and nothing of each
// other's; run.ts imports them all.

import {
  Engine,
  type Backend,
  type BackendChoice,
  type EngineOptions,
  loadOnBackend,
  type OpenedModels,
  type ChatMessage,
  type Chunk,
  type GenerateRequest,
  type ModelInfo,
  type RequestMetrics,
  type SpeculativeMethod,
  type SpeculativeOptions,
} from '@intab/engine';
import { isEmbeddingModelFiles, openAnyGguf, openAnyHfFolder, openOnnxFolder, Runner, UnsupportedModelError, urlSource, type AnyModelFiles, type ByteSource, type ModelFiles, type StepRunner } from '@intab/model';

// ---- the job ----

/** Where a model's files are: GGUF (one file or splits) or a Hugging Face folder. */
export interface ModelRef {
  kind: 'gguf' | 'hf';
  /** File names (hf) and their URLs, same order; a single URL ending in / for a remote hf folder. */
  files: string[];
  urls: string[];
}

/** The job fields of intab bench chat (packages/cli/src/bench-chat.ts builds them). */
export interface ChatJob {
  /** A system message, then the user messages (the CLI drops assistant messages). */
  conversation?: ChatMessage[];
  /** 'both' alternates turn by turn: the same conversation with the cache off, and on. */
  cacheModes?: 'on' | 'off' | 'both';
  /** Also measure the first request after a preloaded system prompt. */
  preload?: boolean;
  /** Also measure restoring a prefix of `persistTokens` tokens from the OPFS against recomputing it. */
  persist?: boolean;
  persistTokens?: number;
  /** Repeats of the preload measurement (medians are reported). */
  repeats?: number;
}

/** What the CLI asks of the page (packages/cli/src builds it; browser.ts sets it as window.__intabJob). */
export interface Job extends ModelRef, ChatJob {
  /** intab generate: constrained output (--json-schema, --json-object, --grammar, --regex). */
  format?: { responseFormat?: GenerateRequest['responseFormat']; grammar?: string; regex?: string };
  /**
   * 'generate' is intab generate, 'bench' intab bench decode, 'speculative' intab bench speculative, 'grammar' the decode
   * part of intab bench grammar, 'chat' intab bench chat, 'store' intab bench store, 'compare' intab bench compare; run.ts
   * dispatches to the mode's module.
   */
  mode: 'generate' | 'bench' | 'speculative' | 'grammar' | 'chat' | 'store' | 'compare';
  /** grammar: the id of the JSONSchemaBench schema in format.responseFormat (reported). */
  schemaId?: string;
  /** grammar: the model's tokenizer by name, when the CLI knows it (the model it made); reported. */
  tokenizerName?: string;
  promptIds?: number[];
  /** Plain text, encoded with the model's tokenizer (BOS as the tokenizer adds it). */
  prompt?: string;
  /** One user message, through the model's chat template with the generation prompt. */
  chat?: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  quantize?: 'q8_0' | 'q4_0';
  /** On onnx-wasm: intab's CPU kernels or onnxruntime (--cpu-kernels; LoadOptions.cpuKernels) [intab's where they run the model]. */
  cpuKernels?: 'intab' | 'onnxruntime';
  /** On intab's CPU kernels: their threads (--cpu-threads; LoadOptions.cpuThreads); the page is then cross-origin isolated. */
  cpuThreads?: number;
  /** What runs the model (--backend) ['webgpu']. */
  backend?: Backend;
  ignoreEos?: boolean;
  /** bench: prompt length and decode steps. */
  promptTokens?: number;
  /** generate: copies of the request run at once through the one engine; set, every record names its stream. */
  concurrency?: number;
  /** Abort each stream (its AbortSignal) once it has delivered this many tokens. */
  abortAfterTokens?: number;
  /** bench: batch sizes, each measured with that many concurrent streams. */
  batch?: number[];
  /** A draft model (same vocabulary), loaded beside the target for speculative decoding. */
  draft?: ModelRef;
  /** generate: the request's speculative option. */
  speculative?: SpeculativeMethod | SpeculativeOptions;
  /** speculative: the methods measured, the k of the fixed-k lines, and the grounded prompt as text. */
  methods?: ('ngram' | 'self' | 'draft')[];
  specK?: number;
  groundedPrompt?: string;
  /** bench speculative, grammar, chat and store: measured repeats (medians are reported). */
  repeats?: number;
}

declare global {
  interface Window {
    __intabJob?: Job;
    __intabReport?: (record: unknown) => void;
    __intabDone?: boolean;
  }
}

let sink: ((record: unknown) => void) | undefined;

/** Where records go outside a page (the Node runtime prints them itself); in the page, window.__intabReport. */
export function setReportSink(fn: ((record: unknown) => void) | undefined): void {
  sink = fn;
}

/** Sends one record to the CLI (browser.ts prints it, or takes progress and errors itself). */
export const report = (r: unknown) => (sink ?? globalThis.window?.__intabReport)?.(r);

// ---- loading ----

/**
 * Opens a model's files where the CLI serves them (range requests, like a model hub): a GGUF, a Hugging Face folder or
 * an ONNX folder; nothing is uploaded yet.
 * `sourceOf` reads one of `job.urls`: a URL relative to the page by default; the Node runtime reads paths on disk.
 */
export async function openModel(job: ModelRef, sourceOf: (url: string) => Promise<ByteSource> = (u) => urlSource(new URL(u, location.href).href)): Promise<ModelFiles> {
  const files = await openAnyModel(job, sourceOf);
  if (!isEmbeddingModelFiles(files)) return files;
  throw new UnsupportedModelError(files.gguf?.source.name ?? 'config.json', 'model', files.config.arch, 'classifier' in files.config && files.config.classifier ? 'this is a reranker (a cross-encoder): intab serve answers POST /v1/rerank with it; this command runs text models' : 'this is an embedding model: intab serve answers POST /v1/embeddings with it; this command runs text models');
}

/** openModel's files whichever model they hold: a text model's, or an embedding model's encoder (isEncoderFiles). */
export async function openAnyModel(job: ModelRef, sourceOf: (url: string) => Promise<ByteSource> = (u) => urlSource(new URL(u, location.href).href)): Promise<AnyModelFiles> {
  if (job.kind === 'gguf') return openAnyGguf(await Promise.all(job.urls.map((u) => sourceOf(u))));
  const sources = new Map<string, ByteSource>();
  const remoteBase = job.urls.length === 1 && job.urls[0].endsWith('/') ? job.urls[0] : undefined;
  await Promise.all(
    job.files.map(async (name, i) => {
      try {
        sources.set(name, await sourceOf(remoteBase ? remoteBase + name : job.urls[i]));
      } catch (err) {
        if (!remoteBase || name === 'config.json') throw err; // optional files may be absent remotely
      }
    }),
  );
  // An ONNX folder (onnx/model.onnx beside config.json) runs on onnxruntime (--backend onnx-wasm, onnx-webgpu, auto).
  if (job.files.some((f) => f.endsWith('.onnx'))) return openOnnxFolder(sources);
  return openAnyHfFolder(sources);
}

/** An engine with its runners (the draft's too), as loadEngine returns it. */
export interface LoadedEngine {
  engine: Engine;
  runner: StepRunner;
  draft?: StepRunner;
  info: ModelInfo;
  loadMs: number;
}

/**
 * Loads the job's model (and its draft) on the chosen backend: uploaded to the GPU with every pipeline compiled, or
 * onto onnxruntime-web; then wraps them in an engine that owns them from then on (engine.destroy() frees them; the
 * GPU device stays the caller's).
 */
export async function loadEngine(backend: BackendChoice, job: Pick<Job, 'quantize' | 'backend' | 'cpuKernels' | 'cpuThreads'>, opened: OpenedModels, options: EngineOptions): Promise<LoadedEngine> {
  const t0 = performance.now();
  const progress = (which?: 'draft') => {
    let last = 0;
    return (p: { loaded: number; total: number }) => {
      if (p.loaded === p.total || p.loaded - last > p.total / 10) {
        last = p.loaded;
        report({ type: 'progress', ...(which ? { model: which } : {}), loaded: p.loaded, total: p.total });
      }
    };
  };
  const o = {
    kvBudgetBytes: options.kvBudgetBytes ?? 256 << 20,
    maxBatch: Math.max(16, options.maxBatch ?? 8),
    maxTokensPerStep: options.maxTokensPerStep,
    quantize: job.quantize,
    cpuKernels: job.cpuKernels,
    cpuThreads: job.cpuThreads,
    onProgress: progress(),
    onDraftProgress: progress('draft'),
  };
  const { runner, draft, info } = await loadOnBackend(backend, opened, { ...o, prefixCache: options.prefixCache, asked: job.backend ?? 'webgpu' });
  const engine = new Engine({ runner, draft, tokenizer: opened.tokenizer, info, options });
  return { engine, runner, draft, info, loadMs: performance.now() - t0 };
}

/**
 * Bytes read for one decode token: on intab's kernels every matrix except the embedding (one row), plus norms; on
 * onnxruntime, whose graph reads every weight it holds, the graph's weight bytes.
 */
export function bytesPerToken(runner: StepRunner, info: ModelInfo): number {
  if (!(runner instanceof Runner)) return info.weightBytes;
  const w = runner.weights;
  let bytes = w.output.rowBytes * w.output.n + w.embed.rowBytes;
  for (const l of w.layers) for (const m of [...l.qkv, l.o, ...l.gateUp, l.down, ...(l.qGate ? [l.qGate] : []), ...(l.linear?.zba ?? [])]) bytes += m.rowBytes * m.n;
  return bytes + (2 * w.layers.length + 1) * runner.config.hidden * 4;
}

/**
 * K/V bytes one sequence of 4,096 tokens holds on the WebGPU runner (`bytes`), and with every layer keeping every
 * position (`full_attention`): sliding-window layers keep only their window. Null on the ONNX backends.
 */
export function kvBytes4k(runner: StepRunner): { tokens: number; bytes: number; full_attention: number; ratio: number } | null {
  if (!(runner instanceof Runner)) return null;
  const { bytes, fullAttention } = runner.kv.sequenceBytes(4096);
  return { tokens: 4096, bytes, full_attention: fullAttention, ratio: Math.round((bytes / fullAttention) * 1e4) / 1e4 };
}

/** What every bench record says about the run besides its own figures: the model, the backend and adapter, load time. */
export interface Facts {
  perToken: number;
  /** kvBytes4k of the runner. */
  kv4k: ReturnType<typeof kvBytes4k>;
  /** What ran the model (ModelInfo.backend.name). */
  backend: string;
  /** Runner steps run so far (target model). */
  steps: () => number;
  modelFacts: Record<string, unknown>;
  adapter: string;
  loadMs: number;
}

// ---- streams ----

/** What one stream delivered, timed on the consumer's side. */
export interface StreamResult {
  stream: number;
  ids: number[];
  finishReason: Chunk['finishReason'];
  metrics?: RequestMetrics;
  /** performance.now() of start(), the first token's arrival and the last chunk's arrival. */
  startedAt: number;
  firstTokenAt?: number;
  endedAt: number;
  /** Arrival time and token count of every chunk that brought tokens. */
  arrivals: { at: number; tokens: number }[];
  /** With abortAfterTokens: tokens delivered when the signal was aborted, and abort → iterator end. */
  abortedAtTokens?: number;
  abortLatencyMs?: number;
}

/**
 * Runs one request through the engine as a consumer would: pull chunks until one carries a finishReason.
 * `onTokens` sees every delivered id as it arrives; with `abortAfterTokens` the stream's AbortSignal fires
 * once that many tokens arrived, and the time until the iterator ends is measured.
 */
export async function consume(engine: Engine, stream: number, request: GenerateRequest, abortAfterTokens: number | undefined, onTokens?: (ids: number[]) => void): Promise<StreamResult> {
  const controller = new AbortController();
  const startedAt = performance.now();
  const id = await engine.start(request, controller.signal);
  const ids: number[] = [];
  let firstTokenAt: number | undefined;
  let abortAt: number | undefined;
  let abortedAtTokens: number | undefined;
  const arrivals: { at: number; tokens: number }[] = [];
  for (;;) {
    const chunk = await engine.next(id);
    const now = performance.now();
    if (chunk.ids.length) {
      firstTokenAt ??= now;
      arrivals.push({ at: now, tokens: chunk.ids.length });
      ids.push(...chunk.ids);
      onTokens?.(chunk.ids);
    }
    if (chunk.error) throw chunk.error; // a failed request (its tokens before it were taken above)
    if (chunk.finishReason) {
      return {
        stream,
        ids,
        finishReason: chunk.finishReason,
        metrics: chunk.metrics,
        startedAt,
        firstTokenAt,
        endedAt: now,
        arrivals,
        ...(abortAt !== undefined ? { abortedAtTokens, abortLatencyMs: round(now - abortAt) } : {}),
      };
    }
    if (abortAfterTokens !== undefined && abortAt === undefined && ids.length >= abortAfterTokens) {
      abortedAtTokens = ids.length;
      abortAt = performance.now();
      controller.abort();
    }
  }
}

/**
 * Decode throughput of streams run together. `aggregate_decode_tok_s` is the steady state: tokens that
 * arrived while every stream was decoding (after the last stream's first token, up to the first stream's
 * end) over that window, i.e. the speed of a step that holds all of them. Streams join at the step after
 * their start(), so the first one may run a step ahead; `aggregate_decode_tok_s_overall` counts every token
 * after each stream's first, over the time from the earliest first token to the last stream's end.
 */
export function aggregateDecode(results: StreamResult[]): Record<string, number | null> {
  const none = { aggregate_decode_tok_s: null, aggregate_decode_tok_s_overall: null, decode_window_ms: null };
  if (results.some((r) => r.firstTokenAt === undefined)) return none;
  const decoded = results.reduce((s, r) => s + Math.max(0, r.ids.length - 1), 0);
  if (decoded === 0) return none;
  const firsts = results.map((r) => r.firstTokenAt!);
  const overallMs = Math.max(...results.map((r) => r.endedAt)) - Math.min(...firsts);
  const from = Math.max(...firsts);
  const to = Math.min(...results.map((r) => r.endedAt));
  const steady = results.reduce((s, r) => s + r.arrivals.filter((a) => a.at > from && a.at <= to).reduce((n, a) => n + a.tokens, 0), 0);
  return {
    aggregate_decode_tok_s: to > from && steady > 0 ? round((steady / (to - from)) * 1000) : null,
    aggregate_decode_tok_s_overall: overallMs > 0 ? round((decoded / overallMs) * 1000) : null,
    decode_window_ms: to > from ? round(to - from) : null,
  };
}

// ---- figures ----

export function median(xs: number[]): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function mean(xs: number[]): number {
  return xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0;
}

export function round(x: number): number {
  return Number(x.toPrecision(4));
}
