// The Llama family's forward pass on @intab/gpu, in the spirit of llama2.c's run.c: Config (config.ts),
// Weights (loaded once, stored format kept), Scratch (per-step activations) and one function that records
// the whole step layer by layer into one command encoder. Family differences (qkv bias, q/k norm, tied
// embeddings, rope style and scaling, head dim) are config fields, not subclasses.

import {
  createAttentionDecode,
  createAttentionPrefill,
  createEmbedding,
  createGemm,
  createGemv,
  createKvAppend,
  createRmsNorm,
  createRope,
  createSwiglu,
  createGeluTanh,
  type AttentionDecode,
  type AttentionPrefill,
  type Gpu,
  type WeightDtype,
  type WeightTensor,
} from '@intab/gpu';
import type { LlamaConfig } from '../config.ts';
import { IntabModelError, ModelMismatchError } from '../errors.ts';
import type { PagedKvCache } from '../kv-cache.ts';
import type { TensorInfo } from '../types.ts';
import { createXXHash128 } from 'hash-wasm';
import { readVector, uploadMatrix, uploadVector, type UploadOptions } from '../upload.ts';

// ---- weights ----

export interface LayerWeights {
  attnNorm: GPUBuffer; // (C) f32
  q: WeightTensor; // (H*D, C)
  k: WeightTensor; // (Hkv*D, C)
  v: WeightTensor; // (Hkv*D, C)
  o: WeightTensor; // (C, H*D)
  qBias?: GPUBuffer; // (H*D) f32, qkvBias
  kBias?: GPUBuffer; // (Hkv*D)
  vBias?: GPUBuffer; // (Hkv*D)
  qNorm?: GPUBuffer; // (D) f32, qkNorm
  kNorm?: GPUBuffer; // (D)
  ffnNorm: GPUBuffer; // (C)
  gate: WeightTensor; // (F, C)
  up: WeightTensor; // (F, C)
  down: WeightTensor; // (C, F)
}

export interface LlamaWeights {
  embed: WeightTensor; // (V, C)
  layers: LayerWeights[];
  outputNorm: GPUBuffer; // (C)
  output: WeightTensor; // (V, C); the embedding itself when tied
  /** (rotaryDim/2) llama.cpp rope_freqs factors, when config.rope.freqFactors. */
  ropeFreqs?: Float32Array;
  bytes: number;
  /**
   * 'xxh128:<hex>' over every tensor as read from its file, in load order, each with its name, shape and stored
   * dtype: what identifies these weights (saved KV pages are only restored into the same weights).
   */
  hash: string;
  destroy(): void;
}

/** Canonical (GGUF-style) tensor names to their stored tensors, e.g. 'blk.0.attn_q.weight'. */
export type TensorTable = ReadonlyMap<string, TensorInfo>;

export interface LoadProgress {
  loaded: number;
  total: number;
}

