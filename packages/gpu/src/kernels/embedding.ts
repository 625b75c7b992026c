// Token embedding gather from a weight in its stored format (any part of a split weight). See
// shaders/matmul/embedding.wgsl.

import src from '../../../../shaders/matmul/embedding.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import type { WeightDtype } from '../formats/blocks.ts';
import { CHUNK_ELEMS, requireWeightDtype, weightFormatWgsl, type WeightTensor } from '../weights.ts';

export interface EmbeddingOptions {
  dtype: WeightDtype | string;
  /** Invocations per workgroup, each one format chunk of a row (default 64). */
  workgroupSize?: number;
  /** Every gathered value is multiplied by this (an f32; Gemma: √C). Default 1: values are moved, not multiplied. */
  scale?: number;
}

export interface EmbeddingArgs {
  /** (V, C): the token embedding table. */
  weight: WeightTensor;
  /** (T) u32 token ids. An id ≥ V gives a row of zeros (it never reads out of bounds). */
  ids: BufferRef;
  /** (T, C) f32. */
  out: BufferRef;
  /** T: tokens. */
  tokens: number;
}

export interface Embedding {
  readonly dtype: WeightDtype;
  encode(pass: GPUComputePassEncoder, args: EmbeddingArgs): void;
}

/**
 * out[t, :] = dequant(W[ids[t], :]); bit-exact with reference/embedding.ts for every format.
 *
 * @example
 * const embed = createEmbedding(gpu, { dtype: 'q8_0' });
 * embed.encode(pass, { weight: tokEmbd, ids, out: hidden, tokens: T });
 */
export function createEmbedding(gpu: Gpu, options: EmbeddingOptions): Embedding {
  requireWeightDtype(options.dtype);
  const dtype = options.dtype;
  const name = `embedding(${dtype})`;
  const wg = options.workgroupSize ?? 64;
  const scale = options.scale ?? 1;
  if (!Number.isFinite(scale) || Math.fround(scale) !== scale) throw new ShapeError(name, 'scale', 'a finite f32 value', String(options.scale));
  if (!Number.isInteger(wg) || wg < 1 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', `an integer in 1..${gpu.limits.maxComputeInvocationsPerWorkgroup}`, String(wg));
  }
  const cached = gpu.pipelines.get({
    name: 'embedding',
    variant: dtype,
    code: `${src}\n${weightFormatWgsl(dtype)}`,
    bindings: withParams('read', 'read', 'storage'),
    constants: { WG_SIZE: wg, SCALE: scale },
  });
  return {
    dtype,
    encode(pass, a) {
      const w = a.weight;
      if (w.dtype !== dtype) throw new ShapeError(name, 'weight', `a ${dtype} tensor`, `${w.dtype} tensor '${w.label}'`);
      requireDim(name, 'tokens', a.tokens);
      requireBytes(name, 'ids', a.ids, a.tokens * 4);
      requireBytes(name, 'out', a.out, a.tokens * w.k * 4);
      const wgx = Math.ceil(w.k / CHUNK_ELEMS[dtype] / wg);
      const [wgy, wgz] = grid2d(gpu, a.tokens);
      w.parts.forEach((part, i) => {
        const params = new Params(8)
          .u32(w.n).u32(w.k).u32(w.rowBytes).u32(part.row0).u32(part.rows).u32(a.tokens).u32(i === 0 ? 1 : 0).u32(0);
        dispatch(gpu, pass, cached, `${name} ${w.label}`, params, [part.buffer, a.ids, a.out], [wgx, wgy, wgz]);
      });
    },
  };
}
