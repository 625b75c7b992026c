// Page accounting of the paged KV-cache, without the GPU: a pool of page ids, a page list and a length
// per sequence, and reference counts so pages can be shared (fork, a prefix cache's pages mapped into new
// sequences). A sequence about to append into a shared, partly filled page gets a private copy first
// (copy-on-write); the pool records those copies for whoever owns the memory (PagedKvCache on the GPU, the
// CPU reference runner's arrays). Besides sequences, one holder (a prefix cache) may keep references to
// pages; when the free list runs short, the pool asks it to give back pages it alone holds (reclaim).
//
// Sliding-window layers (Gemma 3's local layers, `window` option) keep K/V only for the positions a token can
// still see. They have their own store of pages ("window pages"); a page of the pool has one while some holder
// still reads it there. A sequence holds the window pages of its pages from `from` on; each grow gives back
// those wholly before length - window - reach (reach: the longest rewind that may follow, speculative drafts),
// so a rewind never needs one already given back. The holder keeps window pages only where it asks
// (retainWindow: the pages a hit may need) and gives them up on demand (reclaimWindow) without dropping pages.

import { IntabModelError, KvCacheFullError } from './errors.ts';

export { KvCacheFullError };

/**
 * Something beside the sequences that holds page references (a prefix cache) and gives pages back on demand.
 * The pool calls reclaim() from grow() when the free list is short, so a page the holder keeps never makes a
 * step fail while it could be given back.
 */
export interface PageHolder {
  /** Pages the holder would give back if asked: those it alone references. */
  readonly reclaimable: number;
  /** Release at least `pages` pages (least recently used first) if it can; returns how many it released. */
  reclaim(pages: number): number;
  /** Window pages (PoolWindow) the holder would give back if asked: those it alone keeps. */
  readonly reclaimableWindow?: number;
  /** Give up at least `n` window pages it alone keeps (keeping its pages); returns how many it gave up. */
  reclaimWindow?(n: number): number;
}

/**
 * The sliding-window layers of a model (Gemma 3's local layers) and what their own store of pages holds. A
 * sequence keeps window pages for its last window + reach positions, and at most windowPagesPerSequence of them.
 */
export interface PoolWindow {
  /** Positions a token of those layers sees, itself included (config.slidingWindow). */
  window: number;
  /** The longest rewind after a grow (speculative drafts): the positions it may go back to keep their window pages. */
  reach: number;
  /** Most tokens one grow adds (a step's). */
  step: number;
  /** Pages of the windowed layers' store. */
  pages: number;
}

/** What the engine and a prefix cache read and do of a runner's page pool (PagePool implements it). */
export interface KvPages {
  readonly pages: number;
  readonly pageSize: number;
  readonly freePageCount: number;
  /** Free pages plus those the holder would give back. */
  readonly availablePageCount: number;
  length(seq: number): number;
  pagesNeeded(seq: number, length: number): number;
  has(seq: number): boolean;
  pagesOf(seq: number): readonly number[];
  refCount(page: number): number;
  retain(page: number): void;
  release(page: number): void;
  acquire(): number;
  setHolder(holder: PageHolder | undefined): void;
  /** The sliding-window layers' store (undefined: every layer keeps every position). */
  readonly window?: PoolWindow;
  /** Free window pages plus those the holder would give back (Infinity without a window). */
  readonly availableWindowCount: number;
  /** The window page of a page, or -1 when it has none (always 0 without a window: the page itself serves). */
  windowOf(page: number): number;
  /** The first page index a sequence of `length` tokens reads in its sliding-window layers (0 without a window). */
  windowFrom(length: number): number;
  /** Window pages the sequence would take to hold `length` tokens (0 without a window). */
  windowNeeded(seq: number, length: number): number;
  /** Window pages a sequence reserved for `length` tokens may still take beyond what it holds (0 without a window). */
  windowToCome(seq: number | undefined, length: number): number;
  /** The holder keeps the page's window page too; false when it has none. */
  retainWindow(page: number): boolean;
  releaseWindow(page: number): void;
}

