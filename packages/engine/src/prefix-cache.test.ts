// The prefix cache over a real page pool (the CPU reference runner's, whose pages hold real K/V and record which
// token each slot holds): matching at page granularity with a partial last page, copy-on-write of shared pages,
// duplicate pages kept once, LRU eviction leaves first, pins, and a seeded run of thousands of random operations
// (start, write, rewind, fork, finish, abort, evict, preload, release) after each of which every reference count,
// the free list and every page's contents agree with what the sequences and the tree say.
import { describe, expect, test } from 'vitest';
import { fixtureWeights } from '@intab/testing/fixtures';
import { mulberry32 } from '@intab/gpu';
import { PrefixCache, type Pin } from './prefix-cache.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { PagePool } from '@intab/model';

const { config, tensors } = fixtureWeights('llama'); // vocab 128, 2 layers, context 256

function setup(pages = 16, pageSize = 4) {
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages, pageSize, maxBatch: 8, yieldEachStep: false });
  const cache = new PrefixCache(runner);
  return { runner, cache };
}

/** Starts `seq` over the cache's match of `tokens[0..limit)` and writes the rest through a real step. */
async function run(runner: ReferenceRunner, cache: PrefixCache, seq: number, tokens: number[], limit = tokens.length - 1) {
  const match = cache.lookup(tokens, limit);
  cache.attach(seq, match, tokens.length);
  if (match.tokens < tokens.length) await runner.step([{ seq, tokens: tokens.slice(match.tokens) }]);
  return match.tokens;
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describe('PrefixCache', () => {
  test('a finished sequence is found by the next one: whole pages, then the common part of the last page, copied on write', async () => {
    const { runner, cache } = setup();
    const a = range(10, 10); // pages [10..13] [14..17] [18 19]
    expect(await run(runner, cache, 0, a)).toBe(0);
    cache.insert(0, a, 'finished');
    runner.free(0);
    expect(cache.stats()).toMatchObject({ cachedPages: 3, evictablePages: 3, hitTokens: 0, missTokens: 10 });
    // The same 9 tokens, then another: two whole pages and one token of the partial page.
    const b = [...a.slice(0, 9), 99, 98];
    const match = cache.lookup(b, b.length - 1);
    expect(match.tokens).toBe(9);
    expect(cache.cost(match, b.length + 4)).toEqual({ need: 4 - 2, available: 16 - 3 });
    await run(runner, cache, 1, b);
    expect(runner.cachedTokens(1)).toEqual(b);
    const [p0, p1, p2] = cache.ordered().map((n) => n.page);
    expect(runner.kv.pagesOf(1).slice(0, 2)).toEqual([p0, p1]); // shared
    expect(runner.kv.pagesOf(1)[2]).not.toBe(p2); // copied before 99 was written
    expect(runner.pageTokens(p2).slice(0, 2)).toEqual([18, 19]); // the cached page is untouched
    runner.kv.audit(cache.heldPages());
    cache.insert(1, b, 'finished');
    runner.free(1);
    // b's third page ([18 99 98]) is a new partial sibling; a's [18 19] stays (different tokens).
    expect(cache.stats()).toMatchObject({ cachedPages: 4, hitTokens: 9, missTokens: 10 + 2 });
    runner.kv.audit(cache.heldPages());
  });

  test('the same prefix computed twice is kept once; a running prompt is shared while it runs', async () => {
    const { runner, cache } = setup();
    const p = range(20, 8);
    await run(runner, cache, 0, [...p, 1]);
    await run(runner, cache, 1, [...p, 2]); // admitted before 0 finished: its own copy
    cache.insert(0, [...p, 1], 'running'); // full pages of the running prompt: shared from now on
    expect(cache.stats().cachedPages).toBe(2);
    await run(runner, cache, 2, [...p, 3]);
    expect(runner.kv.pagesOf(2).slice(0, 2)).toEqual(runner.kv.pagesOf(0).slice(0, 2));
    // 1 finishes: its pages duplicate cached ones; the tree keeps its own and 1's go back with 1.
    cache.insert(1, [...p, 2], 'finished');
    runner.free(1);
    expect(cache.ordered().map((n) => n.tokens.length)).toEqual([4, 4, 1]);
    for (const s of [0, 2]) cache.insert(s, runner.cachedTokens(s), 'finished'), runner.free(s);
    runner.kv.audit(cache.heldPages());
    expect(runner.kv.freePageCount + cache.stats().cachedPages).toBe(16);
  });

  test('eviction gives back least recently used leaves first and never a page in use or pinned', async () => {
    const { runner, cache } = setup(12, 4);
    const texts = [range(30, 8), range(40, 8), range(50, 8)];
    for (const [i, t] of texts.entries()) {
      await run(runner, cache, i, t);
      cache.insert(i, t, 'finished');
      runner.free(i);
    }
    // Touch text 0 (most recent now), pin text 1, map text 2 into a running sequence.
    cache.lookup(texts[0]);
    cache.attach(5, cache.lookup(texts[0], 4), 8);
    runner.free(5);
    const pinned = cache.pin(cache.lookup(texts[1]).nodes, 8);
    cache.attach(6, cache.lookup(texts[2], 8), 8);
    expect(cache.reclaimable).toBe(2); // text 0's pages only
    expect(cache.reclaim(10)).toBe(2);
    expect(cache.lookup(texts[0]).tokens).toBe(0);
    expect(cache.lookup(texts[1]).tokens).toBe(8);
    runner.free(6);
    cache.unpin(pinned);
    expect(cache.reclaim(1)).toBe(1); // the LRU leaf: text 1's second page (text 2 was used later)
    expect([cache.lookup(texts[1]).tokens, cache.lookup(texts[2]).tokens]).toEqual([4, 8]);
    runner.kv.audit(cache.heldPages());
    expect(cache.clear()).toBe(3);
    expect(runner.kv.freePageCount).toBe(12);
  });

  test('a pool short of free pages reclaims cached ones on its own; a request never fails while one is evictable', async () => {
    const { runner, cache } = setup(4, 4);
    await run(runner, cache, 0, range(60, 16));
    cache.insert(0, range(60, 16), 'finished');
    runner.free(0);
    expect([runner.kv.freePageCount, runner.kv.availablePageCount]).toEqual([0, 4]);
    await run(runner, cache, 1, range(80, 14));
    expect(runner.cachedTokens(1)).toEqual(range(80, 14));
    expect(cache.stats()).toMatchObject({ cachedPages: 0, evictions: 4 });
    runner.kv.audit(cache.heldPages());
  });

  test('3,000 seeded random operations keep every count, the free list and every page\'s contents consistent', async () => {
    const rng = mulberry32(20261201);
    const int = (n: number) => Math.floor(rng() * n);
    const P = 4;
    const { runner, cache } = setup(40, P);
    // Texts from a few stems, so prefixes collide often and partly.
    const stems = [range(3, 40), range(50, 40), [...range(3, 6), ...range(90, 30)]];
    const live = new Map<number, number[]>(); // seq → the tokens its cache must hold
    const pins: Pin[] = [];
    let nextSeq = 0;
    const counts: Record<string, number> = {};
    const check = (op: string) => {
      runner.kv.audit(cache.heldPages());
      for (const [seq, tokens] of live) expect(runner.cachedTokens(seq), `${op}: seq ${seq}`).toEqual(tokens);
      for (const node of cache.ordered()) expect(runner.pageTokens(node.page).slice(0, node.tokens.length), `${op}: a cached page`).toEqual(node.tokens);
    };
    const room = (tokens: number) => runner.kv.availablePageCount >= Math.ceil(tokens / P) + 1;
    for (let i = 0; i < 3000; i++) {
      const seqs = [...live.keys()];
      const pick = () => seqs[int(seqs.length)];
      let op = ['start', 'write', 'rewind', 'fork', 'finish', 'abort', 'evict', 'preload', 'release'][int(9)];
      if (seqs.length === 0 && op !== 'preload' && op !== 'evict' && op !== 'release') op = 'start';
      if (seqs.length > 6 && op === 'start') op = 'finish';
      counts[op] = (counts[op] ?? 0) + 1;
      if (op === 'start' || op === 'preload') {
        const stem = stems[int(stems.length)];
        const tokens = [...stem.slice(0, 1 + int(stem.length)), ...(rng() < 0.5 ? [100 + int(20)] : [])];
        if (!room(tokens.length)) continue;
        const seq = nextSeq++;
        await run(runner, cache, seq, tokens, op === 'preload' ? tokens.length : tokens.length - 1);
        if (op === 'preload') {
          pins.push(cache.pin(cache.insert(seq, tokens, 'finished'), tokens.length));
          runner.free(seq);
        } else live.set(seq, tokens);
      } else if (op === 'write') {
        const seq = pick();
        const t = live.get(seq)!;
        const extra = Array.from({ length: 1 + int(6) }, () => 3 + int(120));
        if (t.length + extra.length > 200 || !room(extra.length)) continue;
        await runner.step([{ seq, tokens: extra }]);
        t.push(...extra);
        if (rng() < 0.3) cache.insert(seq, t, 'running');
      } else if (op === 'rewind') {
        const seq = pick();
        const n = int(live.get(seq)!.length + 1);
        runner.rewind(seq, n);
        live.get(seq)!.length -= n;
      } else if (op === 'fork') {
        const src = pick();
        const dst = nextSeq++;
        runner.fork(src, dst);
        live.set(dst, [...live.get(src)!]);
      } else if (op === 'finish' || op === 'abort') {
        const seq = pick();
        if (op === 'finish') cache.insert(seq, live.get(seq)!, 'finished');
        runner.free(seq);
        live.delete(seq);
      } else if (op === 'evict') {
        cache.reclaim(1 + int(8));
      } else if (op === 'release' && pins.length) {
        cache.unpin(pins.splice(int(pins.length), 1)[0]);
      }
      check(`op ${i} (${op})`);
    }
    for (const op of ['start', 'write', 'rewind', 'fork', 'finish', 'abort', 'evict', 'preload', 'release']) expect(counts[op], op).toBeGreaterThan(100);
    expect(cache.stats().hitTokens).toBeGreaterThan(1000);
    expect(cache.stats().evictions).toBeGreaterThan(50);
    // Back to the baseline: everything freed, unpinned and evicted.
    for (const seq of live.keys()) runner.free(seq);
    for (const pin of pins) cache.unpin(pin);
    cache.clear();
    runner.kv.audit(new Map());
    expect([runner.kv.freePageCount, runner.kv.sequences, cache.stats().cachedPages]).toEqual([40, 0, 0]);
  }, 120_000);
});

// Sliding-window layers with a store of their own (PoolWindow): the cache keeps a finished sequence's window pages,
// cuts a match back to where the window pages its next token reads are kept, and gives its own up under pressure.
describe('PrefixCache over a pool with window pages (window 4, pages of 4, reach 0)', () => {
  function windowed(windowPages = 8) {
    const pool = new PagePool(16, 4, { window: 4, reach: 0, step: 4, pages: windowPages });
    const cache = new PrefixCache({ kv: pool, adopt: (seq, pages, length) => pool.adopt(seq, pages, length) });
    return { pool, cache };
  }
  const grow = (pool: PagePool, seq: number, n: number) => {
    for (let i = 0; i < n; i += 4) pool.grow(seq, Math.min(4, n - i));
  };

  test('a continued chat maps all the finished turn computed; a match ending where window pages went back is cut to before them', () => {
    const { pool, cache } = windowed();
    const a = range(10, 20);
    pool.alloc(0);
    grow(pool, 0, 20); // window pages kept from page 3 on (trimmed at 16 - 4)
    cache.insert(0, a, 'finished');
    pool.free(0);
    expect(cache.ordered().map((n) => n.window)).toEqual([false, false, false, true, true]);
    pool.audit(cache.heldPages(), cache.heldWindowPages());
    // the whole turn: its next token reads pages 3 and 4
    expect(cache.lookup([...a, 1, 2], 21).tokens).toBe(20);
    // 10 tokens: the next token reads positions 6..9 on pages 1 and 2, given back: back to page 1's start, and so on
    expect(cache.lookup([...a.slice(0, 10), 1], 10).tokens).toBe(0);
    // adopting the cut match is exact: the sequence holds window pages for all it reads
    const m = cache.lookup([...a, 1, 2], 21);
    cache.attach(1, m, 22);
    pool.grow(1, 1);
    pool.audit(cache.heldPages(), cache.heldWindowPages());
    pool.free(1);
  });

  test('short of window pages, the cache gives its own up least recently used first and keeps the pages', () => {
    const { pool, cache } = windowed(3);
    pool.alloc(0);
    grow(pool, 0, 8);
    cache.insert(0, range(10, 8), 'finished');
    pool.free(0);
    expect([pool.freeWindowCount, cache.reclaimableWindow]).toEqual([1, 2]);
    pool.alloc(1);
    grow(pool, 1, 12); // its second page takes the cache's older window page; by its third it gave its first back
    expect(cache.stats().cachedPages).toBe(2);
    expect(cache.ordered().map((n) => n.window)).toEqual([false, true]);
    pool.audit(cache.heldPages(), cache.heldWindowPages());
  });
});
