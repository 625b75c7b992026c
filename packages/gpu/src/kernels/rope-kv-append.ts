// RoPE fused into the KV append (see shaders/attention/rope-kv-append.wgsl): a step's q|k|v projections become the
// rotated queries attention reads and the rotated keys and values in the paged cache, in one dispatch, with
// Qwen3's per-head q/k RMSNorm in front when the model has it. The wrapper owns the RoPE table of one model:
// inv_freq in float64 (with llama3 scaling exactly as Hugging Face's _compute_llama3_parameters, and llama.cpp's
// rope_freqs factors), uploaded as fixed-point turns per position (lib/rope-phase.wgsl).

import src from '../../../../shaders/attention/rope-kv-append.wgsl?raw';
import phase from '../../../../shaders/lib/rope-phase.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import { type AttentionShape, type PagedKv, type StepTokens, checkAttentionShape, checkPaged } from './paged-kv.ts';

/** 'normal': adjacent pairs (2i, 2i+1), GGUF/llama.cpp. 'neox': rotate-half pairs (i, i + rot/2), Hugging Face. */
export type RopeStyle = 'normal' | 'neox';

/** Llama 3.1 frequency scaling (Hugging Face rope_scaling with rope_type 'llama3'). */
export interface Llama3Scaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

/** Linear scaling (Hugging Face rope_scaling with rope_type 'linear', GGUF rope.scaling.type 'linear'): positions / factor. */
export interface LinearScaling {
  type: 'linear';
  factor: number;
}

export interface RopeConfig {
  /** D: head dimension. */
  headDim: number;
  /** Rotated dimensions (even, ≤ D; default D). The rest of each head is untouched. */
  rotaryDim?: number;
  /** Base theta (rope_theta / rope.freq_base), e.g. 10000 or 500000. */
  theta: number;
  style: RopeStyle;
  scaling?: Llama3Scaling | LinearScaling;
  /** (rotaryDim/2) llama.cpp rope_freqs factors: inv_freq[i] /= freqFactors[i]. */
  freqFactors?: ArrayLike<number>;
}

/** inv_freq[i] = theta^(-2i/rot) in float64, then llama3 scaling and llama.cpp freq factors if given. */
export function ropeInvFreq(config: Pick<RopeConfig, 'headDim' | 'rotaryDim' | 'theta' | 'scaling' | 'freqFactors'>): Float64Array {
  const rot = config.rotaryDim ?? config.headDim;
  const half = rot / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / config.theta ** ((2 * i) / rot);
  const s = config.scaling;
  if (s?.type === 'linear') for (let i = 0; i < half; i++) inv[i] /= s.factor;
  else if (s) {
    const lowFreqWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highFreqWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i];
      if (wavelen < highFreqWavelen) continue; // high frequency: unchanged
      if (wavelen > lowFreqWavelen) {
        inv[i] /= s.factor; // low frequency: interpolated
        continue;
      }
      const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      inv[i] = ((1 - smooth) * inv[i]) / s.factor + smooth * inv[i];
    }
  }
  if (config.freqFactors) for (let i = 0; i < half; i++) inv[i] /= config.freqFactors[i];
  return inv;
}

/** (hi, lo) u32 words of inv_freq / (2 pi) mod 1 as a 64-bit binary fraction of a turn. */
export function ropeTurnTable(invFreq: Float64Array): Uint32Array {
  const out = new Uint32Array(invFreq.length * 2);
  for (let i = 0; i < invFreq.length; i++) {
    const turns = invFreq[i] / (2 * Math.PI);
    const scaled = (turns - Math.floor(turns)) * 2 ** 32; // exact: a power-of-two scale
    const hi = Math.floor(scaled);
    const lo = Math.min(Math.round((scaled - hi) * 2 ** 32), 2 ** 32 - 1);
    out[2 * i] = hi;
    out[2 * i + 1] = lo;
  }
  return out;
}

/** Pairs the uniform RoPE table holds (lib/rope-phase.wgsl): rotary dimensions up to 256. */
const TABLE_PAIRS = 128;

/**
 * The uniform RoPE table of one model (lib/rope-phase.wgsl), after checking its config: what every rotating kernel
 * binds (rope-kv-append, rope-encoder). The caller destroys the buffer.
 */
