// Attention over packed sequences, the encoder's (see shaders/attention/attention-encoder.wgsl): bidirectional unless
// a pass's reach says otherwise (causal, or a symmetric sliding window: the decoders that embed), no KV cache, many inputs of different lengths in one dispatch with a sequence table (PackedSequences)
// so that none attends to another. q, k and v are read where the projections wrote them, a fused q|k|v buffer in place.
// Not the decoder's kernels: those find keys through a page table at positions; here keys are the sequence's own rows.
// Variants: 'workgroup' (a workgroup per tile of tokens and a head, K/V tiles in workgroup memory, for GPUs) and
// 'rows' (an invocation per token and head, barrier-free, for software adapters).

import src from '../../../../shaders/attention/attention-encoder.wgsl?raw';
import rowsSrc from '../../../../shaders/attention/attention-encoder.rows.wgsl?raw';
import paramsLib from '../../../../shaders/lib/encoder-params.wgsl?raw';
import seqsLib from '../../../../shaders/lib/packed-seqs.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import { type AttentionVariant, MAX_HEAD_DIM, attentionVariant, requireWorkgroupSize } from './paged-kv.ts';

/**
 * B sequences packed back to back into T token rows (no padding): `seqStarts` (B + 1) u32 holds each sequence's first
 * row and, last, T (nondecreasing from 0). Shared by the encoder's attention, RoPE and pooling kernels.
 */
export interface PackedSequences {
  /** (B + 1) u32. */
  seqStarts: BufferRef;
  /** B. */
  sequences: number;
  /** T: packed rows. */
  tokens: number;
}

/** Token rows of a tensor inside a wider token-major buffer: row t starts at element t * stride + offset. */
export interface TokenRows {
  buffer: BufferRef;
  /** Elements between two tokens' rows (default: the tensor's own width). A multiple of 4. */
  stride?: number;
  /** Element offset of the tensor in each row (default 0). A multiple of 4. */
  offset?: number;
}

export interface EncoderAttentionShape {
  /** H: query heads. */
  heads: number;
  /** Hkv: key/value heads (default H); H % Hkv == 0. */
  kvHeads?: number;
  /** D: a multiple of 4, at most 256. */
  headDim: number;
}

export interface AttentionEncoderOptions {
  /** Scale of the scores q·k (default 1/√D). */
  scale?: number;
  /** 'rows' on a software adapter (isSoftwareAdapter), 'workgroup' elsewhere, unless told. */
  variant?: AttentionVariant;
  /** Invocations per workgroup (default 64 for 'workgroup': its query tile; 8 for 'rows'). */
  workgroupSize?: number;
  /** 'workgroup' only: keys staged per tile, a multiple of 4 (default: up to 32, as workgroup memory allows). */
  keyTile?: number;
}

export interface AttentionEncoderArgs extends PackedSequences {
  /** (T, H·D) rows of queries (after RoPE, if the model rotates). */
  q: TokenRows;
  /** (T, Hkv·D) rows of keys. */
  k: TokenRows;
  /** (T, Hkv·D) rows of values. */
  v: TokenRows;
  /** (T, H, D) f32. */
  out: BufferRef;
  /**
   * Which keys of its sequence a query at row t sees: rows t − before … t + after (default: all, an encoder). Causal
   * attention is { after: 0 }; a symmetric window of W (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC) is before = after = ⌊W/2⌋.
   */
  reach?: { before?: number; after?: number };
}

export interface AttentionEncoder {
  readonly variant: AttentionVariant;
  encode(pass: GPUComputePassEncoder, args: AttentionEncoderArgs): void;
}

/** A reach that lets a query see every key of its sequence (u32 max). */
const ALL_KEYS = 0xffffffff;

/**
 * out[t, h] = Σ_{j in t's sequence, t − before ≤ j ≤ t + after} softmax_j(scale · q[t, h] · k[j, kvh]) v[j, kvh].
 *
 * @example
 * // a fused q|k|v projection (T, 3C) read in place, B inputs packed with their starts
 * const attn = createAttentionEncoder(gpu, { heads: 12, headDim: 64 });
 * attn.encode(pass, { q: { buffer: qkv, stride: 3 * C }, k: { buffer: qkv, stride: 3 * C, offset: C },
 *   v: { buffer: qkv, stride: 3 * C, offset: 2 * C }, out, seqStarts, sequences: B, tokens: T });
 */
