// From opened model files to a ready OnnxRunner: a checkpoint (GGUF or Hugging Face safetensors) gets its graph
// written by llama-graph.ts; an ONNX folder (ModelFiles.onnx) brings its own .onnx and external data. Either way
// the bytes go to an onnxruntime-web session on the backend asked for (or to the host's own onnxruntime, `runtime`:
// onnxruntime-node in Node), the graph's inputs are mapped (graph-layout.ts) and throwaway steps warm ORT's kernels up,
// so the first request does not pay for them. An embedding model (EncoderFiles) gets its graph from encoder-graph.ts and
// an OnnxEncoder (loadOnnxEncoder).

import type { EncoderFiles, LoadProgress, ModelFiles } from '@intab/model';
import { createXXHash128 } from 'hash-wasm';
import { buildEncoderGraph, type EncoderAttention } from './encoder-graph.ts';
import { OnnxEncoder, type OnnxEncoderOptions } from './encoder-runner.ts';
import { buildLlamaGraph, tensorWeights } from './llama-graph.ts';
import { graphLayout } from './graph-layout.ts';
import { OnnxRunner, type OnnxRunnerOptions } from './onnx-runner.ts';
import { readOnnxModel, type OnnxModelInfo } from './onnx-read.ts';
import { OnnxFormatError } from './errors.ts';
import { createSession, providerOf, type OnnxBackend, type OnnxSession, type OrtRuntime } from './session.ts';

