// RMSNorm over the last dimension, optionally fused with the residual add (see shaders/norm/rmsnorm.wgsl).

import src from '../../../../shaders/norm/rmsnorm.wgsl?raw';
import reduce from '../../../../shaders/lib/reduce.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';

export interface RmsNormArgs {
  /** (T, C) f32: the input (the sublayer output when fused). */
  x: BufferRef;
  /** (C) f32. */
  weight: BufferRef;
  /** (T, C) f32. */
  out: BufferRef;
  /** (T, C) f32, read-write: the residual stream, updated in place to h + x (fused variant only). */
  residual?: BufferRef;
  rows: number;
  cols: number;
  eps: number;
}

export interface RmsNorm {
  encode(pass: GPUComputePassEncoder, args: RmsNormArgs): void;
}

/**
 * @example
 * const norm = createRmsNorm(gpu, { residual: true });
 * norm.encode(pass, { x, weight, out, residual, rows: T, cols: C, eps: 1e-5 });
 */
export function createRmsNorm(gpu: Gpu, options: { residual?: boolean; workgroupSize?: number } = {}): RmsNorm {
  const residual = options.residual ?? false;
  const cached = gpu.pipelines.get({
    name: 'rmsnorm',
    variant: 'f32',
    code: src + reduce,
    bindings: withParams('read', 'read', 'storage', 'storage'),
    constants: { WG_SIZE: options.workgroupSize ?? 64, RESIDUAL: residual ? 1 : 0 },
  });
  const name = residual ? 'rmsnorm+residual' : 'rmsnorm';
  return {
    encode(pass, a) {
      requireDim(name, 'rows', a.rows);
      requireDim(name, 'cols', a.cols);
      const bytes = a.rows * a.cols * 4;
      requireBytes(name, 'x', a.x, bytes);
      requireBytes(name, 'weight', a.weight, a.cols * 4);
      requireBytes(name, 'out', a.out, bytes);
      if (residual) {
        if (!a.residual) throw new TypeError(`${name}: the fused variant needs 'residual'`);
        requireBytes(name, 'residual', a.residual, bytes);
      }
      const params = new Params(4).u32(a.rows).u32(a.cols).f32(a.eps).u32(0);
      dispatch(gpu, pass, cached, name, params, [a.x, a.weight, a.out, residual ? a.residual! : unusedBinding(gpu)], grid2d(gpu, a.rows));
    },
  };
}
