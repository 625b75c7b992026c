// The BERT-family encoder on intab's kernels, in the spirit of run.c: EncoderConfig, BertWeights (bert-weights.ts), a
// RunState of activations sized once at load, and one function that records a pass layer by layer. A pass packs whole
// sequences back to back (no padding: attention, RoPE and pooling read one table of sequence starts) and records
// everything into one command encoder; the readback is the pooled, normalised vectors. Families differ by config
// fields only: absolute positions + token types + biases + erf GELU (bert), RoPE + SwiGLU (nomic-bert). A pair's
// token types (a reranker's document, type 1) pick the position table of their type: the gathered row is
// position + type, no extra dispatch. A reranker pools [CLS] unnormalised and runs its head on those B rows: two more
// GEMMs (dense + bias + tanh, then the output projection + bias); the readback is the logits.
// Dispatches per layer: bert 7 (qkv, attention, out+residual, norm, up+bias+GELU, down+residual, norm), nomic-bert 9
// (+ RoPE, + SwiGLU); per pass 2-3 for the embeddings and 1 for pooling (and one more per extra weight part).

import {
  createAttentionEncoder,
  createEmbedding,
  createGemm,
  createLayerNorm,
  createPool,
  createRopeEncoder,
  createSwiglu,
  type AttentionEncoder,
  type Gemm,
  type GemmOptions,
  type Gpu,
  type WeightTensor,
} from '@intab/gpu';
import { encoderFacts, type EncoderConfig } from '../encoder-config.ts';
import type { EncodeOptions, EncoderFacts, EncoderRunner } from '../encoder-runner.ts';
import { IntabModelError } from '../errors.ts';
import { loadBertWeights, type BertWeights } from './bert-weights.ts';
import { runEncoderPass } from './encoder-pass.ts';
import type { TensorTable } from './llama-weights.ts';

export interface BertRunnerOptions {
  /** Most tokens of all sequences of one pass (default 2048): the activations are sized for it. */
  maxTokensPerPass?: number;
  /** Most sequences of one pass (default 64). */
  maxSequencesPerPass?: number;
  /** Quantize f32/f16/bf16 matrices on load. */
  quantize?: 'q8_0' | 'q4_0';
  signal?: AbortSignal;
}

/** Activations of one pass, sized at load for maxTokensPerPass (T) and maxSequencesPerPass (B). */
interface RunState {
  ids: GPUBuffer; // (T) u32
  positions: GPUBuffer; // (T) u32, bert only (a position row per token)
  seqStarts: GPUBuffer; // (B + 1) u32
  h: GPUBuffer; // (T, C) the hidden stream
  h2: GPUBuffer; // (T, C) the stream after the attention block
  e: GPUBuffer; // (T, C) gathered token rows, then the attention output
  e2: GPUBuffer; // (T, C) gathered position rows (bert)
  qkv: GPUBuffer; // (T, 3C)
  ffn: GPUBuffer; // (T, F) bert: gelu(up); nomic-bert: (T, 2F) [gate | up]
  act: GPUBuffer; // (T, F) nomic-bert: silu(gate) * up
  out: GPUBuffer; // (B, C) pooled vectors
  headH: GPUBuffer; // (B, C) a reranker's tanh(dense · [CLS] + b)
  logits: GPUBuffer; // (B, outputs) a reranker's head output
}

/**
 * Loads an encoder's weights from GGUF-named tensors and returns its EncoderRunner.
 * @example
 * const runner = await createBertRunner(gpu, encoderConfigFromGguf(meta, 'm.gguf', tensors), model.tensors);
 * const [v] = await runner.encode([[101, 7592, 102]]);
 */
export async function createBertRunner(gpu: Gpu, config: EncoderConfig, tensors: TensorTable, options: BertRunnerOptions = {}): Promise<EncoderRunner> {
  const weights = await loadBertWeights(gpu, config, tensors, { signal: options.signal, quantize: options.quantize });
  try {
    return bertRunner(gpu, config, weights, options);
  } catch (err) {
    weights.destroy();
    throw err;
  }
}

