// Pooling of an encoder's packed hidden states into one vector per sequence, with L2 normalization and Matryoshka
// truncation in the same dispatch (see shaders/pooling/pool.wgsl): the last step of an embedding pass.

import src from '../../../../shaders/pooling/pool.wgsl?raw';
import reduce from '../../../../shaders/lib/reduce.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import type { PackedSequences } from './attention-encoder.ts';

/** How a sequence's hidden states become one vector: their mean, the first token's (CLS), or the last token's. */
export type PoolingMode = 'mean' | 'cls' | 'last';

export interface PoolOptions {
  mode: PoolingMode;
  /** Divide each vector by its L2 norm (default true). */
  normalize?: boolean;
  /** Invocations per workgroup, a power of two ≥ 2 (default 64). */
  workgroupSize?: number;
}

export interface PoolArgs extends PackedSequences {
  /** (T, C) f32 hidden states. */
  x: BufferRef;
  /** C. */
  cols: number;
  /** Values kept per vector, 1..C (default C): the first `dims`, normalized on their own (Matryoshka). */
  dims?: number;
  /** (B, dims) f32. */
  out: BufferRef;
}

export interface Pool {
  readonly mode: PoolingMode;
  encode(pass: GPUComputePassEncoder, args: PoolArgs): void;
}

const MODES: Record<PoolingMode, number> = { mean: 0, cls: 1, last: 2 };

/**
 * out[b] = normalize(pool(x[rows of sequence b]))[:dims].
 *
 * @example
 * createPool(gpu, { mode: 'mean' }).encode(pass, { x: hidden, cols: C, out: vectors, seqStarts, sequences: B, tokens: T });
 */
export function createPool(gpu: Gpu, options: PoolOptions): Pool {
  const name = 'pool';
  const wg = options.workgroupSize ?? 64;
  if (!Number.isInteger(wg) || wg < 2 || (wg & (wg - 1)) !== 0 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', `a power of two in 2..${gpu.limits.maxComputeInvocationsPerWorkgroup}`, String(wg));
  }
  const mode = MODES[options.mode];
  if (mode === undefined || !Object.hasOwn(MODES, options.mode)) {
    throw new TypeError(`${name}: mode must be 'mean', 'cls' or 'last', got '${String(options.mode)}'`);
  }
  const cached = gpu.pipelines.get({
    name,
    variant: 'f32',
    code: `${src}\n${reduce}`,
    bindings: withParams('read', 'read', 'storage'),
    constants: { WG_SIZE: wg, POOL: mode, NORMALIZE: options.normalize === false ? 0 : 1 },
  });
  return {
    mode: options.mode,
    encode(pass, a) {
      requireDim(name, 'tokens', a.tokens);
      requireDim(name, 'sequences', a.sequences);
      requireDim(name, 'cols', a.cols);
      const dims = a.dims ?? a.cols;
      if (!Number.isInteger(dims) || dims < 1 || dims > a.cols) throw new ShapeError(name, 'dims', `an integer in 1..${a.cols}`, String(dims));
      requireBytes(name, 'x', a.x, a.tokens * a.cols * 4);
      requireBytes(name, 'seqStarts', a.seqStarts, (a.sequences + 1) * 4);
      requireBytes(name, 'out', a.out, a.sequences * dims * 4);
      const params = new Params(4).u32(a.sequences).u32(a.cols).u32(dims).u32(0);
      dispatch(gpu, pass, cached, name, params, [a.x, a.seqStarts, a.out], grid2d(gpu, a.sequences));
    },
  };
}