/** Upload every weight, checking each shape against the config before allocating. */
export async function loadLlamaWeights(
  gpu: Gpu,
  c: LlamaConfig,
  tensors: TensorTable,
  options: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void; quantize?: 'q8_0' | 'q4_0' } = {},
): Promise<LlamaWeights> {
  const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = c;
  const expect: [string, number[]][] = [['token_embd.weight', [V, C]], ['output_norm.weight', [C]]];
  if (!c.tiedEmbeddings) expect.push(['output.weight', [V, C]]);
  if (c.rope.freqFactors) expect.push(['rope_freqs.weight', [c.rope.rotaryDim / 2]]);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    expect.push(
      [`${b}attn_norm.weight`, [C]],
      [`${b}attn_q.weight`, [H * D, C]],
      [`${b}attn_k.weight`, [Hkv * D, C]],
      [`${b}attn_v.weight`, [Hkv * D, C]],
      [`${b}attn_output.weight`, [C, H * D]],
      [`${b}ffn_norm.weight`, [C]],
      [`${b}ffn_gate.weight`, [F, C]],
      [`${b}ffn_up.weight`, [F, C]],
      [`${b}ffn_down.weight`, [C, F]],
    );
    if (c.qkvBias) expect.push([`${b}attn_q.bias`, [H * D]], [`${b}attn_k.bias`, [Hkv * D]], [`${b}attn_v.bias`, [Hkv * D]]);
    if (c.qkNorm) expect.push([`${b}attn_q_norm.weight`, [D]], [`${b}attn_k_norm.weight`, [D]]);
  }
  let total = 0;
  for (const [name, shape] of expect) {
    const t = tensors.get(name);
    const file = t?.source.name ?? [...tensors.values()][0]?.source.name ?? 'model';
    if (!t) throw new ModelMismatchError(file, `tensor '${name}'`, `present with shape [${shape.join(', ')}]`, 'missing');
    const same = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
    // 1-D tensors may be stored as [1, n] or [n]; compare element counts for them.
    const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
    if (!same && !(shape.length === 1 && count(t.shape) === shape[0])) {
      throw new ModelMismatchError(t.source.name, `tensor '${name}' shape`, `[${shape.join(', ')}]`, `[${t.shape.join(', ')}]`);
    }
    total += t.byteLength;
  }

  let loaded = 0;
  const owned: { destroy(): void }[] = [];
  // Hashed as they stream past (xxh128 in wasm: several GB/s, never the whole model in memory).
  const hash = await createXXHash128();
  hash.init();
  const progress = (name: string): UploadOptions => {
    const base = loaded;
    const t = tensors.get(name)!;
    hash.update(`${name}|${t.dtype}|${t.shape.join('x')}|`);
    return {
      signal: options.signal,
      quantize: options.quantize,
      onBytes: (b) => options.onProgress?.({ loaded: base + b, total }),
      hash,
    };
  };
  const matrix = async (name: string, label: string) => {
    const info = tensors.get(name)!;
    const w = await uploadMatrix(gpu, info, label, progress(name));
    loaded += info.byteLength;
    owned.push(w);
    return w;
  };
  const vector = async (name: string, label: string) => {
    const info = tensors.get(name)!;
    const b = await uploadVector(gpu, info, label, progress(name));
    loaded += info.byteLength;
    owned.push(b);
    return b;
  };
  try {
    const embed = await matrix('token_embd.weight', 'token_embd');
    const layers: LayerWeights[] = [];
    for (let i = 0; i < c.layers; i++) {
      const b = `blk.${i}.`;
      const L = `L${i}.`;
      layers.push({
        attnNorm: await vector(`${b}attn_norm.weight`, `${L}attn_norm`),
        q: await matrix(`${b}attn_q.weight`, `${L}attn.q`),
        k: await matrix(`${b}attn_k.weight`, `${L}attn.k`),
        v: await matrix(`${b}attn_v.weight`, `${L}attn.v`),
        o: await matrix(`${b}attn_output.weight`, `${L}attn.o`),
        qBias: c.qkvBias ? await vector(`${b}attn_q.bias`, `${L}attn.q.bias`) : undefined,
        kBias: c.qkvBias ? await vector(`${b}attn_k.bias`, `${L}attn.k.bias`) : undefined,
        vBias: c.qkvBias ? await vector(`${b}attn_v.bias`, `${L}attn.v.bias`) : undefined,
        qNorm: c.qkNorm ? await vector(`${b}attn_q_norm.weight`, `${L}attn.q_norm`) : undefined,
        kNorm: c.qkNorm ? await vector(`${b}attn_k_norm.weight`, `${L}attn.k_norm`) : undefined,
        ffnNorm: await vector(`${b}ffn_norm.weight`, `${L}ffn_norm`),
        gate: await matrix(`${b}ffn_gate.weight`, `${L}ffn.gate`),
        up: await matrix(`${b}ffn_up.weight`, `${L}ffn.up`),
        down: await matrix(`${b}ffn_down.weight`, `${L}ffn.down`),
      });
    }
    const outputNorm = await vector('output_norm.weight', 'output_norm');
    const output = c.tiedEmbeddings ? embed : await matrix('output.weight', 'output');
    const ropeFreqs = c.rope.freqFactors ? await readVector(tensors.get('rope_freqs.weight')!, progress('rope_freqs.weight')) : undefined;
    if (ropeFreqs) loaded += tensors.get('rope_freqs.weight')!.byteLength;
    let destroyed = false;
    return {
      embed,
      layers,
      outputNorm,
      output,
      ropeFreqs,
      bytes: total,
      hash: `xxh128:${hash.digest('hex')}`,
      destroy() {
        if (destroyed) return;
        destroyed = true;
        for (const o of owned) o.destroy();
      },
    };
  } catch (err) {
    for (const o of owned) o.destroy();
    throw err;
  }
}

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

/** Records forward steps of a loaded model into a caller's encoder; owns its scratch buffers. */
export class LlamaForward {
  private readonly gemv = new Map<string, ReturnType<typeof createGemv>>();
  private readonly gemm = new Map<string, ReturnType<typeof createGemm>>();
  private readonly rope;
  private readonly kvAppend;
  private readonly decode: AttentionDecode;
  private readonly prefill: AttentionPrefill;
  private readonly embedding;
  private readonly norm;
  private readonly act;
  private scratch = new Map<string, GPUBuffer>();
  private destroyed = false;
  /** Steps of up to this many rows run GEMVs (gemvMaxRows), longer ones GEMMs. */
  readonly gemvMaxRows: number;

