// A StepRunner on plain CPU loops, so the engine (scheduler, sampling policy, stops, backpressure, abort) is
// tested in Node without a GPU: each sequence runs its own CPU reference model (@intab/model/reference) and is
// sampled by the CPU twin of the GPU sampler (@intab/gpu/reference sampleRow), so ids match the Runner's. A
// simulated page pool mirrors the GPU PagedKvCache's accounting (pages, copy-on-write fork, all-or-nothing
// growth, KvCacheFullError), which lets tests exhaust the KV budget and count leaked pages. Every step is
// logged (which sequences, how many tokens) so tests assert on scheduling without timing anything.

import { DEFAULT_KMAX, sampleRow } from '@intab/gpu/reference';
import { IntabModelError, PagePool, checkLayers, checkStep, type LlamaConfig } from '@intab/model';
import { createReferenceModel, type ReferenceModel, type WeightsFn } from '@intab/model/reference';
import type { SamplingParams } from '@intab/gpu';
import type { RunnerEntry, RunnerResult, StepOptions, StepRunner } from './step-runner.ts';

export interface ReferenceRunnerOptions {
  /** Pages in the simulated pool [64]. */
  pages?: number;
  /** Tokens per page [16]. */
  pageSize?: number;
  /** Most sequences per step [16]. */
  maxBatch?: number;
  /** Most sampled rows per step (verify entries take one per token) [4 · maxBatch, as the GPU Runner]. */
  maxRows?: number;
  /** Override the config's end-of-generation ids (a GGUF without tokenizer metadata has none). */
  eosIds?: number[];
  /** Let each step wait for a macrotask, as a GPU readback does, so timers and events run between steps [true]. */
  yieldEachStep?: boolean;
}

/** The KV accounting of PagedKvCache without the GPU buffers. */

/** One logged step: each entry's sequence and token count. */
export type StepLogEntry = { seq: number; tokens: number; layers?: number }[];

const macrotask = (): Promise<void> =>
  new Promise((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)));

/**
 * The CPU StepRunner.
 * @example
 * const { config, tensors } = fixtureWeights('llama');
 * const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 8, pageSize: 16 });
 * const engine = new Engine({ runner });
 */
export class ReferenceRunner implements StepRunner {
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null; layers: number };
  readonly maxBatch: number;
  readonly maxRows: number;
  /** The GPU cache's page accounting, without the memory. */
  readonly kv: PagePool;
  /** Every step run, in order (for tests: who was in which step, with how many tokens). */
  readonly log: StepLogEntry[] = [];
  private readonly models = new Map<number, { model: ReferenceModel; tokens: number[] }>();
  private readonly yieldEachStep: boolean;
  private destroyed = false;

  constructor(
    readonly model: LlamaConfig,
    private readonly weights: WeightsFn,
    options: ReferenceRunnerOptions = {},
  ) {
    this.config = { vocab: model.vocab, maxContext: model.maxContext, eosIds: options.eosIds ?? model.eosIds, bosId: model.bosId, layers: model.layers };
    this.maxBatch = options.maxBatch ?? 16;
    this.maxRows = options.maxRows ?? 4 * this.maxBatch;
    this.kv = new PagePool(options.pages ?? 64, options.pageSize ?? 16);
    this.yieldEachStep = options.yieldEachStep ?? true;
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
    this.models.set(seq, { model: createReferenceModel(this.model, this.weights), tokens: [] });
  }

  free(seq: number): void {
    this.kv.free(seq);
    this.models.delete(seq);
  }

  rewind(seq: number, n: number): void {
    this.kv.rewind(seq, n);
    const m = this.models.get(seq)!;
    m.tokens.length = this.kv.length(seq);
  }

  /** The tokens in a sequence's cache, in position order (tests check rewinds with it). */
  cachedTokens(seq: number): number[] {
    return this.models.get(seq)?.tokens.slice(0, this.kv.length(seq)) ?? [];
  }

  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
    // The reference model cannot share a cache: replay the source's tokens into a fresh one.
    const tokens = [...this.models.get(src)!.tokens];
    const model = createReferenceModel(this.model, this.weights);
    if (tokens.length) model.forward(tokens, 0);
    this.models.set(dst, { model, tokens });
  }

  async step(entries: readonly RunnerEntry[], options: StepOptions = {}): Promise<RunnerResult[]> {
    if (this.destroyed) throw new IntabModelError('This ReferenceRunner was destroyed.');
    if (entries.length === 0) return [];
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch, this.maxRows);
    const layers = checkLayers(this.model, options.layers);
    this.log.push(entries.map((e) => ({ seq: e.seq, tokens: e.tokens.length, ...(options.layers !== undefined ? { layers } : {}) })));
    const results = entries.map((e): RunnerResult => {
      const masks = e.masks?.();
      const withMask = (p: SamplingParams, i: number): SamplingParams => (masks?.[i] ? { ...p, allowed: masks[i] } : p);
      const start = this.kv.grow(e.seq, e.tokens.length);
      const m = this.models.get(e.seq)!;
      m.tokens.length = start;
      m.tokens.push(...e.tokens);
      if (!e.verify) return sampleRow(m.model.forward(e.tokens, start, layers), withMask(e.sampling ?? { temperature: 0, u: 0 }, 0), DEFAULT_KMAX);
      // Verify: sample every row, accept while the sample equals the next proposal (see accept.wgsl).
      const V = this.config.vocab;
      const all = m.model.logitsAll(e.tokens, start, layers);
      const rows = e.verify.map((p, i) => sampleRow(all.subarray(i * V, (i + 1) * V), withMask(p, i), DEFAULT_KMAX));
      let accepted = 0;
      while (accepted < e.tokens.length - 1 && rows[accepted].id === e.tokens[accepted + 1]) accepted++;
      return { ...rows[accepted], accepted, ...(e.rows ? { acceptedRows: rows.slice(0, accepted) } : {}) };
    });
    if (this.yieldEachStep) await macrotask();
    return results;
  }

  destroy(): void {
    this.destroyed = true;
    this.models.clear();
  }
}
