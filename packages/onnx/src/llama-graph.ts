// Builds an ONNX graph of a Llama-family model from any checkpoint @intab/model opens (GGUF or Hugging Face
// files), with the inputs and outputs of the onnx-community / optimum exports that transformers.js runs, so one
// ORT runner drives both our graphs and downloaded ones. It is the ONNX twin of reference/llama.ts: every
// LlamaConfig field means here what it means there. Standard opset-23 ops (RMSNormalization, RotaryEmbedding,
// Attention) keep the node count small; q4_0 / q8_0 matrices may stay quantized as com.microsoft MatMulNBits (exact),
// or become int8 matrices run by MatMulInteger (rounded; ORT's wasm build has u8×s8 GEMM kernels, not n-bit ones).

import { dequantize, f16ToF32, quantize, ropeInvFreq, type WeightDtype } from '@intab/gpu';
import { UnsupportedModelError, layerWindows, type LlamaConfig, type LoadProgress, type TensorInfo } from '@intab/model';
import { OnnxUnsupportedError } from './errors.ts';
import { OnnxWriteError } from './errors.ts';
import { Graph, OPSET, concatF32, fetchMatrix, serializeGraph, toF32, transposeInto, type GraphWeight, type GraphWeights, type Matrix } from './graph-builder.ts';
import { DataType, attr, f32Tensor, i64Tensor, type OnnxValueInfo } from './onnx-proto.ts';

export type { GraphWeight, GraphWeights };

// ---- public surface ----

export interface LlamaGraphOptions {
  /** Keep q4_0 / q8_0 matrices quantized as com.microsoft MatMulNBits: matmul 'nbits' (below). Default false. */
  matmulNBits?: boolean;
  /**
   * How q4_0 / q8_0 matrices enter the graph (matmulNBits: true stands for 'nbits'):
   * - 'int8': each matrix requantized to int8 with one scale per output row (stored (K, N), 1/4 of f32's bytes), run as
   *   DynamicQuantizeLinear → MatMulInteger → Cast → Mul, which ORT fuses into DynamicQuantizeMatMul: the activations
   *   are quantized to u8 per run and MLAS's u8×s8 GEMM (which ORT's wasm build has, SIMD) reads int8 weights. A
   *   quantized token embedding is int8 too, one table serving the Gather and a tied head. Not exact: a row's blocks
   *   share one scale (0.5% relative error on the weights), and the activations are rounded to 8 bits with one scale
   *   per tensor. On stories260K the greedy ids part from the dequantized graph's within 5 tokens (teacher-forced, 83-95%
   *   of top-1 agree); on SmolLM2-135M's random-weight shape 92-100%. ORT 1.30's wasm u8×s8 GEMM packs B again on
   *   every call (its wasm dispatch has no pre-packed path), so decode gains far less than the 4× fewer bytes:
   *   measured on SmolLM2-135M's shape (Qwen3 vocabulary, one wasm thread, on a loaded 2-core machine) decode 1.0-1.4×
   *   and prefill 1.5-1.8× the f32 graph's. Hence opt-in, not the default.
   * - 'nbits': com.microsoft MatMulNBits (block 32, 4 or 8 bits; exact, the same values). onnxruntime-web 1.30's wasm
   *   build (and 1.31-dev's) has no n-bit kernels: it dequantizes the whole matrix on every call, measured 8-10×
   *   slower than f32 at M = 1 for bits 4 and 8 and accuracy_level 0, 1 and 4 alike. It saves memory, and is what the
   *   WebGPU EP, which has MatMulNBits shaders, wants.
   * - 'f32': dequantized to f32 (exact).
   * Default 'f32': the exact graph.
   */
  matmul?: 'f32' | 'int8' | 'nbits';
  /** With matmulNBits: quantize the other matrices (f32, f16, bf16, q4_K, q6_K) to this format first (rows of K % 32 == 0). */
  quantize?: 'q4_0' | 'q8_0';
  /** MatMulNBits accuracy_level: 0 (default) computes in f32; 4 lets an EP with int8 kernels quantize activations (ORT wasm has none: no change). */
  accuracyLevel?: 0 | 1 | 2 | 3 | 4;
  /**
   * RoPE cos/sin: 'table' stores (maxContext, rotaryDim/2) tables computed in float64; 'compute' derives them in
   * the graph from position_ids in f32 (as transformers does). Default: 'table' up to 16 MiB, else 'compute'.
   */
  ropeCache?: 'table' | 'compute';
  /**
   * Weights (initializers of 1 KiB and more) go to an external data file of this name beside the model, as the
   * onnx-community layout's `model.onnx_data`. Default: inline unless the model would pass protobuf's 2 GiB, then
   * 'model.onnx_data'. null: always inline (throws OnnxWriteError past 2 GiB).
   */
  externalData?: string | null;
  /** RMSNorm as one RMSNormalization-23 node (default), or the primitive Pow/ReduceMean/Add/Sqrt/Div/Mul chain ORT fuses itself. */
  norm?: 'op' | 'primitive';
  /**
   * 'logits' (default): a text generator's graph (logits of the last num_logits_to_keep positions, K/V in and out).
   * 'states': an embedding model's (a decoder trained to embed: Qwen3-Embedding, EmbeddingGemma): the final-norm states
   * of every position as `last_hidden_state` (B, T, C), whole sequences per call, no head and no past/present K/V.
   */
  output?: 'logits' | 'states';
  /**
   * 'causal' (default): a token sees itself and earlier ones. 'bidirectional' (EmbeddingGemma): every token of its
   * sequence, and a sliding layer's window is symmetric, |i − j| ≤ ⌊window / 2⌋ (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC);
   * only with output 'states'.
   */
  attention?: 'causal' | 'bidirectional';
  /** Name of the weights' file or folder, for error messages. */
  file?: string;
  /** Checked between tensors. */
  signal?: AbortSignal;
}

