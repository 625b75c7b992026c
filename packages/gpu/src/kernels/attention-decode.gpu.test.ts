import { describe, expect, test } from 'vitest';
import { createAttentionDecode } from './attention-decode.ts';
import { cacheRow, pagedAttention, randomPagedCache } from '../reference/attention.ts';
import { expectClose, mulberry32, randn, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';
import type { Gpu } from '../device.ts';
import type { AttentionVariant } from './paged-kv.ts';
import { gpuStats } from '../kernel.ts';

interface Case {
  lengths: number[];
  heads: number;
  kvHeads: number;
  headDim: number;
  pageSize: number;
  split?: number;
  headsPerWorkgroup?: number;
  /** 'rows' only (default: the largest that fits). */
  headsPerInvocation?: number;
  /** Page-table row of each query (default: query b reads sequence b). */
  seqIds?: number[];
  /** Sliding window (0 or absent: full causal). */
  window?: number;
  seed: number;
  /** Mutates q and the cache to make outliers. */
  spike?: (q: Float32Array, k: Float32Array, rowOf: (seq: number, pos: number) => number) => void;
}

async function decodeCase(gpu: Gpu, variant: AttentionVariant, c: Case) {
  const rng = mulberry32(c.seed);
  const cache = randomPagedCache({ lengths: c.lengths, pageSize: c.pageSize, kvHeads: c.kvHeads, headDim: c.headDim, rng, randn });
  const seqIds = c.seqIds ?? c.lengths.map((_, b) => b);
  const positions = seqIds.map((b) => c.lengths[b] - 1);
  const T = seqIds.length;
  const q = randomF32(T * c.heads * c.headDim, c.seed + 1);
  c.spike?.(q, cache.k, (b, pos) => cacheRow(cache, b, pos, 0));
  const hpw = variant === 'workgroup' ? c.headsPerWorkgroup : undefined;
  const hpi = variant === 'rows' ? c.headsPerInvocation : undefined;
  const attn = createAttentionDecode(gpu, c, { variant, split: c.split, headsPerWorkgroup: hpw, headsPerInvocation: hpi });
  expect(attn.variant).toBe(variant);
  const out = scratch(gpu, q.byteLength);
  await run(gpu, (pass) =>
    attn.encode(pass, {
      q: upload(gpu, q), out, kCache: upload(gpu, cache.k), vCache: upload(gpu, cache.v), pageTable: upload(gpu, cache.pageTable),
      sequences: c.lengths.length, maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, new Uint32Array(seqIds)),
      positions: upload(gpu, new Uint32Array(positions)), tokens: T, maxContext: Math.max(...positions) + 1, window: c.window,
    }),
  );
  const got = await readF32(gpu, out, q.length);
  attn.destroy();
  return { got, want: pagedAttention(cache, q, c.heads, seqIds, positions, c.window ?? 0), full: pagedAttention(cache, q, c.heads, seqIds, positions), attn };
}

