// Speculative acceptance on the GPU (shaders/sampling/accept.wgsl), recorded after the sampler in the same
// pass: each entry's longest prefix of proposals equal to the rows' own samples is accepted and the sample
// after it chosen, so a verify step reads back 4 words per entry instead of every row. Plain entries (one
// row) pass their sample through. The CPU twin is reference/accept.ts.

import src from '../../../../shaders/sampling/accept.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, requireBytes, requireDim, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';

// ---- the kernel's input and output ----

/** u32 words of one entry's result: accepted, id, logprob (f32 bits), chosen row. */
export const ACCEPT_OUT_WORDS = 4;

/** Where one entry's rows and tokens lie in a step. */
export interface AcceptSpan {
  /** First of its rows in the sampler's output (R rows). */
  firstRow: number;
  /** Rows it owns: tokens.length for a verify entry, 1 for a plain one. */
  rowCount: number;
  /** Index of its first token among the step's T tokens (the last accepted token; proposals follow). */
  firstToken: number;
}

/** One entry's acceptance, unpacked. */
export interface Acceptance {
  /** Proposals accepted, 0..rowCount−1. */
  accepted: number;
  /** The sample after the accepted proposals (NO_TOKEN when that row had no allowed token). */
  id: number;
  /** Its logprob, from the sampler's row. */
  logprob: number;
  /** The row it came from: firstRow + accepted. */
  row: number;
}

/**
 * (B, 4) u32 spans as the kernel reads them: firstRow, rowCount, firstToken, 0.
 * @example
 * const spans = packAcceptSpans([{ firstRow: 0, rowCount: 4, firstToken: 0 }, { firstRow: 4, rowCount: 1, firstToken: 4 }]);
 */
export function packAcceptSpans(spans: readonly AcceptSpan[]): Uint32Array {
  const out = new Uint32Array(Math.max(1, spans.length) * ACCEPT_OUT_WORDS);
  spans.forEach((s, b) => out.set([s.firstRow, s.rowCount, s.firstToken, 0], b * ACCEPT_OUT_WORDS));
  return out;
}

/**
 * Reads the kernel's (B, 4) u32 output into one Acceptance per entry.
 * @example
 * const [{ accepted, id }] = unpackAcceptance(await readU32(gpu, out), 1);
 */
export function unpackAcceptance(words: Uint32Array, batch: number): Acceptance[] {
  const f = new Float32Array(words.buffer, words.byteOffset, Math.floor(words.byteLength / 4));
  return Array.from({ length: batch }, (_, b) => {
    const o = b * ACCEPT_OUT_WORDS;
    return { accepted: words[o], id: words[o + 1], logprob: f[o + 2], row: words[o + 3] };
  });
}

// ---- the kernel ----

export interface AcceptOptions {
  /** Invocations per workgroup, one entry each (default 64). */
  workgroupSize?: number;
}

export interface AcceptArgs {
  /** (R, outStride) u32: the sampler's output rows (id, logprob bits, ...). */
  samples: BufferRef;
  /** u32 words per sampler row (Sampler.outStride). */
  outStride: number;
  /** R: rows in `samples`. */
  rows: number;
  /** (T) u32: the step's token ids (each verify entry's proposals follow its first token). */
  tokens: BufferRef;
  /** T: tokens in `tokens`. */
  tokenCount: number;
  /** (B, 4) u32 spans from packAcceptSpans: firstRow, rowCount, firstToken, 0. */
  spans: BufferRef;
  /** (B, 4) u32: accepted, id, logprob bits, chosen row. */
  out: BufferRef;
  /** B entries. */
  batch: number;
}

export interface Accept {
  encode(pass: GPUComputePassEncoder, args: AcceptArgs): void;
}

/**
 * Creates the acceptance kernel: one dispatch, one invocation per entry.
 *
 * @example
 * const accept = createAccept(gpu);
 * sampler.encode(pass, { logits, params, out: rowsOut, batch: R });
 * accept.encode(pass, { samples: rowsOut, outStride: sampler.outStride, rows: R, tokens: ids, tokenCount: T,
 *   spans: upload(packAcceptSpans(spans)), out: acceptOut, batch: B });
 */
export function createAccept(gpu: Gpu, options: AcceptOptions = {}): Accept {
  const name = 'accept';
  const wg = options.workgroupSize ?? 64;
  if (!Number.isInteger(wg) || wg < 1 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', `an integer in 1..${gpu.limits.maxComputeInvocationsPerWorkgroup}`, String(wg));
  }
  const cached = gpu.pipelines.get({
    name: 'accept',
    variant: 'u32',
    code: src,
    bindings: withParams('read', 'read', 'read', 'storage'),
    constants: { WG_SIZE: wg },
  });
  return {
    encode(pass, a) {
      requireDim(name, 'batch', a.batch);
      requireDim(name, 'outStride', a.outStride, 1);
      if (a.outStride < 2) throw new ShapeError(name, 'outStride', 'at least 2 words (id, logprob)', String(a.outStride));
      requireDim(name, 'rows', a.rows);
      requireDim(name, 'tokenCount', a.tokenCount);
      requireBytes(name, 'samples', a.samples, a.rows * a.outStride * 4);
      requireBytes(name, 'tokens', a.tokens, a.tokenCount * 4);
      requireBytes(name, 'spans', a.spans, a.batch * ACCEPT_OUT_WORDS * 4);
      requireBytes(name, 'out', a.out, a.batch * ACCEPT_OUT_WORDS * 4);
      const params = new Params(4).u32(a.batch).u32(a.outStride).u32(a.rows).u32(a.tokenCount);
      const groups = Math.ceil(a.batch / wg);
      if (groups > gpu.limits.maxComputeWorkgroupsPerDimension) {
        throw new ShapeError(name, 'batch', `at most ${gpu.limits.maxComputeWorkgroupsPerDimension * wg} entries`, String(a.batch));
      }
      dispatch(gpu, pass, cached, name, params, [a.samples, a.tokens, a.spans, a.out], [groups]);
    },
  };
}