export class PagePool implements KvPages {
  private readonly freePages: number[] = [];
  /** Sequences holding each page. */
  private readonly refs: Uint32Array;
  private readonly seqPages = new Map<number, number[]>();
  private readonly seqLength = new Map<number, number>();
  /** Page copies (from → to) owed before the next write: see takeCopies(). */
  private copies: [number, number][] = [];
  private holder?: PageHolder;
  /** With a window: each page's window page (-1: none), the holders reading it there, and the free window pages. */
  private readonly windowPage: Int32Array;
  private readonly windowRefs: Uint32Array;
  private readonly freeWindow: number[] = [];
  /** With a window: the first page index whose window page each sequence holds. */
  private readonly seqFrom = new Map<number, number>();
  private windowCopies: [number, number][] = [];

  constructor(
    readonly pages: number,
    readonly pageSize: number,
    readonly window?: PoolWindow,
  ) {
    this.refs = new Uint32Array(pages);
    for (let p = pages - 1; p >= 0; p--) this.freePages.push(p);
    this.windowPage = new Int32Array(window ? pages : 0).fill(-1);
    this.windowRefs = new Uint32Array(window ? pages : 0);
    if (window) {
      if (!(Number.isInteger(window.window) && window.window > 0 && Number.isInteger(window.reach) && window.reach >= 0 && Number.isInteger(window.pages) && window.pages > 0)) {
        throw new IntabModelError(`KV-cache: window ${JSON.stringify(window)}: give a positive window, a reach ≥ 0 and at least one window page.`);
      }
      for (let p = window.pages - 1; p >= 0; p--) this.freeWindow.push(p);
    }
  }

  /** Free window pages plus those the holder would give back (Infinity without a window). */
  get availableWindowCount(): number {
    return this.window ? this.freeWindow.length + (this.holder?.reclaimableWindow ?? 0) : Infinity;
  }

  get freeWindowCount(): number {
    return this.window ? this.freeWindow.length : Infinity;
  }

  windowOf(page: number): number {
    return this.window ? this.windowPage[page] : 0;
  }

  /** Most window pages one sequence holds: its window, reach and one step's tokens, and a page either side. */
  get windowPagesPerSequence(): number {
    const w = this.window;
    return w ? Math.ceil((w.window + w.reach + w.step) / this.pageSize) + 1 : 0;
  }

  windowNeeded(seq: number, length: number): number {
    if (!this.window) return 0;
    const pages = this.seqPages.get(seq) ?? [];
    const have = this.seqLength.get(seq) ?? 0;
    const fresh = Math.max(0, Math.ceil(length / this.pageSize) - pages.length);
    const last = pages[pages.length - 1];
    const copy = length > have && have % this.pageSize !== 0 && this.refs[last] > 1 && this.windowRefs[last] > 1 ? 1 : 0;
    return fresh + copy;
  }

  windowToCome(seq: number | undefined, length: number): number {
    if (!this.window) return 0;
    const cap = Math.min(Math.ceil(length / this.pageSize), this.windowPagesPerSequence);
    if (seq === undefined || !this.seqPages.has(seq)) return cap;
    return Math.max(0, cap - (this.seqPages.get(seq)!.length - this.seqFrom.get(seq)!));
  }

  retainWindow(page: number): boolean {
    if (!this.window || this.windowPage[page] < 0) return false;
    this.windowRefs[page]++;
    return true;
  }

  releaseWindow(page: number): void {
    if (!this.window || this.windowRefs[page] === 0) throw new IntabModelError(`KV-cache: page ${page} has no window page held: a window reference was released twice.`);
    this.unrefWindow(page);
  }

  get freePageCount(): number {
    return this.freePages.length;
  }

  /** Free pages plus those the holder (a prefix cache) would give back when asked. */
  get availablePageCount(): number {
    return this.freePages.length + (this.holder?.reclaimable ?? 0);
  }

  /** The holder grow() asks for pages when the free list is short (undefined: none). */
  setHolder(holder: PageHolder | undefined): void {
    this.holder = holder;
  }