  constructor(
    private readonly gpu: Gpu,
    readonly config: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly kv: PagedKvCache,
  ) {
    const c = config;
    this.gemvMaxRows = gemvMaxRows(gpu);
    this.rope = createRope(gpu, {
      headDim: c.headDim,
      rotaryDim: c.rope.rotaryDim,
      theta: c.rope.theta,
      style: c.rope.style,
      scaling: c.rope.scaling,
      freqFactors: weights.ropeFreqs,
      label: 'rope',
    });
    const shape = { heads: c.heads, kvHeads: c.kvHeads, headDim: c.headDim, pageSize: kv.pageSize };
    this.kvAppend = createKvAppend(gpu, shape);
    this.decode = createAttentionDecode(gpu, shape, { label: 'attn.decode' });
    this.prefill = createAttentionPrefill(gpu, shape);
    this.embedding = createEmbedding(gpu, { dtype: weights.embed.dtype });
    this.norm = createRmsNorm(gpu);
    this.act = c.activation === 'gelu_tanh' ? createGeluTanh(gpu, { gated: true }) : createSwiglu(gpu);
  }

  /**
   * Record one step: the forward of every token in `plan` (their K/V appended to the cache) through the
   * first `options.layers` layers (default all), and the final norm + lm_head of the tokens in
   * plan.outputs. Returns the (R, V) f32 logits buffer, valid once the encoder is submitted.
   */
  encode(encoder: GPUCommandEncoder, plan: StepPlan, options: ForwardOptions = {}): GPUBuffer {
    const c = this.config;
    const w = this.weights;
    const layers = checkLayers(c, options.layers);
    const T = plan.ids.length;
    const B = plan.sequences;
    const R = plan.outputs.length;
    if (R === 0 || plan.outputs.some((t) => t >= T)) {
      throw new IntabModelError(`step plan: outputs must name 1..${T} of the step's ${T} tokens (indices below ${T}); got [${[...plan.outputs].join(', ')}].`);
    }
    const [C, F, H, Hkv, D, V] = [c.hidden, c.ffn, c.heads, c.kvHeads, c.headDim, c.vocab];
    const upload = (name: string, data: Uint32Array) => {
      const b = this.buffer(name, data.byteLength);
      this.gpu.device.queue.writeBuffer(b, 0, data);
      return b;
    };
    const ids = upload('ids', plan.ids);
    const rows = upload('rows', plan.rows);
    const positions = upload('positions', plan.positions);
    const pageTable = upload('pageTable', plan.pageTable);
    const h = this.buffer('h', T * C * 4); // residual stream (T, C)
    const xn = this.buffer('xn', T * C * 4); // normalized (T, C)
    const q = this.buffer('q', T * H * D * 4);
    const k = this.buffer('k', T * Hkv * D * 4);
    const v = this.buffer('v', T * Hkv * D * 4);
    const qn = c.qkNorm ? this.buffer('qn', T * H * D * 4) : q;
    const kn = c.qkNorm ? this.buffer('kn', T * Hkv * D * 4) : k;
    const att = this.buffer('att', T * H * D * 4);
    const gate = this.buffer('gate', T * F * 4);
    const up = this.buffer('up', T * F * 4);
    const ff = this.buffer('ff', T * F * 4);
    const decodeOnly = B === T; // every sequence contributes one token
    const paged = { pageTable, sequences: B, maxPagesPerSeq: plan.maxPages, seqIds: rows, positions, tokens: T };
    const window = c.slidingWindow ?? 0;

    let pass = encoder.beginComputePass({ label: `step T=${T}` });
    // x = embed[ids]
    this.embedding.encode(pass, { weight: w.embed, ids, out: h, tokens: T });
    for (let l = 0; l < layers; l++) {
      const L = w.layers[l];
      // attention: xn = rmsnorm(h); q, k, v = W xn (+ b); q/k norm; rope; append k, v; att = attention(q)
      this.norm.encode(pass, { x: h, weight: L.attnNorm, out: xn, rows: T, cols: C, eps: c.rmsEps });
      let [qr, kr] = [q, k];
      this.matmul(pass, L.q, xn, q, T, L.qBias);
      this.matmul(pass, L.k, xn, k, T, L.kBias);
      this.matmul(pass, L.v, xn, v, T, L.vBias);
      if (L.qNorm && L.kNorm) {
        // per-head RMSNorm of q and k (Qwen3), before rope
        [qr, kr] = [qn, kn];
        this.norm.encode(pass, { x: q, weight: L.qNorm, out: qn, rows: T * H, cols: D, eps: c.rmsEps });
        this.norm.encode(pass, { x: k, weight: L.kNorm, out: kn, rows: T * Hkv, cols: D, eps: c.rmsEps });
      }
      this.rope.encode(pass, { q: qr, k: kr, positions, tokens: T, heads: H, kvHeads: Hkv });
      const cache = { kCache: this.kv.k[l], vCache: this.kv.v[l] };
      this.kvAppend.encode(pass, { k: kr, v, ...cache, ...paged });
      // keys j with pos - j >= slidingWindow are skipped (Mistral); window 0 = full causal
      if (decodeOnly) this.decode.encode(pass, { q: qr, out: att, ...cache, ...paged, maxContext: plan.maxContext, window });
      else this.prefill.encode(pass, { q: qr, out: att, ...cache, ...paged, window });
      // h += Wo att
      this.matmul(pass, L.o, att, h, T, undefined, true);
      // mlp: xn = rmsnorm(h); h += Wdown act(Wgate xn, Wup xn)
      this.norm.encode(pass, { x: h, weight: L.ffnNorm, out: xn, rows: T, cols: C, eps: c.rmsEps });
      this.matmul(pass, L.gate, xn, gate, T);
      this.matmul(pass, L.up, xn, up, T);
      this.act.encode(pass, { x: gate, up, out: ff, rows: T, cols: F });
      this.matmul(pass, L.down, ff, h, T, undefined, true);
    }
    // logits of the wanted tokens: gather those rows of h (unless they are all T in order), norm, lm_head
    let rowsOut = h;
    if (!(R === T && plan.outputs.every((t, r) => t === r))) {
      pass.end();
      rowsOut = this.buffer('outRows', R * C * 4);
      // one copy per run of consecutive tokens (a verify sequence's rows are one run)
      for (let r = 0; r < R; ) {
        let n = 1;
        while (r + n < R && plan.outputs[r + n] === plan.outputs[r] + n) n++;
        encoder.copyBufferToBuffer(h, plan.outputs[r] * C * 4, rowsOut, r * C * 4, n * C * 4);
        r += n;
      }
      pass = encoder.beginComputePass({ label: 'step.head' });
    }
    const outNorm = this.buffer('outNorm', R * C * 4);
    this.norm.encode(pass, { x: rowsOut, weight: w.outputNorm, out: outNorm, rows: R, cols: C, eps: c.rmsEps });
    const logits = this.buffer('logits', R * V * 4);
    this.matmul(pass, w.output, outNorm, logits, R);
    pass.end();
    return logits;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of this.scratch.values()) b.destroy();
    this.scratch.clear();
    this.rope.destroy();
    this.decode.destroy();
  }

  /** y (+)= W x for T rows: GEMV (each weight read once for up to 4 rows) when T ≤ gemvMaxRows, GEMM otherwise. */
  private matmul(pass: GPUComputePassEncoder, weight: WeightTensor, x: GPUBuffer, y: GPUBuffer, T: number, bias?: GPUBuffer, accumulate = false): void {
    const key = `${weight.dtype}|${bias ? 1 : 0}|${accumulate ? 1 : 0}`;
    if (T <= this.gemvMaxRows) {
      let g = this.gemv.get(key);
      if (!g) this.gemv.set(key, (g = createGemv(this.gpu, { dtype: weight.dtype as WeightDtype, bias: !!bias, accumulate })));
      g.encode(pass, { weight, x, y, bias, batch: T });
    } else {
      let g = this.gemm.get(key);
      if (!g) this.gemm.set(key, (g = createGemm(this.gpu, { dtype: weight.dtype as WeightDtype, bias: !!bias, accumulate })));
      g.encode(pass, { weight, x, y, bias, tokens: T });
    }
  }

  /** A scratch buffer of at least `bytes`, reused across steps and grown when a step needs more. */
  private buffer(name: string, bytes: number): GPUBuffer {
    const have = this.scratch.get(name);
    if (have && have.size >= bytes) return have;
    // Steps are submitted one at a time, so the outgrown buffer belongs to an already submitted step;
    // WebGPU frees it only once that work completes.
    have?.destroy();
    const size = Math.max(256, 2 ** Math.ceil(Math.log2(bytes)));
    // (GPUBufferUsage is read here, not at module load, so the module imports where WebGPU is absent.)
    const b = this.gpu.device.createBuffer({ label: `step.${name}`, size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    this.scratch.set(name, b);
    return b;
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
  return gpu.adapterInfo.isFallbackAdapter ? 8 : 4;
}
