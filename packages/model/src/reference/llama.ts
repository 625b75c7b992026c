// CPU reference forward pass of the Llama family, written like llama2.c's run.c: plain loops, one token
// at a time, its own contiguous KV cache, float64 accumulation in every dot product, softmax and norm,
// f32 storage between steps (as on the GPU). Every LlamaConfig variant (GQA, qkv bias, q/k norm, tied
// or untied output, normal/neox/partial rope, llama3 scaling, sliding window, SwiGLU/GeGLU; Qwen3.5's gated
// attention and Gated DeltaNet layers, deltanet.ts) runs here, so the GPU forward and the engine's tests have one
// slow, obviously-correct twin to compare with. hiddenStates runs the same layers layer by layer over a whole sequence
// (no cache carried between calls), causally or both ways, for the decoders that embed (reference/decoder-embedding.ts).

import { ShapeError } from '@intab/gpu';
import { layerWindows, type LlamaConfig } from '../config.ts';
import { IntabModelError, ModelMismatchError } from '../errors.ts';
import { canonicalHfName, ffnNormName, fusedRows, hfValueTransform, type FusedTensor } from '../tensor-names.ts';
import { createDeltaNet } from './deltanet.ts';
import { geluTanh, linear, matvec, rmsnorm, silu, tensorGetter } from './ops.ts';

/** Returns a tensor by its canonical (GGUF) name, e.g. 'blk.0.attn_q.weight', or undefined when absent. */
export type WeightsFn = (canonicalName: string) => Float32Array | undefined;

export interface ReferenceModel {
  readonly config: LlamaConfig;
  /** Positions held in the KV cache (the next startPos when continuing). */
  readonly length: number;
  /**
   * Runs tokens at positions startPos.. (startPos ≤ length; smaller rewinds) and returns the last token's (V)
   * logits. With `layers` (1..config.layers) only the first `layers` layers run, then the final norm and
   * lm_head (a self-speculative draft); only those layers' K/V are written.
   */
  forward(tokens: readonly number[], startPos: number, layers?: number): Float32Array;
  /** Same as forward, but returns the (T, V) logits of every token. */
  logitsAll(tokens: readonly number[], startPos: number, layers?: number): Float32Array;
  /** Empties the KV cache. */
  reset(): void;
  /**
   * The (T, C) final-norm hidden states (rmsnorm(x) · output_norm, what the lm_head reads) of every token of one whole
   * sequence at positions 0..T−1, layer by layer. `bidirectional`: every token attends to every token of the sequence,
   * and a sliding layer's window is symmetric, |i − j| ≤ ⌊window / 2⌋ (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC; EmbeddingGemma);
   * otherwise causal, as forward. Overwrites the KV cache (the model's own; a model with external KV rows, Gated
   * DeltaNet layers or an attention output gate refuses): reset() before forward again.
   */
  hiddenStates(tokens: readonly number[], options?: { bidirectional?: boolean }): Float32Array;
}

export interface ReferenceModelOptions {
  /** Name for error messages (the weights' file or folder). */
  file?: string;
  /**
   * KV rows held outside the model (a paged cache shared between sequences): the model writes and reads position
   * p's K/V at row kv.row(p) of kv.k[l] / kv.v[l]. The owner decides which positions are valid, so forward may
   * start at any position. Default: the model's own contiguous cache.
   */
  kv?: ReferenceKv;
}

/** K and V rows of a cache the model does not own: per layer (rows, Hkv·D) f32, and where each position lives. */
export interface ReferenceKv {
  readonly k: readonly Float32Array[];
  readonly v: readonly Float32Array[];
  /** The row that holds position `pos` (already allocated when the model writes it). */
  row(pos: number): number;
}

interface LayerWeights {
  attnNorm: Float32Array; // (C)
  /** Attention's weights, absent on a Gated DeltaNet layer (config.linearAttention.layers). */
  attn?: AttentionWeights;
  ffnNorm: Float32Array; // (C)
  ffnPostNorm?: Float32Array; // (C) (config.postNorms)
  wGate: Float32Array; // (F, C)
  wUp: Float32Array; // (F, C)
  wDown: Float32Array; // (C, F)
}

