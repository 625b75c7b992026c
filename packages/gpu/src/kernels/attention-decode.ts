// Flash-decoding: one query token per sequence, B sequences of different lengths in one dispatch.
// Pass 1 (shaders/attention/attention-decode.wgsl) splits each context into chunks of SPLIT keys handled
// by separate workgroups, so a long context still fills the GPU; pass 2 (attention-decode-reduce.wgsl)
// merges the partial softmax states; when one split holds every context of the step, pass 1 normalizes and writes
// the output itself and pass 2 is not run (one dispatch). The wrapper owns the partials scratch (grown on demand)
// unless the caller passes one.
// Two pass-1 variants share the partials layout and the reduce: 'workgroup' (attention-decode.wgsl, a
// workgroup per split and head block, for GPUs) and 'rows' (attention-decode.rows.wgsl, an invocation per
// split and block of heads sharing a kv head, barrier-free, for software adapters such as SwiftShader).

import src from '../../../../shaders/attention/attention-decode.wgsl?raw';
import rowsSrc from '../../../../shaders/attention/attention-decode.rows.wgsl?raw';
import rowLib from '../../../../shaders/lib/attention-row.wgsl?raw';
import paramsLib from '../../../../shaders/lib/attention-params.wgsl?raw';
import reduceSrc from '../../../../shaders/attention/attention-decode-reduce.wgsl?raw';
import block from '../../../../shaders/lib/attention-block.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBindable, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import {
  type AttentionShape, type PagedKv, type StepTokens, checkAttentionShape, checkContext, checkPaged, checkWindow, headsPerInvocation, headsPerWorkgroup, requireWorkgroupSize,
  type AttentionVariant, attentionVariant,
} from './paged-kv.ts';
import { attentionScale, type AttentionOptions } from './attention-prefill.ts';

/**
 * SPLIT and workgroup size per variant when not given. 'rows' from a SwiftShader sweep (H/Hkv/D 32/8/64 and
 * 14/2/64, contexts 128..4096): small workgroups and splits keep both CPU cores busy at short contexts.
 */
const DEFAULT_SPLIT = { workgroup: 256, rows: 64 } as const;
const DEFAULT_WG = { workgroup: 64, rows: 8 } as const;

export interface AttentionDecodeOptions extends AttentionOptions {
  /** SPLIT: keys per chunk (default 256 for 'workgroup', 64 for 'rows'). */
  split?: number;
  label?: string;
}

export interface AttentionDecodeArgs extends PagedKv, StepTokens {
  /** (T, H, D) f32 queries (after RoPE); T = B with seqIds = 0..B-1 for a plain decode step. */
  q: BufferRef;
  /** (T, H, D) f32. */
  out: BufferRef;
  /** Upper bound on positions[t] + 1 over the step (host-known); keys past it are ignored. */
  maxContext: number;
  /** Sliding window: a query at position p attends to keys j with p - j < window; 0 (default) = all of 0..p. */
  window?: number;
  /** Partials buffer of at least scratchBytes(T, maxContext) bytes; the wrapper's own when omitted. */
  scratch?: BufferRef;
}

export interface AttentionDecode {
  readonly variant: AttentionVariant;
  /** Query heads per workgroup sharing K/V reads ('workgroup'); 1 for 'rows'. */
  readonly headsPerWorkgroup: number;
  /** Query heads per invocation sharing K/V reads ('rows'); 1 for 'workgroup'. */
  readonly headsPerInvocation: number;
  readonly split: number;
  /** Bytes of partial state for T query tokens with contexts up to maxContext. */
  scratchBytes(tokens: number, maxContext: number): number;
  encode(pass: GPUComputePassEncoder, args: AttentionDecodeArgs): void;
  /** Frees the wrapper's scratch. Idempotent. */
  destroy(): void;
}

/**
 * @example
 * const attn = createAttentionDecode(gpu, { heads: 32, kvHeads: 8, headDim: 64 }); // 'rows' on SwiftShader
 * attn.encode(pass, { q, out, kCache, vCache, pageTable, sequences: B, maxPagesPerSeq,
 *                     seqIds, positions, tokens: B, maxContext, window: 4096 }); // window: Mistral-style
 * attn.destroy();
 */
