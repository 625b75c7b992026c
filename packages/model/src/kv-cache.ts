// The paged KV-cache on the GPU: per layer one K and one V buffer of (pages, PAGE, Hkv, D) f32 (layout:
// @intab/gpu kernels/paged-kv.ts), with the page accounting of PagePool (page lists per sequence, shared
// pages after fork, copy-on-write). Sequences grow a page at a time and shrink on rewind, so batching
// sequences of any lengths never copies; the only copies are the copy-on-write ones, recorded before a step.
// The budget becomes whole pages, clamped (and the clamp reported) where one layer's K or V would pass the adapter's
// largest buffer or storage binding: a big budget on a small adapter loads with fewer pages instead of failing.
// Sliding-window layers beside full ones (Gemma 3) get their own, smaller store (PoolWindow): enough window pages
// for `sequences` sequences, never more than full attention would have had, and the rest of the budget goes to the
// full layers' pages, so a long sequence holds about (full layers + windowed layers · window / length) of its K/V.

import { DEFAULT_PAGE_SIZE, LimitError, formatBytes, type Gpu, type GpuLimits } from '@intab/gpu';
import { IntabModelError } from './errors.ts';
import { PagePool, type PoolWindow } from './page-pool.ts';

export { KvCacheFullError } from './errors.ts';

/** Pages the copy-on-write staging buffer holds (copies of a step beyond that run in rounds). */
const COW_STAGING_PAGES = 16;

export interface KvCacheShape {
  layers: number;
  kvHeads: number;
  headDim: number;
  /** Tokens per page (default 16). */
  pageSize?: number;
  /** Each layer's attention window (0: every position; config.ts layerWindows). */
  windows?: readonly number[];
  /** The layers that keep K/V (default: every layer); Qwen3.5's Gated DeltaNet layers keep none. */
  kvLayers?: readonly number[];
  /**
   * Gives the windowed layers their own store of window pages (when some layers are windowed and some are not):
   * `reach`, the longest rewind after a step; `step`, the most tokens of one step; `sequences`, how many
   * sequences at once the store is sized for.
   */
  windowStore?: { reach: number; step: number; sequences: number };
}

export interface KvCacheOptions {
  /** Bytes for K and V of all layers together; the page count follows. */
  budgetBytes: number;
  label?: string;
}

/** The KV budget as asked and as granted: whole pages, fewer when `limit` (the adapter's) bounds one layer's K or V. */
export interface KvBudget {
  asked: number;
  /** Bytes of K/V pages of all layers (PagedKvCache.pages · pageBytesAllLayers). */
  granted: number;
  /** The limit that clamped the budget; absent when it was not clamped (only rounded down to whole pages). */
  limit?: 'maxStorageBufferBindingSize' | 'maxBufferSize';
}

/** What a PagedKvCache of `shape` allocates for a budget on an adapter with `limits` (see planKvCache). */
export interface KvPlan {
  pages: number;
  pageSize: number;
  /** Bytes of one page of one layer's K (or V). */
  pageBytes: number;
  /** Pages the copy-on-write staging buffer holds. */
  stagingPages: number;
  /** Bytes on the GPU: every layer's K and V, and the staging buffer. */
  bytes: number;
  budget: KvBudget;
  /** The windowed layers' own store; absent when every layer keeps every position. */
  window?: PoolWindow;
  /** Per layer: whether its K/V live in the window store. */
  windowed: boolean[];
  /** Per layer: whether it keeps K/V at all. */
  keepsKv: boolean[];
}

/** Per layer, whether it keeps K/V (KvCacheShape.kvLayers). */
function keepsKv(shape: KvCacheShape): boolean[] {
  const kept = shape.kvLayers ? new Set(shape.kvLayers) : undefined;
  return Array.from({ length: shape.layers }, (_, l) => !kept || kept.has(l));
}

