// From opened model files to a ready CpuRunner: which checkpoints intab's CPU kernels run (cpuRunnable: a Llama-family
// decoder whose layer matrices are q4_0 / q8_0 blocks, which the kernels read as stored, or K-quants they re-quantize
// to q8_0), the weights read into the kernels' memory (hashed as read, for the saved prefix cache's key), the memory
// sized once for weights, K/V and scratch, and a warm-up so the browser's optimizing tier has compiled the kernels
// before the first request.

import type { LoadProgress, ModelFiles } from '@intab/model';
import { createXXHash128 } from 'hash-wasm';
import { OnnxUnsupportedError } from '../errors.ts';
import { tensorWeights } from '../llama-graph.ts';
import { CpuMatmul } from '../wasm/cpu-matmul.ts';
import { threadPlan } from '../wasm/wasm-threads.ts';
import { createActivationKernel } from '../wasm/activation.ts';
import { buildAttentionModule, createAttentionKernels, ATTENTION_HEAD_DIM_STEP } from '../wasm/attention.ts';
import { createNormKernels } from '../wasm/norm.ts';
import { CpuLlama, loadCpuLlamaWeights } from './cpu-llama.ts';
import { CpuRunner, cpuPageBytes, type CpuRunnerOptions } from './cpu-runner.ts';

