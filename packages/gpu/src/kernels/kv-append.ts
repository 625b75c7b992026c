// Appends a step's new K/V rows to the paged cache (see shaders/attention/kv-append.wgsl and the layout
// in paged-kv.ts). Run it after RoPE on k and before attention of the same step.

import src from '../../../../shaders/attention/kv-append.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, withParams } from '../kernel.ts';
import { type AttentionShape, type PagedKv, type StepTokens, checkAttentionShape, checkPaged } from './paged-kv.ts';

export interface KvAppendArgs extends PagedKv, StepTokens {
  /** (T, Hkv, D) f32: the new tokens' keys (after RoPE). */
  k: BufferRef;
  /** (T, Hkv, D) f32: the new tokens' values. */
  v: BufferRef;
}

export interface KvAppend {
  encode(pass: GPUComputePassEncoder, args: KvAppendArgs): void;
}

/**
 * Tokens whose page-table entry is out of range are skipped on the GPU (positions are not known here).
 * @example
 * const append = createKvAppend(gpu, { heads: 8, kvHeads: 2, headDim: 64, pageSize: 16 });
 * append.encode(pass, { k, v, kCache, vCache, pageTable, sequences: B, maxPagesPerSeq, seqIds, positions, tokens: T });
 */
export function createKvAppend(gpu: Gpu, shape: AttentionShape, options: { workgroupSize?: number } = {}): KvAppend {
  const name = 'kv-append';
  const s = checkAttentionShape(name, shape);
  const wg = options.workgroupSize ?? 64;
  const cached = gpu.pipelines.get({
    name: 'kv-append',
    variant: 'f32',
    code: src,
    bindings: withParams('read', 'read', 'storage', 'storage', 'read', 'read', 'read'),
    constants: { WG_SIZE: wg },
  });
  const row = s.kvHeads * s.headDim;
  return {
    encode(pass, a) {
      const pages = checkPaged(gpu, name, s, a, a);
      requireBytes(name, 'k', a.k, a.tokens * row * 4);
      requireBytes(name, 'v', a.v, a.tokens * row * 4);
      const params = new Params(8).u32(a.tokens).u32(row).u32(s.pageSize).u32(a.maxPagesPerSeq).u32(a.sequences).u32(pages).u32(0).u32(0);
      dispatch(gpu, pass, cached, name, params, [a.k, a.v, a.kCache, a.vCache, a.pageTable, a.seqIds, a.positions],
        grid2d(gpu, Math.ceil((a.tokens * row) / wg)));
    },
  };
}
