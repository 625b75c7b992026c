// Page accounting without a GPU: growth a page at a time, rewind, fork with shared pages, and the
// copy-on-write copy owed when a sequence appends into a shared, partly filled page.
import { describe, expect, test } from 'vitest';
import { KvCacheFullError, PagePool } from './page-pool.ts';

describe('PagePool', () => {
  test('grows a page at a time and gives pages back on rewind and free', () => {
    const pool = new PagePool(8, 4);
    pool.alloc(1);
    expect(pool.grow(1, 5)).toBe(0); // positions 0..4: two pages
    expect(pool.pagesOf(1)).toHaveLength(2);
    expect(pool.grow(1, 3)).toBe(5); // 8 tokens: still two pages
    expect(pool.freePageCount).toBe(6);
    pool.rewind(1, 5); // 3 tokens left: one page
    expect([pool.length(1), pool.pagesOf(1).length, pool.freePageCount]).toEqual([3, 1, 7]);
    pool.free(1);
    pool.free(1); // idempotent
    expect(pool.freePageCount).toBe(8);
  });

  test('a step that does not fit is refused whole, with the counts', () => {
    const pool = new PagePool(2, 4);
    pool.alloc(1);
    expect(() => pool.grow(1, 9)).toThrow(KvCacheFullError);
    expect([pool.length(1), pool.freePageCount]).toEqual([0, 2]);
    expect(() => pool.grow(7, 1)).toThrow(/alloc\(7\)/);
  });

  test('fork shares pages; the first writer into a shared partial page copies it; the last one does not', () => {
    const pool = new PagePool(8, 4);
    pool.alloc(0);
    pool.grow(0, 6); // pages [a, b], b half full
    pool.fork(0, 1);
    expect(pool.pagesOf(1)).toEqual(pool.pagesOf(0));
    expect(pool.freePageCount).toBe(6);
    expect(pool.pagesNeeded(0, 7)).toBe(1); // the copy of b
    pool.grow(0, 1);
    const [[from, to]] = pool.takeCopies();
    expect(from).toBe(pool.pagesOf(1)[1]);
    expect(to).toBe(pool.pagesOf(0)[1]);
    expect(pool.pagesOf(0)[0]).toBe(pool.pagesOf(1)[0]); // the full page stays shared
    expect(pool.pagesNeeded(1, 7)).toBe(0); // b now belongs to sequence 1 alone
    pool.grow(1, 1);
    expect(pool.takeCopies()).toEqual([]);
    pool.free(0);
    pool.free(1);
    expect(pool.freePageCount).toBe(8);
  });

  test('appending at a page boundary after fork needs no copy', () => {
    const pool = new PagePool(8, 4);
    pool.alloc(0);
    pool.grow(0, 4);
    pool.fork(0, 1);
    pool.grow(1, 2);
    expect(pool.takeCopies()).toEqual([]);
    expect(pool.pagesOf(1)[0]).toBe(pool.pagesOf(0)[0]);
  });
});

describe('PagePool with a holder (prefix cache)', () => {
  /** A holder that keeps the given pages and gives back the oldest first. */
  function holderOf(pool: PagePool) {
    const held: number[] = [];
    const holder = {
      get reclaimable() {
        return held.filter((p) => pool.refCount(p) === 1).length;
      },
      reclaim(n: number) {
        let done = 0;
        for (let i = 0; i < held.length && done < n; ) {
          if (pool.refCount(held[i]) === 1) {
            pool.release(held.splice(i, 1)[0]);
            done++;
          } else i++;
        }
        return done;
      },
      held,
      counts: () => new Map(held.map((p) => [p, 1])),
    };
    pool.setHolder(holder);
    return holder;
  }

  test('adopt maps held pages into a new sequence; its first write into the shared partial page copies it', () => {
    const pool = new PagePool(8, 4);
    const h = holderOf(pool);
    pool.alloc(0);
    pool.grow(0, 6); // pages [a, b], b half full
    for (const p of pool.pagesOf(0)) pool.retain(p), h.held.push(p);
    const [a, b] = pool.pagesOf(0);
    pool.free(0);
    pool.audit(h.counts());
    expect([pool.freePageCount, pool.availablePageCount]).toEqual([6, 8]);
    pool.adopt(1, [a, b], 5); // 5 of b's 6 tokens match
    expect([pool.refCount(a), pool.refCount(b), pool.length(1)]).toEqual([2, 2, 5]);
    expect(pool.availablePageCount).toBe(6); // a and b are mapped: not reclaimable
    expect(pool.pagesNeeded(1, 6)).toBe(1);
    pool.grow(1, 1);
    const [[from, to]] = pool.takeCopies();
    expect([from, pool.pagesOf(1)[1]]).toEqual([b, to]);
    expect(pool.refCount(b)).toBe(1); // the holder's alone: b is never written
    pool.audit(h.counts());
    pool.free(1);
    pool.audit(h.counts());
  });

  test('grow asks the holder for pages when the free list is short; a step fails only when nothing can be given back', () => {
    const pool = new PagePool(4, 4);
    const h = holderOf(pool);
    pool.alloc(0);
    pool.grow(0, 12);
    for (const p of pool.pagesOf(0)) pool.retain(p), h.held.push(p);
    pool.free(0);
    expect([pool.freePageCount, pool.availablePageCount]).toEqual([1, 4]);
    pool.alloc(1);
    pool.grow(1, 10); // 3 pages: the free one and two reclaimed
    expect([pool.freePageCount, h.held.length]).toEqual([0, 1]);
    pool.audit(h.counts());
    expect(() => pool.grow(1, 7)).toThrow(KvCacheFullError); // needs 2, only 1 can be reclaimed
    expect(pool.length(1)).toBe(10);
    pool.audit(h.counts());
  });

  test('misuse is refused: retaining or releasing a free page, adopting a free page or a wrong page count', () => {
    const pool = new PagePool(4, 4);
    expect(() => pool.retain(2)).toThrow(/not in use/);
    expect(() => pool.release(2)).toThrow(/already free/);
    expect(() => pool.adopt(0, [1], 3)).toThrow(/free/);
    pool.alloc(0);
    pool.grow(0, 5);
    expect(() => pool.adopt(1, pool.pagesOf(0), 9)).toThrow(/ceil/);
    expect(() => pool.audit(new Map([[pool.pagesOf(0)[0], 1]]))).toThrow(/audit/);
  });
});