  /** References to a page: the sequences mapping it, plus the holder's (0 = free). */
  refCount(page: number): number {
    return this.refs[page];
  }

  /** The holder takes a reference to a page in use (a sequence's page entering a prefix cache). */
  retain(page: number): void {
    if (!(page >= 0 && page < this.pages) || this.refs[page] === 0) throw new IntabModelError(`KV-cache: page ${page} is not in use: only a page some sequence holds can be retained.`);
    this.refs[page]++;
  }

  /** A free page for the holder, which holds its one reference (pages restored from disk). */
  acquire(): number {
    if (this.freePages.length === 0 && this.holder) this.holder.reclaim(1);
    if (this.freePages.length === 0) throw new KvCacheFullError(1, 0, this.pages);
    return this.take();
  }

  /** Drops one reference to a page (the holder's); the page is free once nobody references it. */
  release(page: number): void {
    if (!(page >= 0 && page < this.pages) || this.refs[page] === 0) throw new IntabModelError(`KV-cache: page ${page} is already free: a reference was released twice.`);
    if (--this.refs[page] === 0) this.freePages.push(page);
  }

  /** Sequences allocated. */
  get sequences(): number {
    return this.seqPages.size;
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
    if (this.window) this.seqFrom.set(seq, 0);
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

  /**
   * A new sequence over existing pages (a prefix cache's): it holds `length` tokens, the first `length` of
   * `pages` (each page gains a reference). Appending into the last page, when it is partly filled and shared,
   * copies it first.
   */
  adopt(seq: number, pages: readonly number[], length: number): void {
    if (this.seqPages.has(seq)) throw new IntabModelError(`KV-cache: sequence ${seq} already exists; free it first.`);
    if (!Number.isInteger(length) || length < 0 || Math.ceil(length / this.pageSize) !== pages.length) {
      throw new IntabModelError(`KV-cache: adopting ${pages.length} pages for ${length} tokens: give exactly ceil(length / ${this.pageSize}) pages.`);
    }
    for (const p of pages) if (!(p >= 0 && p < this.pages) || this.refs[p] === 0) throw new IntabModelError(`KV-cache: page ${p} is free: only pages in use can be shared.`);
    const from = this.windowFrom(length);
    if (this.window) {
      const missing = pages.findIndex((p, i) => i >= from && this.windowPage[p] < 0);
      if (missing >= 0) throw new IntabModelError(`KV-cache: page ${pages[missing]} (index ${missing}) has no window page, but a sequence of ${length} tokens reads it in its sliding-window layers: adopt a shorter prefix.`);
      pages.forEach((p, i) => i >= from && this.windowRefs[p]++);
      this.seqFrom.set(seq, from);
    }
    for (const p of pages) this.refs[p]++;
    this.seqPages.set(seq, [...pages]);
    this.seqLength.set(seq, length);
  }

  /**
   * The first page index a sequence of `length` tokens reads in its sliding-window layers (0 without a window):
   * its next token sees positions from length + 1 - window on (one more is kept).
   */
  windowFrom(length: number): number {
    return this.window ? Math.floor(Math.max(0, length - this.window.window) / this.pageSize) : 0;
  }

  /** Make room for `extra` more tokens (all-or-nothing); returns the position of the first. */
  grow(seq: number, extra: number): number {
    const pages = this.mutablePages(seq);
    const start = this.seqLength.get(seq)!;
    if (this.window) this.trimWindow(seq, start);
    const need = this.pagesNeeded(seq, start + extra);
    if (need > this.freePages.length && this.holder) this.holder.reclaim(need - this.freePages.length);
    if (need > this.freePages.length) throw new KvCacheFullError(need, this.freePages.length, this.pages);
    const needWindow = this.windowNeeded(seq, start + extra);
    if (needWindow > this.freeWindow.length && this.holder?.reclaimWindow) this.holder.reclaimWindow(needWindow - this.freeWindow.length);
    if (needWindow > this.freeWindow.length) throw new KvCacheFullError(needWindow, this.freeWindow.length, this.window!.pages, 'window pages');
    if (extra > 0 && start % this.pageSize !== 0) {
      const last = pages[pages.length - 1];
      if (this.refs[last] > 1) {
        // copy-on-write: this sequence is about to append into a page another sequence still reads
        const own = this.take();
        this.copies.push([last, own]);
        this.refs[last]--;
        pages[pages.length - 1] = own;
        if (this.window) this.copyWindow(last, own);
      }
    }
    const fresh = Math.ceil((start + extra) / this.pageSize) - pages.length;
    for (let i = 0; i < fresh; i++) {
      const p = this.take();
      pages.push(p);
      if (this.window) this.takeWindow(p);
    }
    this.seqLength.set(seq, start + extra);
    return start;
  }

  /** Gives back the window pages of `seq`'s pages wholly before start - window - reach (no rewind reaches them). */
  private trimWindow(seq: number, start: number): void {
    const pages = this.seqPages.get(seq)!;
    const w = this.window!;
    const keepFrom = Math.floor(Math.max(0, start - w.window - w.reach) / this.pageSize);
    let from = this.seqFrom.get(seq)!;
    for (; from < Math.min(keepFrom, pages.length - 1); from++) this.unrefWindow(pages[from]);
    this.seqFrom.set(seq, from);
  }

  /** The copy-on-write of a page's window part: moved when this sequence alone read it, else copied. */
  private copyWindow(from: number, to: number): void {
    if (this.windowRefs[from] === 1) {
      this.windowPage[to] = this.windowPage[from];
      this.windowPage[from] = -1;
      this.windowRefs[from] = 0;
      this.windowRefs[to] = 1;
      return;
    }
    this.takeWindow(to);
    this.windowCopies.push([this.windowPage[from], this.windowPage[to]]);
    this.windowRefs[from]--;
  }

  private takeWindow(page: number): void {
    this.windowPage[page] = this.freeWindow.pop()!;
    this.windowRefs[page] = 1;
  }

  private unrefWindow(page: number): void {
    if (--this.windowRefs[page] === 0) {
      this.freeWindow.push(this.windowPage[page]);
      this.windowPage[page] = -1;
    }
  }

  /** Drop the last `n` tokens (rejected speculative drafts); releases pages that become empty. */
  rewind(seq: number, n: number): void {
    const pages = this.mutablePages(seq);
    const length = Math.max(0, this.seqLength.get(seq)! - n);
    const from = this.seqFrom.get(seq) ?? 0;
    if (this.window && this.windowFrom(length) < from) {
      throw new IntabModelError(
        `KV-cache: rewinding sequence ${seq} to ${length} tokens needs sliding-window pages given back already (it keeps positions from ${from * this.pageSize} on): rewind at most ${this.window.reach} tokens past the last step, or load the Runner with a larger maxRewind.`,
      );
    }
    this.seqLength.set(seq, length);
    const keep = Math.ceil(length / this.pageSize);
    while (pages.length > keep) {
      const p = pages.pop()!;
      if (this.window && pages.length >= from) this.unrefWindow(p);
      this.unref(p);
    }
  }

  /**
   * A new sequence `dst` holding the same tokens as `src` (prefix caching, parallel samples): the pages are
   * shared, not copied, until one of the two appends into a shared partly filled page.
   */
  fork(src: number, dst: number): void {
    const pages = this.pagesOf(src);
    if (this.seqPages.has(dst)) throw new IntabModelError(`KV-cache: sequence ${dst} already exists; free it first.`);
    for (const p of pages) this.refs[p]++;
    if (this.window) {
      const from = this.seqFrom.get(src)!;
      pages.forEach((p, i) => i >= from && this.windowRefs[p]++);
      this.seqFrom.set(dst, from);
    }
    this.seqPages.set(dst, [...pages]);
    this.seqLength.set(dst, this.seqLength.get(src)!);
  }

  /** Release a sequence and its pages. Idempotent. */
  free(seq: number): void {
    const pages = this.seqPages.get(seq);
    if (!pages) return;
    const from = this.seqFrom.get(seq) ?? 0;
    pages.forEach((p, i) => {
      if (this.window && i >= from) this.unrefWindow(p);
      this.unref(p);
    });
    this.seqPages.delete(seq);
    this.seqLength.delete(seq);
    this.seqFrom.delete(seq);
  }

  /** The page ids of a sequence, in position order. */
  pagesOf(seq: number): readonly number[] {
    return this.mutablePages(seq);
  }

  /**
   * Checks the accounting against what the holder says it references (tests, debugging): every page's count is
   * the sequences mapping it plus the holder's references, a page is free exactly when nobody references it, and
   * no page is listed free twice. Throws IntabModelError naming the first page that disagrees.
   */
  audit(held: ReadonlyMap<number, number> = new Map(), heldWindow: ReadonlyMap<number, number> = new Map()): void {
    if (this.window) this.auditWindow(heldWindow);
    const expected = new Uint32Array(this.pages);
    for (const pages of this.seqPages.values()) for (const p of pages) expected[p]++;
    for (const [p, n] of held) expected[p] += n;
    const free = new Uint8Array(this.pages);
    for (const p of this.freePages) {
      if (free[p]) throw new IntabModelError(`KV-cache audit: page ${p} is on the free list twice.`);
      free[p] = 1;
    }
    for (let p = 0; p < this.pages; p++) {
      if (this.refs[p] !== expected[p]) throw new IntabModelError(`KV-cache audit: page ${p} has ${this.refs[p]} references, but ${expected[p]} holders map it.`);
      if (free[p] !== (expected[p] === 0 ? 1 : 0)) throw new IntabModelError(`KV-cache audit: page ${p} is ${free[p] ? 'free' : 'not free'} with ${expected[p]} holders.`);
    }
  }

  /** audit() of the window pages: each page's window references against the sequences' and the holder's. */
  private auditWindow(held: ReadonlyMap<number, number>): void {
    const expected = new Uint32Array(this.pages);
    for (const [seq, pages] of this.seqPages) pages.forEach((p, i) => i >= this.seqFrom.get(seq)! && expected[p]++);
    for (const [p, n] of held) expected[p] += n;
    const used = new Uint8Array(this.window!.pages);
    for (const w of this.freeWindow) {
      if (used[w]) throw new IntabModelError(`KV-cache audit: window page ${w} is on the free list twice.`);
      used[w] = 1;
    }
    for (let p = 0; p < this.pages; p++) {
      if (this.windowRefs[p] !== expected[p]) throw new IntabModelError(`KV-cache audit: page ${p} has ${this.windowRefs[p]} window references, but ${expected[p]} holders read it there.`);
      const w = this.windowPage[p];
      if ((w >= 0) !== (expected[p] > 0)) throw new IntabModelError(`KV-cache audit: page ${p} ${w >= 0 ? 'has' : 'lacks'} a window page with ${expected[p]} readers.`);
      if (w >= 0) {
        if (used[w]) throw new IntabModelError(`KV-cache audit: window page ${w} is free or held twice.`);
        used[w] = 1;
      }
    }
    if (used.some((u) => !u)) throw new IntabModelError(`KV-cache audit: window page ${used.indexOf(0)} is neither free nor held.`);
  }

  /** Window pages each sequence holds now (for tests and stats). */
  windowPagesOf(seq: number): number {
    return this.window ? this.mutablePages(seq).length - this.seqFrom.get(seq)! : this.mutablePages(seq).length;
  }

  /** The window pages' copy-on-write copies (from → to window page) owed since the last call. */
  takeWindowCopies(): [number, number][] {
    const out = this.windowCopies;
    this.windowCopies = [];
    return out;
  }

  /** The copy-on-write copies (from page → to page) owed since the last call; the caller performs them. */
  takeCopies(): [number, number][] {
    const out = this.copies;
    this.copies = [];
    return out;
  }

  private mutablePages(seq: number): number[] {
    const pages = this.seqPages.get(seq);
    if (!pages) throw new IntabModelError(`KV-cache: sequence ${seq} was not allocated: call alloc(${seq}) first.`);
    return pages;
  }

  private take(): number {
    const p = this.freePages.pop()!;
    this.refs[p] = 1;
    return p;
  }

  private unref(p: number): void {
    if (--this.refs[p] === 0) this.freePages.push(p);
  }
}

/** What checkStep reads of a step entry (the Runner's StepEntry and the reference runner both take it). */
export interface CheckedEntry {
  seq: number;
  tokens: readonly number[];
  /** Speculative verify: one SamplingParams per token (its row samples the token after it). */
  verify?: readonly unknown[];
}

/** Logits rows a step asks for: one per plain entry, one per token of a verify entry. */
export function stepRows(entries: readonly CheckedEntry[]): number {
  return entries.reduce((n, e) => n + (e.verify ? e.tokens.length : 1), 0);
}

/**
 * Everything that can make a step invalid, checked before anything grows, so a refused step leaves every
 * sequence as it was: batch size, unknown or repeated sequences, empty or out-of-vocabulary tokens, a verify
 * list whose length differs from the tokens', more logits rows than `maxRows` (when given), and KV pages
 * (KvCacheFullError). The GPU Runner and the CPU reference runner share it.
 */
export function checkStep(pool: PagePool, entries: readonly CheckedEntry[], vocab: number, maxBatch: number, maxRows?: number, maxTokens?: number): void {
  if (entries.length > maxBatch) {
    throw new IntabModelError(`A step holds at most ${maxBatch} sequences (maxBatch); got ${entries.length}: split the batch.`);
  }
  for (const e of entries) {
    if (!pool.has(e.seq)) throw new IntabModelError(`step: sequence ${e.seq} was not allocated: call alloc(${e.seq}) first.`);
    if (e.tokens.length === 0) throw new IntabModelError(`step: sequence ${e.seq} has no tokens.`);
    for (const id of e.tokens) {
      if (!Number.isInteger(id) || id < 0 || id >= vocab) {
        throw new IntabModelError(`step: token id ${id} of sequence ${e.seq} is outside the vocabulary (0..${vocab - 1}).`);
      }
    }
    if (e.verify && e.verify.length !== e.tokens.length) {
      throw new IntabModelError(
        `step: sequence ${e.seq} verifies ${e.tokens.length} tokens with ${e.verify.length} sampling rows: give one SamplingParams per token (verify.length === tokens.length; row i samples the token after tokens[i]).`,
      );
    }
  }
  if (new Set(entries.map((e) => e.seq)).size !== entries.length) throw new IntabModelError('step: a sequence appears twice in one step.');
  if (maxTokens !== undefined) {
    const tokens = entries.reduce((n, e) => n + e.tokens.length, 0);
    if (tokens > maxTokens) {
      throw new IntabModelError(`step: ${tokens} tokens exceed maxTokensPerStep = ${maxTokens}: prefill long prompts in chunks, or load the Runner with a larger maxTokensPerStep.`);
    }
  }
  if (maxRows !== undefined) {
    const rows = stepRows(entries);
    if (rows > maxRows) {
      throw new IntabModelError(
        `step: ${rows} logits rows (one per plain entry, one per verify token) exceed maxRows = ${maxRows}: verify fewer proposals or sequences per step, or load the Runner with a larger maxRows.`,
      );
    }
  }
  const need = entries.reduce((n, e) => n + pool.pagesNeeded(e.seq, pool.length(e.seq) + e.tokens.length), 0);
  if (need > pool.availablePageCount) throw new KvCacheFullError(need, pool.availablePageCount, pool.pages);
  const window = entries.reduce((n, e) => n + pool.windowNeeded(e.seq, pool.length(e.seq) + e.tokens.length), 0);
  if (window > pool.availableWindowCount) throw new KvCacheFullError(window, pool.availableWindowCount, pool.window!.pages, 'window pages');
}
