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

describe('PagePool with sliding-window layers', () => {
  // window 8 positions, pages of 4: a sequence reads its last two or three pages in the windowed layers
  const windowed = (reach = 0, windowPages = 12) => new PagePool(32, 4, { window: 8, reach, step: 4, pages: windowPages });

  test('gives back window pages a token can no longer see, and keeps every page for the full layers', () => {
    const pool = windowed();
    pool.alloc(1);
    for (let i = 0; i < 40; i++) pool.grow(1, 1);
    expect(pool.pagesOf(1)).toHaveLength(10);
    // the next token (position 40) sees 33..40: pages 8 and 9, and page 7 for position 32 kept by the margin
    expect(pool.pagesOf(1).map((p) => pool.windowOf(p) >= 0)).toEqual([false, false, false, false, false, false, false, true, true, true]);
    expect(pool.windowPagesOf(1)).toBeLessThanOrEqual(pool.windowPagesPerSequence);
    expect(pool.freeWindowCount).toBe(12 - 3);
    pool.audit();
    pool.free(1);
    expect([pool.freePageCount, pool.freeWindowCount]).toEqual([32, 12]);
    pool.audit();
  });

  test('a rewind within reach stays exact; one past the pages given back is refused and changes nothing', () => {
    const pool = windowed(4);
    pool.alloc(1);
    for (let i = 0; i < 10; i++) pool.grow(1, 4); // 40 tokens, trimmed at 36 - 12 = 24: pages 6.. kept
    pool.rewind(1, 4); // back to 36: it sees 29..36, kept
    expect(pool.length(1)).toBe(36);
    pool.audit();
    expect(() => pool.rewind(1, 12)).toThrow(/sliding-window pages given back/);
    expect(pool.length(1)).toBe(36);
    pool.audit();
  });

  test('fork shares window pages; the copy-on-write copies a shared one and moves one read by the writer alone', () => {
    const pool = windowed();
    pool.alloc(0);
    pool.grow(0, 6); // pages [a, b], b half full
    pool.fork(0, 1);
    expect(pool.freeWindowCount).toBe(10);
    expect(pool.windowNeeded(1, 7)).toBe(1);
    pool.grow(1, 1);
    const [[from, to]] = pool.takeWindowCopies();
    expect(from).toBe(pool.windowOf(pool.pagesOf(0)[1]));
    expect(to).toBe(pool.windowOf(pool.pagesOf(1)[1]));
    pool.audit();
    // the holder keeps b's window page; sequence 0 alone reads it then, so its copy-on-write moves it
    const b = pool.pagesOf(0)[1];
    pool.retain(b);
    pool.free(1);
    pool.audit(new Map([[b, 1]]));
    pool.grow(0, 1);
    expect(pool.takeWindowCopies()).toEqual([]);
    expect([pool.windowOf(b), pool.windowOf(pool.pagesOf(0)[1]) >= 0]).toEqual([-1, true]);
    pool.audit(new Map([[b, 1]]));
  });

  test('adopting pages needs their window pages from the adopted length minus the window on; the holder keeps them on request', () => {
    const pool = windowed();
    pool.alloc(0);
    for (let i = 0; i < 6; i++) pool.grow(0, 4); // 24 tokens, pages 0..5, window pages from page 2 (trimmed at 20 - 8)
    const pages = [...pool.pagesOf(0)];
    for (const p of pages) pool.retain(p);
    const kept = pages.map((p) => pool.retainWindow(p));
    expect(kept).toEqual([false, false, false, true, true, true]);
    pool.free(0);
    pool.adopt(1, pages, 24); // sees 16..23 and one more: pages 4, 5 (window pages held)
    expect(() => pool.adopt(2, pages.slice(0, 3), 12)).toThrow(/has no window page/);
    pool.audit(new Map(pages.map((p) => [p, 1])), new Map(pages.filter((_, i) => kept[i]).map((p) => [p, 1])));
  });

  test('a short store asks the holder to give up window pages, then refuses with a typed error', () => {
    const pool = windowed(0, 2);
    let asked = 0;
    pool.setHolder({ reclaimable: 0, reclaim: () => 0, reclaimableWindow: 0, reclaimWindow: (n) => ((asked += n), 0) });
    pool.alloc(1);
    pool.grow(1, 8);
    expect(() => pool.grow(1, 4)).toThrow(KvCacheFullError);
    expect(asked).toBe(1);
    expect(pool.length(1)).toBe(8);
  });
});
