// Builds an ONNX graph of a BERT-family embedding model ('bert': all-MiniLM, bge; 'nomic-bert': nomic-embed-text) from
// the tensors @intab/model's encoder loaders open (GGUF or Hugging Face folder), so onnxruntime (wasm in the browser,
// onnxruntime-node's CPU provider in Node) embeds where WebGPU is missing. It is the ONNX twin of reference/bert.ts:
// every EncoderConfig field means here what it means there, and pooling and L2 normalisation happen inside the graph,
// so a run returns the vectors themselves. A reranker (config.classifier) ends in its head instead — [CLS] row, dense +
// tanh, output projection — with a `logits` output (as a Hugging Face sequence-classification export names it) and a
// token_type_ids input where the model has two types (a pair's document is type 1). Same writer, opset and weight handling as llama-graph.ts (q8_0 / q4_0
// matrices are dequantized to f32: ORT's CPU kernels have no fast n-bit path, see LlamaGraphOptions.matmulNBits).

import { dequantize, ropeInvFreq, rowBytes } from '@intab/gpu';
import { ModelMismatchError, type EncoderConfig } from '@intab/model';
import { Graph, OPSET, concatF32, fetchMatrix, serializeGraph, toF32, transposeInto, type GraphWeights, type Matrix, type SerializedGraph } from './graph-builder.ts';
import { DataType, attr, f32Tensor, i64Tensor, type OnnxValueInfo } from './onnx-proto.ts';

// ---- public surface ----

/** How a layer's bidirectional attention is written (the same values; they differ in speed per onnxruntime build). */
export type EncoderAttention = 'op' | 'mha' | 'matmul';

export interface EncoderGraphOptions {
  /**
   * 'op': the standard Attention-23 node with an additive (B, 1, T, T) key mask; 'mha': com.microsoft
   * MultiHeadAttention with the (B, T) key padding mask (ORT's WebGPU EP lacks that input); 'matmul': MatMul, Softmax,
   * MatMul over (B, H, T, T) scores. Default 'op', see DEFAULT_ENCODER_ATTENTION.
   */
  attention?: EncoderAttention;
  /**
   * What the graph returns. 'embeddings' (default): sentence_embedding (B, C), pooled and normalised in the graph, as
   * intab's runner reads it. 'last_hidden_state': the last layer's rows (B, T, C) before pooling, and a token_type_ids
   * (B, T) input where the model has token types (typeVocab > 0), each row adding its type's embedding: the layout of a
   * Hugging Face encoder export, which transformers.js's feature-extraction pipeline pools itself.
   */
  output?: 'embeddings' | 'last_hidden_state';
  /**
   * Weights (initializers of 1 KiB and more) go to an external data file of this name beside the model. Default: inline
   * unless the model would pass protobuf's 2 GiB, then 'model.onnx_data'. null: always inline.
   */
  externalData?: string | null;
  /** Name of the weights' file or folder, for error messages. */
  file?: string;
  /** Checked between tensors. */
  signal?: AbortSignal;
}

/** The built graph: the .onnx bytes (and external data when the weights live outside it). */
export type EncoderGraph = SerializedGraph;

/**
 * Graph input and output names: input_ids and attention_mask as transformers.js feeds an encoder (token_type_ids are
 * implied 0 unless output is 'last_hidden_state'), sentence-transformers' ONNX output name for the pooled vectors, and
 * a Hugging Face export's for the unpooled rows.
 */
export const ENCODER_GRAPH_IO = {
  inputIds: 'input_ids',
  attentionMask: 'attention_mask',
  tokenTypeIds: 'token_type_ids',
  embeddings: 'sentence_embedding',
  lastHiddenState: 'last_hidden_state',
  logits: 'logits',
} as const;

/** Whether the graph of `config` takes token_type_ids: the unpooled export where the model has types, a reranker with two. */
export function encoderGraphTakesTypes(config: EncoderConfig, output: EncoderGraphOptions['output'] = 'embeddings'): boolean {
  return output === 'last_hidden_state' ? config.typeVocab > 0 : !!config.classifier && config.typeVocab >= 2;
}

