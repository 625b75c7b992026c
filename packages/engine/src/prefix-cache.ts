// The prefix cache: the one owner of KV page sharing. A radix tree over token ids at page granularity maps
// prefixes whose K/V were computed (finished requests' prompts and replies, running requests' prompt pages,
// preloaded system prompts, pages restored from disk) to refcounted pages of the runner's pool. A node holds
// one page and the tokens of that page; its key is those tokens under its parent, so a page is shared only
// when everything before it matches too. Only a full node has children; a partial node (fewer tokens than a
// page: the tail of a finished sequence or of a preloaded prefix) is a leaf.
//
// A new request maps the matching pages into its page table (PagePool.adopt) and prefills only the rest. A
// match may end inside a page (the common tokens of a partial match); the sequence's first write there copies
// the page (copy-on-write), so a cached page is never written. Pages the cache alone references are given back
// to the pool when it runs short (PageHolder.reclaim: leaves first, least recently used first); pinned nodes
// (preloaded prefixes) never are.
//
// Sliding-window layers with a store of their own (Gemma 3; PoolWindow): a hit of m tokens also needs the window
// pages of the positions its next token sees. A finished sequence's nodes keep the window pages it still had (its
// last window: a continued chat hits there); a match is cut back to where they are all kept; and when window pages
// run short the cache gives up its own (LRU) while keeping the pages.
//
// Invariant (what makes counting evictable pages simple): a sequence that maps a node maps its ancestors too,
// and a pin covers a node's ancestors too, so a node referenced by the cache alone and unpinned has a subtree
// that is all evictable.

import type { KvPages, PageHolder } from '@intab/model';
import type { PrefixCacheStats } from './contract.ts';
import type { AdmissionCost } from './scheduler.ts';

/** One page of a cached prefix. */
export interface CacheNode {
  readonly parent: CacheNode | undefined;
  /** The tokens whose K/V the page holds: a full page's PAGE tokens, or fewer for a partial leaf. */
  readonly tokens: readonly number[];
  readonly page: number;
  /** Full children by their tokens (key()), and every child by its first token (partial matches). */
  readonly full: Map<string, CacheNode>;
  readonly byFirst: Map<number, CacheNode[]>;
  /** Preloads pinning this node. */
  pins: number;
  /** Last use (a tick of the cache's clock): LRU eviction. */
  used: number;
  /** Whether the cache keeps the page's window page too (sliding-window layers with a store of their own). */
  window: boolean;
}

/** What a prompt matches in the cache. */
export interface PrefixMatch {
  /** Prompt tokens whose K/V the matched pages hold (a page multiple, plus the common tokens of a partial match). */
  readonly tokens: number;
  /** The nodes, in order; the last one may be matched partly. */
  readonly nodes: readonly CacheNode[];
}

/** A preloaded prefix: the nodes it pins until released. */
export interface Pin {
  readonly nodes: readonly CacheNode[];
  readonly tokens: number;
}

/** What the cache needs of the runner: its page pool, and a way to start a sequence over existing pages. */
export interface CacheRunner {
  readonly kv: KvPages;
  adopt(seq: number, pages: readonly number[], length: number): void;
}

const key = (tokens: readonly number[]) => tokens.join(',');

function commonPrefix(a: readonly number[], b: readonly number[], from: number, to: number): number {
  let n = 0;
  while (n < a.length && from + n < to && a[n] === b[from + n]) n++;
  return n;
}

/**
 * The prefix cache of one runner.
 * @example
 * const cache = new PrefixCache(runner);                 // registers itself as the pool's holder
 * const match = cache.lookup(prompt, prompt.length - 1); // the last prompt token is always computed
 * cache.attach(seq, match);                              // seq holds match.tokens tokens; prefill the rest
 * // ...when the sequence ends:
 * cache.insert(seq, tokensInItsCache, 'finished');
 * runner.free(seq);
 */
export class PrefixCache implements PageHolder {
  readonly pageSize: number;
  private readonly root: CacheNode = { parent: undefined, tokens: [], page: -1, full: new Map(), byFirst: new Map(), pins: 0, used: 0, window: false };
  private readonly nodes = new Set<CacheNode>();
  private tick = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;