interface AttentionWeights {
  wq: Float32Array; // (H*D, C), or (H*2D, C) with config.attnOutputGate: each head's q rows, then its gate rows
  wk: Float32Array; // (Hkv*D, C)
  wv: Float32Array; // (Hkv*D, C)
  bq?: Float32Array; // (H*D)
  bk?: Float32Array; // (Hkv*D)
  bv?: Float32Array; // (Hkv*D)
  qNorm?: Float32Array; // (D)
  kNorm?: Float32Array; // (D)
  wo: Float32Array; // (C, H*D)
  attnPostNorm?: Float32Array; // (C) (config.postNorms)
}

/**
 * (rotaryDim/2) inverse frequencies in float64: theta^(-2i/rot), then linear or llama3 scaling (as Hugging Face's
 * _compute_linear_scaling_rope_parameters and _compute_llama3_parameters) and llama.cpp's rope_freqs factors when
 * given. `local`: a sliding-window layer's (rope.localTheta, no scaling).
 */
export function referenceInvFreq(config: LlamaConfig, freqFactors?: Float32Array, local = false): Float64Array {
  const { rotaryDim: rot } = config.rope;
  const theta = local ? (config.rope.localTheta ?? config.rope.theta) : config.rope.theta;
  const s = local && config.rope.localTheta !== undefined ? undefined : config.rope.scaling;
  const half = rot / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / theta ** ((2 * i) / rot);
  if (s?.type === 'linear') for (let i = 0; i < half; i++) inv[i] /= s.factor;
  else if (s) {
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      if (wavelen < highWavelen) continue; // high frequency: kept
      if (wavelen > lowWavelen) inv[i] /= s.factor; // low frequency: interpolated
      else {
        const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = ((1 - smooth) * inv[i]) / s.factor + smooth * inv[i];
      }
    }
  }
  if (freqFactors) for (let i = 0; i < half; i++) inv[i] /= freqFactors[i];
  return inv;
}

/** Rotates each of `heads` rows of x (heads, D) at position pos: pairs (2i, 2i+1) 'normal' or (i, i+rot/2) 'neox'. */
function rope(x: Float32Array, heads: number, d: number, pos: number, invFreq: Float64Array, neox: boolean): void {
  const half = invFreq.length;
  for (let i = 0; i < half; i++) {
    const a = pos * invFreq[i];
    const c = Math.cos(a);
    const s = Math.sin(a);
    for (let h = 0; h < heads; h++) {
      const u = h * d + (neox ? i : 2 * i);
      const w = neox ? u + half : u + 1;
      const x0 = x[u];
      const x1 = x[w];
      x[u] = x0 * c - x1 * s;
      x[w] = x0 * s + x1 * c;
    }
  }
}

// ---- the model ----

/**
 * Builds the CPU reference model. `weights` returns canonical (GGUF-named) tensors as f32, matrices
 * (N, K) row-major (out, in); every tensor is fetched and size-checked here, once.
 * @example
 * const model = createReferenceModel(config, (name) => tensors.get(name)?.data);
 * const logits = model.forward([1, 403, 261], 0); // (V) logits after the third token
 */
