// The StepRunner on intab's own CPU kernels (cpu-llama.ts): what runs a quantized GGUF where there is no usable GPU.
// K/V live in real pages (the PagePool's, in the kernels' memory), as on the WebGPU Runner, so everything the engine
// builds on pages holds here unchanged: continuous batching (a step's sequences are rows of one matrix), the prefix
// cache and preload (adopt and fork share pages, copy-on-write copies them), rewinds of rejected proposals, a saved
// prefix cache (pageIO reads and writes whole pages), and self-speculative drafts (a step may stop after any layer).

import { PagePool, checkLayers, checkStep, flatPageIO, type KvKey, type LlamaConfig, type PageIO, type RunnerCapabilities, type StepEntry, type StepOptions, type StepResult, type StepRunner } from '@intab/model';
import { OnnxUnsupportedError } from '../errors.ts';
import { sampleEntry } from '../sample-entry.ts';
import { CpuLlama } from './cpu-llama.ts';

export interface CpuRunnerOptions {
  /** Bytes of K/V all sequences may hold together [64 MiB]: sets the pool's pages. */
  kvBudgetBytes?: number;
  /** Most sequences in one step [16]. */
  maxBatch?: number;
  /** Most tokens in one step, of all its entries [512]. */
  maxTokensPerStep?: number;
  /** Tokens per page [16]. */
  pageSize?: number;
  /** Override the config's end-of-generation ids. */
  eosIds?: number[];
}

/** What pages saved by this runner depend on beyond the weights: the kernels (x is quantized to q8_0 before each matrix). */
export const CPU_KV_LAYOUT = 'intab-cpu-q8x';

/** Bytes of one page of K/V: per layer, K and V of pageSize tokens, Hkv·D f32 each. */
export function cpuPageBytes(config: Pick<LlamaConfig, 'layers' | 'kvHeads' | 'headDim'>, pageSize: number): number {
  return 2 * config.layers * pageSize * config.kvHeads * config.headDim * 4;
}

/**
 * @example
 * const runner = new CpuRunner(forward, config, weightsHash, { kvBudgetBytes: 64 << 20 });
 * runner.alloc(0);
 * const [{ id }] = await runner.step([{ seq: 0, tokens: [1, 403, 261] }]);
 */
export class CpuRunner implements StepRunner {
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null; layers: number };
  readonly capabilities: RunnerCapabilities = { sharedPages: true, earlyExit: true };
  readonly kv: PagePool;
  readonly maxBatch: number;
  readonly maxRows: number;
  readonly maxTokens: number;
  readonly pageIO: PageIO;
  private destroyed = false;

  constructor(
    private readonly forward: CpuLlama,
    readonly model: LlamaConfig,
    weightsHash: string,
    options: CpuRunnerOptions & { pages: number; pageSize: number },
  ) {
    this.config = { vocab: model.vocab, maxContext: model.maxContext, eosIds: options.eosIds ?? model.eosIds, bosId: model.bosId, layers: model.layers };
    this.maxBatch = options.maxBatch ?? 16;
    this.maxRows = forward.maxRows;
    this.maxTokens = forward.maxTokens;
    this.kv = new PagePool(options.pages, options.pageSize);
    const P = options.pageSize;
    const pageValues = P * model.kvHeads * model.headDim;
    const key: KvKey = { weights: weightsHash, quantize: null, kvDtype: 'f32', pageSize: P, arch: { ...model, kvLayout: CPU_KV_LAYOUT } };
    this.pageIO = {
      pageBytes: cpuPageBytes(model, P),
      key: async () => key,
      ...flatPageIO(() => this.forward.kv(), pageValues, (d) => new OnnxUnsupportedError('pageIO.write', `${d}: give pages.length · pageBytes.`)),
    };
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
  }

  adopt(seq: number, pages: readonly number[], length: number): void {
    this.kv.adopt(seq, pages, length);
  }

  free(seq: number): void {
    this.kv.free(seq);
  }

  rewind(seq: number, n: number): void {
    this.kv.rewind(seq, n);
  }

  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
  }

  async step(entries: readonly StepEntry[], options: StepOptions = {}): Promise<StepResult[]> {
    if (this.destroyed) throw new OnnxUnsupportedError('step', 'this CpuRunner was destroyed: load the model again.');
    if (entries.length === 0) return [];
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch, this.maxRows, this.maxTokens);
    const layers = checkLayers(this.model, options.layers);
    const P = this.kv.pageSize;
    // Grow every sequence first (copy-on-write copies done before any K/V is written), then lay the tokens out.
    const starts = entries.map((e) => {
      const start = this.kv.grow(e.seq, e.tokens.length);
      this.copyPages();
      return start;
    });
    const M = entries.reduce((n, e) => n + e.tokens.length, 0);
    const ids = new Int32Array(M);
    const positions = new Int32Array(M);
    const entryOf = new Int32Array(M);
    const tables: Int32Array[] = [];
    const rows: number[] = [];
    let i = 0;
    entries.forEach((e, b) => {
      const end = starts[b] + e.tokens.length;
      const pages = this.kv.pagesOf(e.seq);
      const table = new Int32Array(end);
      for (let p = 0; p < end; p++) table[p] = pages[Math.floor(p / P)] * P + (p % P);
      tables.push(table);
      e.tokens.forEach((id, j) => {
        ids[i] = id;
        positions[i] = starts[b] + j;
        entryOf[i] = b;
        if (e.verify || j === e.tokens.length - 1) rows.push(i);
        i++;
      });
    });
    let logits: Float32Array;
    try {
      logits = this.forward.forward({ ids, positions, entryOf, tables }, rows, layers);
    } catch (err) {
      entries.forEach((e) => this.kv.rewind(e.seq, e.tokens.length));
      throw err;
    }
    const V = this.config.vocab;
    const results: StepResult[] = [];
    let r = 0;
    for (const e of entries) {
      const n = e.verify ? e.tokens.length : 1;
      const first = r;
      results.push(sampleEntry(e, logits.subarray(r * V, (r + n) * V), V, options.logits === true, (i) => this.forward.expSum(first + i)));
      r += n;
    }
    return results;
  }

  destroy(): void {
    if (!this.destroyed) this.forward.close();
    this.destroyed = true;
  }

  /** Performs the copy-on-write copies the pool owes (every layer's K and V). */
  private copyPages(): void {
    const n = this.kv.pageSize * this.model.kvHeads * this.model.headDim;
    const copies = this.kv.takeCopies();
    if (copies.length === 0) return;
    const { keys, values } = this.forward.kv();
    for (const [from, to] of copies) for (const a of [...keys, ...values]) a.copyWithin(to * n, from * n, (from + 1) * n);
  }
}
