// The one contract between the engine and whatever runs a model's steps: the WebGPU Runner (runner.ts) and the CPU
// reference runner the engine's tests use both implement it, so the scheduler, speculation and the prefix cache
// are written once against it. A step is a batch of sequences, each with its new tokens (a prompt chunk, the last
// sampled token, or a speculative verify entry), sampled on the runner; KV is paged (kv: KvPages).

import type { SampleResult, SamplingParams } from '@intab/gpu';
import type { KvPages } from './page-pool.ts';

/** One sequence's part of a step: its new tokens (prompt chunk, or the last sampled token) and how to sample. */
export interface StepEntry {
  seq: number;
  tokens: readonly number[];
  /** Sampling of the token after the last one (plain entries); temperature 0 is greedy. */
  sampling?: SamplingParams;
  /**
   * Speculative verify: `tokens` are [last accepted token, ...proposals] and row i samples the token after
   * tokens[i] with verify[i] (verify.length === tokens.length). The longest prefix of proposals equal to the
   * rows' samples is accepted and the sample after it returned; the cache keeps all tokens (rewind the rest).
   */
  verify?: readonly SamplingParams[];
  /** With verify: also return the accepted rows' SampleResults (reads the sampled rows back). */
  rows?: boolean;
  /**
   * Allowed-token masks of the entry's rows (one for a plain entry, tokens.length for a verify entry; undefined =
   * no mask), computed when the step calls it: after the forward pass is submitted, so a grammar's mask work on
   * the CPU overlaps the GPU's forward. Overrides `allowed` in the rows' sampling.
   */
  masks?: () => readonly (Uint32Array | undefined)[];
}

/** The sampled next token of one entry (for a verify entry, the one after its accepted proposals). */
export interface StepResult extends SampleResult {
  /** Verify entries: proposals accepted (0..tokens.length − 1). */
  accepted?: number;
  /** Verify entries with `rows`: the accepted proposals' rows, in order. */
  acceptedRows?: SampleResult[];
  /** With options.logits: (V) logits of a plain entry's last token; (tokens.length, V) rows of a verify entry. */
  logits?: Float32Array;
}

export interface StepOptions {
  /** Run only the first `layers` layers (1..config.layers), then the final norm and lm_head (self-speculative drafts). */
  layers?: number;
  /** Also read back the logits rows (a large readback: for tests and tools, not for generation). */
  logits?: boolean;
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

/**
 * read and write of a PageIO over K/V held as per-layer (slots, Hkv·D) f32 arrays, a page being `pageValues` =
 * PAGE·Hkv·D consecutive values of each (the CPU runners' caches): a page's bytes are, per layer, its K block then its V
 * block. `arrays` gives the current arrays (they may be views remade when memory grows); `invalid` builds the error for
 * bytes of the wrong size from what is wrong ('N bytes for P pages of B').
 * @example
 * const { read, write } = flatPageIO(() => ({ keys, values }), pageValues, (d) => new IntabModelError(`pageIO.write: ${d}`));
 */
export function flatPageIO(
  arrays: () => { keys: readonly Float32Array[]; values: readonly Float32Array[] },
  pageValues: number,
  invalid: (detail: string) => Error,
): Pick<PageIO, 'read' | 'write'> {
  const blocks = (f: (layer: Float32Array, block: number) => void) => {
    const { keys, values } = arrays();
    for (let l = 0; l < keys.length; l++) {
      f(keys[l], 2 * l);
      f(values[l], 2 * l + 1);
    }
  };
  const perPage = () => 2 * arrays().keys.length * pageValues;
  return {
    read: async (pages) => {
      const n = perPage();
      const out = new Float32Array(pages.length * n);
      pages.forEach((p, i) => blocks((a, b) => out.set(a.subarray(p * pageValues, (p + 1) * pageValues), i * n + b * pageValues)));
      return new Uint8Array(out.buffer);
    },
    write: async (pages, bytes) => {
      const n = perPage();
      if (bytes.byteLength !== pages.length * n * 4) throw invalid(`${bytes.byteLength} bytes for ${pages.length} pages of ${n * 4}`);
      const data = new Float32Array(bytes.slice().buffer);
      pages.forEach((p, i) => blocks((a, b) => a.set(data.subarray(i * n + b * pageValues, i * n + (b + 1) * pageValues), p * pageValues)));
    },
  };
}

/** What a runner can do beyond the contract's core (absent: all of it); the engine reads it instead of failing later. */
export interface RunnerCapabilities {
  /** adopt() and fork() over pages that hold their K/V bytes: the prefix cache, preload and saving it need them. */
  sharedPages: boolean;
  /** StepOptions.layers below config.layers: self-speculative drafts need it. */
  earlyExit: boolean;
  /** Why the runner cannot do what is false above (the engine's reasons quote it). */
  why?: string;
}

export interface StepRunner {
  readonly capabilities?: RunnerCapabilities;
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null; layers: number };
  readonly maxBatch: number;
  /** Most sampled rows in one step (one per plain entry, tokens.length per verify entry) [unbounded]. */
  readonly maxRows?: number;
  /** Most tokens in one step, of all its entries [unbounded]. */
  readonly maxTokens?: number;
  readonly kv: KvPages;
  /**
   * Sequences the runner can still allocate beside the pages (a recurrent state slot each: Qwen3.5); absent: no limit
   * but the pages'.
   */
  readonly freeSequenceSlots?: number;
  /** Saving and restoring pages; absent where the runner cannot (the engine then refuses to persist). */
  readonly pageIO?: PageIO;
  alloc(seq: number): void;
  /** A new sequence over pages in use (a prefix cache's) holding `length` tokens (see PagePool.adopt). */
  adopt(seq: number, pages: readonly number[], length: number): void;
  free(seq: number): void;
  /** Drops the last `n` tokens of a sequence (rejected speculative proposals). */
  rewind(seq: number, n: number): void;
  /** A new sequence sharing `src`'s cached tokens (copy-on-write pages). */
  fork(src: number, dst: number): void;
  /**
   * Runs one step for every entry; resolves with the sampled next token of each, in entry order (for verify
   * entries, the token after the accepted proposals, with `accepted`; the cache keeps all tokens: rewind the rest).
   */
  step(entries: readonly StepEntry[], options?: StepOptions): Promise<StepResult[]>;
  destroy(): void;
}
