// The short causal depthwise conv1d of Qwen3.5's linear-attention layers, SiLU fused (see
// shaders/linear-attention/causal-conv1d.wgsl): a step's q|k|v projections of several sequences in one dispatch,
// each sequence continuing from the K−1 inputs its state slot carries (layout: kernels/recurrent-state.ts), which
// the kernel then advances. Its output feeds the gated delta rule (kernels/gated-delta.ts) in place.

import src from '../../../../shaders/linear-attention/causal-conv1d.wgsl?raw';
import seqRange from '../../../../shaders/lib/seq-range.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import { requireWorkgroupSize } from './paged-kv.ts';
import { type RecurrentStep, checkRecurrentStep } from './recurrent-state.ts';

/** Most taps the kernel takes (its private arrays). Qwen3.5 uses 4. */
export const MAX_CONV_TAPS = 8;

export interface CausalConv1dOptions {
  /** C: channels (Qwen3.5: 2·Hk·Dk + Hv·Dv), a multiple of 4. */
  channels: number;
  /** K: taps (linear_conv_kernel_dim, default 4), 2..8. */
  kernelSize?: number;
  workgroupSize?: number;
  label?: string;
}

export interface CausalConv1dArgs extends RecurrentStep {
  /** (T, C) f32 inputs. */
  x: BufferRef;
  /** (C, K) f32 taps (llama.cpp's ssm_conv1d; Hugging Face's conv1d.weight (C, 1, K) is the same bytes). */
  weight: BufferRef;
  /** (slots, K−1, C) f32 conv state, advanced in place for the step's rows. */
  state: BufferRef;
  /** (T, C) f32: silu of the convolution. */
  out: BufferRef;
}

export interface CausalConv1d {
  readonly kernelSize: number;
  /** Bytes of one slot of conv state: (K−1)·C·4. */
  readonly slotBytes: number;
  encode(pass: GPUComputePassEncoder, args: CausalConv1dArgs): void;
}

/**
 * @example
 * const conv = createCausalConv1d(gpu, { channels: 6144, kernelSize: 4 });
 * const convState = gpu.device.createBuffer({ size: slots * conv.slotBytes, usage: GPUBufferUsage.STORAGE });
 * conv.encode(pass, { x: qkvz, weight: convW, state: convState, out: qkv, seqIds, slotIds, tokens: T, sequences: B });
 */
export function createCausalConv1d(gpu: Gpu, o: CausalConv1dOptions): CausalConv1d {
  const name = 'causal-conv1d';
  requireDim(name, 'channels', o.channels, 4);
  const K = o.kernelSize ?? 4;
  if (!Number.isInteger(K) || K < 2 || K > MAX_CONV_TAPS) throw new ShapeError(name, 'kernelSize', `an integer in 2..${MAX_CONV_TAPS}`, String(K));
  const wg = o.workgroupSize ?? 64;
  requireWorkgroupSize(gpu, name, wg);
  const label = o.label ?? name;
  const C = o.channels;
  const slotBytes = (K - 1) * C * 4;
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${seqRange}`,
    bindings: withParams('read', 'read', 'read', 'read', 'storage', 'storage'),
    constants: { WG_SIZE: wg, KSIZE: K },
  });
  return {
    kernelSize: K,
    slotBytes,
    encode(pass, a) {
      const slots = checkRecurrentStep(gpu, name, a, a.state, slotBytes);
      requireBytes(name, 'x', a.x, a.tokens * C * 4);
      requireBytes(name, 'weight', a.weight, C * K * 4);
      requireBytes(name, 'out', a.out, a.tokens * C * 4);
      const params = new Params(4).u32(a.tokens).u32(C).u32(a.sequences).u32(slots);
      const buffers = [a.x, a.weight, a.slotIds, a.seqIds, a.state, a.out];
      dispatch(gpu, pass, cached, label, params, buffers, grid2d(gpu, Math.ceil((a.sequences * (C / 4)) / wg)));
    },
  };
}
