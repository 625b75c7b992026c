// RoPE in place for an encoder pass (see shaders/attention/rope-encoder.wgsl): the q and k heads of packed rows
// (nomic-bert's fused q|k|v projection) turn by each token's position in its own sequence. Encoders keep no cache, so
// the decoder's rope-kv-append (which writes the paged cache) does not apply; the RoPE table is the same
// (createRopeTable).

import src from '../../../../shaders/attention/rope-encoder.wgsl?raw';
import phase from '../../../../shaders/lib/rope-phase.wgsl?raw';
import seqsLib from '../../../../shaders/lib/packed-seqs.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import type { PackedSequences } from './attention-encoder.ts';
import { createRopeTable, type RopeConfig } from './rope-kv-append.ts';

export interface RopeEncoderOptions extends RopeConfig {
  /** H: query heads. */
  heads: number;
  /** Hkv: key heads (default H). */
  kvHeads?: number;
  workgroupSize?: number;
  label?: string;
}

export interface RopeEncoderArgs extends PackedSequences {
  /** Token rows holding q (H·D) and k (Hkv·D), rotated in place. */
  qkv: BufferRef;
  /** Elements between two tokens' rows (default (H + 2·Hkv)·D: a fused q|k|v row). */
  stride?: number;
  /** Element offset of q in a row (default 0). */
  qOffset?: number;
  /** Element offset of k in a row (default H·D). */
  kOffset?: number;
}

export interface RopeEncoder {
  readonly invFreq: Float64Array;
  readonly rotaryDim: number;
  encode(pass: GPUComputePassEncoder, args: RopeEncoderArgs): void;
  /** Frees the RoPE table. Idempotent. */
  destroy(): void;
}

/**
 * @example
 * const rope = createRopeEncoder(gpu, { heads: 12, headDim: 64, theta: 1000, style: 'neox' }); // nomic-bert
 * rope.encode(pass, { qkv, seqStarts, sequences: B, tokens: T });
 */
export function createRopeEncoder(gpu: Gpu, o: RopeEncoderOptions): RopeEncoder {
  const name = 'rope-encoder';
  const H = o.heads;
  const Hkv = o.kvHeads ?? H;
  const D = o.headDim;
  requireDim(name, 'heads', H);
  requireDim(name, 'kvHeads', Hkv);
  requireDim(name, 'headDim', D, 2);
  const label = o.label ?? 'rope.freq';
  const { invFreq, rotaryDim: rot, table } = createRopeTable(gpu, name, o, label);
  const wg = o.workgroupSize ?? 64;
  if (!Number.isInteger(wg) || wg < 1 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', `an integer in 1..${gpu.limits.maxComputeInvocationsPerWorkgroup}`, String(wg));
  }
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${phase}\n${seqsLib}`,
    bindings: withParams('storage', 'read', 'constant'),
    constants: { WG_SIZE: wg, NEOX: o.style === 'neox' ? 1 : 0 },
  });
  let destroyed = false;
  return {
    invFreq,
    rotaryDim: rot,
    encode(pass, a) {
      if (destroyed) throw new Error(`${label}: encode() after destroy()`);
      requireDim(name, 'tokens', a.tokens);
      requireDim(name, 'sequences', a.sequences);
      const stride = a.stride ?? (H + 2 * Hkv) * D;
      const qOff = a.qOffset ?? 0;
      const kOff = a.kOffset ?? H * D;
      for (const [arg, off, width] of [['qOffset', qOff, H * D], ['kOffset', kOff, Hkv * D]] as const) {
        if (!Number.isInteger(off) || off < 0 || off + width > stride) {
          throw new ShapeError(name, arg, `an integer ≥ 0 with ${arg} + ${width} ≤ stride (${stride})`, String(off));
        }
      }
      requireBytes(name, 'qkv', a.qkv, ((a.tokens - 1) * stride + Math.max(qOff + H * D, kOff + Hkv * D)) * 4);
      requireBytes(name, 'seqStarts', a.seqStarts, (a.sequences + 1) * 4);
      const params = new Params(12).u32(a.tokens).u32(a.sequences).u32(H).u32(Hkv).u32(D).u32(rot / 2)
        .u32(stride).u32(qOff).u32(kOff).u32(0).u32(0).u32(0);
      const count = a.tokens * (H + Hkv) * (rot / 2);
      dispatch(gpu, pass, cached, name, params, [a.qkv, a.seqStarts, table], grid2d(gpu, Math.ceil(count / wg)));
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      table.destroy();
    },
  };
}
