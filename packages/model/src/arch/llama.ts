// The Llama family's forward pass on @intab/gpu, in the spirit of llama2.c's run.c: Config (config.ts), Weights
// (llama-weights.ts: loaded once, stored format kept), RunState (every activation of a step, allocated once at load
// for the most tokens and logits rows a step may have) and one function that records the whole step layer by layer
// into one command encoder. Family differences (qkv bias, q/k norm, tied embeddings, rope style and scaling, head
// dim, the gated activation; Gemma 3's scaled embedding, post-norms, attention scale and per-layer windows and RoPE
// bases) are config fields, not subclasses.
//
// A decode step (up to gemvMaxRows tokens) runs 6 dispatches per layer, plus one more when attention needs its
// split-K reduce: norm + q|k|v GEMV, RoPE + KV append, attention, o GEMV + residual, norm + gate|up GEMV + SwiGLU,
// down GEMV + residual. More dispatches: a GEMV runs one per weight part (a matrix too large for one binding) and
// per group of 4 rows, and q, k, v (or gate, up) take one GEMV each when they cannot share one tensor (different
// formats on the GPU; a gate|up too large for one binding), split gate and up then running the activation apart.
// Longer steps (prefill) run a norm and a GEMM where the GEMV fuses the norm, and the activation as its own kernel.
//
// Qwen3.5's Gated DeltaNet layers (config.linearAttention) run, in place of attention: the q|k|v and [z | b | a]
// projections, the causal conv (SiLU) and the gated delta rule over each sequence's state slot (SequenceStates: the
// step's slot table), the per-head RMSNorm of the output times silu(z), and the out projection. Its attention layers
// multiply their output by sigmoid of the q projection's gate rows (attnOutputGate) before o.

import {
  createCausalConv1d,
  createGatedDelta,
  createSigmoidGate,
  type CausalConv1d,
  type GatedDelta,
  createAttentionDecode,
  createAttentionPrefill,
  createEmbedding,
  createGemm,
  createGemv,
  createRmsNorm,
  createRopeKvAppend,
  createSwiglu,
  createGeluTanh,
  type AttentionDecode,
  type AttentionPrefill,
  type Gemv,
  isSoftwareAdapter,
  type Gpu,
  type RmsNorm,
  type RopeKvAppend,
  type WeightDtype,
  type WeightTensor,
} from '@intab/gpu';
import { layerWindows, type LlamaConfig } from '../config.ts';
import { IntabModelError } from '../errors.ts';
import type { PagedKvCache } from '../kv-cache.ts';
import type { SequenceStates } from '../sequence-states.ts';
import type { LlamaWeights } from './llama-weights.ts';

export { loadLlamaWeights, type LayerWeights, type LlamaWeights, type LoadProgress, type TensorTable } from './llama-weights.ts';

// ---- one step ----

/** The tokens of one step: T tokens of B sequences, each sequence's tokens contiguous and in order. */
export interface StepPlan {
  /** (T) token ids. */
  ids: Uint32Array;
  /** (T) batch row (0..B-1) of each token. */
  rows: Uint32Array;
  /** (T) absolute position of each token. */
  positions: Uint32Array;
  /** (B, maxPages) page table of the step's sequences. */
  pageTable: Uint32Array;
  /** The same positions' window pages, for the layers whose K/V live in the cache's window store (kv.windowed). */
  windowTable?: Uint32Array;
  maxPages: number;
  /** B. */
  sequences: number;
  /**
   * (R) indices into the step's T tokens whose logits are wanted, in order: a plain sequence's last token,
   * every token of a verify sequence. Row r of the (R, V) logits belongs to token outputs[r].
   */
  outputs: Uint32Array;
  /** Upper bound on position + 1 over the step. */
  maxContext: number;
  /** (B) each sequence's recurrent state slot (config.linearAttention: SequenceStates.slot). */
  slots?: Uint32Array;
}


/** A step's paged-attention arguments, shared by the RoPE + KV append and the attention kernels. */
interface PagedArgs {
  pageTable: GPUBuffer;
  sequences: number;
  maxPagesPerSeq: number;
  seqIds: GPUBuffer;
  positions: GPUBuffer;
  tokens: number;
}

