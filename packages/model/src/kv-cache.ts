// The paged KV-cache: per layer one K and one V buffer of (pages, PAGE, Hkv, D) f32 (layout:
// @intab/gpu kernels/paged-kv.ts), a pool of page ids, and a page list per sequence. Sequences grow a
// page at a time and shrink on rewind, so batching sequences of any lengths never copies. fork() shares
// pages between sequences (reference counts); a shared page is copied only when a sequence is about to
// write into it (copy-on-write), which happens only to a partly filled last page.

import { DEFAULT_PAGE_SIZE, LimitError, formatBytes, type Gpu } from '@intab/gpu';
import { IntabModelError } from './errors.ts';

export interface KvCacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
  /** Tokens per page (default 16). */
  pageSize?: number;
}

export interface KvCacheOptions {
  /** Bytes for K and V of all layers together; the page count follows. */
  budgetBytes: number;
  label?: string;
}

/** No page is free for a sequence that needs one: wait for others to finish, or shorten the context. */
export class KvCacheFullError extends IntabModelError {
  readonly needed: number;
  readonly free: number;
  constructor(needed: number, free: number, total: number) {
    super(`The KV-cache has ${free} free pages of ${total} but the step needs ${needed}: wait for running sequences to finish, or raise the KV budget.`);
    this.name = 'KvCacheFullError';
    this.needed = needed;
    this.free = free;
  }
}

export class PagedKvCache {
  readonly pageSize: number;
  readonly pages: number;
  /** Per layer: K and V, each (pages, PAGE, Hkv, D) f32. */
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  private readonly freePages: number[] = [];
  /** Sequences holding each page. */
  private readonly refs: Uint32Array;
  /** Page copies (from → to) that must run before the next step writes: see recordCopies(). */
  private pendingCopies: [number, number][] = [];
  private staging?: GPUBuffer;
  private readonly seqPages = new Map<number, number[]>();
  private readonly seqLength = new Map<number, number>();
  private destroyed = false;