export interface LlamaGraph {
  /** The .onnx file (ModelProto bytes). */
  model: Uint8Array;
  /** The external data file the model's initializers point into, when weights are stored outside it. */
  externalData?: { path: string; data: Uint8Array };
  /** Nodes in the graph (before onnxruntime's own fusions). */
  nodeCount: number;
  /** Bytes of all initializers (inline or external). */
  weightBytes: number;
}

/** Graph input and output names, the onnx-community / optimum layout. */
export const LLAMA_GRAPH_IO = {
  inputIds: 'input_ids',
  attentionMask: 'attention_mask',
  positionIds: 'position_ids',
  /** How many of the last positions get logits (an int64 scalar: 1 for a prompt chunk, T for a verify step). */
  logitsToKeep: 'num_logits_to_keep',
  logits: 'logits',
  /** output 'states': the final-norm states (B, T, C). */
  states: 'last_hidden_state',
  pastKey: (layer: number) => `past_key_values.${layer}.key`,
  pastValue: (layer: number) => `past_key_values.${layer}.value`,
  presentKey: (layer: number) => `present.${layer}.key`,
  presentValue: (layer: number) => `present.${layer}.value`,
} as const;

/**
 * A GraphWeights over an opened model's tensor table (openGguf / openHfFolder's `tensors`): each tensor's stored
 * bytes, read when the builder asks for it. `onProgress` hears the bytes read so far of the table's whole size, tensor
 * by tensor (a load's progress: the builder reads each tensor once); `hash` takes each tensor as read (what a runner's
 * saved K/V pages are keyed by).
 * @example
 * const model = await openGguf(await pathSource('stories260K.gguf'));
 * const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors));
 */
export function tensorWeights(tensors: ReadonlyMap<string, TensorInfo>, options: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void; hash?: WeightsHash } = {}): GraphWeights {
  const total = options.onProgress ? [...tensors.values()].reduce((n, t) => n + t.byteLength, 0) : 0;
  let loaded = 0;
  return async (name) => {
    const t = tensors.get(name);
    if (!t) return undefined;
    if (t.dtype.startsWith('unsupported:')) {
      throw new UnsupportedModelError(t.source.name, `tensor '${name}' dtype`, t.dtype.slice('unsupported:'.length), 'intab reads f32, f16, bf16, q8_0, q4_0, q4_K and q6_K tensors: pick another quantization of the model');
    }
    const data = await t.source.read(t.offset, t.byteLength, options.signal);
    options.onProgress?.({ loaded: (loaded += t.byteLength), total });
    // Gemma's HF norm weights: used as stored + 1.
    const w: GraphWeight = t.valueOffset ? dequantize(t.dtype as WeightDtype, data, 1, t.shape.reduce((a, b) => a * b, 1)).map((v) => v + t.valueOffset!) : { dtype: t.dtype as WeightDtype, data };
    if (options.hash) {
      options.hash.update(`${name}|${t.dtype}|${t.shape.join('x')}|`);
      options.hash.update(w instanceof Float32Array ? new Uint8Array(w.buffer, w.byteOffset, w.byteLength) : w.data);
    }
    return w;
  };
}

/** Where tensorWeights hashes what it reads (an xxh128 hasher of hash-wasm): each tensor's name, dtype, shape, then its bytes. */
export interface WeightsHash {
  update(data: string | Uint8Array): unknown;
}

// ---- graph assembly ----

const MS = 'com.microsoft';
/** Additive mask of a key a query must not see: finite, so a row with no visible key (padding) stays finite. */
const MASKED = -1e30;
/** Largest RoPE table ('table' cache) chosen by default. */
const ROPE_TABLE_MAX_BYTES = 16 * 2 ** 20;

/**
 * Builds the ONNX graph of a Llama-family model. Inputs: input_ids (B, T) int64, attention_mask (B, P+T) int64
 * (1 attend, 0 padding; left padding allowed), position_ids (B, T) int64, and past_key_values.{i}.key / .value
 * (B, Hkv, P, D) f32 per layer (P may be 0). Outputs: logits (B, T, V) f32 and present.{i}.key / .value
 * (B, Hkv, P+T, D): past with the new K (after RoPE) and V appended.
 * @example
 * const { config, tensors } = await openHfFolder(files);
 * const { model, externalData } = await buildLlamaGraph(config, tensorWeights(tensors));
 * const session = await ort.InferenceSession.create(model, externalData ? { externalData: [externalData] } : {});
 */
