// What the engine needs of a model runner: @intab/model's Runner implements it on the GPU, and a CPU
// reference runner (tests) implements it on plain loops, so the scheduler is tested without a GPU.

import type { SampleResult, SamplingParams } from '@intab/gpu';

export interface RunnerEntry {
  seq: number;
  tokens: readonly number[];
  /** Sampling of the token after the last one (plain entries); temperature 0 is greedy. */
  sampling?: SamplingParams;
  /**
   * Speculative verify: `tokens` are [last accepted token, ...proposals] and row i (one per token) samples
   * the token after tokens[i] with verify[i]. The runner accepts the longest prefix of proposals equal to
   * the rows' samples and returns the sample after it (see RunnerResult). verify.length === tokens.length.
   */
  verify?: readonly SamplingParams[];
  /** With verify: also return the accepted rows' SampleResults (their logprobs). */
  rows?: boolean;
  /**
   * The rows' allowed-token masks (grammars), computed when the runner calls it — after it has submitted the
   * forward pass, so the CPU's mask work overlaps the GPU. One per row; they override the rows' `allowed`.
   */
  masks?: () => readonly (Uint32Array | undefined)[];
}

/** The sampled next token of one entry; for a verify entry, the token after the accepted proposals. */
export interface RunnerResult extends SampleResult {
  /** Verify entries: proposals accepted (0..k); the cache still holds all k+1 tokens (the caller rewinds). */
  accepted?: number;
  /** Verify entries with rows: the accepted proposals' SampleResults, in order. */
  acceptedRows?: SampleResult[];
}

export interface StepOptions {
  /** Run only the first `layers` layers, then the final norm and lm_head (self-speculative drafts). */
  layers?: number;
}

export interface StepRunner {
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null; layers: number };
  readonly maxBatch: number;
  /** Most sampled rows in one step (one per plain entry, tokens.length per verify entry) [unbounded]. */
  readonly maxRows?: number;
  readonly kv: { readonly pages: number; readonly pageSize: number; readonly freePageCount: number; length(seq: number): number; pagesNeeded(seq: number, length: number): number; has(seq: number): boolean };
  alloc(seq: number): void;
  free(seq: number): void;
  rewind(seq: number, n: number): void;
  fork(src: number, dst: number): void;
  step(entries: readonly RunnerEntry[], options?: StepOptions): Promise<RunnerResult[]>;
  destroy(): void;
}
