// A StepRunner on plain CPU loops, so the engine (scheduler, sampling policy, stops, backpressure, abort) is
// tested in Node without a GPU: each sequence runs its own CPU reference model (@intab/model/reference) and is
// sampled by the CPU twin of the GPU sampler (@intab/gpu/reference sampleRow), so ids match the Runner's. A
// simulated page pool mirrors the GPU PagedKvCache's accounting (pages, copy-on-write fork, all-or-nothing
// growth, KvCacheFullError), which lets tests exhaust the KV budget and count leaked pages. Every step is
// logged (which sequences, how many tokens) so tests assert on scheduling without timing anything.

import type { SampleResult } from '@intab/gpu';
import { DEFAULT_KMAX, sampleRow } from '@intab/gpu/reference';
import { IntabModelError, KvCacheFullError, type LlamaConfig } from '@intab/model';
import { createReferenceModel, type ReferenceModel, type WeightsFn } from '@intab/model/reference';
import type { RunnerEntry, StepRunner } from './step-runner.ts';

export interface ReferenceRunnerOptions {
  /** Pages in the simulated pool [64]. */
  pages?: number;
  /** Tokens per page [16]. */
  pageSize?: number;
  /** Most sequences per step [16]. */
  maxBatch?: number;
  /** Override the config's end-of-generation ids (a GGUF without tokenizer metadata has none). */
  eosIds?: number[];
  /** Let each step wait for a macrotask, as a GPU readback does, so timers and events run between steps [true]. */
  yieldEachStep?: boolean;
}

/** The KV accounting of PagedKvCache without the GPU buffers. */
export class ReferencePagePool {
  readonly pages: number;
  readonly pageSize: number;
  private readonly pool: number[] = [];
  private readonly refs: Uint32Array;
  private readonly seqPages = new Map<number, number[]>();
  private readonly seqLength = new Map<number, number>();

  constructor(pages: number, pageSize: number) {
    this.pages = pages;
    this.pageSize = pageSize;
    this.refs = new Uint32Array(pages);
    for (let p = pages - 1; p >= 0; p--) this.pool.push(p);
  }

  get freePageCount(): number {
    return this.pool.length;
  }

  /** Sequences holding pages (or allocated with none). */
  get sequences(): number {
    return this.seqPages.size;
  }

  length(seq: number): number {
    return this.seqLength.get(seq) ?? 0;
  }

  has(seq: number): boolean {
    return this.seqPages.has(seq);
  }

  alloc(seq: number): void {
    if (this.seqPages.has(seq)) throw new IntabModelError(`KV-cache: sequence ${seq} already exists; free it first.`);
    this.seqPages.set(seq, []);
    this.seqLength.set(seq, 0);
  }

  pagesNeeded(seq: number, length: number): number {
    const pages = this.seqPages.get(seq) ?? [];
    const have = this.seqLength.get(seq) ?? 0;
    const fresh = Math.max(0, Math.ceil(length / this.pageSize) - pages.length);
    const copy = length > have && have % this.pageSize !== 0 && this.refs[pages[pages.length - 1]] > 1 ? 1 : 0;
    return fresh + copy;
  }

  grow(seq: number, extra: number): number {
    const pages = this.pagesOf(seq);
    const start = this.seqLength.get(seq)!;
    const need = this.pagesNeeded(seq, start + extra);
    if (need > this.pool.length) throw new KvCacheFullError(need, this.pool.length, this.pages);
    if (extra > 0 && start % this.pageSize !== 0 && this.refs[pages[pages.length - 1]] > 1) {
      this.refs[pages[pages.length - 1]]--;
      pages[pages.length - 1] = this.take();
    }
    const fresh = Math.ceil((start + extra) / this.pageSize) - pages.length;
    for (let i = 0; i < fresh; i++) pages.push(this.take());
    this.seqLength.set(seq, start + extra);
    return start;
  }

  rewind(seq: number, n: number): void {
    const pages = this.pagesOf(seq);
    const length = Math.max(0, this.seqLength.get(seq)! - n);
    this.seqLength.set(seq, length);
    const keep = Math.ceil(length / this.pageSize);
    while (pages.length > keep) this.release(pages.pop()!);
  }

