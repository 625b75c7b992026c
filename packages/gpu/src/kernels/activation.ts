// Shared argument checking for the gated activations (swiglu, gelu-tanh): rows of F elements read at a
// stride, so a fused (T, 2F) gate_up projection is consumed in place.

import type { BufferRef } from '../kernel.ts';
import { Params, requireBytes, requireDim } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

export interface GatedArgs {
  /** Gate rows (the activation's input): row t starts at element t * stride. */
  x: BufferRef;
  /** Up rows (the multiplier): row t starts at element t * upStride + upOffset. */
  up: BufferRef;
  /** (T, F) f32. */
  out: BufferRef;
  rows: number;
  /** F. */
  cols: number;
  /** Elements between rows of x; default F. */
  stride?: number;
  /** Elements between rows of up; default F. */
  upStride?: number;
  /** Element offset of up's first row (F when up is the second half of a fused gate_up). */
  upOffset?: number;
}

/** Validates and packs the shared params block; returns it with the workgroup count. */
export function gatedParams(name: string, a: GatedArgs, wgx: number): Params {
  requireDim(name, 'rows', a.rows);
  requireDim(name, 'cols', a.cols);
  const stride = a.stride ?? a.cols;
  const upStride = a.upStride ?? a.cols;
  const upOffset = a.upOffset ?? 0;
  if (stride < a.cols) throw new ShapeError(name, 'stride', `≥ cols (${a.cols})`, String(stride));
  requireBytes(name, 'x', a.x, ((a.rows - 1) * stride + a.cols) * 4);
  requireBytes(name, 'out', a.out, a.rows * a.cols * 4);
  if (upStride < a.cols) throw new ShapeError(name, 'upStride', `≥ cols (${a.cols})`, String(upStride));
  requireBytes(name, 'up', a.up, ((a.rows - 1) * upStride + upOffset + a.cols) * 4);
  return new Params(8).u32(a.rows).u32(a.cols).u32(stride).u32(upStride).u32(upOffset).u32(wgx).u32(0).u32(0);
}
