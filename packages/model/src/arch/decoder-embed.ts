// The decoders that embed (Qwen3-Embedding, EmbeddingGemma) on intab's kernels, as an EncoderRunner: the text
// generator's layers (arch/llama.ts: its weights upload, RMSNorm, q|k|v GEMMs, post-norms, the gated feed-forward) over
// packed whole sequences with no KV cache, attention through the encoder's kernel (attention-encoder: GQA, and per layer
// a reach — causal, a causal or symmetric window, or every key), then the final norm, pooling, the projections after it
// (EmbeddingGemma's dense_2 / dense_3) and L2 normalisation. The CPU twin is reference/decoder-embedding.ts.
// The per-head q/k RMSNorm and RoPE are the text generator's own kernel (rope-kv-append: both models norm q and k, which
// rope-encoder does not), its "cache" the pass's K and V rows: pages of one token, the page table mapping (sequence,
// position) to the packed row, so K and V come out token-major for attention-encoder. Dispatches per layer: 9 (norm,
// q|k|v, q/k norm + RoPE, attention, o + residual, norm, gate|up, activation, down + residual; Gemma's post-norms +2;
// one more GEMM per part where q, k, v or gate, up are stored apart); per pass: the gather, the final norm, pooling, one
// GEMM per projection and, after projections, one more pool that normalises.

import {
  createAttentionEncoder,
  createEmbedding,
  createGeluTanh,
  createGemm,
  createPool,
  createRmsNorm,
  createRopeKvAppend,
  createSwiglu,
  createWeight,
  type Gemm,
  type Gpu,
  type RopeKvAppend,
  type WeightTensor,
} from '@intab/gpu';
import { layerWindows } from '../config.ts';
import { decoderEmbeddingFacts, type DecoderEmbeddingConfig } from '../decoder-embedding-config.ts';
import type { EncoderRunner } from '../encoder-runner.ts';
import { IntabModelError, ModelMismatchError, UnsupportedModelError } from '../errors.ts';
import { uploadDtype, uploadRows } from '../upload.ts';
import { runEncoderPass } from './encoder-pass.ts';
import { loadLlamaWeights, type LlamaWeights, type LoadProgress, type TensorTable } from './llama-weights.ts';

