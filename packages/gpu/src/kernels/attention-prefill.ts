// Causal attention of T query tokens over the paged cache, one pass of online softmax
// (see shaders/attention/attention-prefill.wgsl). Serves prefill after a cached prefix and speculative
// verify: tokens may belong to several sequences, each with its own positions.
// Variants: 'workgroup' (attention-prefill.wgsl, a workgroup per token and head block, for GPUs) and
// 'rows' (attention-prefill.rows.wgsl, an invocation per token and block of heads sharing a kv head,
// barrier-free, for software adapters).

import src from '../../../../shaders/attention/attention-prefill.wgsl?raw';
import block from '../../../../shaders/lib/attention-block.wgsl?raw';
import rowsSrc from '../../../../shaders/attention/attention-prefill.rows.wgsl?raw';
import rowLib from '../../../../shaders/lib/attention-row.wgsl?raw';
import paramsLib from '../../../../shaders/lib/attention-params.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import {
  type AttentionShape, type AttentionVariant, type PagedKv, type StepTokens, attentionVariant, checkAttentionShape, checkPaged, checkWindow,
  headsPerInvocation, headsPerWorkgroup, requireWorkgroupSize,
} from './paged-kv.ts';

/** options.scale, checked, or 1/√D. */
export function attentionScale(kernel: string, s: { headDim: number }, options: AttentionOptions): number {
  const scale = options.scale ?? 1 / Math.sqrt(s.headDim);
  if (!(scale > 0 && Number.isFinite(scale))) throw new ShapeError(kernel, 'scale', 'a positive finite number', String(options.scale));
  return scale;
}

export interface AttentionOptions {
  /** Scale of the scores q·k (default 1/√D, as most families; Gemma 3: 1/√query_pre_attn_scalar). */
  scale?: number;
  /** Invocations per workgroup (default 64 for 'workgroup', 8 for 'rows'). */
  workgroupSize?: number;
  /**
   * 'workgroup' only: query heads per workgroup (a divisor of H / Hkv); chosen to fit workgroup storage by default.
   */
  headsPerWorkgroup?: number;
  /**
   * 'rows' only: query heads per invocation (a divisor of H / Hkv, at most 8 and 512 / D); each K/V row is
   * loaded once for all of them. Default: the largest that fits.
   */
  headsPerInvocation?: number;
  /**
   * 'rows' (an invocation per token and head block, no barrier) or 'workgroup' (key blocks in workgroup memory).
   * Default: 'rows' on a software adapter (isSoftwareAdapter: SwiftShader, llvmpipe), else 'workgroup'.
   */
  variant?: AttentionVariant;
}

export interface AttentionPrefillArgs extends PagedKv, StepTokens {
  /** (T, H, D) f32 queries (after RoPE). */
  q: BufferRef;
  /** (T, H, D) f32. */
  out: BufferRef;
  /** Sliding window: a query at position p attends to keys j with p - j < window; 0 (default) = all of 0..p. */
  window?: number;
}

export interface AttentionPrefill {
  readonly variant: AttentionVariant;
  /** Query heads per workgroup sharing K/V reads ('workgroup'); 1 for 'rows'. */
  readonly headsPerWorkgroup: number;
  /** Query heads per invocation sharing K/V reads ('rows'); 1 for 'workgroup'. */
  readonly headsPerInvocation: number;
  encode(pass: GPUComputePassEncoder, args: AttentionPrefillArgs): void;
}

/**
 * Positions past the page table's reach (maxPagesPerSeq * PAGE) are clamped on the GPU.
 * @example
 * const attn = createAttentionPrefill(gpu, { heads: 32, kvHeads: 8, headDim: 64 }); // 'rows' on SwiftShader
 * attn.encode(pass, { q, out, kCache, vCache, pageTable, sequences: B, maxPagesPerSeq, seqIds, positions, tokens: T });
 */
export function createAttentionPrefill(gpu: Gpu, shape: AttentionShape, options: AttentionOptions = {}): AttentionPrefill {
  const name = 'attention-prefill';
  const s = checkAttentionShape(name, shape);
  const variant = attentionVariant(gpu, name, options);
  const rows = variant === 'rows';
  const wg = options.workgroupSize ?? (rows ? 8 : 64);
  requireWorkgroupSize(gpu, name, wg);
  const hpw = rows ? 1 : headsPerWorkgroup(gpu, name, s, wg, options.headsPerWorkgroup);
  const hpi = rows ? headsPerInvocation(name, s, options.headsPerInvocation) : 1;
  const scale = attentionScale(name, s, options);
  const cached = gpu.pipelines.get({
    name: 'attention-prefill',
    variant: `f32+${variant}`,
    code: rows ? `${rowsSrc}\n${rowLib}\n${paramsLib}` : `${src}\n${block}\n${paramsLib}`,
    bindings: withParams('read', 'read', 'read', 'read', 'read', 'read', 'storage'),
    constants: rows ? { WG_SIZE: wg, HEAD_DIM: s.headDim, HPI: hpi } : { WG_SIZE: wg, HEAD_DIM: s.headDim, HPW: hpw },
  });
  const rowBytes = s.heads * s.headDim * 4;
  return {
    variant,
    headsPerWorkgroup: hpw,
    headsPerInvocation: hpi,
    encode(pass, a) {
      checkPaged(gpu, name, s, a, a);
      requireBytes(name, 'q', a.q, a.tokens * rowBytes);
      requireBytes(name, 'out', a.out, a.tokens * rowBytes);
      const window = checkWindow(name, a.window);
      const params = new Params(12).u32(a.tokens).u32(s.heads).u32(s.kvHeads).u32(s.pageSize).u32(a.maxPagesPerSeq)
        .u32(0).u32(0).u32(0).f32(scale).u32(window).u32(0).u32(0); // layout: lib/attention-params.wgsl
      const workgroups = rows ? Math.ceil((a.tokens * (s.heads / hpi)) / wg) : a.tokens * (s.heads / hpw);
      dispatch(gpu, pass, cached, name, params, [a.q, a.kCache, a.vCache, a.pageTable, a.seqIds, a.positions, a.out],
        grid2d(gpu, workgroups));
    },
  };
}