// Every case runs both pass-1 variants (they share the partials layout and the reduce).
describe.each(['workgroup', 'rows'] as const)('attention-decode (%s)', (variant) => {
  test('ragged contexts 1 / 17 / 1100 on shuffled pages, GQA 8/2, D=64', async () => {
    const gpu = await testGpu();
    const { got, want } = await decodeCase(gpu, variant, { lengths: [1, 17, 1100], heads: 8, kvHeads: 2, headDim: 64, pageSize: 16, seed: 1 });
    expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
  });

  test('split of 100 keys (not a multiple of PAGE or the workgroup), D=128, G=4, page 32', async () => {
    const gpu = await testGpu();
    const { got, want } = await decodeCase(gpu, variant, { lengths: [333, 33, 64], heads: 8, kvHeads: 2, headDim: 128, pageSize: 32, split: 100, seed: 2 });
    expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
  });

  // Every context within one split: pass 1 normalizes and writes the output, and the reduce is not dispatched.
  test('one split holds every context (1 / 17 / 64 keys, and a window): one dispatch, same result', async () => {
    const gpu = await testGpu();
    const before = gpuStats.dispatches;
    const r = await decodeCase(gpu, variant, { lengths: [1, 17, 64], heads: 8, kvHeads: 4, headDim: 8, pageSize: 16, split: 64, seed: 7 });
    expect(gpuStats.dispatches - before).toBe(1);
    expectClose(r.got, r.want, { atol: 2e-5, rtol: 1e-4 });
    const w = await decodeCase(gpu, variant, { lengths: [5, 40, 64], heads: 4, kvHeads: 2, headDim: 16, pageSize: 8, split: 64, window: 9, seed: 8 });
    expectClose(w.got, w.want, { atol: 2e-5, rtol: 1e-4, label: 'window 9' });
  });

  test('stories260K shape D=8, H=8, Hkv=4; queries mapped to page-table rows out of order', async () => {
    const gpu = await testGpu();
    const { got, want } = await decodeCase(gpu, variant, {
      lengths: [5, 260, 40], heads: 8, kvHeads: 4, headDim: 8, pageSize: 16, split: 64, seqIds: [2, 0, 1, 1], seed: 3,
    });
    expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
  });

  test('D=256 with the query group split over workgroups (2 of 8 heads each), no GQA sharing D=16', async () => {
    const gpu = await testGpu();
    const a = await decodeCase(gpu, variant, { lengths: [70, 300], heads: 8, kvHeads: 1, headDim: 256, pageSize: 16, split: 128, headsPerWorkgroup: 2, seed: 4 });
    expect(a.attn.headsPerWorkgroup).toBe(variant === 'workgroup' ? 2 : 1);
    expect(a.attn.headsPerInvocation).toBe(variant === 'rows' ? 2 : 1); // 2 × D = 512 floats of private state
    expectClose(a.got, a.want, { atol: 2e-5, rtol: 1e-4 });
    const b = await decodeCase(gpu, variant, { lengths: [129, 2], heads: 3, kvHeads: 3, headDim: 16, pageSize: 8, split: 32, seed: 5 });
    expectClose(b.got, b.want, { atol: 2e-5, rtol: 1e-4 });
  });

  test('outliers: scores in the hundreds, one key dominating some heads', async () => {
    const gpu = await testGpu();
    const D = 64;
    const { got, want } = await decodeCase(gpu, variant, {
      lengths: [900, 45], heads: 4, kvHeads: 2, headDim: D, pageSize: 16, split: 128, headsPerInvocation: 1, seed: 6,
      spike: (q, k, rowOf) => {
        for (let d = 0; d < D; d++) {
          q[d] *= 6; // head 0 of sequence 0: every score large
          k[rowOf(0, 613) + d] = q[d] / 3; // kv head 0 of a key in the middle: score ~ 2 |q|^2 / 8
          k[rowOf(1, 44) + D + d] = 40 * Math.sign(q[(4 + 2) * D + d]); // kv head 1, the query's own key
        }
      },
    });
    expectClose(got, want, { atol: 1e-4, rtol: 1e-3 });
  });

  // Windows inside one split, across split boundaries, on a split boundary, wider than some contexts, and
  // 1 (a query sees only its own key); contexts are ragged so some rows start mid-split.
  test('sliding window: keys with pos - j >= window are skipped (windows 1, 37, 64, 200; split 64)', async () => {
    const gpu = await testGpu();
    for (const [i, window] of [37, 64, 200, 1].entries()) {
      const r = await decodeCase(gpu, variant, { lengths: [1, 17, 300, 129, 65], heads: 8, kvHeads: 2, headDim: 16, pageSize: 16, split: 64, window, seed: 40 + i });
      expectClose(r.got, r.want, { atol: 2e-5, rtol: 1e-4, label: `window ${window}` });
      // The window matters: full attention differs on the long rows (the test is not vacuous).
      let diff = 0;
      for (let e = 2 * 8 * 16; e < 3 * 8 * 16; e++) diff = Math.max(diff, Math.abs(r.full[e] - r.want[e]));
      expect(diff, `window ${window}`).toBeGreaterThan(1e-3);
    }
    await expect(decodeCase(gpu, variant, { lengths: [3], heads: 2, kvHeads: 1, headDim: 16, pageSize: 16, window: -1, seed: 1 }))
      .rejects.toMatchObject({ name: 'ShapeError', argument: 'window' });
  });

  test('typed errors: H % Hkv, D too large or ragged, page table too small, short q', async () => {
    const gpu = await testGpu();
    expect(() => createAttentionDecode(gpu, { heads: 6, kvHeads: 4, headDim: 64 }, { variant })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'heads' }));
    expect(() => createAttentionDecode(gpu, { heads: 4, kvHeads: 4, headDim: 512 }, { variant })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'headDim' }));
    expect(() => createAttentionDecode(gpu, { heads: 4, kvHeads: 4, headDim: 30 }, { variant })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'headDim' }));
    expect(() => createAttentionDecode(gpu, { heads: 4, kvHeads: 4, headDim: 64 }, { variant, split: 0 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'split' }));
    expect(() => createAttentionDecode(gpu, { heads: 4, kvHeads: 4, headDim: 64 }, { variant, workgroupSize: 4096 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'workgroupSize' }));
    if (variant === 'workgroup') {
      expect(() => createAttentionDecode(gpu, { heads: 8, kvHeads: 2, headDim: 64 }, { variant, headsPerWorkgroup: 3 })).toThrow(/divisor/);
    } else {
      expect(() => createAttentionDecode(gpu, { heads: 8, kvHeads: 2, headDim: 64 }, { variant, headsPerWorkgroup: 2 })).toThrow(/workgroup variant/);
      expect(() => createAttentionDecode(gpu, { heads: 8, kvHeads: 2, headDim: 64 }, { variant, headsPerInvocation: 3 })).toThrow(/divisor/);
      expect(() => createAttentionDecode(gpu, { heads: 8, kvHeads: 2, headDim: 256 }, { variant, headsPerInvocation: 4 }))
        .toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'headsPerInvocation' }));
    }
    const attn = createAttentionDecode(gpu, { heads: 2, kvHeads: 1, headDim: 16, pageSize: 16 }, { variant });
    const buf = scratch(gpu, 4096);
    const base = {
      q: buf, out: buf, kCache: buf, vCache: buf, pageTable: buf, sequences: 2, maxPagesPerSeq: 4,
      seqIds: buf, positions: buf, tokens: 2, maxContext: 65,
    };
    await expect(run(gpu, (pass) => attn.encode(pass, base))).rejects.toMatchObject({ name: 'ShapeError', argument: 'pageTable' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...base, maxContext: 64, q: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'q' });
    attn.destroy();
    attn.destroy();
  });
});

