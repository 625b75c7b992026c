// Causal attention of T query tokens over the paged cache, one pass of online softmax
// (see shaders/attention/attention-prefill.wgsl). Serves prefill after a cached prefix and speculative
// verify: tokens may belong to several sequences, each with its own positions.

import src from '../../../../shaders/attention/attention-prefill.wgsl?raw';
import block from '../../../../shaders/lib/attention-block.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, withParams } from '../kernel.ts';
import { type AttentionShape, type PagedKv, type StepTokens, checkAttentionShape, checkPaged, headsPerWorkgroup } from './paged-kv.ts';

export interface AttentionOptions {
  /** Score scale (default 1 / sqrt(D)). */
  scale?: number;
  workgroupSize?: number;
  /** Query heads per workgroup (a divisor of H / Hkv); chosen to fit workgroup storage by default. */
  headsPerWorkgroup?: number;
}

export interface AttentionPrefillArgs extends PagedKv, StepTokens {
  /** (T, H, D) f32 queries (after RoPE). */
  q: BufferRef;
  /** (T, H, D) f32. */
  out: BufferRef;
}

export interface AttentionPrefill {
  readonly headsPerWorkgroup: number;
  encode(pass: GPUComputePassEncoder, args: AttentionPrefillArgs): void;
}

/**
 * Positions past the page table's reach (maxPagesPerSeq * PAGE) are clamped on the GPU.
 * @example
 * const attn = createAttentionPrefill(gpu, { heads: 32, kvHeads: 8, headDim: 64 });
 * attn.encode(pass, { q, out, kCache, vCache, pageTable, sequences: B, maxPagesPerSeq, seqIds, positions, tokens: T });
 */
export function createAttentionPrefill(gpu: Gpu, shape: AttentionShape, options: AttentionOptions = {}): AttentionPrefill {
  const name = 'attention-prefill';
  const s = checkAttentionShape(name, shape);
  const wg = options.workgroupSize ?? 64;
  const hpw = headsPerWorkgroup(gpu, name, s, wg, options.headsPerWorkgroup);
  const scale = options.scale ?? 1 / Math.sqrt(s.headDim);
  const cached = gpu.pipelines.get({
    name: 'attention-prefill',
    variant: 'f32',
    code: `${src}\n${block}`,
    bindings: withParams('read', 'read', 'read', 'read', 'read', 'read', 'storage'),
    constants: { WG_SIZE: wg, HEAD_DIM: s.headDim, HPW: hpw },
  });
  const rowBytes = s.heads * s.headDim * 4;
  return {
    headsPerWorkgroup: hpw,
    encode(pass, a) {
      checkPaged(gpu, name, s, a, a);
      requireBytes(name, 'q', a.q, a.tokens * rowBytes);
      requireBytes(name, 'out', a.out, a.tokens * rowBytes);
      const params = new Params(8).u32(a.tokens).u32(s.heads).u32(s.kvHeads).u32(s.pageSize).u32(a.maxPagesPerSeq).f32(scale).u32(0).u32(0);
      dispatch(gpu, pass, cached, name, params, [a.q, a.kCache, a.vCache, a.pageTable, a.seqIds, a.positions, a.out],
        grid2d(gpu, a.tokens * (s.heads / hpw)));
    },
  };
}