export function createRopeTable(
  gpu: Gpu,
  name: string,
  o: RopeConfig & { noRope?: boolean },
  label: string,
): { invFreq: Float64Array; rotaryDim: number; table: GPUBuffer } {
  const d = o.headDim;
  const rot = o.rotaryDim ?? d;
  requireDim(name, 'rotaryDim', rot, 2);
  if (rot > d) throw new ShapeError(name, 'rotaryDim', `at most headDim (${d})`, String(rot));
  if (rot / 2 > TABLE_PAIRS) throw new ShapeError(name, 'rotaryDim', `at most ${2 * TABLE_PAIRS}`, String(rot));
  if (!(o.theta > 0)) throw new ShapeError(name, 'theta', 'a positive number', String(o.theta));
  if (o.freqFactors && o.freqFactors.length < rot / 2) {
    throw new ShapeError(name, 'freqFactors', `${rot / 2} values (one per rotated pair)`, `${o.freqFactors.length} values`);
  }
  const sc = o.scaling;
  if (sc?.type === 'linear' && !(sc.factor > 0)) throw new ShapeError(name, 'scaling', 'a linear factor > 0', JSON.stringify(sc));
  if (sc?.type === 'llama3' && !(sc.factor > 0 && sc.lowFreqFactor > 0 && sc.highFreqFactor > sc.lowFreqFactor && sc.originalMaxPositionEmbeddings > 0)) {
    throw new ShapeError(name, 'scaling', 'factor > 0, 0 < lowFreqFactor < highFreqFactor, originalMaxPositionEmbeddings > 0', JSON.stringify(sc));
  }
  const invFreq = o.noRope ? new Float64Array(rot / 2) : ropeInvFreq({ ...o, rotaryDim: rot });
  const table = gpu.device.createBuffer({ label, size: TABLE_PAIRS * 8, usage: GPUBufferUsage.UNIFORM, mappedAtCreation: true });
  new Uint32Array(table.getMappedRange()).set(ropeTurnTable(invFreq));
  table.unmap();
  return { invFreq, rotaryDim: rot, table };
}

export interface RopeKvAppendOptions extends RopeConfig, AttentionShape {
  /** Per-head RMSNorm of q and k before RoPE (Qwen3); each encode passes `norm` and `eps`. */
  qkNorm?: boolean;
  /** q and k pass unrotated (a NoPE layer, SmolLM3): every pair turns by 0 at every position. */
  noRope?: boolean;
  workgroupSize?: number;
  label?: string;
}

export interface RopeKvAppendArgs extends PagedKv, StepTokens {
  /** (T, (H + 2·Hkv)·D) f32: token t's [q (H·D) | k (Hkv·D) | v (Hkv·D)], the q|k|v GEMV's output. */
  qkv: BufferRef;
  /** (T, H, D) f32: the rotated queries. */
  q: BufferRef;
  /** [q_norm (D) | k_norm (D)] f32, with qkNorm. */
  norm?: BufferRef;
  /** The q/k RMSNorm epsilon, with qkNorm. */
  eps?: number;
}

export interface RopeKvAppend {
  /** (rotaryDim/2) float64 inverse frequencies this wrapper rotates with. */
  readonly invFreq: Float64Array;
  readonly rotaryDim: number;
  encode(pass: GPUComputePassEncoder, args: RopeKvAppendArgs): void;
  /** Frees the RoPE table. Idempotent. */
  destroy(): void;
}

/**
 * @example
 * const append = createRopeKvAppend(gpu, { heads: 8, kvHeads: 2, headDim: 64, pageSize: 16, theta: 10000, style: 'neox' });
 * append.encode(pass, { qkv, q, kCache, vCache, pageTable, sequences: B, maxPagesPerSeq, seqIds, positions, tokens: T });
 */
export function createRopeKvAppend(gpu: Gpu, o: RopeKvAppendOptions): RopeKvAppend {
  const name = 'rope-kv-append';
  const s = checkAttentionShape(name, o);
  const d = s.headDim;
  const label = o.label ?? 'rope.freq';
  const { invFreq, rotaryDim: rot, table } = createRopeTable(gpu, name, o, label);
  const wg = o.workgroupSize ?? 64;
  const qkNorm = o.qkNorm ?? false;
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${phase}`,
    bindings: withParams('read', 'storage', 'storage', 'storage', 'read', 'read', 'read', 'read', 'constant'),
    constants: { WG_SIZE: wg, NEOX: o.style === 'neox' ? 1 : 0, QK_NORM: qkNorm ? 1 : 0 },
  });
  const row = (s.heads + 2 * s.kvHeads) * d;
  let destroyed = false;
  return {
    invFreq,
    rotaryDim: rot,
    encode(pass, a) {
      if (destroyed) throw new Error(`${label}: encode() after destroy()`);
      const pages = checkPaged(gpu, name, s, a, a);
      requireBytes(name, 'qkv', a.qkv, a.tokens * row * 4);
      requireBytes(name, 'q', a.q, a.tokens * s.heads * d * 4);
      if (qkNorm) {
        if (!a.norm || a.eps === undefined) throw new TypeError(`${name}: created with qkNorm, so 'norm' and 'eps' are required`);
        requireBytes(name, 'norm', a.norm, 2 * d * 4);
      }
      const params = new Params(12)
        .u32(a.tokens).u32(s.heads).u32(s.kvHeads).u32(d).u32(rot / 2).u32(0)
        .u32(s.pageSize).u32(a.maxPagesPerSeq).u32(a.sequences).u32(pages).f32(a.eps ?? 0).u32(0);
      const count = a.tokens * (s.heads + s.kvHeads) * (d / 2);
      const buffers = [a.qkv, a.q, a.kCache, a.vCache, a.pageTable, a.seqIds, a.positions, qkNorm ? a.norm! : unusedBinding(gpu), table];
      dispatch(gpu, pass, cached, name, params, buffers, grid2d(gpu, Math.ceil(count / wg)));
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      table.destroy();
    },
  };
}
