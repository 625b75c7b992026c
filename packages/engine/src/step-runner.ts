// What the engine needs of a model runner: @intab/model's Runner implements it on the GPU, and a CPU
// reference runner (tests) implements it on plain loops, so the scheduler is tested without a GPU.

import type { SampleResult, SamplingParams } from '@intab/gpu';
import type { KvPages } from '@intab/model';

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

/**
 * What a KV page's bytes depend on, so pages saved by one load are restored only into a load that would have
 * computed the same bytes: the weights as loaded (a hash), the quantization applied on load, the K/V dtype, the
 * page size and the architecture's fields.
 */
export interface KvKey {
  /** 'xxh128:<hex>' of the weights' bytes as read (tensor by tensor, with their names). */
  weights: string;
  quantize: string | null;
  kvDtype: 'f32';
  pageSize: number;
  /** The architecture's fields (LlamaConfig). */
  arch: unknown;
}

/** Reading and writing whole KV pages (a prefix cache saved to disk and restored). */
export interface PageIO {
  /** Bytes of one page: per layer, its K block then its V block, each PAGE · Hkv · D f32. */
  readonly pageBytes: number;
  key(): Promise<KvKey>;
  /** The pages' bytes, page after page (pages.length · pageBytes). */
  read(pages: readonly number[]): Promise<Uint8Array>;
  /** Overwrites the pages with `bytes` (pages.length · pageBytes, as read() returns them). */
  write(pages: readonly number[], bytes: Uint8Array): Promise<void>;
}

export interface StepRunner {
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null; layers: number };
  readonly maxBatch: number;
  /** Most sampled rows in one step (one per plain entry, tokens.length per verify entry) [unbounded]. */
  readonly maxRows?: number;
  readonly kv: KvPages;
  /** Saving and restoring pages; absent where the runner cannot (the engine then refuses to persist). */
  readonly pageIO?: PageIO;
  alloc(seq: number): void;
  /** A new sequence over pages in use (a prefix cache's) holding `length` tokens (see PagePool.adopt). */
  adopt(seq: number, pages: readonly number[], length: number): void;
  free(seq: number): void;
  rewind(seq: number, n: number): void;
  fork(src: number, dst: number): void;
  step(entries: readonly RunnerEntry[], options?: StepOptions): Promise<RunnerResult[]>;
  destroy(): void;
}
