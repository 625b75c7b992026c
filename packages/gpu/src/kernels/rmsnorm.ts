// RMSNorm over the last dimension (see shaders/norm/rmsnorm.wgsl): the prefill path's norms before its GEMMs, and
// the final norm when more logits rows are wanted than a GEMV takes. Decode GEMVs fuse the norm instead.

import src from '../../../../shaders/norm/rmsnorm.wgsl?raw';
import reduce from '../../../../shaders/lib/reduce.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

export interface RmsNormArgs {
  /** (T, C) f32. */
  x: BufferRef;
  /** (C) f32. */
  weight: BufferRef;
  /** (T, C) f32. */
  out: BufferRef;
  rows: number;
  cols: number;
  eps: number;
}

export interface RmsNorm {
  encode(pass: GPUComputePassEncoder, args: RmsNormArgs): void;
}

/**
 * @example
 * const norm = createRmsNorm(gpu);
 * norm.encode(pass, { x: h, weight: attnNorm, out: xn, rows: T, cols: C, eps: 1e-5 });
 * // accumulate: out += the normed rows (x and out must be different buffers)
 * createRmsNorm(gpu, { accumulate: true }).encode(pass, { x: attnOut, weight: postNorm, out: h, rows: T, cols: C, eps });
 */
export function createRmsNorm(gpu: Gpu, options: { workgroupSize?: number; accumulate?: boolean } = {}): RmsNorm {
  const wg = options.workgroupSize ?? 64;
  if (!Number.isInteger(wg) || wg < 2 || (wg & (wg - 1)) !== 0 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError('createRmsNorm', 'workgroupSize', `a power of two in 2..${gpu.limits.maxComputeInvocationsPerWorkgroup} (lib/reduce.wgsl halves it to one pair)`, String(wg));
  }
  const cached = gpu.pipelines.get({
    name: 'rmsnorm',
    variant: 'f32',
    code: `${src}\n${reduce}`,
    bindings: withParams('read', 'read', 'storage'),
    constants: { WG_SIZE: wg, ACCUMULATE: options.accumulate ? 1 : 0 },
  });
  const name = 'rmsnorm';
  return {
    encode(pass, a) {
      requireDim(name, 'rows', a.rows);
      requireDim(name, 'cols', a.cols);
      const bytes = a.rows * a.cols * 4;
      requireBytes(name, 'x', a.x, bytes);
      requireBytes(name, 'weight', a.weight, a.cols * 4);
      requireBytes(name, 'out', a.out, bytes);
      const params = new Params(4).u32(a.rows).u32(a.cols).f32(a.eps).u32(0);
      dispatch(gpu, pass, cached, name, params, [a.x, a.weight, a.out], grid2d(gpu, a.rows));
    },
  };
}
