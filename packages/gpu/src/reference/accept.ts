// CPU twin of shaders/sampling/accept.wgsl: the speculative acceptance rule over rows the sampler already
// sampled. Entry b's rows sample the token after each of its tokens; the longest prefix of proposals equal
// to those samples is accepted and the sample after it is returned. Since proposals are deterministic this
// is the exact speculative-sampling rule (see the kernel's header), for greedy and sampled rows alike.

import { ACCEPT_OUT_WORDS, type AcceptSpan } from '../kernels/accept.ts';
import { NO_TOKEN } from '../sampling-params.ts';

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
