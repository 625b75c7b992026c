import { describe, expect, test } from 'vitest';
import { createKvAppend } from './kv-append.ts';
import { kvAppend, randomPagedCache } from '../reference/attention.ts';
import { expectClose, mulberry32, randn, randomF32, readF32, run, scratch, testGpu, upload } from '../testing.ts';

describe('kv-append', () => {
  test('ragged tokens of 3 sequences land on shuffled pages; the rest of the cache is untouched', async () => {
    const gpu = await testGpu();
    const [Hkv, D, PAGE] = [2, 12, 16];
    const rng = mulberry32(31);
    // Cached lengths after the step: the step appends positions 0..4, 17 and 1000..1002.
    const cache = randomPagedCache({ lengths: [5, 18, 1003], pageSize: PAGE, kvHeads: Hkv, headDim: D, rng, randn, sparePages: 4 });
    const seqIds = [2, 0, 0, 1, 0, 2, 0, 2, 0];
    const positions = [1000, 0, 1, 17, 2, 1001, 3, 1002, 4];
    // One token whose page-table entry is out of range (sequence 3 does not exist): skipped.
    const T = seqIds.length + 1;
    const k = randomF32(T * Hkv * D, 32);
    const v = randomF32(T * Hkv * D, 33);
    const want = kvAppend(cache, k, v, seqIds, positions);
    const kCache = upload(gpu, cache.k);
    const vCache = upload(gpu, cache.v);
    await run(gpu, (pass) =>
      createKvAppend(gpu, { heads: 4, kvHeads: Hkv, headDim: D, pageSize: PAGE }).encode(pass, {
        k: upload(gpu, k), v: upload(gpu, v), kCache, vCache, pageTable: upload(gpu, cache.pageTable), sequences: 3,
        maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, new Uint32Array([...seqIds, 3])),
        positions: upload(gpu, new Uint32Array([...positions, 5])), tokens: T,
      }),
    );
    expectClose(await readF32(gpu, kCache, want.k.length), want.k, { atol: 0, rtol: 0, label: 'k cache' });
    expectClose(await readF32(gpu, vCache, want.v.length), want.v, { atol: 0, rtol: 0, label: 'v cache' });
  });

  test('typed errors: H % Hkv, page table and k too small', async () => {
    const gpu = await testGpu();
    expect(() => createKvAppend(gpu, { heads: 5, kvHeads: 2, headDim: 8 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'heads' }));
    const append = createKvAppend(gpu, { heads: 2, kvHeads: 2, headDim: 8, pageSize: 4 });
    const buf = scratch(gpu, 1024);
    const base = { k: buf, v: buf, kCache: buf, vCache: buf, pageTable: buf, sequences: 2, maxPagesPerSeq: 8, seqIds: buf, positions: buf, tokens: 4 };
    await expect(run(gpu, (pass) => append.encode(pass, { ...base, maxPagesPerSeq: 200 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'pageTable' });
    await expect(run(gpu, (pass) => append.encode(pass, { ...base, k: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'k' });
  });
});