  constructor(private readonly runner: CacheRunner) {
    this.pageSize = runner.kv.pageSize;
    runner.kv.setHolder(this);
  }

  // ---- matching ----

  /**
   * The longest cached prefix of `tokens[0..limit)`: whole pages while a full node matches, then the best
   * partial match among the next node's candidates. No side effects.
   */
  lookup(tokens: readonly number[], limit = tokens.length): PrefixMatch {
    const P = this.pageSize;
    const nodes: CacheNode[] = [];
    let node = this.root;
    let matched = 0;
    while (matched + P <= limit) {
      const child = node.full.get(key(tokens.slice(matched, matched + P)));
      if (!child) break;
      nodes.push(child);
      matched += P;
      node = child;
    }
    if (matched < limit) {
      let best: CacheNode | undefined;
      let bestLength = 0;
      for (const c of node.byFirst.get(tokens[matched]) ?? []) {
        const n = commonPrefix(c.tokens, tokens, matched, limit);
        if (n > bestLength) [best, bestLength] = [c, n];
      }
      if (best) {
        nodes.push(best);
        matched += bestLength;
      }
    }
    return this.withinWindow({ tokens: matched, nodes });
  }

  /**
   * The longest part of a match whose pages the sliding-window layers still have where the next token looks
   * (from kv.windowFrom(tokens) on): cut back to before the last page missing there, until none is.
   */
  private withinWindow(match: PrefixMatch): PrefixMatch {
    const kv = this.runner.kv;
    if (!kv.window) return match;
    let { tokens, nodes } = match;
    for (;;) {
      const from = kv.windowFrom(tokens);
      let missing = -1;
      for (let i = nodes.length - 1; i >= from && missing < 0; i--) if (kv.windowOf(nodes[i].page) < 0) missing = i;
      if (missing < 0) return { tokens, nodes };
      tokens = missing * this.pageSize;
      nodes = nodes.slice(0, missing);
    }
  }

  /**
   * Pages a sequence that maps `match` and will hold `reserve` tokens takes from the pool (new pages, and the
   * copy of a partly matched page), and the pages available to it: free ones plus evictable ones, less the
   * evictable ones it would map (they stop being evictable).
   */
  cost(match: PrefixMatch, reserve: number): AdmissionCost {
    const kv = this.runner.kv;
    const need = Math.ceil(reserve / this.pageSize) - Math.floor(match.tokens / this.pageSize);
    const mappedEvictable = match.nodes.filter((n) => this.evictable(n)).length;
    const cost = { need, available: kv.availablePageCount - mappedEvictable };
    if (!kv.window) return cost;
    // (window pages it maps stop being the cache's to give up)
    const mappedWindow = match.nodes.filter((n) => n.window && this.evictable(n)).length;
    return { ...cost, window: { need: kv.windowToCome(undefined, reserve), available: kv.availableWindowCount - mappedWindow } };
  }

  /** Starts sequence `seq` over the matched pages (it holds match.tokens tokens) and counts the hit. */
  attach(seq: number, match: PrefixMatch, promptTokens: number): void {
    this.runner.adopt(
      seq,
      match.nodes.map((n) => n.page),
      match.tokens,
    );
    for (const n of match.nodes) n.used = ++this.tick;
    this.hits += match.tokens;
    this.misses += promptTokens - match.tokens;
  }

  // ---- filling ----