/**
 * The attention the builder writes unless told. Measured (best of 2 interleaved rounds, ms per run) with
 * onnxruntime-node 1.30's CPU provider (1 and 2 threads) and onnxruntime-web 1.30's wasm build in Node (1 thread), on
 * all-MiniLM-L6 (f32, 6 layers) at (B, T) = (1, 30), (8, 30), (32, 30), (4, 128), (1, 512) and a 2-layer nomic-bert of
 * 768 at (8, 30), (1, 512), (1, 1024): 'op' was the fastest or within 4% of the fastest everywhere (e.g. wasm (32, 30):
 * op 742, mha 752, matmul 731; attention is a small part of the work at these lengths); 'matmul' falls behind on long
 * inputs (nomic (1, 1024), wasm: op 1,572, mha 1,538, matmul 2,138). 'op' is the standard op and runs on ORT's WebGPU
 * EP too, which lacks 'mha''s key padding mask.
 */
export const DEFAULT_ENCODER_ATTENTION: EncoderAttention = 'op';

// ---- graph assembly ----

const MS = 'com.microsoft';
/** Additive mask of a padded key: finite, so nothing becomes NaN. */
const MASKED = -1e30;

/**
 * Builds the ONNX graph of an encoder. Inputs: input_ids (B, T) int64 and attention_mask (B, T) int64, rows
 * right-padded (each row is 1…1 0…0: a sequence's tokens, then padding; position i of a row is token i's position).
 * Output: sentence_embedding (B, C) f32, each row pooled over its unmasked tokens as config.pooling says (mean, [CLS]'s
 * row, the last unmasked row) and L2-normalised where config.normalize. Padded rows never reach a real row: keys are
 * masked, and padded queries only produce rows pooling ignores. With `output: 'last_hidden_state'` the graph stops
 * before pooling: last_hidden_state (B, T, C), padded rows included (the caller's pooling masks them), and a
 * token_type_ids (B, T) int64 input where the model has token types.
 * @example
 * const model = await openEncoderGguf(await pathSource('all-minilm-l6.gguf'));
 * const { model: bytes } = await buildEncoderGraph(model.config, tensorWeights(model.tensors));
 * const session = await ort.InferenceSession.create(bytes);
 */
