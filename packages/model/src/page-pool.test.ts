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
