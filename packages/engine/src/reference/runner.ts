// A StepRunner on plain CPU loops, so the engine (scheduler, sampling policy, stops, backpressure, abort, the
// prefix cache) is tested in Node without a GPU: each sequence runs the CPU reference model
// (@intab/model/reference) over a paged KV-cache in CPU memory, laid out and accounted exactly as the GPU's
// PagedKvCache (PagePool: pages, shared pages, copy-on-write, all-or-nothing growth, KvCacheFullError), and is
// sampled by the CPU twin of the GPU sampler (@intab/gpu/reference sampleRow), so ids match the Runner's.
// Because the model reads its K/V through the page table, a page shared wrongly or written while shared
// changes the ids: the prefix cache's tests can fail. Every step is logged (which sequences, how many tokens)
// so tests assert on scheduling without timing anything.

import { DEFAULT_KMAX, type SamplingParams } from '@intab/gpu';
import { sampleRow } from '@intab/gpu/reference';
import {
  IntabModelError,
  PagePool,
  checkLayers,
  checkStep,
  flatPageIO,
  type KvKey,
  type LlamaConfig,
  type PageIO,
  type StepEntry,
  type StepOptions,
  type StepResult,
  type StepRunner,
} from '@intab/model';
import { createReferenceModel, type ReferenceModel, type WeightsFn } from '@intab/model/reference';
import { xxhash128 } from 'hash-wasm';