export interface OnnxLoadOptions extends OnnxRunnerOptions {
  backend: OnnxBackend;
  /** The host's onnxruntime (onnxruntime-node in Node) [onnxruntime-web's build for the backend]. */
  runtime?: OrtRuntime;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/** A loaded ONNX runner and what describes it. */
export interface LoadedOnnx {
  runner: OnnxRunner;
  /** Bytes of the graph's weights (initializers), inline or external. */
  weightBytes: number;
  /** Where the graph came from: written from the checkpoint, or the folder's file. */
  graph: 'built' | string;
  /** The wasm threads ORT runs with (more than one only where the page is cross-origin isolated). */
  threads: number;
  /** Which onnxruntime and execution provider run it ('onnxruntime-web' and 'wasm', 'onnxruntime-node 1.30.0' and 'cpu'...). */
  runs: OnnxSession['runs'];
}

/**
 * The model's OnnxRunner on `backend`.
 * @example
 * const { runner } = await loadOnnxRunner(await openGguf(source), { backend: 'onnx-wasm', kvBudgetBytes: 64 << 20 });
 */
export async function loadOnnxRunner(model: ModelFiles, o: OnnxLoadOptions): Promise<LoadedOnnx> {
  // A backend whose ORT build (or the host's runtime) cannot run here is refused before the model's bytes are read or
  // its graph is written.
  providerOf(o.backend, o.runtime);
  const c = model.config;
  // The weights' hash (as the K/V pages of a saved prefix cache are keyed by it): xxh128 of what is read, as read.
  const hash = await createXXHash128();
  hash.init();
  let bytes: Uint8Array;
  let externalData = new Map<string, Uint8Array>();
  let weightBytes: number;
  let file: string;
  let info: OnnxModelInfo | undefined;
  if (model.onnx) {
    file = model.onnx.model.name;
    bytes = await model.onnx.model.read(0, model.onnx.model.size, o.signal);
    hash.update(bytes);
    info = readOnnxModel(bytes, file);
    const wanted = info.externalFiles;
    // Progress: the graph file, then each external data file, in bytes.
    let loaded = bytes.byteLength;
    const total = wanted.reduce((n, name) => n + (model.onnx!.externalData.get(name)?.size ?? 0), bytes.byteLength);
    o.onProgress?.({ loaded, total });
    for (const name of wanted) {
      const src = model.onnx.externalData.get(name);
      if (!src) throw new OnnxFormatError(file, 'external data', `its weights are in '${name}', which is not among the files given (${[...model.onnx.externalData.keys()].join(', ') || 'none'}); put it beside the .onnx file`);
      const data = await src.read(0, src.size, o.signal);
      hash.update(`|${name}|`);
      hash.update(data);
      externalData.set(name, data);
      o.onProgress?.({ loaded: (loaded += src.size), total });
    }
    weightBytes = info.graph.initializers.reduce((n, t) => n + (t.external?.length ?? t.raw?.length ?? 0), 0);
  } else {
    file = `${c.arch} graph`;
    // Progress is the checkpoint's bytes read into the graph, tensor by tensor (the builder checks the signal between them).
    const weights = tensorWeights(model.tensors, { signal: o.signal, onProgress: o.onProgress, hash });
    const graph = await buildLlamaGraph(c, weights, { signal: o.signal, file: 'weights', matmulNBits: keepQuantized(model) });
    bytes = graph.model;
    if (graph.externalData) externalData = new Map([[graph.externalData.path, graph.externalData.data]]);
    weightBytes = graph.weightBytes;
  }
  o.signal?.throwIfAborted();
  const onnx = await createSession(bytes, { backend: o.backend, externalData, file, info, runtime: o.runtime });
  const runner = new OnnxRunner(onnx, graphLayout(onnx.session, c, file), c, { ...o, kvLocation: onnx.kvLocation, weightsHash: `xxh128:${hash.digest('hex')}` });
  try {
    await warmup(runner, c.bosId ?? 0, c.maxContext);
  } catch (err) {
    runner.destroy();
    throw err;
  }
  return { runner, weightBytes, graph: model.onnx ? file : 'built', threads: onnx.runs.threads, runs: onnx.runs };
}

/**
 * Whether q4_0 / q8_0 matrices stay quantized in the graph (MatMulNBits) instead of becoming f32: only when the f32
 * graph would pass F32_GRAPH_LIMIT. ORT's wasm EP runs MatMulNBits exactly but slowly (it dequantizes the whole matrix
 * per call, ~15× slower than f32 at C = 2048), so f32 is faster wherever it fits; past the limit, f32 weights would not
 * fit the 4 GiB of a wasm32 heap beside everything else, and only the quantized graph loads at all.
 */
export function keepQuantized(model: ModelFiles): boolean {
  let f32 = 0;
  let quantized = false;
  for (const t of model.tensors.values()) {
    f32 += 4 * t.shape.reduce((a, b) => a * b, 1);
    if (t.dtype === 'q4_0' || t.dtype === 'q8_0') quantized = true;
  }
  return quantized && f32 > F32_GRAPH_LIMIT;
}

/** Bytes of f32 weights above which a quantized checkpoint keeps its q4_0 / q8_0 matrices (keepQuantized). */
export const F32_GRAPH_LIMIT = 1.5 * 2 ** 30;

/**
 * A prefill and decode steps on a scratch sequence, for at most WARMUP_MS: ORT builds its kernels on first use, and
 * the browser compiles the hot wasm functions with its optimizing tier only after they ran for a while (measured in
 * Chromium on stories260K: 560 tok/s over the first 300 steps, 1,600-2,200 after). A large model stops after a step.
 */
async function warmup(runner: OnnxRunner, token: number, maxContext: number): Promise<void> {
  const seq = -1;
  const t0 = performance.now();
  runner.alloc(seq);
  try {
    await runner.step([{ seq, tokens: [token, token] }]);
    for (let i = 0; i < Math.min(WARMUP_STEPS, maxContext - 3) && performance.now() - t0 < WARMUP_MS; i++) await runner.step([{ seq, tokens: [token] }]);
  } finally {
    runner.free(seq);
  }
}

/** The warm-up's bounds: it never costs a load more than WARMUP_MS (plus one step). */
const WARMUP_MS = 400;
const WARMUP_STEPS = 400;

// ---- embedding models ----

export interface OnnxEncoderLoadOptions extends OnnxEncoderOptions {
  backend: OnnxBackend;
  /** How the graph writes attention [DEFAULT_ENCODER_ATTENTION]. */
  attention?: EncoderAttention;
  /** The host's onnxruntime (onnxruntime-node in Node) [onnxruntime-web's build for the backend]. */
  runtime?: OrtRuntime;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/** A loaded ONNX encoder and what describes it. */
export interface LoadedOnnxEncoder {
  runner: OnnxEncoder;
  /** Bytes of the graph's weights (f32 initializers: quantized checkpoints are dequantized). */
  weightBytes: number;
  /** The threads ORT runs with. */
  threads: number;
  /** Which onnxruntime and execution provider run it. */
  runs: OnnxSession['runs'];
}

/**
 * An embedding model's EncoderRunner on onnxruntime: its graph is written from the checkpoint (encoder-graph.ts), a
 * session made on `backend` (or on the host's `runtime`), and a few throwaway passes warm ORT's kernels up.
 * @example
 * const files = await openEncoderGguf(source);
 * const { runner } = await loadOnnxEncoder(files, { backend: 'onnx-wasm' });
 * const [v] = await runner.encode([tokenizer.encode('a cat')]);
 */
export async function loadOnnxEncoder(files: EncoderFiles, o: OnnxEncoderLoadOptions): Promise<LoadedOnnxEncoder> {
  providerOf(o.backend, o.runtime); // refused before a byte is read
  const c = files.config;
  const file = `${c.arch} encoder graph`;
  const weights = tensorWeights(files.tensors, { signal: o.signal, onProgress: o.onProgress });
  const graph = await buildEncoderGraph(c, weights, { signal: o.signal, file: 'weights', attention: o.attention });
  o.signal?.throwIfAborted();
  const externalData = graph.externalData ? new Map([[graph.externalData.path, graph.externalData.data]]) : undefined;
  const onnx = await createSession(graph.model, { backend: o.backend, externalData, file, runtime: o.runtime });
  const runner = new OnnxEncoder(onnx, c, graph.weightBytes, o);
  try {
    await warmupEncoder(runner);
  } catch (err) {
    runner.destroy();
    throw err;
  }
  runner.runs = 0;
  return { runner, weightBytes: graph.weightBytes, threads: onnx.runs.threads, runs: onnx.runs };
}

/**
 * Passes of two short sequences until ENCODER_WARMUP_MS (at least one): ORT sets its kernels up on the first run, and
 * the browser's optimizing tier compiles the hot wasm functions only after they ran a while.
 */
async function warmupEncoder(runner: OnnxEncoder): Promise<void> {
  const t0 = performance.now();
  const seqs = [[0, 1, 2, 3, 4, 5, 6, 7].map((i) => i % runner.facts.vocab), [0, 1, 2].map((i) => i % runner.facts.vocab)];
  for (let i = 0; i < ENCODER_WARMUP_RUNS && (i === 0 || performance.now() - t0 < ENCODER_WARMUP_MS); i++) await runner.encode(seqs);
}

const ENCODER_WARMUP_MS = 200;
const ENCODER_WARMUP_RUNS = 20;
