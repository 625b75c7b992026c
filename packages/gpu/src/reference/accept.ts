// CPU twin of shaders/sampling/accept.wgsl: the speculative acceptance rule over rows the sampler already
// sampled. Entry b's rows sample the token after each of its tokens; the longest prefix of proposals equal
// to those samples is accepted and the sample after it is returned. Since proposals are deterministic this
// is the exact speculative-sampling rule (see the kernel's header), for greedy and sampled rows alike.

import { NO_TOKEN } from './sampling.ts';

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
 * The kernel's (B, 4) u32 output for sampler rows `samples` (R rows of `outStride` words: id, logprob bits, ...)
 * and the step's token ids, word for word. Spans reaching past R rows or T tokens are clamped like the kernel.
 * @example
 * const words = acceptReference(samplerOut, sampler.outStride, tokenIds, spans);
 */
export function acceptReference(samples: Uint32Array, outStride: number, tokens: ArrayLike<number>, spans: readonly AcceptSpan[]): Uint32Array {
  const R = Math.floor(samples.length / outStride);
  const T = tokens.length;
  const out = new Uint32Array(spans.length * ACCEPT_OUT_WORDS);
  spans.forEach((s, b) => {
    const n = Math.max(0, Math.min(s.rowCount, R - s.firstRow, T - s.firstToken));
    const o = b * ACCEPT_OUT_WORDS;
    if (n === 0) {
      out.set([0, NO_TOKEN, 0xff800000, s.firstRow], o);
      return;
    }
    let a = 0;
    while (a + 1 < n) {
      const id = samples[(s.firstRow + a) * outStride];
      if (id === NO_TOKEN || id !== tokens[s.firstToken + a + 1] >>> 0) break;
      a++;
    }
    const row = s.firstRow + a;
    out.set([a, samples[row * outStride], samples[row * outStride + 1], row], o);
  });
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
