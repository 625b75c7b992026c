// The fused RoPE + KV append against its CPU twin (reference/rope.ts: split, q/k norm, rotate in float64, append):
// both pair styles, partial rotary, llama3 scaling, positions past 32k, Qwen3's q/k norm, ragged
// tokens of several sequences on shuffled pages, and a token with no page (q written, cache untouched).

import { describe, expect, test } from 'vitest';
import { createRopeKvAppend, ropeInvFreq, type RopeKvAppendOptions } from './rope-kv-append.ts';
import { ropeKvAppend } from '../reference/rope.ts';
import type { PagedCache } from '../reference/attention.ts';
import { expectClose, mulberry32, randn, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

// Positions up to and past 32k: the phase must not lose accuracy as pos * inv_freq grows.
const POSITIONS = [0, 1, 7, 1023, 4097, 32767, 31999, 65535, 100003];

/**
 * A paged cache whose page table reaches position 100k but holds pages (shuffled, pre-filled with random K/V, the
 * rest of the pool NaN) only where the step's tokens land, so far positions cost no memory.
 */
function sparseCache(seqIds: number[], positions: number[], pageSize: number, kvHeads: number, headDim: number, rng: () => number): PagedCache {
  const maxPages = Math.ceil((Math.max(...positions) + 1) / pageSize);
  const used = [...new Set(seqIds.map((b, t) => `${b}:${Math.floor(positions[t] / pageSize)}`))];
  const pages = used.length + 2;
  const ids = Array.from({ length: pages }, (_, i) => i);
  for (let i = pages - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const pageTable = new Uint32Array(3 * maxPages).fill(0xffffffff);
  used.forEach((key, i) => {
    const [b, col] = key.split(':').map(Number);
    pageTable[b * maxPages + col] = ids[i];
  });
  const row = kvHeads * headDim;
  const k = new Float32Array(pages * pageSize * row).fill(NaN);
  const v = new Float32Array(pages * pageSize * row).fill(NaN);
  for (const i of ids.slice(0, used.length)) {
    for (let e = i * pageSize * row; e < (i + 1) * pageSize * row; e++) [k[e], v[e]] = [randn(rng), randn(rng)];
  }
  return { k, v, pageTable, maxPages, pageSize, kvHeads, headDim };
}

async function appendCase(o: RopeKvAppendOptions, T: number, seed: number, { qkNorm = false } = {}) {
  const gpu = await testGpu();
  const [H, Hkv, D, PAGE] = [o.heads, o.kvHeads, o.headDim, o.pageSize ?? 16];
  // Three sequences; token t belongs to sequence t % 3 at a position from POSITIONS (distinct per sequence).
  const seqIds = Array.from({ length: T }, (_, t) => t % 3);
  const positions = seqIds.map((_, t) => POSITIONS[t % POSITIONS.length] + Math.floor(t / POSITIONS.length));
  const cache = sparseCache(seqIds, positions, PAGE, Hkv, D, mulberry32(seed));
  const stride = (H + 2 * Hkv) * D;
  const qkv = randomF32(T * stride, seed + 1, 2);
  const eps = 1e-6;
  const norm = qkNorm ? { q: randomF32(D, seed + 2, 0.5).map((x) => 1 + x), k: randomF32(D, seed + 3, 0.5).map((x) => 1 + x), eps } : undefined;
  const append = createRopeKvAppend(gpu, { ...o, qkNorm });
  const kCache = upload(gpu, cache.k);
  const vCache = upload(gpu, cache.v);
  const q = scratch(gpu, (T + 1) * H * D * 4);
  // One more token, of a sequence with no page-table row (3): its q is written, its K/V nowhere.
  const extra = randomF32(stride, seed + 4);
  const qkvAll = new Float32Array([...qkv, ...extra]);
  await run(gpu, (pass) =>
    append.encode(pass, {
      qkv: upload(gpu, qkvAll), q, kCache, vCache, pageTable: upload(gpu, cache.pageTable), sequences: 3,
      maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, new Uint32Array([...seqIds, 3])), positions: upload(gpu, new Uint32Array([...positions, positions[3]])),
      tokens: T + 1, norm: norm && upload(gpu, new Float32Array([...norm.q, ...norm.k])), eps,
    }),
  );
  const want = ropeKvAppend(cache, qkv, H, seqIds, positions, append.invFreq, o.style, norm);
  // (its twin appends at a position sequence 0 has a page for, to compute the same q)
  const wantExtra = ropeKvAppend(cache, extra, H, [0], [positions[3]], append.invFreq, o.style, norm).q;
  const got = {
    q: await readF32(gpu, q, (T + 1) * H * D),
    k: await readF32(gpu, kCache, cache.k.length),
    v: await readF32(gpu, vCache, cache.v.length),
  };
  append.destroy();
  append.destroy();
  return { got, want, wantExtra, qkv, stride, T, H, Hkv, D };
}

function expectAppended(r: Awaited<ReturnType<typeof appendCase>>) {
  const { got, want, wantExtra, T, H, D } = r;
  expectClose(got.q.subarray(0, T * H * D), want.q, { atol: 6e-6, rtol: 1e-4, label: 'q' });
  expectClose(got.q.subarray(T * H * D), wantExtra, { atol: 6e-6, rtol: 1e-4, label: 'q of the token with no page' });
  // NaN where nothing was cached before or written now (randomPagedCache fills free slots with NaN): compare them as equal.
  const same = (a: Float32Array, b: Float32Array, label: string, atol: number) =>
    expectClose(a.map((x) => (Number.isNaN(x) ? 1e30 : x)), b.map((x) => (Number.isNaN(x) ? 1e30 : x)), { atol, rtol: 1e-4, label });
  same(got.k, want.k, 'k cache', 6e-6);
  same(got.v, want.v, 'v cache', 0);
}

describe('rope-kv-append', () => {
  test("'normal' pairs (GGUF), D=64, GQA 8/2, positions to 100k, ragged tokens of 3 sequences on shuffled pages", async () => {
    expectAppended(await appendCase({ heads: 8, kvHeads: 2, headDim: 64, theta: 10000, style: 'normal' }, 11, 1));
  });

  test("'neox' rotate-half with partial rotary (64 of 128), llama3 scaling and q/k norm", async () => {
    const r = await appendCase(
      {
        heads: 4, kvHeads: 1, headDim: 128, rotaryDim: 64, theta: 500000, style: 'neox',
        scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
      },
      9, 2, { qkNorm: true },
    );
    expectAppended(r);
    // Without the norm, dimensions 64..127 of every q head are the projections' values, bit for bit.
    const plain = await appendCase({ heads: 4, kvHeads: 1, headDim: 128, rotaryDim: 64, theta: 500000, style: 'neox' }, 5, 3);
    expectAppended(plain);
    for (let t = 0; t < plain.T; t++) {
      for (let h = 0; h < 4; h++) {
        const at = (t * 4 + h) * 128;
        expect([...plain.got.q.subarray(at + 64, at + 128)]).toEqual([...plain.qkv.subarray(t * plain.stride + h * 128 + 64, t * plain.stride + h * 128 + 128)]);
      }
    }
  });

  test("stories260K's shape: D=8, H=8, Hkv=4, 'normal', ragged token count", async () => {
    expectAppended(await appendCase({ heads: 8, kvHeads: 4, headDim: 8, theta: 10000, style: 'normal', pageSize: 4 }, 13, 4));
  });

  test('llama3 inv_freq: high frequencies kept, low ones divided by factor, the middle interpolated', () => {
    const base = ropeInvFreq({ headDim: 128, theta: 500000 });
    const s = { type: 'llama3' as const, factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 };
    const scaled = ropeInvFreq({ headDim: 128, theta: 500000, scaling: s });
    expect(base[5]).toBeCloseTo(500000 ** (-10 / 128), 15);
    let kept = 0, divided = 0, mixed = 0;
    for (let i = 0; i < 64; i++) {
      const wavelen = (2 * Math.PI) / base[i];
      if (wavelen < 8192 / 4) {
        expect(scaled[i]).toBe(base[i]);
        kept++;
      } else if (wavelen > 8192) {
        expect(scaled[i]).toBeCloseTo(base[i] / 8, 15);
        divided++;
      } else {
        const smooth = (8192 / wavelen - 1) / 3;
        expect(scaled[i]).toBeCloseTo((1 - smooth) * (base[i] / 8) + smooth * base[i], 15);
        expect(scaled[i]).toBeLessThan(base[i]);
        expect(scaled[i]).toBeGreaterThan(base[i] / 8);
        mixed++;
      }
    }
    expect([kept > 0, divided > 0, mixed > 0]).toEqual([true, true, true]);
  });

  test('typed errors: rotaryDim odd or above D, H % Hkv, short qkv, page table, missing norm', async () => {
    const gpu = await testGpu();
    const base = { heads: 2, kvHeads: 1, headDim: 16, theta: 1e4, style: 'normal' as const, pageSize: 4 };
    expect(() => createRopeKvAppend(gpu, { ...base, rotaryDim: 18 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'rotaryDim' }));
    expect(() => createRopeKvAppend(gpu, { ...base, rotaryDim: 7 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'rotaryDim' }));
    expect(() => createRopeKvAppend(gpu, { ...base, heads: 3, kvHeads: 2 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'heads' }));
    const append = createRopeKvAppend(gpu, base);
    const buf = scratch(gpu, 4096);
    const args = { qkv: buf, q: buf, kCache: buf, vCache: buf, pageTable: buf, sequences: 2, maxPagesPerSeq: 8, seqIds: buf, positions: buf, tokens: 4 };
    await expect(run(gpu, (pass) => append.encode(pass, { ...args, qkv: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'qkv' });
    await expect(run(gpu, (pass) => append.encode(pass, { ...args, maxPagesPerSeq: 2000 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'pageTable' });
    const normed = createRopeKvAppend(gpu, { ...base, qkNorm: true });
    await expect(run(gpu, (pass) => normed.encode(pass, args))).rejects.toThrow(/norm/);
    append.destroy();
    normed.destroy();
  });
});