export async function buildEncoderGraph(config: EncoderConfig, weights: GraphWeights, options: EncoderGraphOptions = {}): Promise<EncoderGraph> {
  const file = options.file ?? 'weights';
  const { hidden: C, ffn: F, layers: L, heads: H, headDim: D, vocab: V, eps } = config;
  const attention = options.attention ?? DEFAULT_ENCODER_ATTENTION;
  const unpooled = options.output === 'last_hidden_state';
  const head = unpooled ? null : config.classifier ?? null;
  /** Token types as an input (each row's type embedding added), not type 0 folded in: the unpooled graph's, a reranker's. */
  const typeInput = encoderGraphTakesTypes(config, options.output);
  const g = new Graph();
  let usesMs = false;
  const io = ENCODER_GRAPH_IO;

  // ---- weights: fetched one at a time, checked against the config ----
  const matrix = (name: string, n: number, k: number): Promise<Matrix> => fetchMatrix(weights, name, n, k, file, options.signal);
  const vector = async (name: string, n: number): Promise<Float32Array> => toF32(await matrix(name, 1, n));
  const bias = async (name: string, n: number): Promise<Float32Array | undefined> => (config.projectionBias ? vector(name, n) : undefined);

  // ---- inputs and outputs ----
  const inputs: OnnxValueInfo[] = [
    { name: io.inputIds, elemType: DataType.INT64, dims: ['batch_size', 'sequence_length'] },
    { name: io.attentionMask, elemType: DataType.INT64, dims: ['batch_size', 'sequence_length'] },
    ...(typeInput ? [{ name: io.tokenTypeIds, elemType: DataType.INT64, dims: ['batch_size', 'sequence_length'] }] : []),
  ];
  const outputs: OnnxValueInfo[] = unpooled
    ? [{ name: io.lastHiddenState, elemType: DataType.FLOAT, dims: ['batch_size', 'sequence_length', C] }]
    : head
      ? [{ name: io.logits, elemType: DataType.FLOAT, dims: ['batch_size', head.outputs > 0 ? head.outputs : C] }]
      : [{ name: io.embeddings, elemType: DataType.FLOAT, dims: ['batch_size', C] }];

  // ---- constants ----
  const i64 = (name: string, values: number[], dims: number[] = [values.length]) => g.constant(name, () => i64Tensor(name, dims, values));
  const f32 = (name: string, values: number[], dims: number[] = [values.length]) => g.constant(name, () => f32Tensor(name, dims, Float32Array.from(values)));
  const axes = (...a: number[]) => i64(`const.axes.${a.join('_')}`, a);

  // ---- shapes and masks, shared by all layers ----
  const tLen = g.op1('Shape', [io.inputIds], { name: 'T', attributes: [attr.int('start', 1), attr.int('end', 2)] }); // [T]
  /** What each layer's attention takes beside q, k, v: an additive key mask or the key padding mask. */
  let keyMask = '';
  if (attention === 'mha') {
    keyMask = g.op1('Cast', [io.attentionMask], { name: 'mask.i32', attributes: [attr.int('to', DataType.INT32)] }); // (B, T)
  } else {
    const keep = g.op1('Cast', [io.attentionMask], { name: 'mask.bool', attributes: [attr.int('to', DataType.BOOL)] }); // (B, T)
    const additive = g.op1('Where', [keep, f32('const.f32.0', [0], []), f32('const.masked', [MASKED], [])], { name: 'mask.additive' }); // (B, T)
    keyMask = g.op1('Unsqueeze', [additive, axes(1, 2)], { name: 'mask.keys' }); // (B, 1, 1, T): broadcast over heads and queries
    if (attention === 'op') {
      // onnxruntime's Attention wants the mask's query axis spelled out: (B, 1, T, T).
      const shape = g.op1('Concat', [i64('const.i64.1_1', [1, 1]), tLen, i64('const.i64.1s', [1])], { name: 'mask.queries_shape', attributes: [attr.int('axis', 0)] });
      keyMask = g.op1('Expand', [keyMask, shape], { name: 'mask.queries' });
    }
  }

  // ---- building blocks ----
  const layerNorm = async (x: string, name: string): Promise<string> => {
    const w = g.init(f32Tensor(`${name}.weight`, [C], await vector(`${name}.weight`, C)));
    const b = g.init(f32Tensor(`${name}.bias`, [C], await vector(`${name}.bias`, C)));
    return g.op1('LayerNormalization', [x, w, b], { name, attributes: [attr.int('axis', -1), attr.float('epsilon', eps)] });
  };

  /** y = x · [W_0; W_1; …]ᵀ (+ [b_0; b_1; …]): the parts' rows stacked into one MatMul over the last axis of x, stored (K, N). */
  const linear = async (x: string, parts: { name: string; n: number }[], k: number, name: string): Promise<string> => {
    const ms: Matrix[] = [];
    for (const p of parts) ms.push(await matrix(`${p.name}.weight`, p.n, k));
    const n = ms.reduce((s, m) => s + m.n, 0);
    const wt = new Float32Array(k * n);
    let col = 0;
    for (const m of ms) {
      transposeInto(wt, n, col, toF32(m), m.n, k);
      col += m.n;
    }
    const y = g.op1('MatMul', [x, g.init(f32Tensor(`${name}.weight`, [k, n], wt))], { name });
    if (!config.projectionBias) return y;
    const biases: Float32Array[] = [];
    for (const p of parts) biases.push((await bias(`${p.name}.bias`, p.n))!);
    return g.op1('Add', [y, g.init(f32Tensor(`${name}.bias`, [n], concatF32(biases)))], { name: `${name}.bias_add` });
  };

  // ---- RoPE (nomic-bert): cos/sin tables over the trained positions, computed in float64 ----
  let rope: ((x: string, name: string) => string) | undefined;
  if (config.rope) {
    const rot = config.rope.rotaryDim;
    const half = rot / 2;
    const P = config.maxPositions;
    const inv = ropeInvFreq({ headDim: D, rotaryDim: rot, theta: config.rope.theta }); // (rot/2) float64
    const cos = new Float32Array(P * half);
    const sin = new Float32Array(P * half);
    for (let p = 0; p < P; p++) {
      for (let i = 0; i < half; i++) {
        cos[p * half + i] = Math.cos(p * inv[i]);
        sin[p * half + i] = Math.sin(p * inv[i]);
      }
    }
    const cosT = g.init(f32Tensor('rope.cos', [P, half], cos)); // (maxPositions, rot/2)
    const sinT = g.init(f32Tensor('rope.sin', [P, half], sin));
    // position_ids (B, T): 0..T-1 in every row (rows are right-padded).
    const T0 = g.op1('Squeeze', [tLen], { name: 'rope.T0' });
    const range = g.op1('Range', [i64('const.i64.0', [0], []), T0, i64('const.i64.1', [1], [])], { name: 'rope.range' }); // (T)
    const positions = g.op1('Expand', [range, g.op1('Shape', [io.inputIds], { name: 'rope.BT' })], { name: 'rope.positions' }); // (B, T)
    rope = (x, name) =>
      g.op1('RotaryEmbedding', [x, cosT, sinT, positions], {
        name,
        attributes: [attr.int('num_heads', H), attr.int('rotary_embedding_dim', rot), attr.int('interleaved', 0)], // neox pairs (i, i + rot/2)
      });
  }

  /** softmax(q·kᵀ/√D + mask)·v per head, every token seeing every unmasked token of its row: (B, T, C). */
  const attend = (q: string, k: string, v: string, n: string): string => {
    const scale = 1 / Math.sqrt(D);
    if (attention === 'op') {
      return g.op1('Attention', [q, k, v, keyMask], { name: `${n}attn`, attributes: [attr.int('q_num_heads', H), attr.int('kv_num_heads', H), attr.float('scale', scale)] });
    }
    if (attention === 'mha') {
      usesMs = true;
      return g.op1('MultiHeadAttention', [q, k, v, '', keyMask], { name: `${n}attn`, domain: MS, attributes: [attr.int('num_heads', H), attr.float('scale', scale)] });
    }
    const heads = i64('const.heads_shape', [0, 0, H, D]);
    const split = (t: string, which: string, perm: number[]) =>
      g.op1('Transpose', [g.op1('Reshape', [t, heads], { name: `${n}attn.${which}_heads` })], { name: `${n}attn.${which}_t`, attributes: [attr.ints('perm', perm)] });
    const qh = split(q, 'q', [0, 2, 1, 3]); // (B, H, T, D)
    const kh = split(k, 'k', [0, 2, 3, 1]); // (B, H, D, T)
    const vh = split(v, 'v', [0, 2, 1, 3]); // (B, H, T, D)
    const qs = g.op1('Mul', [qh, f32('const.attn_scale', [scale], [])], { name: `${n}attn.q_scaled` });
    const scores = g.op1('Add', [g.op1('MatMul', [qs, kh], { name: `${n}attn.scores` }), keyMask], { name: `${n}attn.masked` }); // (B, H, T, T)
    const p = g.op1('Softmax', [scores], { name: `${n}attn.softmax`, attributes: [attr.int('axis', -1)] });
    const o = g.op1('Transpose', [g.op1('MatMul', [p, vh], { name: `${n}attn.pv` })], { name: `${n}attn.o_t`, attributes: [attr.ints('perm', [0, 2, 1, 3])] }); // (B, T, H, D)
    return g.op1('Reshape', [o, i64('const.flat_shape', [0, 0, C])], { name: `${n}attn.flat` });
  };

  // ---- embeddings: x = LN(tok[id] + pos[i] + type[0]), or + type[token_type_ids] where token types are an input ----
  const tok = g.init(f32Tensor('token_embd.weight', [V, C], toF32(await matrix('token_embd.weight', V, C))));
  let x = g.op1('Gather', [tok, io.inputIds], { name: 'embed' }); // (B, T, C)
  let type0: Float32Array | undefined; // every token is type 0: its row is folded into the positions (or added once)
  if (typeInput) {
    const types = g.init(f32Tensor('token_types.weight', [config.typeVocab, C], toF32(await matrix('token_types.weight', config.typeVocab, C)))); // (typeVocab, C)
    x = g.op1('Add', [x, g.op1('Gather', [types, io.tokenTypeIds], { name: 'embed.types' })], { name: 'embed.add_types' }); // (B, T, C)
  } else if (config.typeVocab > 0) {
    type0 = toF32(await matrix('token_types.weight', config.typeVocab, C)).subarray(0, C);
  }
  if (config.absolutePositions) {
    // The first maxPositions rows of position_embd, with type[0] folded in: one Add per pass instead of two.
    const pos = await positionTable(weights, 'position_embd.weight', config.maxPositions, C, file);
    if (type0) for (let p = 0; p < config.maxPositions; p++) for (let j = 0; j < C; j++) pos[p * C + j] += type0[j];
    const table = g.init(f32Tensor('position_embd.weight', [config.maxPositions, C], pos));
    const rows = g.op1('Slice', [table, i64('const.i64.0s', [0]), tLen, i64('const.axes.0', [0])], { name: 'embed.positions' }); // (T, C): rows 0..T-1
    x = g.op1('Add', [x, rows], { name: 'embed.add_positions' });
  } else if (type0) {
    x = g.op1('Add', [x, g.init(f32Tensor('token_types.row0', [C], Float32Array.from(type0)))], { name: 'embed.add_type' });
  }
  x = await layerNorm(x, 'token_embd_norm');

  // ---- layers (post-norm) ----
  for (let l = 0; l < L; l++) {
    const b = `blk.${l}.`;
    const n = `L${l}.`;
    // q|k|v = W x (+ b), one MatMul
    const qkv = await linear(x, [{ name: `${b}attn_q`, n: C }, { name: `${b}attn_k`, n: C }, { name: `${b}attn_v`, n: C }], C, `${n}attn.qkv`);
    let [q, k, v] = g.op('Split', [qkv, i64('const.qkv_sizes', [C, C, C])], { name: `${n}attn.split`, attributes: [attr.int('axis', -1)], outputs: 3 }); // (B, T, C) ×3
    if (rope) {
      q = rope(q, `${n}attn.rope_q`);
      k = rope(k, `${n}attn.rope_k`);
    }
    const att = attend(q, k, v, n);
    const o = await linear(att, [{ name: `${b}attn_output`, n: C }], C, `${n}attn.o`); // Wo att (+ bo)
    x = await layerNorm(g.op1('Add', [x, o], { name: `${n}attn.residual` }), `${b}attn_output_norm`); // x = LN(x + Wo att)
    let h: string;
    if (config.activation === 'swiglu') {
      const gu = await linear(x, [{ name: `${b}ffn_gate`, n: F }, { name: `${b}ffn_up`, n: F }], C, `${n}ffn.gate_up`); // g|u = W x
      const [gate, up] = g.op('Split', [gu, i64('const.ffn_sizes', [F, F])], { name: `${n}ffn.split`, attributes: [attr.int('axis', -1)], outputs: 2 });
      const silu = g.op1('Mul', [gate, g.op1('Sigmoid', [gate], { name: `${n}ffn.sigmoid` })], { name: `${n}ffn.silu` }); // silu(g) = g·σ(g)
      h = g.op1('Mul', [silu, up], { name: `${n}ffn.gated` }); // h = silu(g) ⊙ u
    } else {
      const up = await linear(x, [{ name: `${b}ffn_up`, n: F }], C, `${n}ffn.up`); // u = Wu x + bu
      h = g.op1('Gelu', [up], { name: `${n}ffn.gelu` }); // h = gelu_erf(u) (approximate 'none')
    }
    const down = await linear(h, [{ name: `${b}ffn_down`, n: C }], F, `${n}ffn.down`); // Wd h (+ bd)
    x = await layerNorm(g.op1('Add', [x, down], { name: `${n}ffn.residual` }), `${b}layer_output_norm`); // x = LN(x + Wd h)
  }

  // ---- pooling: (B, T, C) → (B, C) over each row's unmasked tokens (or the rows themselves) ----
  let pooled = '';
  if (unpooled) {
    g.op1('Identity', [x], { name: 'last_hidden_state', output: io.lastHiddenState }); // (B, T, C)
  } else if (config.pooling === 'mean') {
    // Σ_t mask[t]·x[t] / Σ_t mask[t], the sum as one (B, 1, T) × (B, T, C) MatMul.
    const maskF = g.op1('Cast', [io.attentionMask], { name: 'pool.mask', attributes: [attr.int('to', DataType.FLOAT)] }); // (B, T): 1 token, 0 padding
    const sum = g.op1('MatMul', [g.op1('Unsqueeze', [maskF, axes(1)], { name: 'pool.mask_row' }), x], { name: 'pool.sum' }); // (B, 1, C)
    const count = g.op1('ReduceSum', [maskF, axes(1)], { name: 'pool.count', attributes: [attr.int('keepdims', 1)] }); // (B, 1)
    const mean = g.op1('Div', [g.op1('Squeeze', [sum, axes(1)], { name: 'pool.sum2' }), count], { name: 'pool.mean' }); // (B, C)
    pooled = mean;
  } else if (config.pooling === 'cls') {
    pooled = g.op1('Gather', [x, i64('const.i64.0', [0], [])], { name: 'pool.cls', attributes: [attr.int('axis', 1)] }); // (B, C): row 0
  } else {
    // The last unmasked row of each sequence: index Σ mask − 1 (rows are right-padded).
    const len = g.op1('ReduceSum', [io.attentionMask, axes(1)], { name: 'pool.len', attributes: [attr.int('keepdims', 1)] }); // (B, 1)
    const last = g.op1('Sub', [len, i64('const.i64.1', [1], [])], { name: 'pool.last_index' });
    pooled = g.op1('GatherND', [x, last], { name: 'pool.last', attributes: [attr.int('batch_dims', 1)] }); // (B, C)
  }
  if (unpooled) {
    // nothing more: the caller pools and normalises
  } else if (head) {
    // A reranker's head on the [CLS] row (llama.cpp's rank pooling): logits = Wout · tanh(Wcls x + bcls) + bout.
    /** y = x · Wᵀ + b for a head matrix (n, C) and its bias, both read to f32. */
    const dense = async (x0: string, name: string, n: number, label: string) => {
      const m = await matrix(`${name}.weight`, n, C);
      const wt = new Float32Array(C * n);
      transposeInto(wt, n, 0, toF32(m), n, C);
      const y = g.op1('MatMul', [x0, g.init(f32Tensor(`${name}.weight`, [C, n], wt))], { name: label });
      return g.op1('Add', [y, g.init(f32Tensor(`${name}.bias`, [n], await vector(`${name}.bias`, n)))], { name: `${label}.bias_add` });
    };
    let h = pooled;
    if (head.dense) h = g.op1('Tanh', [await dense(h, 'cls', C, 'head.dense')], { name: 'head.tanh' }); // (B, C)
    if (head.outputs > 0) h = await dense(h, 'cls.output', head.outputs, 'head.out'); // (B, outputs)
    g.op1('Identity', [h], { name: 'logits', output: io.logits });
  } else if (config.normalize) {
    // v / max(‖v‖, tiny): an all-zero vector stays zero, as llama.cpp's common_embd_normalize leaves it.
    const l2 = g.op1('ReduceL2', [pooled, axes(-1)], { name: 'normalize.l2', attributes: [attr.int('keepdims', 1)] }); // (B, 1)
    const safe = g.op1('Max', [l2, f32('const.tiny', [1e-30], [])], { name: 'normalize.safe' });
    g.op1('Div', [pooled, safe], { name: 'normalize', output: io.embeddings });
  } else {
    g.op1('Identity', [pooled], { name: 'embeddings', output: io.embeddings });
  }

  // ---- serialize ----
  const opsetImports = [{ domain: '', version: OPSET }, ...(usesMs ? [{ domain: MS, version: 1 }] : [])];
  return serializeGraph(g, {
    name: `intab-${config.arch}`,
    inputs,
    outputs,
    opsetImports,
    metadata: { 'intab.arch': config.arch, 'intab.output': unpooled ? io.lastHiddenState : head ? io.logits : io.embeddings, 'intab.pooling': config.pooling, 'intab.normalize': String(config.normalize) },
    externalData: options.externalData,
  });
}

/** The first `rows` rows of a (≥ rows, C) table as a fresh f32 array (a table may hold more rows than the config reads). */
async function positionTable(weights: GraphWeights, name: string, rows: number, C: number, file: string): Promise<Float32Array> {
  const w = await weights(name);
  if (!w) throw new ModelMismatchError(file, `tensor '${name}'`, `present (at least ${rows} × ${C} values)`, 'missing');
  if (w instanceof Float32Array) {
    if (w.length < rows * C || w.length % C !== 0) throw new ModelMismatchError(file, `tensor '${name}'`, `at least ${rows} × ${C} values`, `${w.length} values`);
    return w.slice(0, rows * C);
  }
  const perRow = rowBytes(w.dtype, C);
  if (w.data.length < rows * perRow || w.data.length % perRow !== 0) throw new ModelMismatchError(file, `tensor '${name}'`, `at least ${rows} rows of ${perRow} bytes (${w.dtype})`, `${w.data.length} bytes`);
  return dequantize(w.dtype, w.data.subarray(0, rows * perRow), rows, C);
}