export function createAttentionDecode(gpu: Gpu, shape: AttentionShape, options: AttentionDecodeOptions = {}): AttentionDecode {
  const name = 'attention-decode';
  const s = checkAttentionShape(name, shape);
  const variant = attentionVariant(gpu, name, options);
  const rows = variant === 'rows';
  const wg = options.workgroupSize ?? DEFAULT_WG[variant];
  requireWorkgroupSize(gpu, name, wg);
  const split = options.split ?? DEFAULT_SPLIT[variant];
  requireDim(name, 'split', split);
  const hpw = rows ? 1 : headsPerWorkgroup(gpu, name, s, wg, options.headsPerWorkgroup);
  const hpi = rows ? headsPerInvocation(name, s, options.headsPerInvocation) : 1;
  const scale = attentionScale(name, s, options);
  const label = options.label ?? name;
  const cached = gpu.pipelines.get({
    name: 'attention-decode',
    variant: `f32+${variant}`,
    code: rows ? `${rowsSrc}\n${rowLib}\n${paramsLib}` : `${src}\n${block}\n${paramsLib}`,
    bindings: withParams('read', 'read', 'read', 'read', 'read', 'read', 'storage', 'storage'),
    constants: rows ? { WG_SIZE: wg, HEAD_DIM: s.headDim, HPI: hpi } : { WG_SIZE: wg, HEAD_DIM: s.headDim, HPW: hpw },
  });
  const reduce = gpu.pipelines.get({
    name: 'attention-decode-reduce',
    variant: 'f32',
    code: reduceSrc,
    bindings: withParams('read', 'read', 'storage'),
    constants: { WG_SIZE: wg },
  });
  const rowBytes = s.heads * s.headDim * 4;
  // Layout of the partials: o (T, H, NS, D), then (m, l) pairs (T, H, NS, 2).
  const layout = (tokens: number, maxContext: number) => {
    const splits = Math.ceil(maxContext / split);
    const mlOffset = tokens * s.heads * splits * s.headDim;
    return { splits, mlOffset, bytes: (mlOffset + tokens * s.heads * splits * 2) * 4 };
  };
  // Buffers outgrown stay alive until destroy(): an earlier encode may still reference them.
  const owned: GPUBuffer[] = [];
  let destroyed = false;
  const ownScratch = (bytes: number): GPUBuffer => {
    const last = owned[owned.length - 1];
    if (last && last.size >= bytes) return last;
    requireBindable(gpu, `${label} partials`, bytes);
    const size = Math.min(2 ** Math.ceil(Math.log2(Math.max(bytes, 256))), Math.max(bytes, gpu.limits.maxStorageBufferBindingSize));
    const b = gpu.device.createBuffer({ label: `${label}.partials`, size, usage: GPUBufferUsage.STORAGE });
    owned.push(b);
    return b;
  };
  return {
    variant,
    headsPerWorkgroup: hpw,
    headsPerInvocation: hpi,
    split,
    scratchBytes: (tokens, maxContext) => layout(tokens, maxContext).bytes,
    encode(pass, a) {
      if (destroyed) throw new Error(`${label}: encode() after destroy()`);
      checkPaged(gpu, name, s, a, a);
      checkContext(name, s, a, a.maxContext);
      requireBytes(name, 'q', a.q, a.tokens * rowBytes);
      requireBytes(name, 'out', a.out, a.tokens * rowBytes);
      const window = checkWindow(name, a.window);
      const { splits, mlOffset, bytes } = layout(a.tokens, a.maxContext);
      if (a.scratch) requireBytes(name, 'scratch', a.scratch, bytes);
      const part = a.scratch ?? ownScratch(bytes);
      const p1 = new Params(12).u32(a.tokens).u32(s.heads).u32(s.kvHeads).u32(s.pageSize).u32(a.maxPagesPerSeq)
        .u32(split).u32(splits).u32(mlOffset).f32(scale).u32(window).u32(0).u32(0); // layout: lib/attention-params.wgsl
      let grid: [number, number];
      if (rows) {
        grid = grid2d(gpu, Math.ceil((a.tokens * (s.heads / hpi) * splits) / wg));
      } else {
        const blocks = a.tokens * (s.heads / hpw);
        const max = gpu.limits.maxComputeWorkgroupsPerDimension;
        if (blocks > max) throw new ShapeError(name, 'tokens', `at most ${Math.floor(max / (s.heads / hpw))} per dispatch`, String(a.tokens));
        grid = [splits, blocks];
      }
      dispatch(gpu, pass, cached, label, p1, [a.q, a.kCache, a.vCache, a.pageTable, a.seqIds, a.positions, part, a.out], grid);
      if (splits === 1) return; // pass 1 wrote the output
      const p2 = new Params(8).u32(a.tokens * s.heads).u32(s.heads).u32(s.headDim).u32(split).u32(splits).u32(mlOffset)
        .u32(a.maxPagesPerSeq * s.pageSize).u32(window);
      dispatch(gpu, pass, reduce, `${label}.reduce`, p2, [part, a.positions, a.out], grid2d(gpu, a.tokens * s.heads));
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const b of owned) b.destroy();
      owned.length = 0;
    },
  };
}
