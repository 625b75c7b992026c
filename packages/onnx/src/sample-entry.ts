// The sampled result of one step entry from its logits rows in JS memory, for the runners whose logits land there
// (the ONNX runner and intab's own CPU runner): the WebGPU Runner's rules (see accept.wgsl for verify entries), with the
// entry's grammar masks applied, on cpu-sampler.ts.

import { DEFAULT_KMAX, type SamplingParams } from '@intab/gpu';
import type { StepEntry, StepResult } from '@intab/model';
import { sampleLogits, type ExpSum } from './cpu-sampler.ts';

const GREEDY: SamplingParams = { temperature: 0, u: 0 };

/**
 * The entry's result from `logits`: (V) of a plain entry's last token, (tokens.length, V) of a verify entry's rows.
 * `withLogits` returns the rows too (a copy: callers may reuse their buffer); `expSum(i)`, where given, sums row i's
 * exponentials for its logprobs (cpu-sampler.ts ExpSum).
 * @example
 * const result = sampleEntry(entry, logitsRows, vocab, false);
 */
export function sampleEntry(e: StepEntry, logits: Float32Array, vocab: number, withLogits: boolean, expSum?: (row: number) => ExpSum): StepResult {
  const masks = e.masks?.();
  const params = (p: SamplingParams, i: number): SamplingParams => (masks?.[i] ? { ...p, allowed: masks[i] } : p);
  const extra = withLogits ? { logits: logits.slice() } : {};
  if (!e.verify) return { ...sampleLogits(logits, params(e.sampling ?? GREEDY, 0), DEFAULT_KMAX, expSum?.(0)), ...extra };
  const rows = e.verify.map((p, i) => sampleLogits(logits.subarray(i * vocab, (i + 1) * vocab), params(p, i), DEFAULT_KMAX, expSum?.(i)));
  let accepted = 0;
  while (accepted < e.tokens.length - 1 && rows[accepted].id === e.tokens[accepted + 1]) accepted++;
  return { ...rows[accepted], accepted, ...(e.rows ? { acceptedRows: rows.slice(0, accepted) } : {}), ...extra };
}
