// Rotary position embedding, in place on q and k (see shaders/rope/rope.wgsl). The wrapper owns the
// frequency table of one RoPE config: inv_freq is computed here in float64 (with llama3 scaling exactly
// as Hugging Face's _compute_llama3_parameters) and uploaded as fixed-point turns per position.

import src from '../../../../shaders/rope/rope.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

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

export interface RopeConfig {
  /** D: head dimension. */
  headDim: number;
  /** Rotated dimensions (even, ≤ D; default D). The rest of each head is untouched. */
  rotaryDim?: number;
  /** Base theta (rope_theta / rope.freq_base), e.g. 10000 or 500000. */
  theta: number;
  style: RopeStyle;
  scaling?: Llama3Scaling;
  /** (rotaryDim/2) llama.cpp rope_freqs factors: inv_freq[i] /= freqFactors[i]. */
  freqFactors?: ArrayLike<number>;
  workgroupSize?: number;
  label?: string;
}

export interface RopeArgs {
  /** (T, H, D) f32, rotated in place. */
  q: BufferRef;
  /** (T, Hkv, D) f32, rotated in place. */
  k: BufferRef;
  /** (T) u32 absolute positions. */
  positions: BufferRef;
  /** T. */
  tokens: number;
  /** H. */
  heads: number;
  /** Hkv. */
  kvHeads: number;
}

export interface Rope {
  /** (rotaryDim/2) float64 inverse frequencies this wrapper rotates with. */
  readonly invFreq: Float64Array;
  readonly rotaryDim: number;
  encode(pass: GPUComputePassEncoder, args: RopeArgs): void;
  /** Frees the frequency table. Idempotent. */
  destroy(): void;
}

/** inv_freq[i] = theta^(-2i/rot) in float64, then llama3 scaling and llama.cpp freq factors if given. */
export function ropeInvFreq(config: Pick<RopeConfig, 'headDim' | 'rotaryDim' | 'theta' | 'scaling' | 'freqFactors'>): Float64Array {
  const rot = config.rotaryDim ?? config.headDim;
  const half = rot / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / config.theta ** ((2 * i) / rot);
  const s = config.scaling;
  if (s) {
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

/**
 * @example
 * const rope = createRope(gpu, { headDim: 64, theta: 10000, style: 'neox' });
 * rope.encode(pass, { q, k, positions, tokens: T, heads: 8, kvHeads: 2 });
 * rope.destroy();
 */
export function createRope(gpu: Gpu, config: RopeConfig): Rope {
  const name = 'rope';
  const d = config.headDim;
  requireDim(name, 'headDim', d);
  const rot = config.rotaryDim ?? d;
  requireDim(name, 'rotaryDim', rot, 2);
  if (rot > d) throw new ShapeError(name, 'rotaryDim', `at most headDim (${d})`, String(rot));
  if (!(config.theta > 0)) throw new ShapeError(name, 'theta', 'a positive number', String(config.theta));
  if (config.freqFactors && config.freqFactors.length < rot / 2) {
    throw new ShapeError(name, 'freqFactors', `${rot / 2} values (one per rotated pair)`, `${config.freqFactors.length} values`);
  }
  const s = config.scaling;
  if (s && !(s.factor > 0 && s.lowFreqFactor > 0 && s.highFreqFactor > s.lowFreqFactor && s.originalMaxPositionEmbeddings > 0)) {
    throw new ShapeError(name, 'scaling', 'factor > 0, 0 < lowFreqFactor < highFreqFactor, originalMaxPositionEmbeddings > 0', JSON.stringify(s));
  }
  const invFreq = ropeInvFreq(config);
  const table = ropeTurnTable(invFreq);
  const label = config.label ?? 'rope.freq';
  const freq = gpu.device.createBuffer({ label, size: Math.max(16, table.byteLength), usage: GPUBufferUsage.STORAGE, mappedAtCreation: true });
  new Uint32Array(freq.getMappedRange(0, table.byteLength)).set(table);
  freq.unmap();
  const wg = config.workgroupSize ?? 64;
  const cached = gpu.pipelines.get({
    name: 'rope',
    variant: 'f32',
    code: src,
    bindings: withParams('storage', 'storage', 'read', 'read'),
    constants: { WG_SIZE: wg, NEOX: config.style === 'neox' ? 1 : 0 },
  });
  let destroyed = false;
  return {
    invFreq,
    rotaryDim: rot,
    encode(pass, a) {
      if (destroyed) throw new Error(`${label}: encode() after destroy()`);
      requireDim(name, 'tokens', a.tokens);
      requireDim(name, 'heads', a.heads);
      requireDim(name, 'kvHeads', a.kvHeads);
      requireBytes(name, 'q', a.q, a.tokens * a.heads * d * 4);
      requireBytes(name, 'k', a.k, a.tokens * a.kvHeads * d * 4);
      requireBytes(name, 'positions', a.positions, a.tokens * 4);
      const params = new Params(8).u32(a.tokens).u32(a.heads).u32(a.kvHeads).u32(d).u32(rot / 2).u32(0).u32(0).u32(0);
      const count = a.tokens * (a.heads + a.kvHeads) * (rot / 2);
      dispatch(gpu, pass, cached, name, params, [a.q, a.k, a.positions, freq], grid2d(gpu, Math.ceil(count / wg)));
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      freq.destroy();
    },
  };
}
