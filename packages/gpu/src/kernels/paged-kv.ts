// The paged KV-cache layout, documented once, and the shape checks every attention wrapper shares
// (rope-kv-append, attention-decode, attention-prefill). Sequences grow a page at a time, so many
// sequences of very different lengths share one pool of pages without copying on growth.
//
// Per layer, K and V are each one buffer of shape (pages, PAGE, Hkv, D) f32:
//   element (page, slot, kvh, d) lives at ((page * PAGE + slot) * Hkv + kvh) * D + d.
// The page table is (B, maxPagesPerSeq) u32: pageTable[b * maxPagesPerSeq + i] is the page holding
//   positions [i * PAGE, (i + 1) * PAGE) of sequence b. Page ids may be in any order; pages are shared
//   by nobody else. Entries past a sequence's length are never read.
// A step's tokens carry (T) u32 metadata: seqIds[t] (row of the page table) and positions[t] (absolute
//   position). Token t's K/V row is stored at page pageTable[seqIds[t], positions[t] / PAGE], slot
//   positions[t] % PAGE. A query at position p attends to positions 0..p of its own sequence, or with a
//   sliding window W > 0 (Mistral) to positions j with p - j < W only.
// Query head h reads kv head h / (H / Hkv) (grouped-query attention; H % Hkv == 0).