export interface ForwardOptions {
  /**
   * Run only layers 0..layers−1, then the final norm and lm_head (self-speculative drafts with the first L'
   * layers of the target). Only those layers' K/V are written. Default: all config.layers.
   */
  layers?: number;
}

/** Throws IntabModelError unless `layers` is an integer in 1..config.layers (or undefined). */
export function checkLayers(config: LlamaConfig, layers: number | undefined): number {
  if (layers === undefined) return config.layers;
  if (!Number.isInteger(layers) || layers < 1 || layers > config.layers) {
    throw new IntabModelError(
      `step: layers = ${layers} is outside 1..${config.layers}: pass an integer from 1 (a one-layer draft) to ${config.layers} (the full model), or leave it out.`,
    );
  }
  return layers;
}

/** The most a step may hold, which sizes the RunState. */
export interface StepLimits {
  /** Tokens of all sequences in one step (T). */
  maxTokens: number;
  /** Sequences in one step (B). */
  maxBatch: number;
  /** Logits rows in one step (R). */
  maxRows: number;
}

/**
 * Every activation and input of a step, allocated once at load for StepLimits (T tokens, B sequences, R logits rows),
 * so a step creates no buffer and every dispatch's bind group is built once.
 */
export interface RunState {
  ids: GPUBuffer; // (T) u32 token ids
  seqRows: GPUBuffer; // (T) u32 each token's row of the page table (its sequence in the step)
  positions: GPUBuffer; // (T) u32 each token's position in its sequence
  pageTable: GPUBuffer; // (B, maxPages) u32 the step's sequences' pages
  windowTable: GPUBuffer; // (B, maxPages) u32 their window pages (sliding-window layers with their own store)
  h: GPUBuffer; // (T, C) the residual stream
  xn: GPUBuffer; // (T, C) the normalized stream, input of the prefill GEMMs (decode GEMVs normalize on the fly)
  qkv: GPUBuffer; // (T, (H + 2 Hkv) D) the q, k and v projections side by side
  q: GPUBuffer; // (T, H, D) rotated queries
  att: GPUBuffer; // (T, H, D) attention output
  gateUp: GPUBuffer; // (T, 2F) gate and up projections side by side (prefill, or when their formats differ)
  ff: GPUBuffer; // (T, F) the gated activation
  outRows: GPUBuffer; // (R, C) the stream's rows whose logits are wanted, when not all T in order
  outNorm: GPUBuffer; // (R, C) their final norm (more rows than gemvMaxRows)
  logits: GPUBuffer; // (R, V) f32
  partials: GPUBuffer; // decode attention's split-K partials for B tokens over the longest context the cache holds
  // Qwen3.5 (16 bytes each when the model has no such layers):
  slots: GPUBuffer; // (B) u32 each sequence's recurrent state slot
  qGate: GPUBuffer; // (T, H D) the attention output gates
  mixed: GPUBuffer; // (T, channels) a DeltaNet layer's q|k|v projection
  convOut: GPUBuffer; // (T, channels) silu(conv) of it
  zba: GPUBuffer; // (T, Hv Dv + 2 Hv) its z, b and a projections side by side
  delta: GPUBuffer; // (T, Hv, Dv) the delta rule's read-out
  deltaNorm: GPUBuffer; // (T, Hv, Dv) its per-head RMSNorm
  gated: GPUBuffer; // (T, max(Hv Dv, H D)) a mixer's gated output, input of its out projection
}

/** The bytes of RunState's Qwen3.5 buffers (0 for a model without gated attention or DeltaNet layers). */
function recurrentBytes(c: LlamaConfig, T: number, B: number): Pick<Record<keyof RunState, number>, 'slots' | 'qGate' | 'mixed' | 'convOut' | 'zba' | 'delta' | 'deltaNorm' | 'gated'> {
  const la = c.linearAttention;
  const channels = la ? 2 * la.kHeads * la.kDim + la.vHeads * la.vDim : 0;
  const values = la ? la.vHeads * la.vDim : 0;
  const gate = c.attnOutputGate ? c.heads * c.headDim : 0;
  return {
    slots: la ? B * 4 : 0,
    qGate: T * gate * 4,
    mixed: T * channels * 4,
    convOut: T * channels * 4,
    zba: la ? T * (values + 2 * la.vHeads) * 4 : 0,
    delta: T * values * 4,
    deltaNorm: T * values * 4,
    gated: T * Math.max(values, gate) * 4,
  };
}

