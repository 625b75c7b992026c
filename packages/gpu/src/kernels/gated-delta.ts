// The gated delta rule of Qwen3.5's linear-attention layers (see shaders/linear-attention/gated-delta.wgsl): the
// recurrent state update and read-out for a step's tokens, decode (one token per sequence) and prefill (T tokens a
// sequence) in one kernel, the conv's q|k|v output read in place, q/k l2-normalised on the fly (and, with rawGates,
// g and β formed from the a and b projections), each sequence's state in its slot (layout:
// kernels/recurrent-state.ts). CPU twin: reference/gated-delta.ts (gatedDeltaSequence).
//
// Prefill is a sequential scan over each sequence's tokens inside the kernel, not the chunked (WY / UT-transform)
// form. Measured on SwiftShader (Chromium headless, 2 cores shared with other test runs, so ±30%), Qwen3.5-0.8B's
// linear layer (Hv = Hk = 16, Dk = Dv = 128), one sequence, workgroups of 16 (8, 16, 32 within noise; 64 was 1.6×
// slower); `intab bench kernels --filter Qwen3.5` (examples/kernel-lab, timestamp queries, median):
//   gated-delta, one dispatch, T = 1 / 16 / 64 / 256:  1.8–2.2 / 22–23 / 87–102 / 290–346 ms (two runs; 1.1–1.6 ms
//                                                      a token, 1.3–1.9 GFLOP/s)
//   causal-conv1d (C = 6144),  T = 1 / 16 / 64 / 256:  0.8 / 3.2 / 11–15 / 38 ms
// and T dispatches of one token each (a probe, submit to done, min of 7): T = 16 / 64 in 23–37 / 110–150 ms, 1.4–2.4
// ms a token, against the scan's 12–23 / 70–84 ms in the same runs.
// The scan costs 4·Dk·Dv FMAs a token and head and touches S once a step (it sits in registers between tokens);
// each token updates S and forms the next token's Sᵀk and Sᵀq in the same pass over S (one read, one write of the
// private S a token: this halved the cost, 2.6 → 1.0–1.3 ms a token, against separate passes). The chunked form
// does the same Dk·Dv work a token plus O(chunk·(Dk + Dv)) for the intra-chunk products, in several dispatches
// (each a fixed cost here) with workgroup barriers (a coroutine switch per lane group on a software adapter): it
// only pays where the scan leaves lanes idle (a hardware GPU, few heads, long prompts), so it is left to a sibling
// variant once a hardware GPU shows the scan to be the bottleneck. The decode step is this kernel with T = 1.

import src from '../../../../shaders/linear-attention/gated-delta.wgsl?raw';
import seqRange from '../../../../shaders/lib/seq-range.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import { requireWorkgroupSize } from './paged-kv.ts';
import { type RecurrentStep, checkRecurrentStep } from './recurrent-state.ts';

/** Largest key head dimension the kernel keeps in registers (Qwen3.5 and Qwen3-Next: 128). */
export const MAX_DELTA_KEY_DIM = 128;

/**
 * Which key head value head h reads when Hk < Hv: 'tiled' h % Hk (llama.cpp's broadcast, GGUF weights) or
 * 'grouped' h / (Hv / Hk) (Hugging Face's repeat_interleave).
 */
export type DeltaHeadOrder = 'tiled' | 'grouped';

export interface GatedDeltaShape {
  /** Hv: value heads (linear_num_value_heads). */
  vHeads: number;
  /** Hk: key heads (linear_num_key_heads), a divisor of Hv. */
  kHeads: number;
  /** Dk: key head dimension, a multiple of 4, at most 128. */
  keyDim: number;
  /** Dv: value head dimension, a multiple of 4. */
  valueDim: number;
}

