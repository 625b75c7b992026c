// GEMV on weights in their stored format (decode: one token per sequence). See shaders/matmul/gemv.wgsl.

import plainSrc from '../../../../shaders/matmul/gemv.wgsl?raw';
import subgroupSrc from '../../../../shaders/matmul/gemv.subgroup.wgsl?raw';
import matmulIo from '../../../../shaders/lib/matmul-io.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError, UnsupportedError } from '../errors.ts';
import type { WeightDtype } from '../reference/blocks.ts';
import { requireWeightDtype, weightDotWgsl, type WeightTensor } from '../weights.ts';

export interface GemvOptions {
  dtype: WeightDtype | string;
  /** Add a per-row f32 bias (Qwen2 q/k/v). */
  bias?: boolean;
  /** y += W·x instead of y = W·x (residual fused into the output projection). */
  accumulate?: boolean;
  /** Use the subgroup variant; by default when the device has subgroups. */
  subgroups?: boolean;
  workgroupSize?: number;
  /** Subgroup variant only: rows per workgroup (default 64 on software adapters, else 32). */
  rowsPerWorkgroup?: number;
  /**
   * Rows an invocation (plain) or subgroup dots with one x chunk, 1..16. Defaults: software adapters
   * 16 (subgroups) or 12 (plain); GPUs 4 (subgroups) or 2 (plain).
   */
  rowsPerInvocation?: number;
}

export interface GemvArgs {
  weight: WeightTensor;
  /** (B, K) f32. */
  x: BufferRef;
  /** (B, N) f32. */
  y: BufferRef;
  /** (N) f32, when created with bias. */
  bias?: BufferRef;
  /** Vectors B sharing this weight (default 1). */
  batch?: number;
}

export interface Gemv {
  readonly dtype: WeightDtype;
  encode(pass: GPUComputePassEncoder, args: GemvArgs): void;
}

/**
 * @example
 * const gemv = createGemv(gpu, { dtype: 'q4_0' });
 * gemv.encode(pass, { weight, x, y });
 */
export function createGemv(gpu: Gpu, options: GemvOptions): Gemv {
  requireWeightDtype(options.dtype);
  const dtype = options.dtype;
  // Tuned on SwiftShader (software: invocations run as SIMD lanes on CPU cores, so a lane should own
  // many rows to reuse its x chunk) and kept conservative for GPUs (few rows per lane for parallelism).
  const software = gpu.adapterInfo.isFallbackAdapter;
  const subgroups = options.subgroups ?? gpu.features.subgroups;
  if (subgroups && !gpu.features.subgroups) {
    throw new UnsupportedError('gemv subgroup variant', 'this device has no subgroups feature; omit `subgroups` to use the plain variant.');
  }
  if (!subgroups && options.rowsPerWorkgroup !== undefined) {
    throw new TypeError('gemv: rowsPerWorkgroup tunes the subgroup variant; the plain one covers workgroupSize × rowsPerInvocation rows.');
  }
  const wg = options.workgroupSize ?? 64;
  const rowsPerInvocation = options.rowsPerInvocation ?? (software ? (subgroups ? 16 : 12) : subgroups ? 4 : 2);
  if (!Number.isInteger(rowsPerInvocation) || rowsPerInvocation < 1 || rowsPerInvocation > 16) {
    throw new ShapeError('gemv', 'rowsPerInvocation', 'an integer in 1..16', String(rowsPerInvocation));
  }
  // Rows one workgroup covers.
  const rows = subgroups ? options.rowsPerWorkgroup ?? (software ? 64 : 32) : wg * rowsPerInvocation;
  const bias = options.bias ?? false;
  const constants: Record<string, number> = { WG_SIZE: wg, HAS_BIAS: bias ? 1 : 0, ACCUMULATE: options.accumulate ? 1 : 0 };
  if (subgroups) Object.assign(constants, { ROWS: rows, ROWS_PER_SG: rowsPerInvocation });
  else constants.ROWS = rowsPerInvocation;
  const cached = gpu.pipelines.get({
    name: 'gemv',
    variant: `${dtype}${subgroups ? '+subgroups' : ''}`,
    code: `${subgroups ? subgroupSrc : plainSrc}\n${matmulIo}\n${weightDotWgsl(dtype)}`,
    bindings: withParams('read', 'read', 'storage', 'read'),
    constants,
  });
  const name = `gemv(${dtype}${subgroups ? '+subgroups' : ''})`;
  return {
    dtype,
    encode(pass, a) {
      const w = a.weight;
      if (w.dtype !== dtype) throw new ShapeError(name, 'weight', `a ${dtype} tensor`, `${w.dtype} tensor '${w.label}'`);
      const batch = a.batch ?? 1;
      requireDim(name, 'batch', batch);
      requireBytes(name, 'x', a.x, batch * w.k * 4);
      requireBytes(name, 'y', a.y, batch * w.n * 4);
      if (bias) {
        if (!a.bias) throw new TypeError(`${name}: created with bias, so 'bias' is required`);
        requireBytes(name, 'bias', a.bias, w.n * 4);
      }
      const max = gpu.limits.maxComputeWorkgroupsPerDimension;
      if (batch > max) throw new ShapeError(name, 'batch', `at most ${max}`, String(batch));
      for (const part of w.parts) {
        const wgx = Math.ceil(part.rows / rows);
        if (wgx > max) throw new ShapeError(name, 'weight rows per part', `at most ${max * rows}`, String(part.rows));
        const params = new Params(8).u32(w.n).u32(w.k).u32(w.rowBytes).u32(part.row0).u32(part.rows).u32(0).u32(0).u32(0);
        dispatch(gpu, pass, cached, `${name} ${w.label}`, params, [part.buffer, a.x, a.y, bias ? a.bias! : unusedBinding(gpu)], [wgx, batch]);
      }
    },
  };
}
