// GELU with the tanh approximation, optionally gated (GEGLU). See shaders/elementwise/gelu-tanh.wgsl.

import src from '../../../../shaders/elementwise/gelu-tanh.wgsl?raw';
import type { Gpu } from '../device.ts';
import { dispatch, grid2d, unusedBinding, withParams } from '../kernel.ts';
import { gatedParams, type GatedArgs } from './activation.ts';

/**
 * @example
 * createGeluTanh(gpu).encode(pass, { x, out, rows: T, cols: F });
 */
export function createGeluTanh(gpu: Gpu, options: { gated?: boolean } = {}): { encode(pass: GPUComputePassEncoder, args: GatedArgs): void } {
  const WG = 256;
  const gated = options.gated ?? false;
  const cached = gpu.pipelines.get({
    name: 'gelu-tanh',
    variant: 'f32',
    code: src,
    bindings: withParams('read', 'read', 'storage'),
    constants: { WG_SIZE: WG, GATED: gated ? 1 : 0 },
  });
  const name = gated ? 'geglu-tanh' : 'gelu-tanh';
  return {
    encode(pass, a) {
      const [x, y] = grid2d(gpu, Math.ceil((a.rows * a.cols) / WG));
      dispatch(gpu, pass, cached, name, gatedParams(name, a, gated, x), [a.x, gated ? a.up! : unusedBinding(gpu), a.out], [x, y]);
    },
  };
}