  /**
   * Puts the pages of sequence `seq` holding `tokens` (its whole cache, in position order) into the tree and
   * returns the nodes that now hold them (for a pin).
   * - 'finished': the sequence is about to be freed: every full page and the partial last one. Where the tree
   *   already holds a page with the same prefix, it is kept and the sequence's copy goes back with the sequence.
   * - 'running': full pages only (a running sequence never writes them again), and only along a path whose
   *   pages the sequence itself holds, which keeps the invariant above while it runs.
   */
  insert(seq: number, tokens: readonly number[], mode: 'finished' | 'running'): CacheNode[] {
    const P = this.pageSize;
    const kv = this.runner.kv;
    const pages = kv.pagesOf(seq);
    const full = Math.floor(tokens.length / P);
    const path: CacheNode[] = [];
    let node = this.root;
    for (let i = 0; i < full; i++) {
      const t = tokens.slice(i * P, (i + 1) * P);
      let child = node.full.get(key(t));
      if (child && child.page !== pages[i] && mode === 'running') return path;
      if (!child) {
        this.dropCoveredPartials(node, t);
        child = this.addChild(node, t, pages[i]);
      }
      child.used = ++this.tick;
      if (mode === 'finished' && child.page === pages[i]) this.keepWindow(child);
      path.push(child);
      node = child;
    }
    const rest = tokens.length - full * P;
    if (mode === 'finished' && rest > 0) {
      const t = tokens.slice(full * P);
      // A node whose tokens start with these covers them: nothing to add.
      const covering = (node.byFirst.get(t[0]) ?? []).find((c) => commonPrefix(c.tokens, t, 0, t.length) === t.length);
      if (covering) {
        covering.used = ++this.tick;
        path.push(covering);
      } else {
        this.dropCoveredPartials(node, t);
        const child = this.addChild(node, t, pages[full]);
        child.used = ++this.tick;
        this.keepWindow(child);
        path.push(child);
      }
    }
    return path;
  }

  /**
   * Adds a node for pages the caller acquired for the cache (restoring from disk): `tokens` under `parent`
   * (the root when undefined). The cache takes over the page's one reference.
   */
  adoptPage(parent: CacheNode | undefined, tokens: readonly number[], page: number): CacheNode {
    const at = parent ?? this.root;
    const same = (at.byFirst.get(tokens[0]) ?? []).find((c) => c.tokens.length === tokens.length && commonPrefix(c.tokens, tokens, 0, tokens.length) === tokens.length);
    if (same) {
      this.runner.kv.release(page); // already cached: the restored copy is not needed
      return same;
    }
    const node = this.addChild(at, tokens, page, false);
    node.used = ++this.tick;
    return node;
  }

  // ---- pins ----

  pin(nodes: readonly CacheNode[], tokens: number): Pin {
    for (const n of nodes) n.pins++;
    return { nodes: [...nodes], tokens };
  }

  unpin(pin: Pin): void {
    for (const n of pin.nodes) n.pins--;
  }

  /** Pinned pages that a prompt does not keep (they take room from it), for capacity checks: all but its whole matched pages. */
  pinnedPagesOutside(match: PrefixMatch): number {
    const mine = new Set(match.nodes.slice(0, Math.floor(match.tokens / this.pageSize)));
    let n = 0;
    for (const node of this.nodes) if (node.pins > 0 && !mine.has(node)) n++;
    return n;
  }

  // ---- giving pages back ----

  /** Pages only the cache references and no pin holds. */
  get reclaimable(): number {
    let n = 0;
    for (const node of this.nodes) if (this.evictable(node)) n++;
    return n;
  }

  /** Evicts up to `pages` evictable pages, leaves first, least recently used first; returns how many. */
  reclaim(pages: number): number {
    const heap = new MinHeap<CacheNode>((a, b) => a.used - b.used);
    for (const node of this.nodes) if (this.isLeaf(node) && this.evictable(node)) heap.push(node);
    let released = 0;
    while (released < pages && heap.size > 0) {
      const node = heap.pop()!;
      const parent = node.parent!;
      this.remove(node);
      released++;
      this.evictions++;
      if (parent !== this.root && this.isLeaf(parent) && this.evictable(parent)) heap.push(parent);
    }
    return released;
  }

  /** Window pages only the cache keeps, of unpinned nodes (PageHolder). */
  get reclaimableWindow(): number {
    let n = 0;
    for (const node of this.nodes) if (node.window && this.evictable(node)) n++;
    return n;
  }

  /** Gives up up to `n` window pages only the cache keeps, least recently used first, keeping the pages (PageHolder). */
  reclaimWindow(n: number): number {
    const nodes = [...this.nodes].filter((node) => node.window && this.evictable(node)).sort((a, b) => a.used - b.used);
    for (const node of nodes.slice(0, n)) {
      node.window = false;
      this.runner.kv.releaseWindow(node.page);
    }
    return Math.min(n, nodes.length);
  }

