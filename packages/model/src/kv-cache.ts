// The paged KV-cache on the GPU: per layer one K and one V buffer of (pages, PAGE, Hkv, D) f32 (layout:
// @intab/gpu kernels/paged-kv.ts), with the page accounting of PagePool (page lists per sequence, shared
// pages after fork, copy-on-write). Sequences grow a page at a time and shrink on rewind, so batching
// sequences of any lengths never copies; the only copies are the copy-on-write ones, recorded before a step.

import { DEFAULT_PAGE_SIZE, LimitError, formatBytes, type Gpu } from '@intab/gpu';
import { PagePool } from './page-pool.ts';

export { KvCacheFullError } from './errors.ts';

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

export class PagedKvCache extends PagePool {
  /** Per layer: K and V, each (pages, PAGE, Hkv, D) f32. */
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  private staging?: GPUBuffer;
  private destroyed = false;

  constructor(
    private readonly gpu: Gpu,
    readonly shape: KvCacheShape,
    options: KvCacheOptions,
  ) {
    const pageSize = shape.pageSize ?? DEFAULT_PAGE_SIZE;
    const pageBytes = pageSize * shape.kvHeads * shape.headDim * 4;
    const perPageAllLayers = pageBytes * 2 * shape.layers;
    const byBudget = Math.floor(options.budgetBytes / perPageAllLayers);
    const byBinding = Math.floor(gpu.limits.maxStorageBufferBindingSize / pageBytes);
    const pages = Math.min(byBudget, byBinding);
    if (pages < 1) {
      throw new LimitError(
        'KV-cache page',
        byBudget < 1 ? 'KV budget' : 'maxStorageBufferBindingSize',
        perPageAllLayers,
        byBudget < 1 ? options.budgetBytes : gpu.limits.maxStorageBufferBindingSize,
        'raise the KV budget or use a smaller page size.',
      );
    }
    super(pages, pageSize);
    const label = options.label ?? 'kv';
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    for (let l = 0; l < shape.layers; l++) {
      this.k.push(gpu.device.createBuffer({ label: `L${l}.${label}.k`, size: pages * pageBytes, usage }));
      this.v.push(gpu.device.createBuffer({ label: `L${l}.${label}.v`, size: pages * pageBytes, usage }));
    }
  }

  /** Bytes on the GPU. */
  get bytes(): number {
    return this.pages * this.pageBytes * 2 * this.shape.layers;
  }

  /** The page table rows of `seqs`, (B, maxPages) u32, padded with page 0 (never read past a length). */
  pageTable(seqs: readonly number[]): { table: Uint32Array; maxPages: number } {
    const maxPages = Math.max(1, ...seqs.map((s) => this.pagesOf(s).length));
    const table = new Uint32Array(seqs.length * maxPages);
    seqs.forEach((s, b) => table.set(this.pagesOf(s), b * maxPages));
    return { table, maxPages };
  }

  /** Record the pending copy-on-write page copies (every layer's K and V) into `encoder`, before the step. */
  recordCopies(encoder: GPUCommandEncoder): void {
    const copies = this.takeCopies();
    if (!copies.length) return;
    const bytes = this.pageBytes;
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

  describe(): string {
    return `${this.pages} pages × ${this.pageSize} tokens (${formatBytes(this.bytes)})`;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of [...this.k, ...this.v]) b.destroy();
    this.staging?.destroy();
  }

  /** Bytes of one page of one layer's K (or V). */
  private get pageBytes(): number {
    return this.pageSize * this.shape.kvHeads * this.shape.headDim * 4;
  }
}