export interface ReferenceRunnerOptions {
  /** Pages in the pool [64]. */
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
  /** The GPU cache's page accounting. */
  readonly kv: PagePool;
  /** Every step run, in order (for tests: who was in which step, with how many tokens). */
  readonly log: StepLogEntry[] = [];
  readonly pageIO: PageIO;
  /** Per layer: K and V, each (pages · PAGE, Hkv · D) f32, as the GPU cache's buffers. */
  private readonly keys: Float32Array[];
  private readonly values: Float32Array[];
  /** (pages · PAGE) the token whose K/V each slot holds (-1: never written), to check what a sequence's cache holds. */
  private readonly slotTokens: Int32Array;
  private readonly models = new Map<number, ReferenceModel>();
  private readonly yieldEachStep: boolean;
  /** Canonical names of the tensors the model reads, in the order it reads them (for the weights hash). */
  private readonly tensorNames: string[] = [];
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
    const rowValues = model.kvHeads * model.headDim;
    const slots = this.kv.pages * this.kv.pageSize;
    this.keys = Array.from({ length: model.layers }, () => new Float32Array(slots * rowValues));
    this.values = Array.from({ length: model.layers }, () => new Float32Array(slots * rowValues));
    this.slotTokens = new Int32Array(slots).fill(-1);
    const pageValues = this.kv.pageSize * rowValues;
    const pageBytes = model.layers * 2 * pageValues * 4;
    let key: Promise<KvKey> | undefined;
    // A page's bytes in pageIO's layout: per layer its K block, then its V block (PAGE·Hkv·D f32 each).
    const io = flatPageIO(() => ({ keys: this.keys, values: this.values }), pageValues, (d) => new IntabModelError(`pageIO.write: ${d}: give pages.length × pageBytes.`));
    this.pageIO = {
      pageBytes,
      key: () => (key ??= this.kvKey()),
      read: io.read,
      write: async (pages, bytes) => {
        await io.write(pages, bytes);
        for (const p of pages) this.slotTokens.fill(-1, p * this.kv.pageSize, (p + 1) * this.kv.pageSize);
      },
    };
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
    this.models.set(seq, this.modelOf(seq));
  }

  adopt(seq: number, pages: readonly number[], length: number): void {
    this.kv.adopt(seq, pages, length);
    this.models.set(seq, this.modelOf(seq));
  }

  free(seq: number): void {
    this.kv.free(seq);
    this.models.delete(seq);
  }

  rewind(seq: number, n: number): void {
    this.kv.rewind(seq, n);
  }

  /** The tokens whose K/V a sequence's cache holds, in position order, read through its page table (-1: a slot never written here). */
  cachedTokens(seq: number): number[] {
    if (!this.kv.has(seq)) return [];
    const P = this.kv.pageSize;
    const pages = this.kv.pagesOf(seq);
    return Array.from({ length: this.kv.length(seq) }, (_, pos) => this.slotTokens[pages[Math.floor(pos / P)] * P + (pos % P)]);
  }

  /** The tokens whose K/V a page's slots hold, in slot order (-1: a slot never written, or restored from disk). */
  pageTokens(page: number): number[] {
    const P = this.kv.pageSize;
    return [...this.slotTokens.subarray(page * P, (page + 1) * P)];
  }

  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
    this.models.set(dst, this.modelOf(dst));
  }

  async step(entries: readonly StepEntry[], options: StepOptions = {}): Promise<StepResult[]> {
    if (this.destroyed) throw new IntabModelError('This ReferenceRunner was destroyed.');
    if (entries.length === 0) return [];
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch, this.maxRows);
    const layers = checkLayers(this.model, options.layers);
    this.log.push(entries.map((e) => ({ seq: e.seq, tokens: e.tokens.length, ...(options.layers !== undefined ? { layers } : {}) })));
    // Grow every sequence first (as the GPU Runner plans the whole step), then run them.
    const starts = entries.map((e) => {
      const start = this.kv.grow(e.seq, e.tokens.length);
      this.copyPages();
      const P = this.kv.pageSize;
      const pages = this.kv.pagesOf(e.seq);
      e.tokens.forEach((t, i) => (this.slotTokens[pages[Math.floor((start + i) / P)] * P + ((start + i) % P)] = t));
      return start;
    });
    const results = entries.map((e, b): StepResult => {
      const masks = e.masks?.();
      const withMask = (p: SamplingParams, i: number): SamplingParams => (masks?.[i] ? { ...p, allowed: masks[i] } : p);
      const model = this.models.get(e.seq)!;
      if (!e.verify) return sampleRow(model.forward(e.tokens, starts[b], layers), withMask(e.sampling ?? { temperature: 0, u: 0 }, 0), DEFAULT_KMAX);
      // Verify: sample every row, accept while the sample equals the next proposal (see accept.wgsl).
      const V = this.config.vocab;
      const all = model.logitsAll(e.tokens, starts[b], layers);
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

  /** The reference model of one sequence, reading and writing K/V through its page table. */
  private modelOf(seq: number): ReferenceModel {
    const P = this.kv.pageSize;
    const pool = this.kv;
    return createReferenceModel(this.model, this.weights, {
      kv: { k: this.keys, v: this.values, row: (pos) => pool.pagesOf(seq)[Math.floor(pos / P)] * P + (pos % P) },
    });
  }

  /** Performs the copy-on-write copies the pool owes (every layer's K and V, and the slots' tokens). */
  private copyPages(): void {
    const P = this.kv.pageSize;
    const n = P * this.model.kvHeads * this.model.headDim;
    for (const [from, to] of this.kv.takeCopies()) {
      for (const a of [...this.keys, ...this.values]) a.copyWithin(to * n, from * n, (from + 1) * n);
      this.slotTokens.copyWithin(to * P, from * P, (from + 1) * P);
    }
  }

  /** What the pages' bytes depend on: every weight (hashed), f32 K/V, the page size and the architecture. */
  private async kvKey(): Promise<KvKey> {
    if (this.tensorNames.length === 0) createReferenceModel(this.model, (name) => (this.tensorNames.push(name), this.weights(name)));
    const parts: Uint8Array[] = [];
    for (const name of this.tensorNames) {
      const t = this.weights(name)!;
      parts.push(new TextEncoder().encode(name), new Uint8Array(t.buffer, t.byteOffset, t.byteLength));
    }
    const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let at = 0;
    for (const p of parts) all.set(p, (at += p.byteLength) - p.byteLength);
    return { weights: `xxh128:${await xxhash128(all)}`, quantize: null, kvDtype: 'f32', pageSize: this.kv.pageSize, arch: this.model };
  }
}