export interface DecoderEmbedRunnerOptions {
  /**
   * Most tokens of all sequences of one pass (default: 2048, or fewer where the widest activation, (T, 2F), would not
   * fit one storage binding): the activations are sized for it.
   */
  maxTokensPerPass?: number;
  /** Most sequences of one pass (default 64, at most maxTokensPerPass). */
  maxSequencesPerPass?: number;
  /** Quantize f32/f16/bf16 matrices on load. */
  quantize?: 'q8_0' | 'q4_0';
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/** Activations of one pass, sized at load for maxTokensPerPass (T) and maxSequencesPerPass (B). */
interface RunState {
  ids: GPUBuffer; // (T) u32 token ids
  seqIds: GPUBuffer; // (T) u32 each token's sequence (its page-table row)
  positions: GPUBuffer; // (T) u32 each token's position in its sequence, from 0
  pageTable: GPUBuffer; // (B, maxLen) u32: [b, p] = the packed row of sequence b's position p (pages of one token)
  seqStarts: GPUBuffer; // (B + 1) u32 each sequence's first row, then T
  rowStarts: GPUBuffer; // (B + 1) u32 0, 1, …, B: each pooled row a sequence of its own (the last normalisation)
  h: GPUBuffer; // (T, C) the residual stream
  xn: GPUBuffer; // (T, C) the normed stream (a sublayer's input), or a sublayer's output before its post-norm
  qkv: GPUBuffer; // (T, (H + 2 Hkv) D) the q, k and v projections side by side
  q: GPUBuffer; // (T, H, D) normed, rotated queries
  k: GPUBuffer; // (T, Hkv, D) normed, rotated keys
  v: GPUBuffer; // (T, Hkv, D) values
  att: GPUBuffer; // (T, H, D) attention output
  gateUp: GPUBuffer; // (T, 2F) gate and up projections side by side
  ff: GPUBuffer; // (T, F) the gated activation
  pooled: GPUBuffer; // (B, C) the pooled final-norm states (normalised here when no projection follows)
  dense: GPUBuffer[]; // (B, rows_i) each projection's output
  out: GPUBuffer; // (B, dims) the normalised vectors, after projections
}

/** Default most tokens of a pass, as arch/bert.ts. */
const DEFAULT_TOKENS = 2048;
const DEFAULT_SEQUENCES = 64;

/**
 * Loads a decoder embedding model's weights (the text generator's upload, loadLlamaWeights, plus the projections after
 * pooling) and returns its EncoderRunner.
 * @example
 * const files = await openDecoderEmbeddingGguf(await pathSource('qwen3-embedding-0.6b-q8_0.gguf'));
 * const runner = await createDecoderEmbedRunner(gpu, files.config, files.tensors);
 * const [v] = await runner.encode([tokenizer.encode('a cat')]);
 */
export async function createDecoderEmbedRunner(gpu: Gpu, config: DecoderEmbeddingConfig, tensors: TensorTable, options: DecoderEmbedRunnerOptions = {}): Promise<EncoderRunner> {
  const d = config.decoder;
  const file = [...tensors.values()][0]?.source.name ?? 'model';
  if (d.linearAttention || d.attnOutputGate) {
    throw new UnsupportedModelError(file, 'general.architecture', d.arch, 'intab embeds with attention-only decoders (no Gated DeltaNet layers or attention output gates)');
  }
  // Check the limits and the projections' tensors before anything is uploaded (the layers' are checked by the upload).
  const limits = passLimits(gpu, config, options);
  const denseInfo = config.dense.map((p) => {
    const t = tensors.get(p.name);
    if (!t) throw new ModelMismatchError(file, `tensor '${p.name}'`, `present with shape [${p.rows}, ${p.cols}]`, 'missing');
    if (t.shape.length !== 2 || t.shape[0] !== p.rows || t.shape[1] !== p.cols) {
      throw new ModelMismatchError(t.source.name, `tensor '${p.name}' shape`, `[${p.rows}, ${p.cols}]`, `[${t.shape.join(', ')}]`);
    }
    return t;
  });
  // The lm_head is never read by an embedding model: upload as if tied (token_embd only), so an untied output.weight
  // is neither checked nor uploaded.
  const weights = await loadLlamaWeights(gpu, { ...d, tiedEmbeddings: true }, tensors, { signal: options.signal, quantize: options.quantize, onProgress: options.onProgress });
  const dense: WeightTensor[] = [];
  let denseBytes = 0;
  try {
    for (const [i, t] of denseInfo.entries()) {
      const { name, rows: n, cols: k } = config.dense[i];
      const w = createWeight(gpu, { dtype: uploadDtype(t, options.quantize), n, k, label: name.replace(/\.weight$/, '') });
      dense.push(w);
      await uploadRows(gpu, t, w, 0, { signal: options.signal, quantize: options.quantize });
      denseBytes += t.byteLength;
    }
    return decoderEmbedRunner(gpu, config, weights, dense, { ...limits, weightBytes: weights.bytes + denseBytes });
  } catch (err) {
    for (const w of dense) w.destroy();
    weights.destroy();
    throw err;
  }
}

/** maxTokensPerPass and maxSequencesPerPass, checked (and the default T fitted to the device's bindings). */
function passLimits(gpu: Gpu, c: DecoderEmbeddingConfig, o: DecoderEmbedRunnerOptions): { T: number; B: number } {
  const d = c.decoder;
  const widest = 4 * Math.max(2 * d.ffn, (d.heads + 2 * d.kvHeads) * d.headDim, d.hidden); // bytes of one token's widest row
  const fit = Math.floor(Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize) / widest);
  const T = o.maxTokensPerPass ?? Math.min(DEFAULT_TOKENS, fit);
  if (!Number.isInteger(T) || T < 1) throw new IntabModelError(`${c.arch}: maxTokensPerPass = ${T} must be a positive integer.`);
  if (T > fit) {
    throw new IntabModelError(`${c.arch}: maxTokensPerPass = ${T} needs a (T, ${widest / 4}) f32 activation of ${T * widest} bytes in one binding, more than this adapter binds: ask for at most ${fit} tokens a pass.`);
  }
  const B = o.maxSequencesPerPass ?? Math.min(DEFAULT_SEQUENCES, T);
  if (!Number.isInteger(B) || B < 1 || B > T) throw new IntabModelError(`${c.arch}: maxSequencesPerPass = ${B} must be an integer in 1..maxTokensPerPass (${T}).`);
  return { T, B };
}