/** The windowed layers of `shape` that get their own store, and their window (undefined: none do). */
function windowLayers(shape: KvCacheShape): { windowed: boolean[]; window: number } | undefined {
  const windows = shape.windows ?? [];
  const kv = keepsKv(shape);
  const windowed = kv.map((keeps, l) => keeps && (windows[l] ?? 0) > 0);
  const count = windowed.filter(Boolean).length;
  // Every layer windowed (Mistral's sliding window): left as full attention, as there is no full layer to size by.
  if (!shape.windowStore || count === 0 || count === kv.filter(Boolean).length) return undefined;
  return { windowed, window: Math.max(...windows) };
}

/**
 * The pages a budget buys: as many as it holds whole, at most as many as one buffer and one storage binding of the
 * adapter hold (each layer's K and V is one buffer, bound whole). Throws a LimitError when not even one page fits.
 * @example
 * const plan = planKvCache(gpu.limits, { layers: 30, kvHeads: 3, headDim: 64 }, 1 << 40); // plan.budget.limit set
 */
export function planKvCache(limits: Pick<GpuLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize'>, shape: KvCacheShape, budgetBytes: number): KvPlan {
  if (typeof budgetBytes !== 'number' || !(budgetBytes > 0)) {
    throw new IntabModelError(`KV-cache: a budget of ${String(budgetBytes)} bytes: give kvBudgetBytes as a positive number of bytes (e.g. 128 MiB = ${128 << 20}).`);
  }
  const pageSize = shape.pageSize ?? DEFAULT_PAGE_SIZE;
  const pageBytes = pageSize * shape.kvHeads * shape.headDim * 4;
  const kvLayers = keepsKv(shape).filter(Boolean).length;
  const perPageAllLayers = pageBytes * 2 * kvLayers;
  const limit = limits.maxBufferSize < limits.maxStorageBufferBindingSize ? 'maxBufferSize' : 'maxStorageBufferBindingSize';
  const allowed = limits[limit];
  const byBudget = Math.floor(budgetBytes / perPageAllLayers);
  const byLimit = Math.floor(allowed / pageBytes);
  const split = windowLayers(shape);
  let pages = Math.min(byBudget, byLimit);
  let window: PoolWindow | undefined;
  let granted = pages * perPageAllLayers;
  if (split && pages >= 1) {
    const { reach, step, sequences } = shape.windowStore!;
    const windowedLayers = split.windowed.filter(Boolean).length;
    const perSequence = Math.ceil((split.window + reach + step) / pageSize) + 1;
    const windowPages = Math.min(pages, sequences * perSequence);
    const windowBytes = windowPages * pageBytes * 2 * windowedLayers;
    const fullPerPage = pageBytes * 2 * (kvLayers - windowedLayers);
    pages = Math.min(Math.floor((budgetBytes - windowBytes) / fullPerPage), byLimit);
    window = { window: split.window, reach, step, pages: windowPages };
    granted = windowBytes + pages * fullPerPage;
  }
  if (pages < 1) {
    throw new LimitError(
      'KV-cache page',
      byBudget < 1 ? 'KV budget' : limit,
      byBudget < 1 ? perPageAllLayers : pageBytes,
      byBudget < 1 ? budgetBytes : allowed,
      'raise the KV budget or use a smaller page size.',
    );
  }
  const stagingPages = Math.min(COW_STAGING_PAGES, byLimit);
  return {
    pages,
    pageSize,
    pageBytes,
    stagingPages,
    bytes: granted + stagingPages * pageBytes,
    budget: { asked: budgetBytes, granted, ...(byLimit < byBudget ? { limit } : {}) },
    ...(window ? { window } : {}),
    windowed: split?.windowed ?? Array(shape.layers).fill(false),
    keepsKv: keepsKv(shape),
  };
}

export class PagedKvCache extends PagePool {
  /** Per layer: K and V, each (pages, PAGE, Hkv, D) f32. */
  readonly k: GPUBuffer[] = [];
  readonly v: GPUBuffer[] = [];
  /** Copy-on-write staging: stagingPages pages of one layer's K (or V). */
  private readonly staging: GPUBuffer;
  private readonly stagingPages: number;
  /** The budget as asked and as granted (clamped to the adapter's limits). */
  readonly budget: KvBudget;
  /** Per layer: whether its K/V live in the window store (pages through windowOf()). */
  readonly windowed: readonly boolean[];
  /** Per layer: whether it keeps K/V (a layer that does not has a 16-byte placeholder in k and v, never bound). */
  readonly keepsKv: readonly boolean[];
  private destroyed = false;

