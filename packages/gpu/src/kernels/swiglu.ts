// SwiGLU: out = silu(gate) * up (see shaders/elementwise/swiglu.wgsl), for steps where no fused gate|up GEMV
// applies it (GemvOptions.gated): prefill's GEMMs, or gate and up stored apart.

import src from '../../../../shaders/elementwise/swiglu.wgsl?raw';
import type { Gpu } from '../device.ts';
import { dispatch, grid2d, withParams } from '../kernel.ts';
import { gatedParams, type GatedArgs } from './activation.ts';

export type SwigluArgs = GatedArgs;

/**
 * @example
 * // fused gate_up (T, 2F): gate = first half, up = second half of each row
 * createSwiglu(gpu).encode(pass, { x: gateUp, up: gateUp, out, rows: T, cols: F, stride: 2 * F, upStride: 2 * F, upOffset: F });
 */
export function createSwiglu(gpu: Gpu): { encode(pass: GPUComputePassEncoder, args: SwigluArgs): void } {
  const WG = 256;
  const cached = gpu.pipelines.get({ name: 'swiglu', variant: 'f32', code: src, bindings: withParams('read', 'read', 'storage'), constants: { WG_SIZE: WG } });
  return {
    encode(pass, a) {
      const [x, y] = grid2d(gpu, Math.ceil((a.rows * a.cols) / WG));
      dispatch(gpu, pass, cached, 'swiglu', gatedParams('swiglu', a, x), [a.x, a.up, a.out], [x, y]);
    },
  };
}