test('attention-decode picks rows on a software adapter, workgroup elsewhere; rejects unknown variants', async () => {
  const gpu = await testGpu();
  const attn = createAttentionDecode(gpu, { heads: 4, kvHeads: 2, headDim: 64 });
  expect(attn.variant).toBe(gpu.adapterInfo.isFallbackAdapter ? 'rows' : 'workgroup');
  expect(attn.split).toBe(attn.variant === 'rows' ? 64 : 256);
  attn.destroy();
  // Mesa's llvmpipe under Dawn does not call itself a fallback adapter: its name says it computes on the CPU.
  const llvmpipe = { ...gpu, adapterInfo: { vendor: 'mesa', architecture: '', device: 'llvmpipe (LLVM 15.0.6, 256 bits)', description: 'OpenGL version 4.5 (Core Profile) Mesa 22.3.6', isFallbackAdapter: false } };
  const onCpu = createAttentionDecode(llvmpipe, { heads: 4, kvHeads: 2, headDim: 64 });
  expect(onCpu.variant).toBe('rows');
  onCpu.destroy();
  const hardware = createAttentionDecode({ ...gpu, adapterInfo: { ...llvmpipe.adapterInfo, vendor: 'nvidia', device: 'NVIDIA H100' } }, { heads: 4, kvHeads: 2, headDim: 64 });
  expect(hardware.variant).toBe('workgroup');
  hardware.destroy();
  expect(() => createAttentionDecode(gpu, { heads: 4, kvHeads: 2, headDim: 64 }, { variant: 'tiled' as never })).toThrow(/variant must be/);
});
