// GELU with erf (see shaders/elementwise/gelu-erf.wgsl and lib/gelu-erf.wgsl) on its own, for an up projection whose
// matmul cannot apply it in its epilogue (GemmOptions.activation 'gelu-erf' does, after the bias).

import src from '../../../../shaders/elementwise/gelu-erf.wgsl?raw';
import lib from '../../../../shaders/lib/gelu-erf.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

export interface GeluErfArgs {
  /** Rows of F f32, row t at element t * stride. */
  x: BufferRef;
  /** (T, F) f32; not x's buffer. */
  out: BufferRef;
  rows: number;
  /** F. */
  cols: number;
  /** Elements between rows of x (default F). */
  stride?: number;
}

/**
 * out = gelu(x) = 0.5 x (1 + erf(x / √2)), erf within 1.5e-7 (Abramowitz & Stegun 7.1.26).
 *
 * @example
 * createGeluErf(gpu).encode(pass, { x: up, out: act, rows: T, cols: F });
 */
export function createGeluErf(gpu: Gpu): { encode(pass: GPUComputePassEncoder, args: GeluErfArgs): void } {
  const WG = 256;
  const name = 'gelu-erf';
  const cached = gpu.pipelines.get({ name, variant: 'f32', code: `${src}\n${lib}`, bindings: withParams('read', 'storage'), constants: { WG_SIZE: WG } });
  return {
    encode(pass, a) {
      requireDim(name, 'rows', a.rows);
      requireDim(name, 'cols', a.cols);
      const stride = a.stride ?? a.cols;
      if (!Number.isInteger(stride) || stride < a.cols) throw new ShapeError(name, 'stride', `an integer ≥ cols (${a.cols})`, String(stride));
      requireBytes(name, 'x', a.x, ((a.rows - 1) * stride + a.cols) * 4);
      requireBytes(name, 'out', a.out, a.rows * a.cols * 4);
      const [x, y] = grid2d(gpu, Math.ceil((a.rows * a.cols) / WG));
      dispatch(gpu, pass, cached, name, new Params(4).u32(a.rows).u32(a.cols).u32(stride).u32(x), [a.x, a.out], [x, y]);
    },
  };
}