  /** Evicts every evictable page (a cache cleared by the user, or turned off). */
  clear(): number {
    return this.reclaim(Infinity);
  }

  // ---- reading ----

  stats(): PrefixCacheStats {
    let pinned = 0;
    let evictable = 0;
    for (const n of this.nodes) {
      if (n.pins > 0) pinned++;
      if (this.evictable(n)) evictable++;
    }
    return { cachedPages: this.nodes.size, pinnedPages: pinned, evictablePages: evictable, hitTokens: this.hits, missTokens: this.misses, evictions: this.evictions };
  }

  /** The pages the cache references, each once (PagePool.audit's `held`). */
  heldPages(): Map<number, number> {
    return new Map([...this.nodes].map((n) => [n.page, 1]));
  }

  /** The pages whose window pages the cache keeps, each once (PagePool.audit's `heldWindow`). */
  heldWindowPages(): Map<number, number> {
    return new Map([...this.nodes].filter((n) => n.window).map((n) => [n.page, 1]));
  }

  /** Every node, parents before children (saving to disk); `pinnedOnly` keeps pinned nodes alone. */
  ordered(pinnedOnly = false): CacheNode[] {
    const out: CacheNode[] = [];
    const walk = (node: CacheNode) => {
      for (const list of node.byFirst.values()) {
        for (const c of list) {
          if (pinnedOnly && c.pins === 0) continue;
          out.push(c);
          walk(c);
        }
      }
    };
    walk(this.root);
    return out;
  }

  // ---- internals ----

  /** Unpinned, and no sequence maps the page: the cache alone may give it (and its window page) back. */
  private evictable(node: CacheNode): boolean {
    return node.pins === 0 && this.runner.kv.refCount(node.page) === 1;
  }

  /** A finished sequence's node keeps the window page its page still has (a hit right after it reads it). */
  private keepWindow(node: CacheNode): void {
    if (!node.window && this.runner.kv.window) node.window = this.runner.kv.retainWindow(node.page);
  }

  private isLeaf(node: CacheNode): boolean {
    return node.byFirst.size === 0;
  }

  private addChild(parent: CacheNode, tokens: readonly number[], page: number, retain = true): CacheNode {
    if (retain) this.runner.kv.retain(page);
    const node: CacheNode = { parent, tokens: [...tokens], page, full: new Map(), byFirst: new Map(), pins: 0, used: 0, window: false };
    if (tokens.length === this.pageSize) parent.full.set(key(tokens), node);
    const list = parent.byFirst.get(tokens[0]);
    if (list) list.push(node);
    else parent.byFirst.set(tokens[0], [node]);
    this.nodes.add(node);
    return node;
  }

  /** Partial leaves under `parent` whose tokens a new node's `tokens` extend: redundant, dropped if evictable. */
  private dropCoveredPartials(parent: CacheNode, tokens: readonly number[]): void {
    for (const c of [...(parent.byFirst.get(tokens[0]) ?? [])]) {
      if (c.tokens.length < this.pageSize && c.tokens.length <= tokens.length && commonPrefix(c.tokens, tokens, 0, tokens.length) === c.tokens.length && this.evictable(c)) this.remove(c);
    }
  }

  private remove(node: CacheNode): void {
    const parent = node.parent!;
    if (node.tokens.length === this.pageSize) parent.full.delete(key(node.tokens));
    const list = parent.byFirst.get(node.tokens[0])!;
    list.splice(list.indexOf(node), 1);
    if (list.length === 0) parent.byFirst.delete(node.tokens[0]);
    this.nodes.delete(node);
    if (node.window) this.runner.kv.releaseWindow(node.page);
    this.runner.kv.release(node.page);
  }
}

/** A binary min-heap (eviction order). */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => number) {}

  get size(): number {
    return this.items.length;
  }

  push(x: T): void {
    const a = this.items;
    a.push(x);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (this.less(a[i], a[p]) >= 0) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }

  pop(): T | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l], a[m]) < 0) m = l;
        if (r < a.length && this.less(a[r], a[m]) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}