export interface CpuLoadOptions extends CpuRunnerOptions, CpuRunnableOptions {
  /**
   * Threads the kernels split each matrix across [the cores, at most 4, where wasm threads can run (a cross-origin
   * isolated page, or Node), else 1]. More than 1 where threads cannot run gives 1, and LoadedCpu.threadsNote says why.
   */
  threads?: number;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/** A loaded CpuRunner and what describes it. */
export interface LoadedCpu {
  runner: CpuRunner;
  /** Bytes of the weights as the kernels hold them. */
  weightBytes: number;
  /** Matrices whose stored format the kernels do not read, re-quantized to q8_0 on load. */
  requantized: string[];
  /** The formats the kernels run the layer matrices in, e.g. 'q4_0', 'q4_0, q8_0' or 'q8_0 from q4_K, q8_0 from q6_K'. */
  dtypes: string;
  /** Threads the kernels run on. */
  threads: number;
  /** Why they run on 1 thread where more could help (the page is not cross-origin isolated...), else undefined. */
  threadsNote?: string;
}

const LAYER_MATRICES = /^blk\.\d+\.(attn_q|attn_k|attn_v|attn_output|ffn_gate|ffn_up|ffn_down)\.weight$/;

/** Bytes a wasm32 memory can hold (4 GiB), less a margin for the kernels' own allocations. */
const WASM_HEAP = 2 ** 32 - 2 ** 26;

/**
 * Bytes the model's weights take in the kernels' memory, a little over: q4_0 / q8_0 matrices as stored with their
 * scales widened to f32 (20/18 and 36/34 of the file), any other matrix as q8_0 (1.125 bytes a value), vectors as f32.
 */
function heldBytes(model: ModelFiles): number {
  let bytes = 0;
  for (const t of model.tensors.values()) {
    const values = t.shape.reduce((a, b) => a * b, 1);
    bytes += t.shape.length === 1 ? 4 * values : AS_STORED.has(t.dtype) ? Math.ceil(t.byteLength * 1.12) : Math.ceil(values * 1.125);
  }
  return bytes + (1 << 20);
}

/** Layer formats the kernels read as stored. */
const AS_STORED = new Set(['q4_0', 'q8_0']);
/** Layer formats re-quantized to q8_0 at load by default: a K-quant file is quantized anyway, and q8_0 keeps it to rounding. */
const TO_Q8_0 = new Set(['q4_K', 'q6_K']);

export interface CpuRunnableOptions {
  /**
   * Also run unquantized layer matrices (f32, f16, bf16), re-quantized to q8_0 (LoadOptions.cpuKernels 'intab'); by
   * default those stay on onnxruntime, which runs them exactly.
   */
  anyFormat?: boolean;
}

/**
 * Why intab's CPU kernels do not run this model, or undefined when they do: a GGUF or safetensors Llama-family decoder
 * (no DeltaNet layers, no gated attention) whose rows are whole blocks and whose layer matrices are q4_0 / q8_0 (read
 * as stored) or q4_K / q6_K (re-quantized to q8_0 at load), or any format with `anyFormat`.
 * @example
 * const why = cpuRunnable(model); // undefined: loadCpuRunner runs it
 */
export function cpuRunnable(model: ModelFiles, o: CpuRunnableOptions = {}): string | undefined {
  const c = model.config;
  if (model.onnx) return 'an ONNX folder brings its own graph, which onnxruntime runs';
  if (c.linearAttention || c.attnOutputGate) return `${c.arch}'s linear-attention layers and gated attention are not in intab's CPU kernels`;
  if (c.hidden % 32 || c.ffn % 32 || (c.heads * c.headDim) % 32) return 'its rows are not whole 32-value blocks';
  if (c.headDim % ATTENTION_HEAD_DIM_STEP) return `its head dimension (${c.headDim}) is not a multiple of ${ATTENTION_HEAD_DIM_STEP}`;
  const dtypes = new Set<string>();
  for (const [name, t] of model.tensors) if (LAYER_MATRICES.test(name)) dtypes.add(t.dtype);
  if (dtypes.size === 0) return 'it has no layer matrices';
  const unsupported = [...dtypes].filter((d) => d.startsWith('unsupported:'));
  if (unsupported.length) return `its layer matrices are ${unsupported.map((d) => d.slice('unsupported:'.length)).join(', ')}, which intab does not read`;
  const held = heldBytes(model);
  if (held > WASM_HEAP) return `its weights (${(held / 2 ** 30).toFixed(1)} GiB as the kernels hold them) do not fit a wasm heap's 4 GiB`;
  const other = [...dtypes].filter((d) => !AS_STORED.has(d) && !TO_Q8_0.has(d));
  if (other.length && !o.anyFormat) return `its layer matrices are ${other.join(', ')}: onnxruntime runs them exactly, and intab's CPU kernels would re-quantize them to q8_0 (cpuKernels 'intab' asks for that)`;
  return undefined;
}

/**
 * The model on intab's CPU kernels.
 * @example
 * const { runner } = await loadCpuRunner(await openGguf(source), { kvBudgetBytes: 64 << 20 });
 */
export async function loadCpuRunner(model: ModelFiles, o: CpuLoadOptions = {}): Promise<LoadedCpu> {
  const why = cpuRunnable(model, o);
  if (why) throw new OnnxUnsupportedError('cpu kernels', `${why}.`);
  const c = model.config;
  const pageSize = o.pageSize ?? 16;
  const pageBytes = cpuPageBytes(c, pageSize);
  const pages = Math.floor((o.kvBudgetBytes ?? 64 << 20) / pageBytes);
  if (pages < 1) throw new OnnxUnsupportedError('kvBudgetBytes', `${o.kvBudgetBytes} bytes hold no page of ${pageBytes} bytes: give at least one page's worth.`);
  const maxBatch = o.maxBatch ?? 16;
  const maxTokens = Math.max(o.maxTokensPerStep ?? 512, maxBatch);
  const maxRows = 4 * maxBatch;
  // One memory for weights ('split' blocks: up to 20/18 of the file's), K/V and scratch, sized before the first upload.
  const scratch = 4 * (maxBatch + 1) * Math.min(c.maxContext, pages * pageSize) + 4 * maxTokens * (4 * c.hidden + 2 * c.ffn + 2 * (c.heads + c.kvHeads) * c.headDim) + 4 * maxTokens * Math.max(c.hidden, c.ffn, c.heads * c.headDim) + 4 * maxRows * c.vocab;
  const estimate = heldBytes(model) + pages * pageBytes + scratch + (1 << 20);
  const mib = (b: number) => `${Math.ceil(b / 2 ** 20)} MiB`;
  if (estimate > WASM_HEAP) throw new OnnxUnsupportedError('memory', `the model, its K/V and scratch need about ${mib(estimate)} of wasm memory, past a wasm heap's 4 GiB: lower kvBudgetBytes or maxTokensPerStep, or load a smaller model or quantization.`);
  if (o.threads !== undefined && !(Number.isInteger(o.threads) && o.threads >= 1 && o.threads <= 56)) throw new OnnxUnsupportedError('threads', `${o.threads} is not a thread count: give 1 to 56.`);
  const { threads, note: threadsNote } = threadPlan(o.threads);
  // the attention runs on the threads too (CpuLlama.attend)
  const attention = await WebAssembly.compile(buildAttentionModule(threads > 1));
  let cpu: CpuMatmul;
  try {
    cpu = await CpuMatmul.create({ initialPages: Math.ceil(estimate / 65536), threads, helperModules: [attention] });
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    throw new OnnxUnsupportedError('memory', `the browser could not reserve ${mib(estimate)} of wasm memory for the model (${err.message}): close other tabs, lower kvBudgetBytes, or load a smaller model or quantization.`);
  }
  let runner: CpuRunner;
  let weights: Awaited<ReturnType<typeof loadCpuLlamaWeights>>;
  try {
    const hash = await createXXHash128();
    hash.init();
    const read = tensorWeights(model.tensors, { signal: o.signal, onProgress: o.onProgress, hash });
    weights = await loadCpuLlamaWeights(cpu, c, async (name) => read(name), model.gguf ? 'model.gguf' : `${c.arch} weights`, o.signal);
    const kernels = { attention: await createAttentionKernels(cpu.memory, attention), attentionModule: attention, activation: await createActivationKernel(cpu.memory), norm: await createNormKernels(cpu.memory) };
    const forward = new CpuLlama(cpu, c, weights, kernels, maxTokens, maxBatch, maxRows, pages * pageSize);
    runner = new CpuRunner(forward, c, `xxh128:${hash.digest('hex')}`, { ...o, maxBatch, pages, pageSize });
    await warmup(runner, c.bosId ?? 0);
  } catch (err) {
    cpu.close(); // the helper threads, if any: a load that fails (aborted, a tensor missing) leaves none running
    throw err;
  }
  // What the kernels run, per stored format of the layer matrices: 'q4_0', or 'q8_0 from q4_K'.
  const formats = [...new Set([...model.tensors].filter(([n]) => LAYER_MATRICES.test(n)).map(([, t]) => t.dtype))].sort();
  const dtypes = formats.map((d) => (AS_STORED.has(d) ? d : `q8_0 from ${d}`)).join(', ');
  const note = threadsNote ?? cpu.threadsError;
  return { runner, weightBytes: weights.bytes, requantized: weights.requantized, dtypes, threads: cpu.threads, ...(note ? { threadsNote: note } : {}) };
}

/**
 * A short prefill and decode steps on a scratch sequence, for at most WARMUP_MS: the browser compiles hot wasm with its
 * optimizing tier only after it has run a while. The prefill is WARMUP_PREFILL tokens, past every kernel's prefill
 * tiles (cpu-matmul.ts DEFAULT_TILES prefillFrom and tokens), so a user's first prompt does not run them unoptimized.
 */
async function warmup(runner: CpuRunner, token: number): Promise<void> {
  const seq = -1;
  const t0 = performance.now();
  runner.alloc(seq);
  try {
    await runner.step([{ seq, tokens: new Array<number>(Math.min(WARMUP_PREFILL, runner.maxTokens)).fill(token) }]);
    for (let i = 0; i < WARMUP_STEPS && performance.now() - t0 < WARMUP_MS; i++) await runner.step([{ seq, tokens: [token] }]);
  } finally {
    runner.free(seq);
  }
}

const WARMUP_MS = 300;
const WARMUP_STEPS = 16;
const WARMUP_PREFILL = 16;