export function createAttentionEncoder(gpu: Gpu, shape: EncoderAttentionShape, options: AttentionEncoderOptions = {}): AttentionEncoder {
  const name = 'attention-encoder';
  const H = shape.heads;
  const Hkv = shape.kvHeads ?? H;
  const D = shape.headDim;
  requireDim(name, 'heads', H);
  requireDim(name, 'kvHeads', Hkv);
  if (H % Hkv !== 0) throw new ShapeError(name, 'heads', `a multiple of kvHeads (${Hkv})`, String(H));
  requireDim(name, 'headDim', D, 4);
  if (D > MAX_HEAD_DIM) throw new ShapeError(name, 'headDim', `at most ${MAX_HEAD_DIM}`, String(D));
  const variant = attentionVariant(gpu, name, options);
  const rows = variant === 'rows';
  const wg = options.workgroupSize ?? (rows ? 8 : 64);
  requireWorkgroupSize(gpu, name, wg);
  const scale = options.scale ?? 1 / Math.sqrt(D);
  if (!(scale > 0 && Number.isFinite(scale))) throw new ShapeError(name, 'scale', 'a positive finite number', String(options.scale));
  const constants: Record<string, number> = { WG_SIZE: wg, HEAD_DIM: D };
  if (!rows) {
    const fit = Math.floor(gpu.limits.maxComputeWorkgroupStorageSize / (8 * D) / 4) * 4;
    const keyTile = options.keyTile ?? Math.min(32, fit);
    if (!Number.isInteger(keyTile) || keyTile < 4 || keyTile % 4 !== 0 || keyTile > fit) {
      throw new ShapeError(name, 'keyTile', `a multiple of 4 in 4..${fit} (K and V tiles of D = ${D} in ${gpu.limits.maxComputeWorkgroupStorageSize} bytes)`, String(keyTile));
    }
    constants.K_TILE = keyTile;
  } else if (options.keyTile !== undefined) {
    throw new TypeError(`${name}: 'keyTile' tunes the workgroup variant; 'rows' stages nothing`);
  }
  const cached = gpu.pipelines.get({
    name,
    variant: `f32+${variant}`,
    code: `${rows ? rowsSrc : src}\n${paramsLib}\n${seqsLib}`,
    bindings: withParams('read', 'read', 'read', 'read', 'storage'),
    constants,
  });
  /** Checks one TokenRows operand; returns [stride, offset]. */
  const rowsOf = (arg: string, r: TokenRows, width: number, tokens: number): [number, number] => {
    const stride = r.stride ?? width;
    const offset = r.offset ?? 0;
    if (!Number.isInteger(stride) || stride % 4 !== 0 || !Number.isInteger(offset) || offset < 0 || offset % 4 !== 0 || offset + width > stride) {
      throw new ShapeError(name, arg, `stride and offset multiples of 4 with offset + ${width} ≤ stride`, `stride ${stride}, offset ${offset}`);
    }
    requireBytes(name, arg, r.buffer, ((tokens - 1) * stride + offset + width) * 4);
    return [stride, offset];
  };
  return {
    variant,
    encode(pass, a) {
      requireDim(name, 'tokens', a.tokens);
      requireDim(name, 'sequences', a.sequences);
      requireBytes(name, 'seqStarts', a.seqStarts, (a.sequences + 1) * 4);
      const [qs, qo] = rowsOf('q', a.q, H * D, a.tokens);
      const [ks, ko] = rowsOf('k', a.k, Hkv * D, a.tokens);
      const [vs, vo] = rowsOf('v', a.v, Hkv * D, a.tokens);
      requireBytes(name, 'out', a.out, a.tokens * H * D * 4);
      const [before, after] = [a.reach?.before ?? ALL_KEYS, a.reach?.after ?? ALL_KEYS];
      for (const [arg, n] of [['reach.before', before], ['reach.after', after]] as const) {
        if (!Number.isInteger(n) || n < 0 || n > ALL_KEYS) throw new ShapeError(name, arg, `an integer in 0..${ALL_KEYS}`, String(n));
      }
      const params = new Params(16).u32(a.tokens).u32(a.sequences).u32(H).u32(Hkv)
        .u32(qs).u32(qo).u32(ks).u32(ko).u32(vs).u32(vo).f32(scale).u32(before).u32(after).u32(0).u32(0).u32(0); // layout: lib/encoder-params.wgsl
      const workgroups = rows ? Math.ceil((a.tokens * H) / wg) : Math.ceil(a.tokens / wg) * H;
      dispatch(gpu, pass, cached, name, params, [a.q.buffer, a.k.buffer, a.v.buffer, a.seqStarts, a.out], grid2d(gpu, workgroups));
    },
  };
}
