// What the sampler takes and returns per sequence (SamplingParams, SampleResult) and the conventions both sides of
// it share: NO_TOKEN, the default candidate cap, and how logit biases are merged. The engine builds SamplingParams,
// kernels/sample.ts packs them for the GPU, and the CPU twin (reference/sampling.ts) reads the same objects.

import { ShapeError } from './errors.ts';

/** Largest history one sequence may carry (the GPU sampler counts in 16 bits). */
export const MAX_HISTORY = 0xffff;

/** Sampling parameters of one sequence, as the engine holds them (packed by packSamplingBatch in kernels/sample.ts). */
export interface SamplingParams {
  /** 0 = greedy argmax (ties → lowest id); otherwise logits are divided by it before truncation. */
  temperature: number;
  /** Keep the k most likely tokens (0 = off). Capped at the sampler's candidate count (kmax). */
  topK?: number;
  /** Keep the smallest prefix (most likely first) whose probability mass reaches topP (1 = off). */
  topP?: number;
  /** Keep tokens with p ≥ minP · p_max (0 = off). */
  minP?: number;
  /** llama.cpp/HF: a positive logit is divided by it, a negative one multiplied, once per distinct history token (1 = off). */
  repetitionPenalty?: number;
  /** OpenAI: logit −= presence · (count > 0). */
  presencePenalty?: number;
  /** OpenAI: logit −= frequency · count. */
  frequencyPenalty?: number;
  /** The uniform draw in [0, 1) from the engine's seeded RNG. */
  u: number;
  /** Token ids the penalties count (ids ≥ V are ignored). */
  history?: ArrayLike<number>;
  /** Additive biases by token id (−Infinity bans a token); duplicate ids are summed when packed. */
  logitBias?: Iterable<readonly [number, number]> | Readonly<Record<number, number>>;
  /** Allowed-token bitmask, ceil(V/32) words, bit (id & 31) of word (id >> 5); set = allowed. */
  allowed?: Uint32Array;
  /** How many top logprobs to return (0..maxTopLogprobs). */
  topLogprobs?: number;
}

/** What the sampler returns for one sequence. */
export interface SampleResult {
  /** The chosen token id, or NO_TOKEN when every token is disallowed. */
  id: number;
  /** log-softmax of the processed logits (before temperature and truncation) at `id`. */
  logprob: number;
  /** The topLogprobs most likely tokens by processed logit, descending, ties by lower id. */
  top: { id: number; logprob: number }[];
}

/** Written as the id when every token of a sequence is disallowed (its logprobs are −Infinity). */
export const NO_TOKEN = 0xffffffff;

/** Default candidate cap: truncation (top-k/top-p/min-p) considers at most this many tokens. */
export const DEFAULT_KMAX = 1024;

/** The logit-bias entries as [id, bias] pairs with duplicate ids summed (in f32, in insertion order). */
export function biasEntries(bias: SamplingParams['logitBias']): [number, number][] {
  if (!bias) return [];
  const pairs: Iterable<readonly [number, number]> =
    Symbol.iterator in (bias as object)
      ? (bias as Iterable<readonly [number, number]>)
      : Object.entries(bias as Record<number, number>).map(([k, v]) => [Number(k), v] as const);
  const merged = new Map<number, number>();
  for (const [id, b] of pairs) merged.set(id, Math.fround((merged.get(id) ?? 0) + b));
  return [...merged];
}

function check(ok: boolean, argument: string, expected: string, actual: unknown): void {
  if (!ok) throw new ShapeError('packSamplingBatch', argument, expected, String(actual));
}

/**
 * Throws ShapeError naming the first field of row `b`'s sampling parameters that is out of range for `vocab` logits (the
 * GPU sampler's packSamplingBatch and its CPU twin, sampleRow, check alike).
 */
export function checkSamplingParams(p: SamplingParams, b: number, vocab: number, maxTopLogprobs: number): void {
  const at = (f: string) => `seqs[${b}].${f}`;
  const finite = Number.isFinite;
  check(finite(p.temperature) && p.temperature >= 0, at('temperature'), 'a finite number ≥ 0 (0 = greedy)', p.temperature);
  const k = p.topK ?? 0;
  check(Number.isInteger(k) && k >= 0 && k <= 0xffffffff, at('topK'), 'an integer ≥ 0 (0 = off)', k);
  const topP = p.topP ?? 1;
  check(topP > 0 && topP <= 1, at('topP'), 'in (0, 1] (1 = off)', topP);
  const minP = p.minP ?? 0;
  check(minP >= 0 && minP <= 1, at('minP'), 'in [0, 1] (0 = off)', minP);
  const rep = p.repetitionPenalty ?? 1;
  check(finite(rep) && rep > 0, at('repetitionPenalty'), 'a finite number > 0 (1 = off)', rep);
  check(finite(p.presencePenalty ?? 0), at('presencePenalty'), 'a finite number', p.presencePenalty);
  check(finite(p.frequencyPenalty ?? 0), at('frequencyPenalty'), 'a finite number', p.frequencyPenalty);
  check(p.u >= 0 && p.u < 1, at('u'), 'a uniform draw in [0, 1) from the seeded RNG', p.u);
  const n = p.topLogprobs ?? 0;
  const nMax = Math.min(maxTopLogprobs, vocab);
  check(Number.isInteger(n) && n >= 0 && n <= nMax, at('topLogprobs'), `an integer in [0, ${nMax}] (the sampler's maxTopLogprobs)`, n);
  const h = p.history ?? [];
  check(h.length <= MAX_HISTORY, at('history.length'), `at most ${MAX_HISTORY} tokens (keep the last N for penalties)`, h.length);
  for (let i = 0; i < h.length; i++) {
    check(Number.isInteger(h[i]) && h[i] >= 0 && h[i] < vocab, `${at('history')}[${i}]`, `a token id in [0, ${vocab})`, h[i]);
  }
  for (const [id, v] of biasEntries(p.logitBias)) {
    check(Number.isInteger(id) && id >= 0 && id < vocab, at('logitBias'), `token ids in [0, ${vocab})`, id);
    check(finite(v) || v === -Infinity, `${at('logitBias')}[${id}]`, 'a finite bias or -Infinity (ban)', v);
  }
  if (p.allowed) {
    const words = Math.ceil(vocab / 32);
    check(p.allowed.length === words, at('allowed.length'), `ceil(V/32) = ${words} words`, p.allowed.length);
  }
}
