// In-place residual add a += b (see shaders/elementwise/add.wgsl).

import src from '../../../../shaders/elementwise/add.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';

export interface AddArgs {
  /** (n) f32, updated in place to a + b. */
  a: BufferRef;
  /** (n) f32. */
  b: BufferRef;
  n: number;
}

/**
 * @example
 * createAdd(gpu).encode(pass, { a: residual, b: attnOut, n: T * C });
 */
export function createAdd(gpu: Gpu): { encode(pass: GPUComputePassEncoder, args: AddArgs): void } {
  const WG = 256;
  const cached = gpu.pipelines.get({ name: 'add', variant: 'f32', code: src, bindings: withParams('storage', 'read'), constants: { WG_SIZE: WG } });
  return {
    encode(pass, a) {
      requireDim('add', 'n', a.n);
      requireBytes('add', 'a', a.a, a.n * 4);
      requireBytes('add', 'b', a.b, a.n * 4);
      const [x, y] = grid2d(gpu, Math.ceil(a.n / (4 * WG)));
      dispatch(gpu, pass, cached, 'add', new Params(4).u32(a.n).u32(x), [a.a, a.b], [x, y]);
    },
  };
}