  constructor(
    private readonly gpu: Gpu,
    readonly shape: KvCacheShape,
    options: KvCacheOptions,
  ) {
    const plan = planKvCache(gpu.limits, shape, options.budgetBytes);
    super(plan.pages, plan.pageSize, plan.window);
    this.budget = plan.budget;
    this.stagingPages = plan.stagingPages;
    this.windowed = plan.windowed;
    this.keepsKv = plan.keepsKv;
    const label = options.label ?? 'kv';
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    for (let l = 0; l < shape.layers; l++) {
      const size = plan.keepsKv[l] ? (plan.windowed[l] ? plan.window!.pages : plan.pages) * plan.pageBytes : 16;
      this.k.push(gpu.device.createBuffer({ label: `L${l}.${label}.k`, size, usage }));
      this.v.push(gpu.device.createBuffer({ label: `L${l}.${label}.v`, size, usage }));
    }
    this.staging = gpu.device.createBuffer({ label: `${label}.cow`, size: plan.stagingPages * plan.pageBytes, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  }

  /** Bytes on the GPU. */
  get bytes(): number {
    return this.budget.granted;
  }

  /** Bytes of K/V the sequence's positions take now: its pages in the full layers, its window pages in the windowed ones. */
  bytesOf(seq: number): number {
    const windowedLayers = this.windowed.filter(Boolean).length;
    return this.pageBytes * 2 * (this.pagesOf(seq).length * (this.kvLayers - windowedLayers) + this.windowPagesOf(seq) * windowedLayers);
  }

  /**
   * K/V bytes one sequence holds once it has `tokens` tokens (a `prompt`-token prefill, then one token a step), and
   * what it would hold if every layer kept every position: counted by this cache's own page accounting, replayed on
   * a scratch pool of the same geometry (benchmarks: `kv_bytes` at 4k context).
   */
  sequenceBytes(tokens: number, prompt = Math.min(tokens, 64)): { bytes: number; fullAttention: number } {
    const pages = Math.ceil(tokens / this.pageSize) + 1;
    const pool = new PagePool(pages, this.pageSize, this.window && { ...this.window, pages });
    pool.alloc(0);
    pool.grow(0, prompt);
    while (pool.length(0) < tokens) pool.grow(0, 1);
    const windowedLayers = this.windowed.filter(Boolean).length;
    const perLayerPage = this.pageBytes * 2;
    return {
      bytes: perLayerPage * (pool.pagesOf(0).length * (this.kvLayers - windowedLayers) + pool.windowPagesOf(0) * windowedLayers),
      fullAttention: perLayerPage * pool.pagesOf(0).length * this.kvLayers,
    };
  }

  /**
   * The page table rows of `seqs`, (B, maxPages) u32, padded with page 0 (never read past a length); with
   * `window`, the window pages of the same positions (0 where given back: the windowed layers never read there).
   */
  pageTable(seqs: readonly number[], window = false): { table: Uint32Array; maxPages: number } {
    const maxPages = Math.max(1, ...seqs.map((s) => this.pagesOf(s).length));
    const table = new Uint32Array(seqs.length * maxPages);
    seqs.forEach((s, b) => table.set(window ? this.pagesOf(s).map((p) => Math.max(0, this.windowOf(p))) : this.pagesOf(s), b * maxPages));
    return { table, maxPages };
  }

  /** Record the pending copy-on-write page copies (every layer's K and V) into `encoder`, before the step. */
  recordCopies(encoder: GPUCommandEncoder): void {
    const layers = [...this.windowed.keys()].filter((l) => this.keepsKv[l]);
    this.recordCopiesOf(encoder, this.takeCopies(), layers.filter((l) => !this.windowed[l]));
    this.recordCopiesOf(encoder, this.takeWindowCopies(), layers.filter((l) => this.windowed[l]));
  }

  private recordCopiesOf(encoder: GPUCommandEncoder, copies: [number, number][], layers: number[]): void {
    const bytes = this.pageBytes;
    // WebGPU copies never have the same buffer at both ends: go through the staging buffer (made at load), in
    // rounds of as many pages as it holds, so a step never allocates.
    for (let first = 0; first < copies.length; first += this.stagingPages) {
      const round = copies.slice(first, first + this.stagingPages);
      for (const buffer of layers.flatMap((l) => [this.k[l], this.v[l]])) {
        round.forEach(([from], i) => encoder.copyBufferToBuffer(buffer, from * bytes, this.staging, i * bytes, bytes));
        round.forEach(([, to], i) => encoder.copyBufferToBuffer(this.staging, i * bytes, buffer, to * bytes, bytes));
      }
    }
  }

  /** Bytes of one page across all layers, in readPages' layout: per layer its K block, then its V block. */
  get pageBytesAllLayers(): number {
    return this.pageBytes * 2 * this.kvLayers;
  }

  /** Layers that keep K/V. */
  get kvLayers(): number {
    return this.keepsKv.filter(Boolean).length;
  }

  /**
   * The pages' K/V, page after page (pages.length · pageBytesAllLayers bytes), copied into staging buffers of at
   * most `chunkBytes` each and read back one after the other, so JS memory holds one chunk beyond the result.
   */
  async readPages(pages: readonly number[], chunkBytes = 16 << 20): Promise<Uint8Array> {
    this.wholePages();
    const perPage = this.pageBytesAllLayers;
    const out = new Uint8Array(pages.length * perPage);
    const perChunk = Math.max(1, Math.floor(chunkBytes / perPage));
    for (let first = 0; first < pages.length; first += perChunk) {
      const part = pages.slice(first, first + perChunk);
      const staging = this.gpu.device.createBuffer({ label: 'kv.read', size: part.length * perPage, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      try {
        const encoder = this.gpu.device.createCommandEncoder({ label: 'kv.read' });
        part.forEach((p, i) => this.blocks((buffer, block) => encoder.copyBufferToBuffer(buffer, p * this.pageBytes, staging, i * perPage + block * this.pageBytes, this.pageBytes)));
        this.gpu.submit([encoder.finish()]);
        await staging.mapAsync(GPUMapMode.READ);
        out.set(new Uint8Array(staging.getMappedRange()), first * perPage);
        staging.unmap();
      } finally {
        staging.destroy();
      }
    }
    return out;
  }

  /** Overwrites the pages with `bytes` in readPages' layout (restoring saved pages). */
  writePages(pages: readonly number[], bytes: Uint8Array): void {
    this.wholePages();
    const perPage = this.pageBytesAllLayers;
    if (bytes.byteLength !== pages.length * perPage) {
      throw new IntabModelError(`KV-cache: ${bytes.byteLength} bytes for ${pages.length} pages of ${perPage}: give the bytes readPages() returned for the same number of pages.`);
    }
    pages.forEach((p, i) =>
      this.blocks((buffer, block) => this.gpu.device.queue.writeBuffer(buffer, p * this.pageBytes, bytes.buffer, bytes.byteOffset + i * perPage + block * this.pageBytes, this.pageBytes)),
    );
  }

  describe(): string {
    return `${this.pages} pages × ${this.pageSize} tokens (${formatBytes(this.bytes)})`;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of [...this.k, ...this.v]) b.destroy();
    this.staging.destroy();
  }

  /** Bytes of one page of one layer's K (or V). */
  private get pageBytes(): number {
    return this.pageSize * this.shape.kvHeads * this.shape.headDim * 4;
  }

  /** readPages/writePages move pages of every layer: a cache with a window store has no such pages. */
  private wholePages(): void {
    if (this.window) throw new IntabModelError('KV-cache: the sliding-window layers keep their own pages, so pages cannot be read or written whole: this cache is kept in memory only.');
  }

  /** Each layer's K and V buffer with its block index in a page's bytes (K of layer l = 2l, V = 2l + 1). */
  private blocks(f: (buffer: GPUBuffer, block: number) => void): void {
    let block = 0;
    for (let l = 0; l < this.shape.layers; l++) {
      if (!this.keepsKv[l]) continue;
      f(this.k[l], block++);
      f(this.v[l], block++);
    }
  }
}