  constructor(
    private readonly gpu: Gpu,
    readonly shape: KvCacheShape,
    options: KvCacheOptions,
  ) {
    this.pageSize = shape.pageSize ?? DEFAULT_PAGE_SIZE;
    const pageBytes = this.pageSize * shape.kvHeads * shape.headDim * 4;
    const perPageAllLayers = pageBytes * 2 * shape.layers;
    const byBudget = Math.floor(options.budgetBytes / perPageAllLayers);
    const byBinding = Math.floor(gpu.limits.maxStorageBufferBindingSize / pageBytes);
    this.pages = Math.min(byBudget, byBinding);
    if (this.pages < 1) {
      throw new LimitError(
        'KV-cache page',
        byBudget < 1 ? 'KV budget' : 'maxStorageBufferBindingSize',
        perPageAllLayers,
        byBudget < 1 ? options.budgetBytes : gpu.limits.maxStorageBufferBindingSize,
        'raise the KV budget or use a smaller page size.',
      );
    }
    const label = options.label ?? 'kv';
    for (let l = 0; l < shape.layers; l++) {
      const make = (kind: string) =>
        gpu.device.createBuffer({ label: `L${l}.${label}.${kind}`, size: this.pages * pageBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      this.k.push(make('k'));
      this.v.push(make('v'));
    }
    for (let p = this.pages - 1; p >= 0; p--) this.freePages.push(p);
    this.refs = new Uint32Array(this.pages);
  }

  /** Bytes on the GPU. */
  get bytes(): number {
    return this.pages * this.pageSize * this.shape.kvHeads * this.shape.headDim * 4 * 2 * this.shape.layers;
  }

  get freePageCount(): number {
    return this.freePages.length;
  }

  /** Tokens cached for a sequence (0 for an unknown one). */
  length(seq: number): number {
    return this.seqLength.get(seq) ?? 0;
  }

  has(seq: number): boolean {
    return this.seqPages.has(seq);
  }

  /** Start an empty sequence. */
  alloc(seq: number): void {
    if (this.seqPages.has(seq)) throw new IntabModelError(`KV-cache: sequence ${seq} already exists; free it first.`);
    this.seqPages.set(seq, []);
    this.seqLength.set(seq, 0);
  }

  /**
   * Pages the sequence would take from the pool to hold `length` tokens: new pages, plus a private copy
   * of its last page when that page is shared and partly filled (it will be written).
   */
  pagesNeeded(seq: number, length: number): number {
    const pages = this.seqPages.get(seq) ?? [];
    const have = this.seqLength.get(seq) ?? 0;
    const fresh = Math.max(0, Math.ceil(length / this.pageSize) - pages.length);
    const copy = length > have && have % this.pageSize !== 0 && this.refs[pages[pages.length - 1]] > 1 ? 1 : 0;
    return fresh + copy;
  }

  /** Make room for `extra` more tokens (all-or-nothing); returns the position of the first. */
  grow(seq: number, extra: number): number {
    const pages = this.pagesOf(seq);
    const start = this.seqLength.get(seq)!;
    const need = this.pagesNeeded(seq, start + extra);
    if (need > this.freePages.length) throw new KvCacheFullError(need, this.freePages.length, this.pages);
    if (extra > 0 && start % this.pageSize !== 0) {
      const last = pages[pages.length - 1];
      if (this.refs[last] > 1) {
        // copy-on-write: this sequence is about to append into a page another sequence still reads
        const own = this.take();
        this.pendingCopies.push([last, own]);
        this.refs[last]--;
        pages[pages.length - 1] = own;
      }
    }
    const fresh = Math.ceil((start + extra) / this.pageSize) - pages.length;
    for (let i = 0; i < fresh; i++) pages.push(this.take());
    this.seqLength.set(seq, start + extra);
    return start;
  }

  /** Drop the last `n` tokens (rejected speculative drafts); releases pages that become empty. */
  rewind(seq: number, n: number): void {
    const pages = this.pagesOf(seq);
    const length = Math.max(0, this.seqLength.get(seq)! - n);
    this.seqLength.set(seq, length);
    const keep = Math.ceil(length / this.pageSize);
    while (pages.length > keep) this.release(pages.pop()!);
  }

  /**
   * A new sequence `dst` holding the same tokens as `src` (prefix caching, parallel samples): the pages are
   * shared, not copied, until one of the two appends into a shared partly filled page.
   */
  fork(src: number, dst: number): void {
    const pages = this.pagesOf(src);
    if (this.seqPages.has(dst)) throw new IntabModelError(`KV-cache: sequence ${dst} already exists; free it first.`);
    for (const p of pages) this.refs[p]++;
    this.seqPages.set(dst, [...pages]);
    this.seqLength.set(dst, this.seqLength.get(src)!);
  }

  /** Release a sequence and its pages. Idempotent. */
  free(seq: number): void {
    const pages = this.seqPages.get(seq);
    if (!pages) return;
    for (const p of pages) this.release(p);
    this.seqPages.delete(seq);
    this.seqLength.delete(seq);
  }

  /** Record the pending copy-on-write page copies (every layer's K and V) into `encoder`, before the step. */
  recordCopies(encoder: GPUCommandEncoder): void {
    const copies = this.pendingCopies;
    if (!copies.length) return;
    this.pendingCopies = [];
    const bytes = this.pageSize * this.shape.kvHeads * this.shape.headDim * 4;
    // WebGPU copies never have the same buffer at both ends: go through a staging buffer.
    if (!this.staging || this.staging.size < copies.length * bytes) {
      this.staging?.destroy();
      this.staging = this.gpu.device.createBuffer({ label: 'kv.cow', size: copies.length * bytes, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    }
    const staging = this.staging;
    for (const buffer of [...this.k, ...this.v]) {
      copies.forEach(([from], i) => encoder.copyBufferToBuffer(buffer, from * bytes, staging, i * bytes, bytes));
      copies.forEach(([, to], i) => encoder.copyBufferToBuffer(staging, i * bytes, buffer, to * bytes, bytes));
    }
  }

  private take(): number {
    const p = this.freePages.pop()!;
    this.refs[p] = 1;
    return p;
  }

  private release(p: number): void {
    if (--this.refs[p] === 0) this.freePages.push(p);
  }

  /** The page table rows of `seqs`, (B, maxPages) u32, padded with page 0 (never read past a length). */
  pageTable(seqs: readonly number[]): { table: Uint32Array; maxPages: number } {
    const maxPages = Math.max(1, ...seqs.map((s) => this.pagesOf(s).length));
    const table = new Uint32Array(seqs.length * maxPages);
    seqs.forEach((s, b) => table.set(this.pagesOf(s), b * maxPages));
    return { table, maxPages };
  }

  describe(): string {
    return `${this.pages} pages × ${this.pageSize} tokens (${formatBytes(this.bytes)})`;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of [...this.k, ...this.v]) b.destroy();
    this.staging?.destroy();
  }

  private pagesOf(seq: number): number[] {
    const pages = this.seqPages.get(seq);
    if (!pages) throw new IntabModelError(`KV-cache: unknown sequence ${seq}; alloc() it first.`);
    return pages;
  }
}