/**
 * The bytes of each RunState buffer for `limits` and a page table of `maxPages` columns; the decode attention's
 * partials are `partialsBytes` (its kernel's scratchBytes). LlamaForward allocates these; loadNeeds counts them.
 */
export function runStateBytes(c: LlamaConfig, limits: StepLimits, maxPages: number, partialsBytes: number): Record<keyof RunState, number> {
  const { maxTokens: T, maxBatch: B, maxRows: R } = limits;
  const [C, F, H, Hkv, D, V] = [c.hidden, c.ffn, c.heads, c.kvHeads, c.headDim, c.vocab];
  return {
    ids: T * 4,
    seqRows: T * 4,
    positions: T * 4,
    pageTable: B * maxPages * 4,
    windowTable: B * maxPages * 4,
    h: T * C * 4,
    xn: T * C * 4,
    qkv: T * (H + 2 * Hkv) * D * 4,
    q: T * H * D * 4,
    att: T * H * D * 4,
    gateUp: T * 2 * F * 4,
    ff: T * F * 4,
    outRows: R * C * 4,
    outNorm: R * C * 4,
    ...recurrentBytes(c, T, B),
    logits: R * V * 4,
    partials: partialsBytes,
  };
}

/** Records forward steps of a loaded model into a caller's encoder; owns its RunState. */
export class LlamaForward {
  private readonly gemv = new Map<string, Gemv>();
  private readonly gemm = new Map<string, ReturnType<typeof createGemm>>();
  /**
   * Each layer's RoPE + KV append: the model's RoPE; none (config.rope.noRopeLayers, SmolLM3); the local base on
   * sliding-window layers (config.rope.localTheta, Gemma 3). One instance per distinct table.
   */
  private readonly appendOf: RopeKvAppend[];
  /** Each layer's attention window (0: every position). */
  private readonly windowOf: number[];
  private readonly decode: AttentionDecode;
  private readonly prefill: AttentionPrefill;
  private readonly embedding;
  private readonly norm;
  /** out += rmsnorm(x) * w: Gemma's norms of the sublayer outputs (config.postNorms). */
  private readonly postNorm?: RmsNorm;
  private readonly act;
  private readonly state: RunState;
  private readonly maxPages: number;
  /** Qwen3.5: the DeltaNet layers' kernels, each layer's index among them, and the output gate. */
  private readonly conv?: CausalConv1d;
  private readonly delta?: GatedDelta;
  private readonly linearIndex = new Map<number, number>();
  private readonly sigmoidGate?: ReturnType<typeof createSigmoidGate>;
  private destroyed = false;
  /** Steps of up to this many rows run GEMVs (gemvMaxRows), longer ones GEMMs. */
  readonly gemvMaxRows: number;