export interface GatedDeltaOptions extends GatedDeltaShape {
  /** Default 'tiled' (llama.cpp, and reference/gated-delta.ts). */
  headOrder?: DeltaHeadOrder;
  /** l2-normalise q and k per head, x / max(‖x‖, eps), in the kernel (default true, Qwen3.5); false: they arrive so. */
  l2norm?: boolean;
  /** The l2 norm's floor (default 1e-6, Qwen3.5's rms_norm_eps). */
  eps?: number;
  /** q's scale (default 1/√Dk with l2norm, 1 without: q arrives scaled). */
  scale?: number;
  /**
   * g and beta hold the raw projections a and b; the kernel forms g = ssm_a · softplus(a + dt_bias) and
   * β = sigmoid(b) itself, from `gateWeights` (default false: g and β as given).
   */
  rawGates?: boolean;
  workgroupSize?: number;
  label?: string;
}

export interface GatedDeltaArgs extends RecurrentStep {
  /**
   * (T, rowStride) f32: token t's q (Hk, Dk) at qOffset, k (Hk, Dk) at kOffset, v (Hv, Dv) at vOffset, in floats:
   * the causal conv's output, [q | k | v] by default.
   */
  qkv: BufferRef;
  /** Floats per qkv row (default 2·Hk·Dk + Hv·Dv); offsets and stride are multiples of 4. */
  rowStride?: number;
  qOffset?: number;
  kOffset?: number;
  vOffset?: number;
  /** f32 log decay g ≤ 0 (S ← exp(g)·S), token t's Hv values at t·gStride + gOffset; with rawGates, a. */
  g: BufferRef;
  /** f32 β in (0, 1), token t's Hv values at t·betaStride + betaOffset; with rawGates, b. */
  beta: BufferRef;
  /** Floats per token in g (default Hv) and where its Hv values start (default 0). */
  gStride?: number;
  gOffset?: number;
  /** The same for beta. */
  betaStride?: number;
  betaOffset?: number;
  /** rawGates: [ssm_a (Hv) | dt_bias (Hv)] f32, ssm_a = −exp(A_log) (GGUF's ssm_a). */
  gateWeights?: BufferRef;
  /** (slots, Hv, Dk, Dv) f32, advanced in place for the step's rows. */
  state: BufferRef;
  /** (T, Hv, Dv) f32. */
  out: BufferRef;
}

export interface GatedDelta {
  /** Bytes of one slot of state: Hv·Dk·Dv·4. */
  readonly slotBytes: number;
  encode(pass: GPUComputePassEncoder, args: GatedDeltaArgs): void;
}

/**
 * @example
 * const delta = createGatedDelta(gpu, { vHeads: 16, kHeads: 16, keyDim: 128, valueDim: 128 });
 * const state = gpu.device.createBuffer({ size: slots * delta.slotBytes, usage: GPUBufferUsage.STORAGE });
 * // decode: T = B tokens, seqIds = 0..B−1; prefill: each row's tokens in order
 * delta.encode(pass, { qkv: convOut, g, beta, state, out, seqIds, slotIds, tokens: T, sequences: B });
 */