export async function buildLlamaGraph(config: LlamaConfig, weights: GraphWeights, options: LlamaGraphOptions = {}): Promise<LlamaGraph> {
  const file = options.file ?? 'weights';
  if (config.linearAttention) {
    throw new OnnxUnsupportedError('linearAttention', `${config.arch}'s Gated DeltaNet layers keep a recurrent state that this graph builder does not write: load the model with backend 'webgpu' (backend 'auto' does).`);
  }
  const { hidden: C, ffn: F, layers: L, heads: H, kvHeads: Hkv, headDim: D, vocab: V, rmsEps: eps } = config;
  const rot = config.rope.rotaryDim;
  if (options.matmulNBits && options.matmul && options.matmul !== 'nbits') {
    throw new OnnxWriteError('options.matmul', `'${options.matmul}' contradicts matmulNBits: true`, "give one of them: matmul: 'nbits' is matmulNBits: true");
  }
  const mode = options.matmulNBits ? 'nbits' : (options.matmul ?? 'f32');
  if (mode !== 'f32' && mode !== 'int8' && mode !== 'nbits') throw new OnnxWriteError('options.matmul', `'${String(mode)}' is not a matmul mode`, "give 'f32', 'int8' or 'nbits'");
  const nbits = mode === 'nbits';
  const int8 = mode === 'int8';
  if (options.quantize && !nbits) throw new OnnxWriteError('options.quantize', `'${options.quantize}' quantizes matrices for MatMulNBits, which is off`, "set matmul: 'nbits' (matmulNBits: true) as well, or leave quantize out");
  const states = options.output === 'states';
  if (options.output !== undefined && options.output !== 'logits' && !states) throw new OnnxWriteError('options.output', `'${String(options.output)}' is not an output`, "give 'logits' or 'states'");
  const bidirectional = options.attention === 'bidirectional';
  if (options.attention !== undefined && options.attention !== 'causal' && !bidirectional) throw new OnnxWriteError('options.attention', `'${String(options.attention)}' is not an attention`, "give 'causal' or 'bidirectional'");
  if (bidirectional && !states) throw new OnnxWriteError('options.attention', "'bidirectional' needs output 'states'", "a generator's K/V cache assumes causal attention: set output: 'states' (an embedding model) or leave attention out");
  const g = new Graph();
  let usesMs = false;

  // ---- weights: fetched one at a time, checked against the config ----

  const matrix = (name: string, n: number, k: number): Promise<Matrix> => fetchMatrix(weights, name, n, k, file, options.signal);
  const vector = async (name: string, n: number): Promise<Float32Array> => toF32(await matrix(name, 1, n));

  // ---- inputs and outputs ----

  const io = LLAMA_GRAPH_IO;
  const inputs: OnnxValueInfo[] = [
    { name: io.inputIds, elemType: DataType.INT64, dims: ['batch_size', 'sequence_length'] },
    { name: io.attentionMask, elemType: DataType.INT64, dims: ['batch_size', 'total_sequence_length'] },
    { name: io.positionIds, elemType: DataType.INT64, dims: ['batch_size', 'sequence_length'] },
    ...(states ? [] : [{ name: io.logitsToKeep, elemType: DataType.INT64, dims: [] }]),
  ];
  const outputs: OnnxValueInfo[] = states
    ? [{ name: io.states, elemType: DataType.FLOAT, dims: ['batch_size', 'sequence_length', C] }]
    : [{ name: io.logits, elemType: DataType.FLOAT, dims: ['batch_size', 'logits_length', V] }];
  for (let i = 0; i < L && !states; i++) {
    for (const name of [io.pastKey(i), io.pastValue(i)]) inputs.push({ name, elemType: DataType.FLOAT, dims: ['batch_size', Hkv, 'past_sequence_length', D] });
    for (const name of [io.presentKey(i), io.presentValue(i)]) outputs.push({ name, elemType: DataType.FLOAT, dims: ['batch_size', Hkv, 'total_sequence_length', D] });
  }

  // ---- constants ----

  const i64 = (name: string, values: number[], dims: number[] = [values.length]) => g.constant(name, () => i64Tensor(name, dims, values));
  const f32 = (name: string, values: number[], dims: number[] = [values.length]) => g.constant(name, () => f32Tensor(name, dims, Float32Array.from(values)));
  const zeroI = i64('const.i64.0', [0], []);
  const oneI = i64('const.i64.1', [1], []);

  // ---- attention mask (B, 1, T, S), shared by all layers ----
  // Query t sits at index P+t of the S = P+T keys; it sees key j iff attention_mask[b, j] = 1, j ≤ P+t, and
  // (sliding window w) P+t − j < w.
  const tLen = g.op1('Shape', [io.inputIds], { name: 'mask.T', attributes: [attr.int('start', 1), attr.int('end', 2)] }); // [T]
  const sLen = g.op1('Shape', [io.attentionMask], { name: 'mask.S', attributes: [attr.int('start', 1), attr.int('end', 2)] }); // [S]
  const pLen = g.op1('Sub', [sLen, tLen], { name: 'mask.P' }); // [P]
  const sScalar = g.op1('Squeeze', [sLen], { name: 'mask.S0' });
  const pScalar = g.op1('Squeeze', [pLen], { name: 'mask.P0' });
  const keyIdx = g.op1('Range', [zeroI, sScalar, oneI], { name: 'mask.keys' }); // (S): j
  const queryIdx = g.op1('Range', [pScalar, sScalar, oneI], { name: 'mask.queries' }); // (T): P+t
  const queryCol = g.op1('Unsqueeze', [queryIdx, i64('const.axes.1', [1])], { name: 'mask.queries_col' }); // (T, 1)
  const dist = g.op1('Sub', [queryCol, keyIdx], { name: 'mask.dist' }); // (T, S): P+t − j
  // Causal: j ≤ P+t. Bidirectional (P = 0): every key of the sequence, padding aside.
  const causal = bidirectional ? g.op1('Equal', [dist, dist], { name: 'mask.all' }) : g.op1('GreaterOrEqual', [dist, zeroI], { name: 'mask.causal' });
  const keep = g.op1('Cast', [io.attentionMask], { name: 'mask.padding', attributes: [attr.int('to', DataType.BOOL)] }); // (B, S)
  const keep4 = g.op1('Unsqueeze', [keep, i64('const.axes.1_2', [1, 2])], { name: 'mask.padding4' }); // (B, 1, 1, S)
  /** The additive (B, 1, T, S) mask of a layer that sees every earlier key (suffix '') or only the window's. */
  const additive = (visible: string, suffix: string) => {
    const allowed = g.op1('And', [visible, keep4], { name: `mask.allowed${suffix}` }); // (B, 1, T, S)
    return g.op1('Where', [allowed, f32('const.f32.0', [0], []), f32('const.masked', [MASKED], [])], { name: `mask${suffix}` });
  };
  // Each layer's window: every layer's (Mistral), or only slidingLayers' (Gemma 3), the others seeing every key.
  const windows = layerWindows(config);
  const windowed = (l: number) => windows[l] > 0;
  const anySliding = windows.some((w) => w > 0);
  const fullMask = windows.some((w) => w === 0) ? additive(causal, '') : '';
  let windowMask = '';
  if (config.slidingWindow !== null && anySliding) {
    // Causal: P+t − j < w. Symmetric (bidirectional): |t − j| ≤ ⌊w / 2⌋.
    const inWindow = bidirectional
      ? g.op1('LessOrEqual', [g.op1('Abs', [dist], { name: 'mask.abs_dist' }), i64('const.half_window', [Math.floor(config.slidingWindow / 2)], [])], { name: 'mask.in_window' })
      : g.op1('Less', [dist, i64('const.window', [config.slidingWindow], [])], { name: 'mask.in_window' });
    windowMask = additive(g.op1('And', [causal, inWindow], { name: 'mask.causal_window' }), '.window');
  }

  // ---- RoPE cos/sin ----
  const freqFactors = config.rope.freqFactors ? await vector('rope_freqs.weight', rot / 2) : undefined;
  const half = rot / 2;
  const ropeMode = options.ropeCache ?? (config.maxContext * rot * 4 <= ROPE_TABLE_MAX_BYTES ? 'table' : 'compute');
  // RotaryEmbedding's optional position_ids input: given with tables, not with per-token cos/sin
  const ropePositions = ropeMode === 'table' ? [io.positionIds] : [];
  /** cos and sin for one base (tables of maxContext positions, or computed per token); `tag` names their values. */
  const ropeTables = (theta: number, scaling: LlamaConfig['rope']['scaling'], tag: string): [string, string] => {
    const invFreq = ropeInvFreq({ headDim: D, rotaryDim: rot, theta, scaling, freqFactors }); // (rot/2) float64
    if (ropeMode === 'table') {
      const P = config.maxContext;
      const c = new Float32Array(P * half);
      const s = new Float32Array(P * half);
      for (let p = 0; p < P; p++) {
        for (let i = 0; i < half; i++) {
          const a = p * invFreq[i]; // float64, as the reference
          c[p * half + i] = Math.cos(a);
          s[p * half + i] = Math.sin(a);
        }
      }
      return [g.init(f32Tensor(`rope${tag}.cos`, [P, half], c)), g.init(f32Tensor(`rope${tag}.sin`, [P, half], s))]; // (maxContext, rot/2)
    }
    const posF = g.op1('Cast', [io.positionIds], { name: `rope${tag}.pos`, attributes: [attr.int('to', DataType.FLOAT)] }); // (B, T)
    const pos3 = g.op1('Unsqueeze', [posF, i64('const.axes.2', [2])], { name: `rope${tag}.pos3` }); // (B, T, 1)
    const angles = g.op1('Mul', [pos3, g.init(f32Tensor(`rope${tag}.inv_freq`, [half], Float32Array.from(invFreq)))], { name: `rope${tag}.angles` }); // (B, T, rot/2)
    return [g.op1('Cos', [angles], { name: `rope${tag}.cos` }), g.op1('Sin', [angles], { name: `rope${tag}.sin` })];
  };
  const globalRope = ropeTables(config.rope.theta, config.rope.scaling, '');
  // Gemma 3's sliding-window layers turn by their own base, unscaled.
  const localRope = config.rope.localTheta !== undefined && anySliding ? ropeTables(config.rope.localTheta, undefined, '.local') : globalRope;
  const rope = (x: string, heads: number, name: string, [cos, sin]: [string, string]) =>
    g.op1('RotaryEmbedding', [x, cos, sin, ...ropePositions], {
      name,
      attributes: [attr.int('num_heads', heads), attr.int('rotary_embedding_dim', rot), attr.int('interleaved', config.rope.style === 'normal' ? 1 : 0)],
    });

  // ---- building blocks ----

  const rmsnorm = (x: string, weight: Float32Array, name: string): string => {
    const w = g.init(f32Tensor(`${name}.weight`, [weight.length], weight));
    if (options.norm !== 'primitive') return g.op1('RMSNormalization', [x, w], { name, attributes: [attr.int('axis', -1), attr.float('epsilon', eps)] });
    // The pattern onnxruntime's SimplifiedLayerNormFusion turns into one node.
    const sq = g.op1('Pow', [x, f32('const.f32.2', [2], [])], { name: `${name}.sq` });
    const mean = g.op1('ReduceMean', [sq, i64('const.axes.-1', [-1])], { name: `${name}.mean`, attributes: [attr.int('keepdims', 1)] });
    const plus = g.op1('Add', [mean, f32('const.eps', [eps], [])], { name: `${name}.eps_add` });
    const root = g.op1('Sqrt', [plus], { name: `${name}.sqrt` });
    const normed = g.op1('Div', [x, root], { name: `${name}.div` });
    return g.op1('Mul', [normed, w], { name: `${name}.scale` });
  };

  /** y = x · [W_0; W_1; …]ᵀ (+ bias) as com.microsoft MatMulNBits over the parts' blocks (block 32, zero point 2^(bits−1)). */
  const matmulNBits = (x: string, ms: readonly Matrix[], bits: 4 | 8, name: string, bias?: Float32Array, output?: string): string => {
    usesMs = true;
    const k = ms[0].k;
    const n = ms.reduce((s, m) => s + m.n, 0);
    const { b, scales } = packNBits(ms, bits, options.quantize);
    const blocks = k / 32;
    const inputsNb = [x, g.init({ name: `${name}.weight_q${bits}`, dataType: DataType.UINT8, dims: [n, blocks, (32 * bits) / 8], data: b }), g.init(f32Tensor(`${name}.scales`, [n * blocks], scales))];
    if (bias) inputsNb.push('', '', g.init(f32Tensor(`${name}.bias`, [n], bias))); // inputs 3, 4 (zero points, g_idx) omitted
    return g.op1('MatMulNBits', inputsNb, {
      name,
      output,
      domain: MS,
      attributes: [attr.int('K', k), attr.int('N', n), attr.int('bits', bits), attr.int('block_size', 32), attr.int('accuracy_level', options.accuracyLevel ?? 0)],
    });
  };

  /**
   * y = x · B · diag(scales) (+ bias) for B (K, N) int8: x quantized to u8 per run (DynamicQuantizeLinear: one scale
   * and zero point for the whole tensor), the integer product, cast and scaled by x's scale times each column's. The
   * pattern ORT's MatMulIntegerToFloatFusion turns into one DynamicQuantizeMatMul. Measured alternatives that did not
   * pay: a second byte of x's rounding residual (12 more nodes per matmul: decode no faster than f32, error only
   * halved) and a scale per token (8 more nodes: no better top-1 agreement on stories260K or SmolLM2's shape).
   */
  const matmulInt8 = (x: string, b: string, scales: Float32Array, name: string, bias?: Float32Array, output?: string): string => {
    const [xq, xScale, xZero] = g.op('DynamicQuantizeLinear', [x], { name: `${name}.quantize_x`, outputs: 3 }); // u8 x, its scale and zero point
    const yi = g.op1('MatMulInteger', [xq, b, xZero], { name }); // (…, N) int32: Σ (xq − z)·b
    const yf = g.op1('Cast', [yi], { name: `${name}.cast`, attributes: [attr.int('to', DataType.FLOAT)] });
    const scale = g.op1('Mul', [xScale, g.init(f32Tensor(`${name}.scales`, [scales.length], scales))], { name: `${name}.scale` }); // (N)
    const y = g.op1('Mul', [yf, scale], { name: `${name}.scaled`, ...(bias ? {} : { output }) });
    if (!bias) return y;
    return g.op1('Add', [y, g.init(f32Tensor(`${name}.bias`, [bias.length], bias))], { name: `${name}.bias_add`, output });
  };

  /** y = x · [W_0; W_1; …]ᵀ (+ bias): the parts' rows stacked into one matmul over the last axis of x. */
  const linear = async (x: string, parts: { name: string; n: number }[], k: number, name: string, bias?: Float32Array, output?: string): Promise<string> => {
    const ms: Matrix[] = [];
    for (const p of parts) ms.push(await matrix(p.name, p.n, k));
    const n = ms.reduce((s, m) => s + m.n, 0);
    const bits = nbits ? nbitsOf(ms, options.quantize) : 0;
    if (bits) return matmulNBits(x, ms, bits, name, bias, output);
    if (int8 && ms.every(isBlockQuantized)) {
      const { q, scales } = int8Rows(ms);
      const b = g.init({ name: `${name}.weight_i8`, dataType: DataType.INT8, dims: [k, n], data: transposeI8(q, n, k) });
      return matmulInt8(x, b, scales, name, bias, output);
    }
    // f32, stored (K, N) so MatMul reads it as is.
    const wt = new Float32Array(k * n);
    let col = 0;
    for (const m of ms) {
      transposeInto(wt, n, col, toF32(m), m.n, k);
      col += m.n;
    }
    const w = g.init(f32Tensor(`${name}.weight`, [k, n], wt));
    if (!bias) return g.op1('MatMul', [x, w], { name, output });
    const y = g.op1('MatMul', [x, w], { name });
    return g.op1('Add', [y, g.init(f32Tensor(`${name}.bias`, [n], bias))], { name: `${name}.bias_add`, output });
  };

  // ---- the forward ----

  const embed = await matrix('token_embd.weight', V, C); // (V, C)
  // int8: a quantized embedding becomes one int8 table of per-row scales. Tied, it is stored (C, V) as the head's B
  // and the Gather takes columns; untied, (V, C) and the Gather takes rows.
  const embedI8 = int8 && isBlockQuantized(embed) ? int8Rows([embed]) : undefined;
  const embedColumns = embedI8 !== undefined && config.tiedEmbeddings;
  let embedTable = '';
  let x: string;
  if (embedI8) {
    embedTable = g.init({ name: 'token_embd.weight_i8', dataType: DataType.INT8, dims: embedColumns ? [C, V] : [V, C], data: embedColumns ? transposeI8(embedI8.q, V, C) : new Uint8Array(embedI8.q.buffer) });
    const rows = g.op1('Gather', [embedTable, io.inputIds], { name: 'embed', attributes: [attr.int('axis', embedColumns ? 1 : 0)] }); // (C, B, T) or (B, T, C) int8
    const bt = embedColumns ? g.op1('Transpose', [rows], { name: 'embed.transpose', attributes: [attr.ints('perm', [1, 2, 0])] }) : rows; // (B, T, C)
    const values = g.op1('Cast', [bt], { name: 'embed.cast', attributes: [attr.int('to', DataType.FLOAT)] });
    const rowScale = g.op1('Gather', [g.init(f32Tensor('token_embd.scales', [V], embedI8.scales)), io.inputIds], { name: 'embed.row_scale' }); // (B, T)
    x = g.op1('Mul', [values, g.op1('Unsqueeze', [rowScale, i64('const.axes.2', [2])], { name: 'embed.row_scale3' })], { name: 'embed.scaled' }); // (B, T, C)
  } else {
    embedTable = g.init(f32Tensor('token_embd.weight', [V, C], toF32(embed)));
    x = g.op1('Gather', [embedTable, io.inputIds], { name: 'embed' }); // (B, T, C): x = embed[token]
  }
  if (config.embedScale !== 1) x = g.op1('Mul', [x, f32('const.embed_scale', [config.embedScale], [])], { name: 'embed.scale' }); // Gemma: x *= √C

  const qkSize = [H * D, Hkv * D, Hkv * D];
  const noRope = new Set(config.rope.noRopeLayers ?? []); // SmolLM3's NoPE layers
  for (let l = 0; l < L; l++) {
    const b = `blk.${l}.`;
    const n = `L${l}.`;
    // ---- attention ----
    const xb = rmsnorm(x, await vector(`${b}attn_norm.weight`, C), `${n}attn_norm`); // xb = rmsnorm(x) * attn_norm
    const qkvBias = config.qkvBias ? concatF32([await vector(`${b}attn_q.bias`, H * D), await vector(`${b}attn_k.bias`, Hkv * D), await vector(`${b}attn_v.bias`, Hkv * D)]) : undefined;
    const qkv = await linear(xb, [{ name: `${b}attn_q.weight`, n: H * D }, { name: `${b}attn_k.weight`, n: Hkv * D }, { name: `${b}attn_v.weight`, n: Hkv * D }], C, `${n}attn.qkv`, qkvBias); // q|k|v = W xb (+ b)
    let [q, k, v] = g.op('Split', [qkv, i64('const.qkv_sizes', qkSize)], { name: `${n}attn.split`, attributes: [attr.int('axis', -1)], outputs: 3 }); // (B, T, H·D), (B, T, Hkv·D) ×2
    if (config.qkNorm) {
      // Qwen3: RMSNorm over each head's D values of q and k, before RoPE.
      const headNorm = async (t: string, heads: number, which: 'q' | 'k') => {
        const w = await vector(`${b}attn_${which}_norm.weight`, D);
        const split = g.op1('Reshape', [t, i64(`const.${which}_heads_shape`, [0, 0, heads, D])], { name: `${n}attn.${which}_heads` }); // (B, T, heads, D)
        const normed = rmsnorm(split, w, `${n}attn.${which}_norm`);
        return g.op1('Reshape', [normed, i64(`const.${which}_flat_shape`, [0, 0, heads * D])], { name: `${n}attn.${which}_flat` });
      };
      q = await headNorm(q, H, 'q');
      k = await headNorm(k, Hkv, 'k');
    }
    if (!noRope.has(l)) {
      const tables = windowed(l) ? localRope : globalRope;
      q = rope(q, H, `${n}attn.rope_q`, tables);
      k = rope(k, Hkv, `${n}attn.rope_k`, tables);
    }
    // softmax(q·kᵀ·scale + mask)·v over past|new keys (scale 1/√D, Gemma's 1/√query_pre_attn_scalar); GQA: query
    // head h reads kv head h / (H/Hkv).
    const [att] = g.op('Attention', [q, k, v, windowed(l) ? windowMask : fullMask, ...(states ? [] : [io.pastKey(l), io.pastValue(l)])], {
      name: `${n}attn`,
      outputs: states ? [`${n}attn/out`] : [`${n}attn/out`, io.presentKey(l), io.presentValue(l)],
      attributes: [attr.int('q_num_heads', H), attr.int('kv_num_heads', Hkv), attr.float('scale', config.attnScale)],
    }); // (B, T, H·D)
    let o = await linear(att, [{ name: `${b}attn_output.weight`, n: C }], H * D, `${n}attn.o`); // Wo att
    if (config.postNorms) o = rmsnorm(o, await vector(`${b}post_attention_norm.weight`, C), `${n}attn_post_norm`); // Gemma
    x = g.op1('Add', [x, o], { name: `${n}attn.residual` }); // x += Wo att
    // ---- feed-forward ----
    const xf = rmsnorm(x, await vector(`${b}ffn_norm.weight`, C), `${n}ffn_norm`); // xb = rmsnorm(x) * ffn_norm
    const gu = await linear(xf, [{ name: `${b}ffn_gate.weight`, n: F }, { name: `${b}ffn_up.weight`, n: F }], C, `${n}ffn.gate_up`); // g|u = W xb
    const [gate, up] = g.op('Split', [gu, i64('const.ffn_sizes', [F, F])], { name: `${n}ffn.split`, attributes: [attr.int('axis', -1)], outputs: 2 });
    let act: string;
    if (config.activation === 'silu') {
      const sig = g.op1('Sigmoid', [gate], { name: `${n}ffn.sigmoid` });
      act = g.op1('Mul', [gate, sig], { name: `${n}ffn.silu` }); // silu(g) = g·σ(g)
    } else {
      act = g.op1('Gelu', [gate], { name: `${n}ffn.gelu`, attributes: [attr.string('approximate', 'tanh')] });
    }
    const h = g.op1('Mul', [act, up], { name: `${n}ffn.gated` }); // h = act(g) * u
    let down = await linear(h, [{ name: `${b}ffn_down.weight`, n: C }], F, `${n}ffn.down`);
    if (config.postNorms) down = rmsnorm(down, await vector(`${b}post_ffw_norm.weight`, C), `${n}ffn_post_norm`); // Gemma
    x = g.op1('Add', [x, down], { name: `${n}ffn.residual` }); // x += Wd h
  }

  if (states) {
    // ---- an embedding model's states: every position, final-norm; pooling is the runner's ----
    const normed = rmsnorm(x, await vector('output_norm.weight', C), 'output_norm'); // xf = rmsnorm(x) * output_norm
    g.op1('Identity', [normed], { name: 'states', output: io.states }); // (B, T, C)
    const opsetImports = [{ domain: '', version: OPSET }, ...(usesMs ? [{ domain: MS, version: 1 }] : [])];
    return serializeGraph(g, { name: `intab-${config.arch}-states`, inputs, outputs, opsetImports, metadata: { 'intab.arch': config.arch, 'intab.output': 'states' }, externalData: options.externalData });
  }

  // ---- head ----
  // Only the last num_logits_to_keep positions go through the head: a prompt chunk needs the last token's logits, a
  // verify step every row's. (At a 151k vocabulary the head over 15 prompt tokens costs nearly what the layers do.)
  const keepFrom = g.op1('Unsqueeze', [g.op1('Neg', [io.logitsToKeep], { name: 'head.neg_keep' }), i64('const.axes.0', [0])], { name: 'head.keep_from' }); // [-K]
  const xs = g.op1('Slice', [x, keepFrom, i64('const.i64.max', [Number.MAX_SAFE_INTEGER]), i64('const.axes.1', [1])], { name: 'head.last_rows' }); // (B, K, C)
  const xo = rmsnorm(xs, await vector('output_norm.weight', C), 'output_norm'); // xf = rmsnorm(x) * output_norm
  const headBits = nbits ? nbitsOf([embed], options.quantize) : 0;
  if (!config.tiedEmbeddings) {
    await linear(xo, [{ name: 'output.weight', n: V }], C, 'lm_head', undefined, io.logits);
  } else if (embedColumns) {
    // int8: the (C, V) table is the head's B.
    matmulInt8(xo, embedTable, embedI8!.scales, 'lm_head', undefined, io.logits);
  } else if (headBits) {
    // The quantized embedding serves the head as MatMulNBits (it reads (N, K) rows as stored); Gather keeps the f32 table.
    matmulNBits(xo, [embed], headBits, 'lm_head', undefined, io.logits);
  } else {
    // Tied f32: Gemm reads the (V, C) table transposed, so the weights exist once. Gemm is 2-D: fold (B, T).
    const flat = g.op1('Reshape', [xo, i64('lm_head.flat_shape', [-1, C])], { name: 'lm_head.flat' }); // (B·T, C)
    const y = g.op1('Gemm', [flat, embedTable], { name: 'lm_head', attributes: [attr.int('transB', 1)] }); // (B·T, V)
    const rowsShape = g.op1('Shape', [xo], { name: 'lm_head.bk', attributes: [attr.int('start', 0), attr.int('end', 2)] }); // [B, K]
    const outShape = g.op1('Concat', [rowsShape, i64('lm_head.v', [V])], { name: 'lm_head.shape', attributes: [attr.int('axis', 0)] });
    g.op1('Reshape', [y, outShape], { name: 'lm_head.unflat', output: io.logits }); // (B, K, V)
  }

  // ---- serialize ----
  const opsetImports = [{ domain: '', version: OPSET }, ...(usesMs ? [{ domain: MS, version: 1 }] : [])];
  return serializeGraph(g, { name: `intab-${config.arch}`, inputs, outputs, opsetImports, metadata: { 'intab.arch': config.arch }, externalData: options.externalData });
}