/** The runner over weights already on the GPU (it owns them from now on). */
export function bertRunner(gpu: Gpu, c: EncoderConfig, w: BertWeights, options: BertRunnerOptions = {}): EncoderRunner {
  const T = options.maxTokensPerPass ?? 2048;
  const B = options.maxSequencesPerPass ?? 64;
  if (!Number.isInteger(T) || T < 1) throw new IntabModelError(`bert: maxTokensPerPass = ${T} must be a positive integer.`);
  if (!Number.isInteger(B) || B < 1 || B > T) throw new IntabModelError(`bert: maxSequencesPerPass = ${B} must be an integer in 1..maxTokensPerPass (${T}).`);
  const { hidden: C, ffn: F, heads: H, headDim: D } = c;
  const swiglu = c.activation === 'swiglu';
  const bias = c.projectionBias;

  // ---- kernels (pipelines cached per device) ----
  const gemms = new Map<string, Gemm>();
  const gemm = (wt: WeightTensor, o: Omit<GemmOptions, 'dtype'>) => {
    const key = `${wt.dtype}|${o.bias ? 1 : 0}|${o.accumulate ? 1 : 0}|${o.activation ?? ''}`;
    let g = gemms.get(key);
    if (!g) gemms.set(key, (g = createGemm(gpu, { dtype: wt.dtype, ...o })));
    return g;
  };
  const embedTokens = createEmbedding(gpu, { dtype: w.tokens.dtype });
  const embedPositions = w.positions ? createEmbedding(gpu, { dtype: w.positions.dtype }) : undefined;
  const norm = createLayerNorm(gpu);
  const normResidual = createLayerNorm(gpu, { residual: true });
  const attention: AttentionEncoder = createAttentionEncoder(gpu, { heads: H, headDim: D });
  const rope = c.rope ? createRopeEncoder(gpu, { heads: H, headDim: D, rotaryDim: c.rope.rotaryDim, theta: c.rope.theta, style: 'neox', label: 'bert.rope' }) : undefined;
  const act = swiglu ? createSwiglu(gpu) : undefined;
  const pool = createPool(gpu, { mode: c.pooling, normalize: c.normalize });
  const head = w.head;
  const outputs = head ? (head.out ? head.out.w.n : C) : C; // values read back per sequence
  const P = c.maxPositions;

  // ---- run state ----
  const owned: GPUBuffer[] = [];
  const buffer = (label: string, bytes: number, usage = GPUBufferUsage.STORAGE) => {
    const b = gpu.device.createBuffer({ label: `bert.${label}`, size: Math.max(16, bytes), usage });
    owned.push(b);
    return b;
  };
  const upload = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const s: RunState = {
    ids: buffer('ids', T * 4, upload),
    positions: buffer('positions', w.positions ? T * 4 : 16, upload),
    seqStarts: buffer('seq_starts', (B + 1) * 4, upload),
    h: buffer('h', T * C * 4),
    h2: buffer('h2', T * C * 4),
    e: buffer('e', T * C * 4),
    e2: buffer('e2', w.positions ? T * C * 4 : 16),
    qkv: buffer('qkv', T * 3 * C * 4),
    ffn: buffer('ffn', T * (swiglu ? 2 : 1) * F * 4),
    act: buffer('act', swiglu ? T * F * 4 : 16),
    out: buffer('out', B * C * 4, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC),
    headH: buffer('head_h', head?.dense ? B * C * 4 : 16, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC),
    logits: buffer('logits', head?.out ? B * outputs * 4 : 16, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC),
  };
  /** The buffer the pass's result is read from: the pooled vectors, or a reranker head's last step. */
  const result = head?.out ? s.logits : head?.dense ? s.headH : s.out;

  /** y (tokens, N) = x · Wᵀ (+ bias) for a weight stored as one tensor or several stacked ones (column ranges of y). */
  const matmul = (pass: GPUComputePassEncoder, parts: readonly WeightTensor[], x: GPUBuffer, y: GPUBuffer, tokens: number, o: Omit<GemmOptions, 'dtype'>, biasBuf?: GPUBuffer) => {
    const n = parts.reduce((a, p) => a + p.n, 0);
    let column = 0;
    for (const p of parts) {
      gemm(p, o).encode(pass, { weight: p, x, y, tokens, yStride: n, yColumn: column, ...(o.bias ? { bias: biasBuf } : {}) });
      column += p.n;
    }
  };

  /** Records one pass over `tokens` packed rows of `sequences` sequences (ids, positions and starts already written). */
  const record = (pass: GPUComputePassEncoder, tokens: number, sequences: number) => {
    const seqs = { seqStarts: s.seqStarts, sequences, tokens };
    const ln = { rows: tokens, cols: C, eps: c.eps };
    // h = LN(tok_embd[ids] + position_embd[pos] + token_types[0])   (the type row is folded into the position rows, or
    // added as a broadcast residual row)
    embedTokens.encode(pass, { weight: w.tokens, ids: s.ids, out: s.e, tokens });
    if (w.positions && embedPositions) {
      embedPositions.encode(pass, { weight: w.positions, ids: s.positions, out: s.e2, tokens });
      normResidual.encode(pass, { x: s.e, residual: s.e2, ...w.embedNorm, out: s.h, ...ln });
    } else if (w.typeRow) {
      normResidual.encode(pass, { x: s.e, residual: w.typeRow, residualStride: 0, ...w.embedNorm, out: s.h, ...ln });
    } else {
      norm.encode(pass, { x: s.e, ...w.embedNorm, out: s.h, ...ln });
    }
    const row = 3 * C;
    for (const L of w.layers) {
      // qkv = h · [Wq; Wk; Wv]ᵀ + [bq | bk | bv]
      matmul(pass, L.qkv, s.h, s.qkv, tokens, { bias }, L.qkvBias);
      // q, k = rope(q, k) at each token's position in its own sequence   (nomic-bert)
      rope?.encode(pass, { qkv: s.qkv, ...seqs });
      // a = softmax(q kᵀ / √D) v within each sequence, both ways
      attention.encode(pass, {
        q: { buffer: s.qkv, stride: row }, k: { buffer: s.qkv, stride: row, offset: C }, v: { buffer: s.qkv, stride: row, offset: 2 * C },
        out: s.e, ...seqs,
      });
      // h += a · Woᵀ + bo;  h2 = LN(h)   (post-norm)
      matmul(pass, [L.o], s.e, s.h, tokens, { bias, accumulate: true }, L.oBias);
      norm.encode(pass, { x: s.h, ...L.attnNorm, out: s.h2, ...ln });
      if (act) {
        // f = silu(h2 · Wgateᵀ) ⊙ (h2 · Wupᵀ)
        matmul(pass, L.up, s.h2, s.ffn, tokens, {});
        act.encode(pass, { x: s.ffn, up: s.ffn, out: s.act, rows: tokens, cols: F, stride: 2 * F, upStride: 2 * F, upOffset: F });
      } else {
        // f = gelu(h2 · Wupᵀ + bup)   (erf GELU in the GEMM's epilogue)
        matmul(pass, L.up, s.h2, s.ffn, tokens, { bias, activation: 'gelu-erf' }, L.upBias);
      }
      // h2 += f · Wdownᵀ + bdown;  h = LN(h2)
      matmul(pass, [L.down], act ? s.act : s.ffn, s.h2, tokens, { bias, accumulate: true }, L.downBias);
      norm.encode(pass, { x: s.h2, ...L.outNorm, out: s.h, ...ln });
    }
    // out[b] = normalize(pool(h[rows of b]))   (a reranker: h[CLS of b], unnormalised)
    pool.encode(pass, { x: s.h, cols: C, out: s.out, ...seqs });
    if (head?.dense) {
      // headH = tanh(out · Wclsᵀ + bcls)   (RoBERTa's classifier.dense, BERT's pooler)
      gemm(head.dense.w, { bias: true, activation: 'tanh' }).encode(pass, { weight: head.dense.w, x: s.out, y: s.headH, tokens: sequences, bias: head.dense.b });
    }
    if (head?.out) {
      // logits = headH · Woutᵀ + bout
      gemm(head.out.w, { bias: true }).encode(pass, { weight: head.out.w, x: head.dense ? s.headH : s.out, y: s.logits, tokens: sequences, bias: head.out.b });
    }
  };

  const facts: EncoderFacts = encoderFacts(c);
  let queue: Promise<unknown> = Promise.resolve();
  let destroyed = false;

  const encodeNow = async (sequences: readonly (readonly number[])[], options: EncodeOptions): Promise<Float32Array[]> => {
    if (destroyed) throw new IntabModelError('This encoder was destroyed: load the model again.');
    const n = sequences.length;
    if (n === 0) return [];
    if (n > B) throw new IntabModelError(`bert: ${n} sequences in one pass; at most ${B} (maxSequencesPerPass): split the batch.`);
    const starts = new Uint32Array(n + 1);
    sequences.forEach((ids, b) => {
      if (ids.length < 1 || ids.length > c.maxPositions) {
        throw new IntabModelError(`bert: sequence ${b} has ${ids.length} tokens; each needs 1..${c.maxPositions} (the model's context): truncate it.`);
      }
      starts[b + 1] = starts[b] + ids.length;
    });
    const tokens = starts[n];
    if (tokens > T) throw new IntabModelError(`bert: ${tokens} tokens in one pass; at most ${T} (maxTokensPerPass): split the batch.`);
    const splits = options.typeSplits;
    if (splits !== undefined) {
      if (splits.length !== n) throw new IntabModelError(`bert: ${splits.length} typeSplits for ${n} sequences; give one per sequence.`);
      splits.forEach((x, b) => {
        if (!Number.isInteger(x) || x < 0) throw new IntabModelError(`bert: typeSplits[${b}] = ${x}; a split is a token index ≥ 0.`);
        if (x < sequences[b].length && c.typeVocab >= 2 && w.typeTables < 2) {
          throw new IntabModelError(`bert: sequence ${b} has type-1 tokens, which this ${c.arch} encoder does not embed (token types are read with absolute positions only): leave typeSplits out.`);
        }
      });
    }
    const ids = new Uint32Array(tokens);
    const positions = new Uint32Array(tokens);
    sequences.forEach((seq, b) => {
      seq.forEach((id, i) => {
        if (!Number.isInteger(id) || id < 0 || id >= c.vocab) throw new IntabModelError(`bert: sequence ${b} token ${i} is id ${id}; ids are 0..${c.vocab - 1}.`);
        ids[starts[b] + i] = id;
        // The row of position i in the table of the token's type (type 1 from the split on, where the model has it).
        positions[starts[b] + i] = (w.typeTables > 1 && splits !== undefined && i >= splits[b] ? P : 0) + i;
      });
    });
    const q = gpu.device.queue;
    q.writeBuffer(s.ids, 0, ids);
    if (w.positions) q.writeBuffer(s.positions, 0, positions);
    q.writeBuffer(s.seqStarts, 0, starts);
    return runEncoderPass(gpu, 'bert', (pass) => record(pass, tokens, n), result, n, outputs);
  };

  return {
    facts,
    maxTokensPerPass: T,
    maxSequencesPerPass: B,
    weightBytes: w.bytes,
    encode(sequences, options = {}) {
      // Passes share the run state: one at a time, in call order.
      const run = queue.then(() => encodeNow(sequences, options));
      queue = run.catch(() => undefined);
      return run;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      rope?.destroy();
      for (const b of owned) b.destroy();
      w.destroy();
    },
  };
}