/** The runner over weights already on the GPU (it owns them from now on). */
function decoderEmbedRunner(gpu: Gpu, ec: DecoderEmbeddingConfig, w: LlamaWeights, denseW: readonly WeightTensor[], limits: { T: number; B: number; weightBytes: number }): EncoderRunner {
  const c = ec.decoder;
  const { T, B } = limits;
  const [C, F, H, Hkv, D] = [c.hidden, c.ffn, c.heads, c.kvHeads, c.headDim];
  const qkvRow = (H + 2 * Hkv) * D;
  const maxLen = Math.min(T, c.maxContext); // the longest sequence a pass can hold
  const eps = c.rmsEps;
  const tag = ec.arch;

  // ---- kernels (pipelines cached per device) ----
  const gemms = new Map<string, Gemm>();
  const gemm = (wt: WeightTensor, accumulate = false, bias = false) => {
    const key = `${wt.dtype}|${bias ? 1 : 0}|${accumulate ? 1 : 0}`;
    let g = gemms.get(key);
    if (!g) gemms.set(key, (g = createGemm(gpu, { dtype: wt.dtype, accumulate, bias })));
    return g;
  };
  const embedding = createEmbedding(gpu, { dtype: w.embed.dtype, scale: c.embedScale });
  const norm = createRmsNorm(gpu);
  const postNorm = c.postNorms ? createRmsNorm(gpu, { accumulate: true }) : undefined;
  const act = c.activation === 'gelu_tanh' ? createGeluTanh(gpu) : createSwiglu(gpu);
  const attention = createAttentionEncoder(gpu, { heads: H, kvHeads: Hkv, headDim: D }, { scale: c.attnScale });
  const windows = layerWindows(c);
  // Each layer's q/k norm + RoPE, as LlamaForward builds them: the model's RoPE; none (NoPE layers); the local base on
  // sliding-window layers (Gemma 3's localTheta, no scaling). It "appends" to the pass's own K and V rows (pageSize 1).
  const shape = { heads: H, kvHeads: Hkv, headDim: D, pageSize: 1 };
  const rope = { ...shape, rotaryDim: c.rope.rotaryDim, theta: c.rope.theta, style: c.rope.style, scaling: c.rope.scaling, freqFactors: w.ropeFreqs, qkNorm: c.qkNorm };
  const appends = new Map<string, RopeKvAppend>();
  const noRope = new Set(c.rope.noRopeLayers ?? []);
  const appendOf = windows.map((win, l) => {
    const kind = noRope.has(l) ? 'none' : win > 0 && c.rope.localTheta !== undefined ? 'local' : 'rope';
    let a = appends.get(kind);
    if (!a) {
      const o = kind === 'none' ? { ...rope, noRope: true } : kind === 'local' ? { ...rope, theta: c.rope.localTheta!, scaling: undefined } : rope;
      appends.set(kind, (a = createRopeKvAppend(gpu, { ...o, label: `${tag}.rope.${kind}` })));
    }
    return a;
  });
  // Which keys a query sees, per layer: causal (t − j < window, or every earlier key), or both ways (|t − j| ≤
  // ⌊window / 2⌋ on a sliding layer, llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC; every key of the sequence elsewhere).
  const reachOf = windows.map((win) => {
    if (ec.attention === 'causal') return win > 0 ? { before: win - 1, after: 0 } : { after: 0 };
    return win > 0 ? { before: Math.floor(win / 2), after: Math.floor(win / 2) } : undefined;
  });
  const dims = ec.dense.at(-1)?.rows ?? C;
  // Pooling normalises at once when no projection follows; after projections, a second pool over one-row sequences
  // (rowStarts) normalises each projected vector.
  const pool = createPool(gpu, { mode: ec.pooling, normalize: ec.normalize && denseW.length === 0 });
  const finish = ec.normalize && denseW.length > 0 ? createPool(gpu, { mode: 'cls', normalize: true }) : undefined;

  // ---- run state ----
  const owned: GPUBuffer[] = [];
  const buffer = (label: string, bytes: number, usage = GPUBufferUsage.STORAGE) => {
    const b = gpu.device.createBuffer({ label: `${tag}.${label}`, size: Math.max(16, bytes), usage });
    owned.push(b);
    return b;
  };
  const upload = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const readable = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
  let s: RunState;
  try {
    s = {
      ids: buffer('ids', T * 4, upload),
      seqIds: buffer('seq_ids', T * 4, upload),
      positions: buffer('positions', T * 4, upload),
      pageTable: buffer('page_table', B * maxLen * 4, upload),
      seqStarts: buffer('seq_starts', (B + 1) * 4, upload),
      rowStarts: buffer('row_starts', (B + 1) * 4, upload),
      h: buffer('h', T * C * 4),
      xn: buffer('xn', T * C * 4),
      qkv: buffer('qkv', T * qkvRow * 4),
      q: buffer('q', T * H * D * 4),
      k: buffer('k', T * Hkv * D * 4),
      v: buffer('v', T * Hkv * D * 4),
      att: buffer('att', T * H * D * 4),
      gateUp: buffer('gate_up', T * 2 * F * 4),
      ff: buffer('ff', T * F * 4),
      pooled: buffer('pooled', B * C * 4, readable),
      dense: denseW.map((dw, i) => buffer(`dense.${i}`, B * dw.n * 4, readable)),
      out: buffer('out', finish ? B * dims * 4 : 16, readable),
    };
    gpu.device.queue.writeBuffer(s.rowStarts, 0, Uint32Array.from({ length: B + 1 }, (_, i) => i));
  } catch (err) {
    for (const b of owned) b.destroy();
    for (const a of appends.values()) a.destroy();
    throw err;
  }
  /** Where the vectors are read from: the normalised projections, the last projection, or the pool's output. */
  const result = finish ? s.out : (s.dense.at(-1) ?? s.pooled);

  /**
   * y (+)= x · Wᵀ for `rows` rows of a weight stored as one tensor or several stacked ones (column ranges of y; q|k|v
   * and gate|up share one tensor when their formats match).
   */
  const matmul = (pass: GPUComputePassEncoder, parts: readonly WeightTensor[], x: GPUBuffer, y: GPUBuffer, rows: number, o: { accumulate?: boolean; bias?: GPUBuffer } = {}) => {
    const n = parts.reduce((a, p) => a + p.n, 0);
    let column = 0;
    for (const p of parts) {
      gemm(p, o.accumulate, !!o.bias).encode(pass, { weight: p, x, y, tokens: rows, yStride: n, yColumn: column, ...(o.bias ? { bias: o.bias } : {}) });
      column += p.n;
    }
  };

  /** h += W x (Gemma: h += rmsnorm(W x) · postNorm, W x staged in xn, whose sublayer input has been read). */
  const residual = (pass: GPUComputePassEncoder, weight: WeightTensor, x: GPUBuffer, tokens: number, post?: GPUBuffer) => {
    if (!post) return matmul(pass, [weight], x, s.h, tokens, { accumulate: true });
    matmul(pass, [weight], x, s.xn, tokens);
    postNorm!.encode(pass, { x: s.xn, weight: post, out: s.h, rows: tokens, cols: C, eps });
  };

  /** Records one pass over `tokens` packed rows of `sequences` sequences, the longest `longest` tokens long. */
  const record = (pass: GPUComputePassEncoder, tokens: number, sequences: number, longest: number) => {
    const seqs = { seqStarts: s.seqStarts, sequences, tokens };
    const paged = { kCache: s.k, vCache: s.v, pageTable: s.pageTable, sequences, maxPagesPerSeq: longest, seqIds: s.seqIds, positions: s.positions, tokens };
    // h = embed[ids]   (Gemma: · √C)
    embedding.encode(pass, { weight: w.embed, ids: s.ids, out: s.h, tokens });
    w.layers.forEach((L, l) => {
      // q|k|v = W rmsnorm(h) (+ b)
      norm.encode(pass, { x: s.h, weight: L.attnNorm, out: s.xn, rows: tokens, cols: C, eps });
      matmul(pass, L.qkv, s.xn, s.qkv, tokens, { bias: L.qkvBias });
      // q, k = rope(rmsnorm_head(q) · q_norm, rmsnorm_head(k) · k_norm) at each token's position; v copied beside k
      appendOf[l].encode(pass, { qkv: s.qkv, q: s.q, ...paged, norm: L.qkNorm, eps });
      // att = softmax(q kᵀ · scale) v over the keys of the token's own sequence it reaches (GQA: head h reads h / (H/Hkv))
      attention.encode(pass, { q: { buffer: s.q }, k: { buffer: s.k }, v: { buffer: s.v }, out: s.att, ...seqs, ...(reachOf[l] ? { reach: reachOf[l] } : {}) });
      // h += Wo att   (Gemma: h += rmsnorm(Wo att) · post_attention_norm)
      residual(pass, L.o, s.att, tokens, L.attnPostNorm);
      // h += Wdown act(Wgate rmsnorm(h), Wup rmsnorm(h))   (SwiGLU, or Gemma's GeGLU; Gemma: post_ffw_norm)
      norm.encode(pass, { x: s.h, weight: L.ffnNorm, out: s.xn, rows: tokens, cols: C, eps });
      matmul(pass, L.gateUp, s.xn, s.gateUp, tokens);
      act.encode(pass, { x: s.gateUp, up: s.gateUp, out: s.ff, rows: tokens, cols: F, stride: 2 * F, upStride: 2 * F, upOffset: F });
      residual(pass, L.down, s.ff, tokens, L.ffnPostNorm);
    });
    // pooled[b] = pool(rmsnorm(h) · output_norm over the rows of b)   (normalised here when nothing follows)
    norm.encode(pass, { x: s.h, weight: w.outputNorm, out: s.xn, rows: tokens, cols: C, eps });
    pool.encode(pass, { x: s.xn, cols: C, out: s.pooled, ...seqs });
    // y_i = W_i y_{i−1}, y_0 = pooled   (EmbeddingGemma: dense_2, then dense_3; no bias)
    let x = s.pooled;
    denseW.forEach((dw, i) => {
      matmul(pass, [dw], x, s.dense[i], sequences);
      x = s.dense[i];
    });
    // out[b] = y[b] / ‖y[b]‖   (each row a sequence of its own)
    finish?.encode(pass, { x, cols: dims, out: s.out, seqStarts: s.rowStarts, sequences, tokens: sequences });
  };

  const facts = decoderEmbeddingFacts(ec);
  let queue: Promise<unknown> = Promise.resolve();
  let destroyed = false;

  const encodeNow = async (sequences: readonly (readonly number[])[]): Promise<Float32Array[]> => {
    if (destroyed) throw new IntabModelError('This encoder was destroyed: load the model again.');
    const n = sequences.length;
    if (n === 0) return [];
    if (n > B) throw new IntabModelError(`${tag}: ${n} sequences in one pass; at most ${B} (maxSequencesPerPass): split the batch.`);
    const starts = new Uint32Array(n + 1);
    let longest = 0;
    sequences.forEach((ids, b) => {
      if (ids.length < 1 || ids.length > c.maxContext) {
        throw new IntabModelError(`${tag}: sequence ${b} has ${ids.length} tokens; each needs 1..${c.maxContext} (the model's context): truncate it.`);
      }
      starts[b + 1] = starts[b] + ids.length;
      longest = Math.max(longest, ids.length);
    });
    const tokens = starts[n];
    if (tokens > T) throw new IntabModelError(`${tag}: ${tokens} tokens in one pass; at most ${T} (maxTokensPerPass): split the batch.`);
    const ids = new Uint32Array(tokens);
    const seqIds = new Uint32Array(tokens);
    const positions = new Uint32Array(tokens);
    const pageTable = new Uint32Array(n * longest);
    sequences.forEach((seq, b) => {
      seq.forEach((id, i) => {
        if (!Number.isInteger(id) || id < 0 || id >= c.vocab) throw new IntabModelError(`${tag}: sequence ${b} token ${i} is id ${id}; ids are 0..${c.vocab - 1}.`);
        const t = starts[b] + i;
        ids[t] = id;
        seqIds[t] = b;
        positions[t] = i;
        pageTable[b * longest + i] = t;
      });
    });
    const q = gpu.device.queue;
    q.writeBuffer(s.ids, 0, ids);
    q.writeBuffer(s.seqIds, 0, seqIds);
    q.writeBuffer(s.positions, 0, positions);
    q.writeBuffer(s.pageTable, 0, pageTable);
    q.writeBuffer(s.seqStarts, 0, starts);
    return runEncoderPass(gpu, tag, (pass) => record(pass, tokens, n, longest), result, n, dims);
  };

  return {
    facts,
    maxTokensPerPass: T,
    maxSequencesPerPass: B,
    weightBytes: limits.weightBytes,
    encode(sequences) {
      // Passes share the run state: one at a time, in call order.
      const run = queue.then(() => encodeNow(sequences));
      queue = run.catch(() => undefined);
      return run;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const a of appends.values()) a.destroy();
      for (const b of owned) b.destroy();
      for (const dw of denseW) dw.destroy();
      w.destroy();
    },
  };
}