export function createReferenceModel(config: LlamaConfig, weights: WeightsFn, options: ReferenceModelOptions = {}): ReferenceModel {
  const file = options.file ?? 'weights';
  const { hidden: C, ffn: F, layers: L, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = config;
  const eps = config.rmsEps;

  const get = tensorGetter(weights, file);

  const tokenEmbd = get('token_embd.weight', V * C); // (V, C)
  const outputNorm = get('output_norm.weight', C); // (C)
  const output = config.tiedEmbeddings ? tokenEmbd : get('output.weight', V * C); // (V, C)
  const freqFactors = config.rope.freqFactors ? get('rope_freqs.weight', config.rope.rotaryDim / 2) : undefined;
  const linearLayers = new Set(config.linearAttention?.layers ?? []);
  const deltaNet = config.linearAttention ? createDeltaNet(config, config.linearAttention, get) : undefined;
  const gated = config.attnOutputGate === true;
  const weightsOf: LayerWeights[] = [];
  for (let l = 0; l < L; l++) {
    const b = `blk.${l}.`;
    const attn: AttentionWeights | undefined = linearLayers.has(l) ? undefined : {
      wq: get(`${b}attn_q.weight`, (gated ? 2 : 1) * H * D * C),
      wk: get(`${b}attn_k.weight`, Hkv * D * C),
      wv: get(`${b}attn_v.weight`, Hkv * D * C),
      ...(config.qkvBias ? { bq: get(`${b}attn_q.bias`, H * D), bk: get(`${b}attn_k.bias`, Hkv * D), bv: get(`${b}attn_v.bias`, Hkv * D) } : {}),
      ...(config.qkNorm ? { qNorm: get(`${b}attn_q_norm.weight`, D), kNorm: get(`${b}attn_k_norm.weight`, D) } : {}),
      wo: get(`${b}attn_output.weight`, C * H * D),
      ...(config.postNorms ? { attnPostNorm: get(`${b}post_attention_norm.weight`, C) } : {}),
    };
    weightsOf.push({
      attnNorm: get(`${b}attn_norm.weight`, C),
      ...(attn ? { attn } : {}),
      ffnNorm: get(ffnNormName(config, l), C),
      ...(config.postNorms ? { ffnPostNorm: get(`${b}post_ffw_norm.weight`, C) } : {}),
      wGate: get(`${b}ffn_gate.weight`, F * C),
      wUp: get(`${b}ffn_up.weight`, F * C),
      wDown: get(`${b}ffn_down.weight`, C * F),
    });
  }

  const invFreq = referenceInvFreq(config, freqFactors); // (rotaryDim/2)
  const localInvFreq = referenceInvFreq(config, freqFactors, true); // the sliding-window layers' (Gemma 3)
  const neox = config.rope.style === 'neox';
  const noRope = new Set(config.rope.noRopeLayers ?? []); // SmolLM3's NoPE layers
  const act = config.activation === 'silu' ? silu : geluTanh;
  const scale = config.attnScale; // 1/√D, or Gemma's 1/√query_pre_attn_scalar
  const group = H / Hkv;
  // Each layer's window: every layer's (Mistral), or only slidingLayers' (Gemma 3), the others attending to all.
  const windows = layerWindows(config).map((w) => w || Infinity);
  const widest = Math.max(...windows);

  // RunState: scratch of one token, and the KV cache (own: grown by doubling up to maxContext; or external rows).
  const x = new Float32Array(C); // residual stream
  const xb = new Float32Array(C); // normed input of a sublayer
  const q = new Float32Array(H * D);
  const qGate = gated ? new Float32Array(H * 2 * D) : q; // the q projection with each head's output gate after its q
  const k = new Float32Array(Hkv * D);
  const v = new Float32Array(Hkv * D);
  const att = new Float32Array(H * D); // attention output, heads concatenated
  const proj = new Float32Array(C);
  const gate = new Float32Array(F);
  const up = new Float32Array(F);
  const external = options.kv;
  let capacity = 0;
  let kCache: readonly Float32Array[] = external?.k ?? []; // L × (rows, Hkv, D)
  let vCache: readonly Float32Array[] = external?.v ?? []; // L × (rows, Hkv, D)
  let length = 0;
  const row = Hkv * D;
  const rowOf = external ? (pos: number) => external.row(pos) : (pos: number) => pos;
  let rows = new Int32Array(16); // rowOf(j) of the positions a token attends to

  const ensure = (n: number) => {
    if (external || n <= capacity) return;
    const cap = Math.min(config.maxContext, Math.max(n, capacity * 2, 16));
    kCache = kCache.length ? kCache.map((c) => grow(c, cap * row)) : Array.from({ length: L }, () => new Float32Array(cap * row));
    vCache = vCache.length ? vCache.map((c) => grow(c, cap * row)) : Array.from({ length: L }, () => new Float32Array(cap * row));
    capacity = cap;
  };

  // The layer's parts over T rows at once (the token-at-a-time step passes T = 1; hiddenStates a whole sequence): the
  // same sums in the same order either way (linear is matvec four rows at a time), so both give the same bits.

  /**
   * qs (T, H·D) (and Qwen3.5's gates, qGates (T, H·2D)), ks and vs (T, Hkv·D) of layer l from the normed inputs xbs
   * (T, C) at positions pos0..pos0+T−1: biases, per-head q/k norms, RoPE.
   */
  const project = (l: number, w: AttentionWeights, xbs: Float32Array, T: number, pos0: number, qs: Float32Array, ks: Float32Array, vs: Float32Array, qGates?: Float32Array) => {
    if (gated && qGates) {
      linear(qGates, xbs, T, w.wq, H * 2 * D, C); // [q_h | gate_h] per head = Wq xb (Qwen3.5)
      for (let t = 0; t < T; t++) for (let h = 0; h < H; h++) qs.set(qGates.subarray((t * H + h) * 2 * D, (t * H + h) * 2 * D + D), (t * H + h) * D);
    } else linear(qs, xbs, T, w.wq, H * D, C, w.bq); // q = Wq xb (+ bq)
    linear(ks, xbs, T, w.wk, Hkv * D, C, w.bk); // k = Wk xb (+ bk)
    linear(vs, xbs, T, w.wv, Hkv * D, C, w.bv); // v = Wv xb (+ bv)
    for (let t = 0; t < T; t++) {
      const qt = qs.subarray(t * H * D, (t + 1) * H * D);
      const kt = ks.subarray(t * Hkv * D, (t + 1) * Hkv * D);
      if (w.qNorm && w.kNorm) {
        for (let h = 0; h < H; h++) rmsnorm(qt, qt, w.qNorm, h * D, D, eps); // per-head q/k RMSNorm (Qwen3)
        for (let h = 0; h < Hkv; h++) rmsnorm(kt, kt, w.kNorm, h * D, D, eps);
      }
      if (!noRope.has(l)) {
        const inv = windows[l] !== Infinity ? localInvFreq : invFreq;
        rope(qt, H, D, pos0 + t, inv, neox);
        rope(kt, Hkv, D, pos0 + t, inv, neox);
      }
    }
  };

  /**
   * out (H·D) = Σ_j softmax_j(qRow·k_j · scale) v_j over the cached positions first..last of layer l (rows[j]), each
   * head times sigmoid(its gate) where gates are given (Qwen3.5).
   */
  const attend = (l: number, qRow: Float32Array, first: number, last: number, scores: Float64Array, out: Float32Array, gateRow?: Float32Array) => {
    for (let h = 0; h < H; h++) {
      const qo = h * D;
      const kvo = Math.floor(h / group) * D; // GQA: query head h reads kv head h / (H/Hkv)
      let max = -Infinity;
      for (let j = first; j <= last; j++) {
        let s = 0;
        const ko = rows[j] + kvo;
        for (let i = 0; i < D; i++) s += qRow[qo + i] * kCache[l][ko + i];
        scores[j] = s * scale; // score_j = q·k_j / sqrt(D)
        if (scores[j] > max) max = scores[j];
      }
      let sum = 0;
      for (let j = first; j <= last; j++) sum += scores[j] = Math.exp(scores[j] - max); // softmax in float64
      for (let i = 0; i < D; i++) {
        let o = 0;
        for (let j = first; j <= last; j++) o += scores[j] * vCache[l][rows[j] + kvo + i];
        out[qo + i] = o / sum; // att_h = Σ_j p_j v_j
      }
      if (gateRow) for (let i = 0; i < D; i++) out[qo + i] *= 1 / (1 + Math.exp(-gateRow[h * 2 * D + D + i])); // att_h *= sigmoid(gate_h)
    }
  };

  /** xs (T, C) += Wo atts (Gemma: += rmsnorm(Wo att) * post_attention_norm); projs: (T, C) scratch. */
  const addAttention = (w: AttentionWeights, atts: Float32Array, xs: Float32Array, T: number, projs: Float32Array) => {
    linear(projs, atts, T, w.wo, C, H * D);
    for (let t = 0; t < T; t++) if (w.attnPostNorm) rmsnorm(projs, projs, w.attnPostNorm, t * C, C, eps);
    for (let i = 0; i < T * C; i++) xs[i] += projs[i];
  };

  /** The feed-forward sublayer on xs (T, C); xbs, projs (T, C) and gates, ups (T, F) are scratch. */
  const feedForward = (lw: LayerWeights, xs: Float32Array, T: number, s: { xbs: Float32Array; projs: Float32Array; gates: Float32Array; ups: Float32Array }) => {
    for (let t = 0; t < T; t++) rmsnorm(s.xbs, xs, lw.ffnNorm, t * C, C, eps); // xb = rmsnorm(x) * ffn_norm (Qwen3.5's post_attention_norm)
    linear(s.gates, s.xbs, T, lw.wGate, F, C); // g = Wg xb
    linear(s.ups, s.xbs, T, lw.wUp, F, C); // u = Wu xb
    for (let i = 0; i < T * F; i++) s.gates[i] = act(s.gates[i]) * s.ups[i]; // h = act(g) * u
    linear(s.projs, s.gates, T, lw.wDown, C, F); // x += Wd h (Gemma: x += rmsnorm(Wd h) * post_ffw_norm)
    for (let t = 0; t < T; t++) if (lw.ffnPostNorm) rmsnorm(s.projs, s.projs, lw.ffnPostNorm, t * C, C, eps);
    for (let i = 0; i < T * C; i++) xs[i] += s.projs[i];
  };
  const oneRow = { xbs: xb, projs: proj, gates: gate, ups: up };

  /** xs[t] = embed[token] (Gemma: · √C). */
  const embed = (xs: Float32Array, t: number, token: number) => {
    xs.set(tokenEmbd.subarray(token * C, (token + 1) * C), t * C);
    if (config.embedScale !== 1) for (let i = t * C; i < (t + 1) * C; i++) xs[i] *= config.embedScale;
  };

  /** Runs one token at `pos` through layers 0..layers−1; leaves the final hidden state in x. */
  const step = (token: number, pos: number, layers: number) => {
    embed(x, 0, token);
    const scores = new Float64Array(pos + 1);
    if (rows.length < pos + 1) rows = new Int32Array(Math.max(pos + 1, rows.length * 2));
    for (let j = Math.max(0, pos - widest + 1); j <= pos; j++) rows[j] = rowOf(j) * row;
    for (let l = 0; l < layers; l++) {
      const lw = weightsOf[l];
      rmsnorm(xb, x, lw.attnNorm, 0, C, eps); // xb = rmsnorm(x) * attn_norm
      const w = lw.attn;
      if (!w) {
        // ---- Gated DeltaNet (Qwen3.5's linear layers) ----
        deltaNet!.step(l, xb, proj); // x += DeltaNet(xb), advancing layer l's recurrent state
        for (let i = 0; i < C; i++) x[i] += proj[i];
      } else {
        // ---- attention: this token's k, v into the cache, then over positions first..pos ----
        project(l, w, xb, 1, pos, q, k, v, gated ? qGate : undefined);
        kCache[l].set(k, rows[pos]);
        vCache[l].set(v, rows[pos]);
        attend(l, q, Math.max(0, pos - windows[l] + 1), pos, scores, att, gated ? qGate : undefined); // sliding window: pos - j < window
        addAttention(w, att, x, 1, proj);
      }
      feedForward(lw, x, 1, oneRow);
    }
  };

  const check = (tokens: readonly number[], startPos: number, layers: number) => {
    if (!Number.isInteger(layers) || layers < 1 || layers > L) {
      throw new IntabModelError(`reference-llama: layers = ${layers} is outside 1..${L}: pass an integer from 1 (a one-layer draft) to ${L} (the full model), or leave it out.`);
    }
    if (!Number.isInteger(startPos) || startPos < 0 || (!external && startPos > length)) {
      throw new ShapeError('reference-llama', 'startPos', `an integer in [0, ${length}] (the cached length; smaller rewinds)`, String(startPos));
    }
    if (tokens.length === 0) throw new ShapeError('reference-llama', 'tokens', 'at least one token', 'empty');
    if (startPos + tokens.length > config.maxContext) {
      throw new ShapeError('reference-llama', 'tokens', `at most ${config.maxContext - startPos} tokens from position ${startPos} (maxContext ${config.maxContext})`, `${tokens.length} tokens`);
    }
    tokens.forEach((t, i) => {
      if (!Number.isInteger(t) || t < 0 || t >= V) throw new ShapeError('reference-llama', `tokens[${i}]`, `an id in [0, ${V})`, String(t));
    });
  };

  const logitsOf = (out: Float32Array, offset: number) => {
    rmsnorm(xb, x, outputNorm, 0, C, eps); // xf = rmsnorm(x) * output_norm
    matvec(out.subarray(offset, offset + V), output, xb, V, C); // logits = Wout xf
  };

  // Linear layers carry a recurrent state, which a rewind cannot take back: the model keeps the ids it has run
  // (history) and the position its state stands at (stateAt, −1 after a draft that ran only the first layers), and
  // replays history[0, startPos) from a fresh state when asked to start elsewhere. Slow, obviously exact.
  const history: number[] = [];
  let stateAt = 0;
  const restoreState = (startPos: number) => {
    if (!deltaNet || stateAt === startPos) return;
    if (startPos > history.length) {
      throw new IntabModelError(`reference-llama: a model with linear-attention layers (${config.arch}) carries a recurrent state built from every earlier token, and this one has run ${history.length} positions: start at most there (startPos ${startPos}).`);
    }
    deltaNet.reset();
    for (let p = 0; p < startPos; p++) step(history[p], p, L);
    stateAt = startPos;
  };

  const run = (tokens: readonly number[], startPos: number, all: boolean, layers = L): Float32Array => {
    check(tokens, startPos, layers);
    ensure(startPos + tokens.length);
    restoreState(startPos);
    const out = new Float32Array((all ? tokens.length : 1) * V);
    for (let t = 0; t < tokens.length; t++) {
      step(tokens[t], startPos + t, layers);
      length = startPos + t + 1;
      history[startPos + t] = tokens[t];
      if (all) logitsOf(out, t * V);
    }
    history.length = length;
    stateAt = layers === L ? length : -1;
    if (!all) logitsOf(out, 0);
    return out;
  };

  // ---- a whole sequence, layer by layer (embedding models) ----
  const hiddenStates = (tokens: readonly number[], bidirectional: boolean): Float32Array => {
    if (external || deltaNet || gated) {
      throw new IntabModelError(`reference-llama: hiddenStates runs a whole sequence through the model's own cache and attention-only layers; this model has ${external ? 'external KV rows' : 'Gated DeltaNet layers or an attention output gate'} (${config.arch}): use forward instead.`);
    }
    check(tokens, 0, L);
    const T = tokens.length;
    ensure(T);
    length = 0; // the cache rows are overwritten below
    history.length = 0;
    if (rows.length < T) rows = new Int32Array(T);
    for (let j = 0; j < T; j++) rows[j] = j * row; // own cache: position j at row j, so (T, Hkv·D) K and V are its rows
    const xs = new Float32Array(T * C); // (T, C) residual stream of every token
    const qs = new Float32Array(T * H * D); // (T, H, D)
    const ks = new Float32Array(T * Hkv * D); // (T, Hkv, D)
    const vs = new Float32Array(T * Hkv * D);
    const atts = new Float32Array(T * H * D);
    const scratch = { xbs: new Float32Array(T * C), projs: new Float32Array(T * C), gates: new Float32Array(T * F), ups: new Float32Array(T * F) };
    const scores = new Float64Array(T);
    tokens.forEach((id, t) => embed(xs, t, id));
    for (let l = 0; l < L; l++) {
      const lw = weightsOf[l];
      const w = lw.attn!;
      for (let t = 0; t < T; t++) rmsnorm(scratch.xbs, xs, lw.attnNorm, t * C, C, eps); // xb = rmsnorm(x) * attn_norm
      project(l, w, scratch.xbs, T, 0, qs, ks, vs);
      kCache[l].set(ks, 0);
      vCache[l].set(vs, 0);
      const half = windows[l] === Infinity ? T : Math.floor(windows[l] / 2); // the symmetric window's reach
      for (let t = 0; t < T; t++) {
        const [first, last] = bidirectional ? [Math.max(0, t - half), Math.min(T - 1, t + half)] : [Math.max(0, t - windows[l] + 1), t]; // |t − j| ≤ ⌊window/2⌋, or t − j < window
        attend(l, qs.subarray(t * H * D, (t + 1) * H * D), first, last, scores, atts.subarray(t * H * D, (t + 1) * H * D));
      }
      addAttention(w, atts, xs, T, scratch.projs);
      feedForward(lw, xs, T, scratch);
    }
    const out = new Float32Array(T * C);
    for (let t = 0; t < T; t++) rmsnorm(out, xs, outputNorm, t * C, C, eps); // rmsnorm(x) * output_norm
    return out;
  };

  return {
    config,
    hiddenStates: (tokens, options = {}) => hiddenStates(tokens, options.bidirectional === true),
    get length() {
      return length;
    },
    forward: (tokens, startPos, layers) => run(tokens, startPos, false, layers),
    logitsAll: (tokens, startPos, layers) => run(tokens, startPos, true, layers),
    reset() {
      length = 0;
      history.length = 0;
      stateAt = 0;
      deltaNet?.reset();
    },
  };
}

function grow(a: Float32Array, size: number): Float32Array {
  const b = new Float32Array(size);
  b.set(a);
  return b;
}

/** Index of the largest value (the first one on ties). */
export function argmax(x: Float32Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

/**
 * Greedy (temperature 0) continuation: resets the model, runs the prompt, then feeds back the argmax
 * `n` times. Returns the `n` generated ids (it does not stop at EOS).
 * @example
 * greedy(model, [1, 403, 261], 16); // → 16 ids
 */
export function greedy(model: ReferenceModel, prompt: readonly number[], n: number): number[] {
  model.reset();
  const ids: number[] = [];
  let logits = model.forward(prompt, 0);
  for (let i = 0; i < n; i++) {
    const id = argmax(logits);
    ids.push(id);
    if (i + 1 < n) logits = model.forward([id], prompt.length + i);
  }
  return ids;
}

// ---- fused Hugging Face tensors (tests build their weights from HF files) ----

/**
 * A Hugging Face checkpoint's tensors (as f32) under canonical names, as openHfFolder maps them: names the forward
 * does not use dropped, fused Phi-3 projections split, values as convert_hf_to_gguf.py writes them (hfValueTransform:
 * Gemma's and Qwen3.5's norm weights as 1 + w, Qwen3.5's −exp(A_log) and value heads in tiled order).
 * @example
 * const tensors = canonicalHfTensors(config, readSafetensors(bytes, file), file);
 */
export function canonicalHfTensors(config: LlamaConfig, hf: Iterable<readonly [string, { data: Float32Array }]>, file = 'weights'): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const [name, t] of hf) {
    const c = canonicalHfName(name, config.arch);
    if (c === null) continue;
    if (typeof c !== 'string') {
      for (const [part, data] of splitFused(config, c, t.data, file)) out.set(part, data);
      continue;
    }
    out.set(c, hfValueTransform(config, c, t.data));
  }
  return out;
}

/**
 * Splits a fused (rows, K) row-major tensor into its canonical parts.
 * @example
 * for (const [name, data] of splitFused(config, marker, fusedData, 'model.safetensors')) tensors.set(name, data);
 */
export function splitFused(config: LlamaConfig, marker: FusedTensor, data: Float32Array, file = 'weights'): [string, Float32Array][] {
  const rows = fusedRows(config, marker.fused);
  const total = rows.reduce((a, b) => a + b, 0);
  const k = data.length / total;
  const hfName = marker.fused === 'qkv' ? `model.layers.${marker.layer}.self_attn.qkv_proj.weight` : `model.layers.${marker.layer}.mlp.gate_up_proj.weight`;
  if (!Number.isInteger(k) || k !== config.hidden) throw new ModelMismatchError(file, hfName, `${total} × ${config.hidden} values`, `${data.length} values`);
  const out: [string, Float32Array][] = [];
  let r = 0;
  rows.forEach((n, i) => {
    out.push([marker.parts[i], data.slice(r * k, (r + n) * k)]);
    r += n;
  });
  return out;
}