// ---- weight formats ----

/**
 * The MatMulNBits width a group of matrices (same K) gets: 4 when all are (or become) q4_0, 8 when q8_0 is among
 * them (q4_0 rows convert to 8 bits exactly), 0 when some cannot be block-quantized (stays f32).
 */
function nbitsOf(ms: readonly Matrix[], target: 'q4_0' | 'q8_0' | undefined): 0 | 4 | 8 {
  const kinds = ms.map((m) => (m.dtype === 'q4_0' || m.dtype === 'q8_0' ? m.dtype : target && m.k % 32 === 0 ? target : null));
  if (kinds.some((d) => d === null)) return 0;
  return kinds.every((d) => d === 'q4_0') ? 4 : 8;
}

/**
 * Repacks ggml blocks into MatMulNBits' layout: B (N, K/32, 32·bits/8) u8 with element j of a block at bits
 * [4(j % 2), +4) of byte j/2 (4-bit) or at byte j (8-bit, biased by the default zero point 128), and scales (N·K/32)
 * f32. ggml's q4_0 keeps element j in the low nibble and j+16 in the high nibble of byte j; the value is
 * (q − 8)·d either way, so the conversion is exact.
 */
function packNBits(ms: readonly Matrix[], bits: 4 | 8, target: 'q4_0' | 'q8_0' | undefined): { b: Uint8Array; scales: Float32Array } {
  const k = ms[0].k;
  const blocks = k / 32;
  const n = ms.reduce((s, m) => s + m.n, 0);
  const blob = (32 * bits) / 8;
  const b = new Uint8Array(n * blocks * blob);
  const scales = new Float32Array(n * blocks);
  let row = 0;
  for (const m0 of ms) {
    const m = m0.dtype === 'q4_0' || m0.dtype === 'q8_0' ? m0 : { ...m0, dtype: target!, bytes: quantize(target!, toF32(m0), m0.n, m0.k) };
    const dv = new DataView(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength);
    const size = m.dtype === 'q4_0' ? 18 : 34;
    for (let r = 0; r < m.n; r++) {
      for (let blk = 0; blk < blocks; blk++) {
        const src = (r * blocks + blk) * size;
        const dst = (row + r) * blocks + blk;
        scales[dst] = f16ToF32(dv.getUint16(src, true));
        const out = dst * blob;
        if (m.dtype === 'q8_0') {
          for (let j = 0; j < 32; j++) b[out + j] = (m.bytes[src + 2 + j] + 128) & 0xff; // int8 q → u8 q + 128
        } else if (bits === 8) {
          for (let j = 0; j < 16; j++) {
            const q = m.bytes[src + 2 + j];
            b[out + j] = (q & 0xf) + 120; // (q − 8) + 128
            b[out + j + 16] = (q >> 4) + 120;
          }
        } else {
          const nib = (j: number) => (j < 16 ? m.bytes[src + 2 + j] & 0xf : m.bytes[src + 2 + j - 16] >> 4);
          for (let i = 0; i < 16; i++) b[out + i] = nib(2 * i) | (nib(2 * i + 1) << 4);
        }
      }
    }
    row += m.n;
  }
  return { b, scales };
}