  constructor(
    private readonly gpu: Gpu,
    readonly config: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly kv: PagedKvCache,
    readonly limits: StepLimits,
    /** The recurrent state of the DeltaNet layers (config.linearAttention). */
    private readonly states?: SequenceStates,
  ) {
    const c = config;
    const la = c.linearAttention;
    if (la) {
      if (!states) throw new IntabModelError(`${c.arch}: a model with Gated DeltaNet layers needs their SequenceStates.`);
      if (c.activation !== 'silu') throw new IntabModelError(`${c.arch}: the Gated DeltaNet output gate is silu(z), run by the model's SwiGLU kernel: activation '${c.activation}' has none.`);
      la.layers.forEach((l, i) => this.linearIndex.set(l, i));
      this.conv = createCausalConv1d(gpu, { channels: 2 * la.kHeads * la.kDim + la.vHeads * la.vDim, kernelSize: la.convKernel, label: 'linear.conv' });
      this.delta = createGatedDelta(gpu, { vHeads: la.vHeads, kHeads: la.kHeads, keyDim: la.kDim, valueDim: la.vDim, eps: c.rmsEps, rawGates: true, headOrder: la.headOrder ?? 'tiled', label: 'linear.delta' });
    }
    if (c.attnOutputGate) this.sigmoidGate = createSigmoidGate(gpu);
    this.gemvMaxRows = gemvMaxRows(gpu);
    const shape = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.headDim, pageSize: kv.pageSize };
    const rope = { ...shape, rotaryDim: c.rope.rotaryDim, theta: c.rope.theta, style: c.rope.style, scaling: c.rope.scaling, freqFactors: weights.ropeFreqs, qkNorm: c.qkNorm };
    this.windowOf = layerWindows(c);
    const noRope = new Set(c.rope.noRopeLayers ?? []);
    const appends = new Map<string, RopeKvAppend>();
    const append = (kind: 'rope' | 'none' | 'local') => {
      let a = appends.get(kind);
      if (!a) {
        const o = kind === 'none' ? { ...rope, noRope: true } : kind === 'local' ? { ...rope, theta: c.rope.localTheta!, scaling: undefined } : rope;
        appends.set(kind, (a = createRopeKvAppend(gpu, { ...o, label: kind === 'rope' ? 'rope' : `rope.${kind}` })));
      }
      return a;
    };
    this.appendOf = this.windowOf.map((w, l) => append(noRope.has(l) ? 'none' : w > 0 && c.rope.localTheta !== undefined ? 'local' : 'rope'));
    this.decode = createAttentionDecode(gpu, shape, { label: 'attn.decode', scale: c.attnScale });
    this.prefill = createAttentionPrefill(gpu, shape, { scale: c.attnScale });
    this.embedding = createEmbedding(gpu, { dtype: weights.embed.dtype, scale: c.embedScale });
    this.norm = createRmsNorm(gpu);
    if (c.postNorms) this.postNorm = createRmsNorm(gpu, { accumulate: true });
    this.act = c.activation === 'gelu_tanh' ? createGeluTanh(gpu) : createSwiglu(gpu);
    // The longest sequence a step can see: the model's context, or all the cache's pages.
    const longest = Math.min(c.maxContext, kv.pages * kv.pageSize);
    this.maxPages = Math.ceil(longest / kv.pageSize);
    this.state = this.allocate(longest);
  }

  /**
   * Record one step: the forward of every token in `plan` (their K/V appended to the cache) through the
   * first `options.layers` layers (default all), and the final norm + lm_head of the tokens in
   * plan.outputs. Returns the (R, V) f32 logits buffer, valid once the encoder is submitted.
   */
  encode(encoder: GPUCommandEncoder, plan: StepPlan, options: ForwardOptions = {}): GPUBuffer {
    const c = this.config;
    const w = this.weights;
    const s = this.state;
    const layers = checkLayers(c, options.layers);
    const T = plan.ids.length;
    const B = plan.sequences;
    const R = plan.outputs.length;
    if (R === 0 || plan.outputs.some((t) => t >= T)) {
      throw new IntabModelError(`step plan: outputs must name 1..${T} of the step's ${T} tokens (indices below ${T}); got [${[...plan.outputs].join(', ')}].`);
    }
    const { maxTokens, maxBatch, maxRows } = this.limits;
    if (T > maxTokens || B > maxBatch || R > maxRows || plan.maxPages > this.maxPages) {
      throw new IntabModelError(
        `step plan: ${T} tokens, ${B} sequences, ${R} logits rows and ${plan.maxPages} pages exceed what this Runner was loaded for (${maxTokens}, ${maxBatch}, ${maxRows}, ${this.maxPages}): split the step, or load it with larger limits.`,
      );
    }
    const [C, F, H, Hkv, D] = [c.hidden, c.ffn, c.heads, c.kvHeads, c.headDim];
    const queue = this.gpu.device.queue;
    queue.writeBuffer(s.ids, 0, plan.ids);
    queue.writeBuffer(s.seqRows, 0, plan.rows);
    queue.writeBuffer(s.positions, 0, plan.positions);
    queue.writeBuffer(s.pageTable, 0, plan.pageTable);
    if (this.states) {
      if (!plan.slots || plan.slots.length !== B) throw new IntabModelError(`step plan: a model with Gated DeltaNet layers needs each of its ${B} sequences' state slot (plan.slots).`);
      queue.writeBuffer(s.slots, 0, plan.slots);
    }
    if (this.kv.window) {
      if (!plan.windowTable) throw new IntabModelError('step plan: this KV-cache keeps sliding-window layers in a store of their own: give plan.windowTable (kv.pageTable(seqs, true)).');
      queue.writeBuffer(s.windowTable, 0, plan.windowTable);
    }
    const gemv = T <= this.gemvMaxRows;
    const paged: PagedArgs = { pageTable: s.pageTable, sequences: B, maxPagesPerSeq: plan.maxPages, seqIds: s.seqRows, positions: s.positions, tokens: T };

    let pass = encoder.beginComputePass({ label: `step T=${T}` });
    // x = embed[ids]
    this.embedding.encode(pass, { weight: w.embed, ids: s.ids, out: s.h, tokens: T });
    for (let l = 0; l < layers; l++) {
      const L = w.layers[l];
      // the mixer: attention, or Qwen3.5's Gated DeltaNet, over rmsnorm(h)
      if (!gemv) this.norm.encode(pass, { x: s.h, weight: L.attnNorm, out: s.xn, rows: T, cols: C, eps: c.rmsEps });
      if (L.linear) this.deltaNet(pass, l, T, B, gemv);
      else this.attention(pass, l, T, B, gemv, plan, paged);
      // mlp: h += Wdown act(Wgate rmsnorm(h), Wup rmsnorm(h))
      if (gemv && L.gateUp.length === 1) {
        this.matmul(pass, L.gateUp[0], s.h, s.ff, T, { norm: L.ffnNorm, gated: c.activation });
      } else {
        if (!gemv) this.norm.encode(pass, { x: s.h, weight: L.ffnNorm, out: s.xn, rows: T, cols: C, eps: c.rmsEps });
        let column = 0;
        for (const weight of L.gateUp) {
          this.matmul(pass, weight, gemv ? s.h : s.xn, s.gateUp, T, { yStride: 2 * F, yColumn: column, norm: gemv ? L.ffnNorm : undefined });
          column += weight.n;
        }
        this.act.encode(pass, { x: s.gateUp, up: s.gateUp, out: s.ff, rows: T, cols: F, stride: 2 * F, upStride: 2 * F, upOffset: F });
      }
      this.residual(pass, L.down, s.ff, T, L.ffnPostNorm);
    }
    // logits of the wanted tokens: gather those rows of h (unless they are all T in order), norm, lm_head
    let rows = s.h;
    if (!(R === T && plan.outputs.every((t, r) => t === r))) {
      pass.end();
      rows = s.outRows;
      // one copy per run of consecutive tokens (a verify sequence's rows are one run)
      for (let r = 0; r < R; ) {
        let n = 1;
        while (r + n < R && plan.outputs[r + n] === plan.outputs[r] + n) n++;
        encoder.copyBufferToBuffer(s.h, plan.outputs[r] * C * 4, s.outRows, r * C * 4, n * C * 4);
        r += n;
      }
      pass = encoder.beginComputePass({ label: 'step.head' });
    }
    if (R <= this.gemvMaxRows) {
      this.matmul(pass, w.output, rows, s.logits, R, { norm: w.outputNorm });
    } else {
      this.norm.encode(pass, { x: rows, weight: w.outputNorm, out: s.outNorm, rows: R, cols: C, eps: c.rmsEps });
      this.matmul(pass, w.output, s.outNorm, s.logits, R);
    }
    pass.end();
    return s.logits;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of Object.values(this.state)) b.destroy();
    for (const a of new Set(this.appendOf)) a.destroy();
    this.decode.destroy();
  }

  /**
   * An attention layer (its input norm already in xn, or fused into the GEMVs): q|k|v = W x (+ b), q/k norm, RoPE and
   * the K/V append, attention over the cache (the layer's window), Qwen3.5's sigmoid output gate, h += W_o of that.
   */
  private attention(pass: GPUComputePassEncoder, l: number, T: number, B: number, gemv: boolean, plan: StepPlan, paged: PagedArgs): void {
    const c = this.config;
    const s = this.state;
    const L = this.weights.layers[l];
    const [H, Hkv, D] = [c.heads, c.kvHeads, c.headDim];
    const qkvRow = (H + 2 * Hkv) * D;
    let column = 0;
    if (L.qGate) this.matmul(pass, L.qGate, gemv ? s.h : s.xn, s.qGate, T, { norm: gemv ? L.attnNorm : undefined });
    for (const weight of L.qkv) {
      this.matmul(pass, weight, gemv ? s.h : s.xn, s.qkv, T, { bias: L.qkvBias, yStride: qkvRow, yColumn: column, norm: gemv ? L.attnNorm : undefined });
      column += weight.n;
    }
    const cache = { kCache: this.kv.k[l], vCache: this.kv.v[l], ...(this.kv.windowed[l] ? { pageTable: s.windowTable } : {}) };
    this.appendOf[l].encode(pass, { qkv: s.qkv, q: s.q, ...paged, ...cache, norm: L.qkNorm, eps: c.rmsEps });
    // keys j with pos - j >= the layer's window are skipped (Mistral, Gemma 3's local layers); window 0 = full causal
    const window = this.windowOf[l];
    if (B === T) this.decode.encode(pass, { q: s.q, out: s.att, ...paged, ...cache, maxContext: plan.maxContext, window, scratch: s.partials });
    else this.prefill.encode(pass, { q: s.q, out: s.att, ...paged, ...cache, window });
    // Qwen3.5: att *= sigmoid(gate)
    if (L.qGate) this.sigmoidGate!.encode(pass, { x: s.qGate, up: s.att, out: s.gated, rows: T, cols: H * D });
    // h += Wo att (Gemma: h += rmsnorm(Wo att) * post_attention_norm)
    this.residual(pass, L.o, L.qGate ? s.gated : s.att, T, L.attnPostNorm);
  }

  /**
   * A Gated DeltaNet layer (its input norm already in xn, or fused into the GEMVs): q|k|v and [z | b | a] projections,
   * silu(causal conv) and the gated delta rule over the step's state slots, rmsnorm(o_h) * w * silu(z_h), and
   * h += W_out of that.
   */
  private deltaNet(pass: GPUComputePassEncoder, l: number, T: number, B: number, gemv: boolean): void {
    const c = this.config;
    const la = c.linearAttention!;
    const s = this.state;
    const L = this.weights.layers[l];
    const lin = L.linear!;
    const states = this.states!;
    const i = this.linearIndex.get(l)!;
    const values = la.vHeads * la.vDim;
    const zbaRow = values + 2 * la.vHeads;
    const input = gemv ? s.h : s.xn;
    const norm = gemv ? L.attnNorm : undefined;
    this.matmul(pass, L.qkv[0], input, s.mixed, T, { norm });
    let column = 0;
    for (const weight of lin.zba) {
      this.matmul(pass, weight, input, s.zba, T, { yStride: zbaRow, yColumn: column, norm });
      column += weight.n;
    }
    const step = { seqIds: s.seqRows, slotIds: s.slots, tokens: T, sequences: B };
    this.conv!.encode(pass, { x: s.mixed, weight: lin.conv, state: states.conv[i], out: s.convOut, ...step });
    this.delta!.encode(pass, {
      qkv: s.convOut,
      g: s.zba,
      gStride: zbaRow,
      gOffset: values + la.vHeads,
      beta: s.zba,
      betaStride: zbaRow,
      betaOffset: values,
      gateWeights: lin.gates,
      state: states.delta[i],
      out: s.delta,
      ...step,
    });
    this.norm.encode(pass, { x: s.delta, weight: lin.norm, out: s.deltaNorm, rows: T * la.vHeads, cols: la.vDim, eps: c.rmsEps });
    this.act.encode(pass, { x: s.zba, up: s.deltaNorm, out: s.gated, rows: T, cols: values, stride: zbaRow });
    this.residual(pass, L.o, s.gated, T);
  }

  /**
   * h += W x for T rows; with a post-norm (Gemma), W x goes to the scratch row block xn (free here: the sublayer's
   * input norm has been read) and h += rmsnorm(W x) * postNorm.
   */
  private residual(pass: GPUComputePassEncoder, weight: WeightTensor, x: GPUBuffer, T: number, postNorm?: GPUBuffer): void {
    if (!postNorm) {
      this.matmul(pass, weight, x, this.state.h, T, { accumulate: true });
      return;
    }
    this.matmul(pass, weight, x, this.state.xn, T);
    this.postNorm!.encode(pass, { x: this.state.xn, weight: postNorm, out: this.state.h, rows: T, cols: this.config.hidden, eps: this.config.rmsEps });
  }

  /**
   * y (+)= W x for T rows: GEMV (each weight read once per group of up to 4 rows, with the input's RMSNorm and the
   * gated activation fused when asked) when T ≤ gemvMaxRows, GEMM otherwise (its input already normalized).
   */
  private matmul(
    pass: GPUComputePassEncoder,
    weight: WeightTensor,
    x: GPUBuffer,
    y: GPUBuffer,
    T: number,
    o: { bias?: GPUBuffer; accumulate?: boolean; norm?: GPUBuffer; gated?: 'silu' | 'gelu_tanh'; yStride?: number; yColumn?: number } = {},
  ): void {
    const dtype = weight.dtype as WeightDtype;
    const { bias, accumulate = false, norm, gated, yStride, yColumn } = o;
    if (T <= this.gemvMaxRows) {
      const key = `${dtype}|${bias ? 1 : 0}|${accumulate ? 1 : 0}|${norm ? 1 : 0}|${gated ?? ''}`;
      let g = this.gemv.get(key);
      if (!g) this.gemv.set(key, (g = createGemv(this.gpu, { dtype, bias: !!bias, accumulate, norm: !!norm, gated })));
      g.encode(pass, { weight, x, y, bias, batch: T, normWeight: norm, eps: this.config.rmsEps, yStride, yColumn });
    } else {
      const key = `${dtype}|${bias ? 1 : 0}|${accumulate ? 1 : 0}`;
      let g = this.gemm.get(key);
      if (!g) this.gemm.set(key, (g = createGemm(this.gpu, { dtype, bias: !!bias, accumulate })));
      g.encode(pass, { weight, x, y, bias, tokens: T, yStride, yColumn });
    }
  }

  /** The RunState for this.limits, the decode partials sized for `longest` positions. */
  private allocate(longest: number): RunState {
    const bytes = runStateBytes(this.config, this.limits, this.maxPages, this.decode.scratchBytes(this.limits.maxBatch, longest));
    const made: GPUBuffer[] = [];
    const buffer = (name: keyof RunState, copySrc = false) => {
      // (GPUBufferUsage is read here, not at module load, so the module imports where WebGPU is absent.)
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | (copySrc ? GPUBufferUsage.COPY_SRC : 0);
      const b = this.gpu.device.createBuffer({ label: `step.${name}`, size: Math.max(16, Math.ceil(bytes[name] / 4) * 4), usage });
      made.push(b);
      return b;
    };
    try {
      return {
        ids: buffer('ids'),
        seqRows: buffer('seqRows'),
        positions: buffer('positions'),
        pageTable: buffer('pageTable'),
        windowTable: buffer('windowTable'),
        h: buffer('h', true),
        xn: buffer('xn'),
        qkv: buffer('qkv'),
        q: buffer('q'),
        att: buffer('att'),
        gateUp: buffer('gateUp'),
        ff: buffer('ff'),
        outRows: buffer('outRows'),
        outNorm: buffer('outNorm'),
        logits: buffer('logits', true),
        partials: buffer('partials'),
        slots: buffer('slots'),
        qGate: buffer('qGate'),
        mixed: buffer('mixed'),
        convOut: buffer('convOut'),
        zba: buffer('zba'),
        delta: buffer('delta'),
        deltaNorm: buffer('deltaNorm'),
        gated: buffer('gated'),
      };
    } catch (err) {
      for (const b of made) b.destroy();
      throw err;
    }
  }
}

/**
 * Up to this many rows a step runs GEMVs: one row (plain decode) the one-vector kernel, more rows (batched
 * decode, speculative verify) the multi-vector kernel, which reads and dequantizes each weight once per
 * group of 4 rows; longer steps run the tiled GEMM.
 *   software adapters: 8. Measured on SwiftShader (SmolLM2-135M shapes, q4_0): 2 and 4 vectors cost ~1.4x
 *     and ~1.75x one vector through the GEMV, against ~4.5x through gemm.rows at T = 2..8 (its tile is 8
 *     tokens); batch-8 decode (`bench decode --batch 4,8`) ran 13.5 tok/s through two GEMV groups against
 *     10.9 through the GEMM, where dequantizing is the cost.
 *   GPUs: 4. The tiled GEMM reads each weight once for any T, the GEMV once per group of 4, and reading
 *     weights is the cost there (not measured: no GPU was available).
 */
export function gemvMaxRows(gpu: Gpu): number {
  return isSoftwareAdapter(gpu.adapterInfo) ? 8 : 4;
}
