import { describe, expect, test } from 'vitest';
import { createAttentionPrefill } from './attention-prefill.ts';
import { createRopeKvAppend } from './rope-kv-append.ts';
import { cacheRow, pagedAttention, randomPagedCache } from '../reference/attention.ts';
import { ropeKvAppend } from '../reference/rope.ts';
import { expectClose, mulberry32, randn, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

interface Step {
  /** Tokens already cached per sequence before the step (the step's own tokens included in `cached`). */
  cached: number[];
  /** [sequence, position] of each query token, in step order. */
  tokens: [number, number][];
}

// Every case runs both variants.
describe.each(['workgroup', 'rows'] as const)('attention-prefill (%s)', (variant) => {
  const cases: { name: string; heads: number; kvHeads: number; headDim: number; pageSize: number; step: Step; seed: number; headsPerInvocation?: number; window?: number }[] = [
    {
      // Prefill of 20 tokens after a 1000-token cached prefix, interleaved with a fresh 5-token prompt.
      name: 'prefill after a long prefix, two sequences interleaved, GQA 8/2, D=64',
      heads: 8, kvHeads: 2, headDim: 64, pageSize: 16, seed: 11,
      step: {
        cached: [1020, 5],
        tokens: [
          ...Array.from({ length: 5 }, (_, i) => [1, i] as [number, number]),
          ...Array.from({ length: 20 }, (_, i) => [0, 1000 + i] as [number, number]),
        ],
      },
    },
    {
      name: 'speculative verify: 4 tokens for each of 3 sequences, D=128, G=4 (2 heads per rows invocation), page 32',
      heads: 8, kvHeads: 2, headDim: 128, pageSize: 32, seed: 12, headsPerInvocation: 2,
      step: { cached: [54, 204, 11], tokens: [0, 1, 2].flatMap((b) => [3, 2, 1, 0].map((k) => [b, [54, 204, 11][b] - 1 - k] as [number, number])) },
    },
    {
      name: 'stories260K shape D=8, H=8, Hkv=4, ragged prompt of 37',
      heads: 8, kvHeads: 4, headDim: 8, pageSize: 16, seed: 13,
      step: { cached: [37], tokens: Array.from({ length: 37 }, (_, i) => [0, i] as [number, number]) },
    },
    {
      // Mistral-style: each query sees the last 5 keys only; queries before position 4 see all of theirs.
      name: 'sliding window 5: a 30-token prompt and 8 tokens after a 90-token prefix, D=20, H=4 Hkv=1',
      heads: 4, kvHeads: 1, headDim: 20, pageSize: 16, seed: 14, window: 5,
      step: {
        cached: [30, 98],
        tokens: [
          ...Array.from({ length: 30 }, (_, i) => [0, i] as [number, number]),
          ...Array.from({ length: 8 }, (_, i) => [1, 90 + i] as [number, number]),
        ],
      },
    },
    {
      name: 'sliding window 1 (each query sees only its own key), GQA 8/2, D=64',
      heads: 8, kvHeads: 2, headDim: 64, pageSize: 16, seed: 15, window: 1,
      step: { cached: [12, 150], tokens: [[0, 3], [0, 11], [1, 0], [1, 69], [1, 149]] },
    },
    {
      name: 'sliding window 70 (wider than a 64-key block), GQA 8/2, D=64',
      heads: 8, kvHeads: 2, headDim: 64, pageSize: 16, seed: 16, window: 70,
      step: { cached: [12, 150], tokens: [[0, 3], [0, 11], [1, 0], [1, 69], [1, 70], [1, 149]] },
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const gpu = await testGpu();
      const rng = mulberry32(c.seed);
      const cache = randomPagedCache({ lengths: c.step.cached, pageSize: c.pageSize, kvHeads: c.kvHeads, headDim: c.headDim, rng, randn });
      const seqIds = c.step.tokens.map(([b]) => b);
      const positions = c.step.tokens.map(([, p]) => p);
      const T = seqIds.length;
      const q = randomF32(T * c.heads * c.headDim, c.seed + 1);
      const attn = createAttentionPrefill(gpu, c, { variant, headsPerInvocation: variant === 'rows' ? c.headsPerInvocation : undefined });
      expect(attn.variant).toBe(variant);
      const out = scratch(gpu, q.byteLength);
      await run(gpu, (pass) =>
        attn.encode(pass, {
          q: upload(gpu, q), out, kCache: upload(gpu, cache.k), vCache: upload(gpu, cache.v), pageTable: upload(gpu, cache.pageTable),
          sequences: c.step.cached.length, maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, new Uint32Array(seqIds)),
          positions: upload(gpu, new Uint32Array(positions)), tokens: T, window: c.window,
        }),
      );
      const want = pagedAttention(cache, q, c.heads, seqIds, positions, c.window ?? 0);
      expectClose(await readF32(gpu, out, q.length), want, { atol: 2e-5, rtol: 1e-4 });
      if (c.window) {
        // The window matters for these cases (full causal attention gives other values).
        const full = pagedAttention(cache, q, c.heads, seqIds, positions);
        expect(full.reduce((m, x, i) => Math.max(m, Math.abs(x - want[i])), 0)).toBeGreaterThan(1e-3);
      }
    });
  }

  test('rope-kv-append → prefill in one pass, llama3 rope, outlier keys, D=64 H=4 Hkv=1', async () => {
    const gpu = await testGpu();
    const [H, Hkv, D, PAGE] = [4, 1, 64, 16];
    const rng = mulberry32(21);
    // Sequence 0 has 130 cached tokens and gets 9 new ones; sequence 1 starts from scratch with 6.
    const cache = randomPagedCache({ lengths: [139, 6], pageSize: PAGE, kvHeads: Hkv, headDim: D, rng, randn, sparePages: 5, maxPages: 12 });
    const seqIds = [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0];
    const positions = [130, 131, 132, 0, 1, 2, 3, 4, 5, 133, 134, 135, 136, 137, 138];
    const T = seqIds.length;
    for (let t = 0; t < T; t++) {
      const at = cacheRow(cache, seqIds[t], positions[t], 0);
      cache.k.fill(NaN, at, at + Hkv * D); // rope-kv-append must fill these before attention reads them
      cache.v.fill(NaN, at, at + Hkv * D);
    }
    // Token t's projections [q (H D) | k (Hkv D) | v (Hkv D)], as the q|k|v GEMV writes them.
    const row = (H + 2 * Hkv) * D;
    const qkv = randomF32(T * row, 22);
    for (let d = 0; d < D; d++) qkv[7 * row + H * D + d] = 12 * qkv[7 * row + D + d]; // token 7 (seq 1) attends hard to itself
    const shape = { heads: H, kvHeads: Hkv, headDim: D, pageSize: PAGE };
    const ropeCfg = { headDim: D, theta: 500000, style: 'neox' as const, scaling: { type: 'llama3' as const, factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 64 } };
    const r = createRopeKvAppend(gpu, { ...shape, ...ropeCfg });
    const bufs = {
      kCache: upload(gpu, cache.k), vCache: upload(gpu, cache.v),
      pageTable: upload(gpu, cache.pageTable), seqIds: upload(gpu, new Uint32Array(seqIds)), positions: upload(gpu, new Uint32Array(positions)),
    };
    const q = scratch(gpu, T * H * D * 4);
    const out = scratch(gpu, T * H * D * 4);
    const paged = { ...bufs, sequences: 2, maxPagesPerSeq: cache.maxPages, tokens: T };
    await run(gpu, (pass) => {
      r.encode(pass, { qkv: upload(gpu, qkv), q, ...paged });
      createAttentionPrefill(gpu, shape, { variant }).encode(pass, { ...paged, q, out });
    });
    const appended = ropeKvAppend(cache, qkv, H, seqIds, positions, r.invFreq, 'neox');
    const want = pagedAttention({ ...cache, ...appended }, appended.q, H, seqIds, positions);
    expectClose(await readF32(gpu, out, T * H * D), want, { atol: 1e-4, rtol: 1e-3 });
    r.destroy();
  });

  test('typed errors: H % Hkv, too large D, short out and page table, fractional window', async () => {
    const gpu = await testGpu();
    expect(() => createAttentionPrefill(gpu, { heads: 9, kvHeads: 2, headDim: 64 }, { variant })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'heads' }));
    expect(() => createAttentionPrefill(gpu, { heads: 2, kvHeads: 2, headDim: 260 }, { variant })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'headDim' }));
    if (variant === 'rows') {
      expect(() => createAttentionPrefill(gpu, { heads: 8, kvHeads: 2, headDim: 64 }, { variant, headsPerWorkgroup: 4 })).toThrow(/workgroup variant/);
    } else {
      expect(() => createAttentionPrefill(gpu, { heads: 8, kvHeads: 2, headDim: 64 }, { variant, headsPerInvocation: 2 })).toThrow(/rows variant/);
    }
    const attn = createAttentionPrefill(gpu, { heads: 2, kvHeads: 1, headDim: 16 }, { variant });
    const buf = scratch(gpu, 4096);
    const base = { q: buf, out: buf, kCache: buf, vCache: buf, pageTable: buf, sequences: 2, maxPagesPerSeq: 4, seqIds: buf, positions: buf, tokens: 3 };
    await expect(run(gpu, (pass) => attn.encode(pass, { ...base, out: scratch(gpu, 16) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'out' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...base, maxPagesPerSeq: 1000 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'pageTable' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...base, window: 2.5 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'window' });
  });
});

test('attention-prefill picks rows on a fallback adapter, workgroup elsewhere', async () => {
  const gpu = await testGpu();
  expect(createAttentionPrefill(gpu, { heads: 4, kvHeads: 2, headDim: 64 }).variant).toBe(gpu.adapterInfo.isFallbackAdapter ? 'rows' : 'workgroup');
});