/** Whether a matrix is stored in a block format the int8 path requantizes (q4_0, q8_0). */
function isBlockQuantized(m: Matrix): boolean {
  return m.dtype === 'q4_0' || m.dtype === 'q8_0';
}

/**
 * The matrices' rows (stacked) as int8 with one scale per row: q = round(w / s), s = max |w| / 127 over the row (a
 * row of zeros gets s = 0 and q = 0). Returned row-major (N, K), with the N scales.
 */
function int8Rows(ms: readonly Matrix[]): { q: Int8Array; scales: Float32Array } {
  const k = ms[0].k;
  const n = ms.reduce((s, m) => s + m.n, 0);
  const q = new Int8Array(n * k);
  const scales = new Float32Array(n);
  let row = 0;
  for (const m of ms) {
    const w = toF32(m);
    for (let r = 0; r < m.n; r++, row++) {
      let amax = 0;
      for (let j = r * k; j < (r + 1) * k; j++) amax = Math.max(amax, Math.abs(w[j]));
      const s = Math.fround(amax / 127);
      scales[row] = s;
      if (s === 0) continue;
      const inv = 1 / s;
      for (let j = 0; j < k; j++) q[row * k + j] = Math.max(-127, Math.min(127, Math.round(w[r * k + j] * inv)));
    }
  }
  return { q, scales };
}

/** The (rows, cols) int8 matrix transposed to (cols, rows), as bytes: in 64×64 tiles, so both sides stay in cache. */
function transposeI8(q: Int8Array, rows: number, cols: number): Uint8Array {
  const out = new Int8Array(rows * cols);
  const TILE = 64;
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const r1 = Math.min(rows, r0 + TILE);
    for (let c0 = 0; c0 < cols; c0 += TILE) {
      const c1 = Math.min(cols, c0 + TILE);
      for (let c = c0; c < c1; c++) {
        const o = c * rows;
        for (let r = r0; r < r1; r++) out[o + r] = q[r * cols + c];
      }
    }
  }
  return new Uint8Array(out.buffer);
}
