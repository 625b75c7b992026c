// LayerNorm with bias over the last dimension (see shaders/norm/layernorm.wgsl): the encoder's norms, BERT's post-norms
// and the embedding norm. A residual row may be added first (x + r, r's rows at any stride, 0 broadcasting one row),
// and the sum written out too, so an add before a norm never costs a dispatch of its own.

import src from '../../../../shaders/norm/layernorm.wgsl?raw';
import reduce from '../../../../shaders/lib/reduce.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

export interface LayerNormOptions {
  /** Normalize x + r instead of x (each encode passes `residual`). */
  residual?: boolean;
  /** Also write the sum x (+ r) to `sum` (each encode passes it). */
  sumOut?: boolean;
  /** Invocations per workgroup, a power of two ≥ 2 (default 64). */
  workgroupSize?: number;
}

export interface LayerNormArgs {
  /** (T, C) f32. */
  x: BufferRef;
  /** Rows of C f32 at `residualStride` elements apart, when created with residual. */
  residual?: BufferRef;
  /** Elements between the residual's rows: C (default), or 0 to add one row to every row (BERT's token-type row). */
  residualStride?: number;
  /** (C) f32. */
  gamma: BufferRef;
  /** (C) f32. */
  beta: BufferRef;
  /** (T, C) f32; not x's or the residual's buffer. */
  out: BufferRef;
  /** (T, C) f32: x (+ r), when created with sumOut. */
  sum?: BufferRef;
  rows: number;
  cols: number;
  eps: number;
}

export interface LayerNorm {
  encode(pass: GPUComputePassEncoder, args: LayerNormArgs): void;
}

/**
 * y = (s - mean) / sqrt(var + eps) * gamma + beta per row, s = x (+ residual).
 *
 * @example
 * const ln = createLayerNorm(gpu);
 * ln.encode(pass, { x: h, gamma: ln1w, beta: ln1b, out: h2, rows: T, cols: C, eps: 1e-12 });
 * // the embedding norm: LN(gathered token rows + token-type row 0)
 * createLayerNorm(gpu, { residual: true }).encode(pass, { x: e, residual: typeRow, residualStride: 0, gamma, beta, out: h, rows: T, cols: C, eps });
 */
export function createLayerNorm(gpu: Gpu, options: LayerNormOptions = {}): LayerNorm {
  const wg = options.workgroupSize ?? 64;
  const name = 'layernorm';
  if (!Number.isInteger(wg) || wg < 2 || (wg & (wg - 1)) !== 0 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', `a power of two in 2..${gpu.limits.maxComputeInvocationsPerWorkgroup} (lib/reduce.wgsl halves it to one pair)`, String(wg));
  }
  const residual = options.residual ?? false;
  const sumOut = options.sumOut ?? false;
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${reduce}`,
    bindings: withParams('read', 'read', 'read', 'read', 'storage', 'storage'),
    constants: { WG_SIZE: wg, RESIDUAL: residual ? 1 : 0, SUM_OUT: sumOut ? 1 : 0 },
  });
  return {
    encode(pass, a) {
      requireDim(name, 'rows', a.rows);
      requireDim(name, 'cols', a.cols);
      const bytes = a.rows * a.cols * 4;
      requireBytes(name, 'x', a.x, bytes);
      requireBytes(name, 'gamma', a.gamma, a.cols * 4);
      requireBytes(name, 'beta', a.beta, a.cols * 4);
      requireBytes(name, 'out', a.out, bytes);
      const stride = a.residualStride ?? a.cols;
      if (residual) {
        if (!a.residual) throw new TypeError(`${name}: created with residual, so 'residual' is required`);
        if (!Number.isInteger(stride) || stride < 0) throw new ShapeError(name, 'residualStride', 'an integer ≥ 0', String(stride));
        requireBytes(name, 'residual', a.residual, ((a.rows - 1) * stride + a.cols) * 4);
      }
      if (sumOut) {
        if (!a.sum) throw new TypeError(`${name}: created with sumOut, so 'sum' is required`);
        requireBytes(name, 'sum', a.sum, bytes);
      }
      // An unused r binds gamma again (read-only bindings may alias); an unused sum the dummy (writable ones may not).
      const r = residual ? a.residual! : a.gamma;
      const s = sumOut ? a.sum! : unusedBinding(gpu);
      const params = new Params(4).u32(a.rows).u32(a.cols).f32(a.eps).u32(residual ? stride : 0);
      dispatch(gpu, pass, cached, name, params, [a.x, r, a.gamma, a.beta, a.out, s], grid2d(gpu, a.rows));
    },
  };
}