import { isSoftwareAdapter, type Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { refBytes, requireBindable, requireBytes, requireDim } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

/** Tokens per page unless a wrapper is told otherwise. */
export const DEFAULT_PAGE_SIZE = 16;

/** Largest head dimension the attention kernels accept. */
export const MAX_HEAD_DIM = 256;

/** The static attention shape of a model: fixed per model, so it is given when a wrapper is created. */
export interface AttentionShape {
  /** H: query heads. */
  heads: number;
  /** Hkv: key/value heads; H % Hkv == 0. */
  kvHeads: number;
  /** D: head dimension, a multiple of 4, at most 256. */
  headDim: number;
  /** PAGE: tokens per page (default 16). */
  pageSize?: number;
}

/** One layer's paged cache and the page table of the step's B sequences. */
export interface PagedKv {
  /** (pages, PAGE, Hkv, D) f32. */
  kCache: BufferRef;
  /** (pages, PAGE, Hkv, D) f32. */
  vCache: BufferRef;
  /** (B, maxPagesPerSeq) u32 page ids. */
  pageTable: BufferRef;
  /** B: rows of the page table. */
  sequences: number;
  /** Columns of the page table. */
  maxPagesPerSeq: number;
}

/** Per-token metadata of a step: which sequence each token belongs to and its absolute position. */
export interface StepTokens {
  /** (T) u32: index into the page table rows (the batch). */
  seqIds: BufferRef;
  /** (T) u32: absolute position of each token in its sequence. */
  positions: BufferRef;
  /** T. */
  tokens: number;
}

/** Checks a model's attention shape; returns it with the page size filled in. */
export function checkAttentionShape(kernel: string, s: AttentionShape): Required<AttentionShape> {
  requireDim(kernel, 'heads', s.heads);
  requireDim(kernel, 'kvHeads', s.kvHeads);
  if (s.heads % s.kvHeads !== 0) {
    throw new ShapeError(kernel, 'heads', `a multiple of kvHeads (${s.kvHeads}) for grouped-query attention`, String(s.heads));
  }
  requireDim(kernel, 'headDim', s.headDim, 4);
  if (s.headDim > MAX_HEAD_DIM) throw new ShapeError(kernel, 'headDim', `at most ${MAX_HEAD_DIM}`, String(s.headDim));
  const pageSize = s.pageSize ?? DEFAULT_PAGE_SIZE;
  requireDim(kernel, 'pageSize', pageSize);
  return { heads: s.heads, kvHeads: s.kvHeads, headDim: s.headDim, pageSize };
}

/** Checks the cache, page table and token metadata; returns the number of pages in the cache. */
export function checkPaged(gpu: Gpu, kernel: string, s: Required<AttentionShape>, kv: PagedKv, tok: StepTokens): number {
  requireDim(kernel, 'tokens', tok.tokens);
  requireDim(kernel, 'sequences', kv.sequences);
  requireDim(kernel, 'maxPagesPerSeq', kv.maxPagesPerSeq);
  const pageBytes = s.pageSize * s.kvHeads * s.headDim * 4;
  requireBytes(kernel, 'kCache', kv.kCache, pageBytes);
  requireBytes(kernel, 'vCache', kv.vCache, pageBytes);
  const pages = Math.floor(Math.min(refBytes(kv.kCache), refBytes(kv.vCache)) / pageBytes);
  requireBindable(gpu, `${kernel} kCache`, refBytes(kv.kCache));
  requireBindable(gpu, `${kernel} vCache`, refBytes(kv.vCache));
  requireBytes(kernel, 'pageTable', kv.pageTable, kv.sequences * kv.maxPagesPerSeq * 4);
  requireBytes(kernel, 'seqIds', tok.seqIds, tok.tokens * 4);
  requireBytes(kernel, 'positions', tok.positions, tok.tokens * 4);
  return pages;
}

/** The sliding window of an encode call: 0 (no limit) when absent; otherwise a non-negative u32 integer. */
export function checkWindow(kernel: string, window: number | undefined): number {
  if (window === undefined) return 0;
  if (!Number.isInteger(window) || window < 0 || window > 0xffffffff) {
    throw new ShapeError(kernel, 'window', 'a non-negative integer (keys with position - key >= window are skipped; 0 = no window)', String(window));
  }
  return window;
}

/** Throws unless the page table can address `context` positions per sequence. */
export function checkContext(kernel: string, s: Required<AttentionShape>, kv: PagedKv, context: number): void {
  requireDim(kernel, 'maxContext', context);
  if (context > kv.maxPagesPerSeq * s.pageSize) {
    throw new ShapeError(
      kernel,
      'pageTable',
      `at least ${Math.ceil(context / s.pageSize)} pages per sequence to hold ${context} positions of ${s.pageSize} tokens a page`,
      `${kv.maxPagesPerSeq} pages per sequence (grow maxPagesPerSeq or shorten the context)`,
    );
  }
}

/**
 * Query heads per attention workgroup: the largest divisor of the group size H / Hkv (so a workgroup's
 * heads share one kv head and each key row is read once for all of them) whose workgroup arrays
 * (lib/attention-block.wgsl) fit the device's workgroup storage.
 */
export function headsPerWorkgroup(gpu: Gpu, kernel: string, s: Required<AttentionShape>, workgroupSize: number, requested?: number): number {
  const group = s.heads / s.kvHeads;
  const bytes = (hpw: number) => 4 * (2 * hpw * s.headDim + hpw * workgroupSize + workgroupSize + 3 * hpw);
  const limit = gpu.limits.maxComputeWorkgroupStorageSize;
  if (requested !== undefined) {
    requireDim(kernel, 'headsPerWorkgroup', requested);
    if (group % requested !== 0) throw new ShapeError(kernel, 'headsPerWorkgroup', `a divisor of H / Hkv = ${group}`, String(requested));
    if (bytes(requested) > limit) {
      throw new ShapeError(kernel, 'headsPerWorkgroup', `small enough for ${limit} bytes of workgroup storage`, `${requested} (${bytes(requested)} bytes)`);
    }
    return requested;
  }
  for (let hpw = group; hpw >= 1; hpw--) if (group % hpw === 0 && bytes(hpw) <= limit) return hpw;
  throw new ShapeError(kernel, 'headDim', `small enough for one head in ${limit} bytes of workgroup storage`, String(s.headDim));
}

/**
 * Attention kernel variants: 'workgroup' (a workgroup per token and head block, key blocks shared through
 * workgroup memory; for GPUs) and 'rows' (an invocation per token and head, no barrier; for software
 * adapters, where every barrier costs a coroutine switch per SIMD lane group).
 */
export type AttentionVariant = 'workgroup' | 'rows';

/** The requested variant, or 'rows' on a software adapter (isSoftwareAdapter) and 'workgroup' elsewhere. */
export function attentionVariant(
  gpu: Gpu,
  kernel: string,
  options: { variant?: AttentionVariant; headsPerWorkgroup?: number; headsPerInvocation?: number },
): AttentionVariant {
  const variant = options.variant ?? (isSoftwareAdapter(gpu.adapterInfo) ? 'rows' : 'workgroup');
  if (variant !== 'workgroup' && variant !== 'rows') {
    throw new TypeError(`${kernel}: variant must be 'workgroup' or 'rows', got '${String(variant)}'`);
  }
  if (variant === 'rows' && options.headsPerWorkgroup !== undefined) {
    throw new TypeError(`${kernel}: 'headsPerWorkgroup' tunes the workgroup variant; 'rows' takes headsPerInvocation`);
  }
  if (variant === 'workgroup' && options.headsPerInvocation !== undefined) {
    throw new TypeError(`${kernel}: 'headsPerInvocation' tunes the rows variant; 'workgroup' takes headsPerWorkgroup`);
  }
  return variant;
}

/** Throws ShapeError unless `wg` is a workgroup size the device accepts. */
export function requireWorkgroupSize(gpu: Gpu, kernel: string, wg: number): void {
  const max = Math.min(gpu.limits.maxComputeInvocationsPerWorkgroup, gpu.limits.maxComputeWorkgroupSizeX);
  if (!Number.isInteger(wg) || wg < 1 || wg > max) throw new ShapeError(kernel, 'workgroupSize', `an integer in 1..${max}`, String(wg));
}

/** Caps of lib/attention-row.wgsl's private arrays: HPI * D ≤ 512 floats, HPI ≤ 8. */
const ROW_MAX_FLOATS = 512;
const ROW_MAX_HEADS = 8;

/**
 * Query heads per invocation of the 'rows' variant: the largest divisor of the group size H / Hkv that
 * fits the private arrays of lib/attention-row.wgsl, so each K/V row is loaded once for all of them.
 */
export function headsPerInvocation(kernel: string, s: Required<AttentionShape>, requested?: number): number {
  const group = s.heads / s.kvHeads;
  const fits = (hpi: number) => hpi <= ROW_MAX_HEADS && hpi * s.headDim <= ROW_MAX_FLOATS;
  if (requested !== undefined) {
    requireDim(kernel, 'headsPerInvocation', requested);
    if (group % requested !== 0) throw new ShapeError(kernel, 'headsPerInvocation', `a divisor of H / Hkv = ${group}`, String(requested));
    if (!fits(requested)) {
      throw new ShapeError(kernel, 'headsPerInvocation', `at most ${ROW_MAX_HEADS} and at most ${ROW_MAX_FLOATS} / D = ${Math.floor(ROW_MAX_FLOATS / s.headDim)}`, String(requested));
    }
    return requested;
  }
  let best = 1;
  for (let hpi = 1; hpi <= group; hpi++) if (group % hpi === 0 && fits(hpi)) best = hpi;
  return best;
}