  fork(src: number, dst: number): void {
    const pages = this.pagesOf(src);
    if (this.seqPages.has(dst)) throw new IntabModelError(`KV-cache: sequence ${dst} already exists; free it first.`);
    for (const p of pages) this.refs[p]++;
    this.seqPages.set(dst, [...pages]);
    this.seqLength.set(dst, this.seqLength.get(src)!);
  }

  free(seq: number): void {
    const pages = this.seqPages.get(seq);
    if (!pages) return;
    for (const p of pages) this.release(p);
    this.seqPages.delete(seq);
    this.seqLength.delete(seq);
  }

  private take(): number {
    const p = this.pool.pop()!;
    this.refs[p] = 1;
    return p;
  }

  private release(p: number): void {
    if (--this.refs[p] === 0) this.pool.push(p);
  }

  private pagesOf(seq: number): number[] {
    const pages = this.seqPages.get(seq);
    if (!pages) throw new IntabModelError(`KV-cache: sequence ${seq} was not allocated: call alloc(${seq}) first.`);
    return pages;
  }
}

/** One logged step: each entry's sequence and token count. */
export type StepLogEntry = { seq: number; tokens: number }[];

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
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null };
  readonly maxBatch: number;
  readonly kv: ReferencePagePool;
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
    this.config = { vocab: model.vocab, maxContext: model.maxContext, eosIds: options.eosIds ?? model.eosIds, bosId: model.bosId };
    this.maxBatch = options.maxBatch ?? 16;
    this.kv = new ReferencePagePool(options.pages ?? 64, options.pageSize ?? 16);
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

  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
    // The reference model cannot share a cache: replay the source's tokens into a fresh one.
    const tokens = [...this.models.get(src)!.tokens];
    const model = createReferenceModel(this.model, this.weights);
    if (tokens.length) model.forward(tokens, 0);
    this.models.set(dst, { model, tokens });
  }

  async step(entries: readonly RunnerEntry[]): Promise<SampleResult[]> {
    if (this.destroyed) throw new IntabModelError('This ReferenceRunner was destroyed.');
    if (entries.length === 0) return [];
    if (entries.length > this.maxBatch) {
      throw new IntabModelError(`A step holds at most ${this.maxBatch} sequences (maxBatch); got ${entries.length}: split the batch.`);
    }
    // The same checks as Runner.plan, all before anything grows.
    for (const e of entries) {
      if (!this.kv.has(e.seq)) throw new IntabModelError(`step: sequence ${e.seq} was not allocated: call alloc(${e.seq}) first.`);
      if (e.tokens.length === 0) throw new IntabModelError(`step: sequence ${e.seq} has no tokens.`);
      for (const id of e.tokens) {
        if (!Number.isInteger(id) || id < 0 || id >= this.config.vocab) {
          throw new IntabModelError(`step: token id ${id} of sequence ${e.seq} is outside the vocabulary (0..${this.config.vocab - 1}).`);
        }
      }
    }
    if (new Set(entries.map((e) => e.seq)).size !== entries.length) throw new IntabModelError('step: a sequence appears twice in one step.');
    const need = entries.reduce((n, e) => n + this.kv.pagesNeeded(e.seq, this.kv.length(e.seq) + e.tokens.length), 0);
    if (need > this.kv.freePageCount) throw new KvCacheFullError(need, this.kv.freePageCount, this.kv.pages);
    this.log.push(entries.map((e) => ({ seq: e.seq, tokens: e.tokens.length })));
    const results = entries.map((e) => {
      const start = this.kv.grow(e.seq, e.tokens.length);
      const m = this.models.get(e.seq)!;
      const logits = m.model.forward(e.tokens, start);
      m.tokens.push(...e.tokens);
      return sampleRow(logits, e.sampling ?? { temperature: 0, u: 0 }, DEFAULT_KMAX);
    });
    if (this.yieldEachStep) await macrotask();
    return results;
  }

  destroy(): void {
    this.destroyed = true;
    this.models.clear();
  }
}
