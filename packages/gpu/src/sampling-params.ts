// What the sampler takes and returns per sequence (SamplingParams, SampleResult) and the conventions both sides of
// it share: NO_TOKEN, the default candidate cap, and how logit biases are merged. The engine builds SamplingParams,
// kernels/sample.ts packs them for the GPU, and the CPU twin (reference/sampling.ts) reads the same objects.

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