export function createGatedDelta(gpu: Gpu, o: GatedDeltaOptions): GatedDelta {
  const name = 'gated-delta';
  requireDim(name, 'vHeads', o.vHeads);
  requireDim(name, 'kHeads', o.kHeads);
  if (o.vHeads % o.kHeads !== 0) throw new ShapeError(name, 'kHeads', `a divisor of vHeads (${o.vHeads})`, String(o.kHeads));
  requireDim(name, 'keyDim', o.keyDim, 4);
  if (o.keyDim > MAX_DELTA_KEY_DIM) throw new ShapeError(name, 'keyDim', `at most ${MAX_DELTA_KEY_DIM}`, String(o.keyDim));
  requireDim(name, 'valueDim', o.valueDim, 4);
  const order = o.headOrder ?? 'tiled';
  if (order !== 'tiled' && order !== 'grouped') throw new TypeError(`${name}: headOrder must be 'tiled' or 'grouped', got '${String(order)}'`);
  const l2norm = o.l2norm ?? true;
  const eps = o.eps ?? 1e-6;
  const scale = o.scale ?? (l2norm ? 1 / Math.sqrt(o.keyDim) : 1);
  const rawGates = o.rawGates ?? false;
  const wg = o.workgroupSize ?? 16;
  requireWorkgroupSize(gpu, name, wg);
  const label = o.label ?? name;
  const [Hv, Hk, Dk, Dv] = [o.vHeads, o.kHeads, o.keyDim, o.valueDim];
  const slotBytes = Hv * Dk * Dv * 4;
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${seqRange}`,
    bindings: withParams('read', 'read', 'read', 'read', 'read', 'storage', 'storage', 'read'),
    constants: { WG_SIZE: wg, DK: Dk, TILED: order === 'tiled' ? 1 : 0, L2NORM: l2norm ? 1 : 0, RAW_GATES: rawGates ? 1 : 0 },
  });
  return {
    slotBytes,
    encode(pass, a) {
      const slots = checkRecurrentStep(gpu, name, a, a.state, slotBytes);
      const qk = Hk * Dk;
      const row = a.rowStride ?? 2 * qk + Hv * Dv;
      const [qOff, kOff, vOff] = [a.qOffset ?? 0, a.kOffset ?? qk, a.vOffset ?? 2 * qk];
      for (const [arg, v] of [['rowStride', row], ['qOffset', qOff], ['kOffset', kOff], ['vOffset', vOff]] as const) {
        if (!Number.isInteger(v) || v < 0 || v % 4 !== 0) throw new ShapeError(name, arg, 'a non-negative multiple of 4', String(v));
      }
      for (const [arg, off, width] of [['qOffset', qOff, qk], ['kOffset', kOff, qk], ['vOffset', vOff, Hv * Dv]] as const) {
        if (off + width > row) throw new ShapeError(name, arg, `at most rowStride − ${width} = ${row - width}`, String(off));
      }
      requireBytes(name, 'qkv', a.qkv, ((a.tokens - 1) * row + Math.max(qOff + qk, kOff + qk, vOff + Hv * Dv)) * 4);
      const [gStride, gOff, bStride, bOff] = [a.gStride ?? Hv, a.gOffset ?? 0, a.betaStride ?? Hv, a.betaOffset ?? 0];
      const checkView = (strideArg: string, stride: number, offArg: string, off: number) => {
        if (!Number.isInteger(stride) || stride < Hv) throw new ShapeError(name, strideArg, `an integer ≥ Hv (${Hv})`, String(stride));
        if (!Number.isInteger(off) || off < 0 || off + Hv > stride) throw new ShapeError(name, offArg, `an integer in 0..${stride - Hv}`, String(off));
      };
      checkView('gStride', gStride, 'gOffset', gOff);
      checkView('betaStride', bStride, 'betaOffset', bOff);
      requireBytes(name, 'g', a.g, ((a.tokens - 1) * gStride + gOff + Hv) * 4);
      requireBytes(name, 'beta', a.beta, ((a.tokens - 1) * bStride + bOff + Hv) * 4);
      requireBytes(name, 'out', a.out, a.tokens * Hv * Dv * 4);
      if (rawGates) {
        if (!a.gateWeights) throw new TypeError(`${name}: created with rawGates, so 'gateWeights' ([ssm_a | dt_bias], 2·Hv floats) is required`);
        requireBytes(name, 'gateWeights', a.gateWeights, 2 * Hv * 4);
      }
      const params = new Params(16)
        .u32(a.tokens).u32(a.sequences).u32(slots).u32(Hv).u32(Hk).u32(Dv / 4)
        .u32(row / 4).u32(qOff / 4).u32(kOff / 4).u32(vOff / 4).f32(scale).f32(eps)
        .u32(gStride).u32(gOff).u32(bStride).u32(bOff);
      const buffers = [a.qkv, a.g, a.beta, a.slotIds, a.seqIds, a.state, a.out, rawGates ? a.gateWeights! : unusedBinding(gpu)];
      dispatch(gpu, pass, cached, label, params, buffers, grid2d(gpu, Math.ceil((a.sequences * Hv * (Dv / 4)) / wg)));
    },
  };
}
