// Encoder attention (bidirectional, packed sequences) against its float64 twin, both variants: ragged lengths that
// leave workgroup tiles spanning several sequences, a sequence longer than several key tiles, a fused q|k|v buffer
// read in place, GQA at D = 256, large scores (softmax stability), one-token inputs, and bad layouts; and a reach that
// cuts the keys (the decoders that embed): causal, a causal window, a symmetric window, across tile and sequence edges.
import { describe, expect, test } from 'vitest';
import { createAttentionEncoder, type AttentionEncoderOptions } from './attention-encoder.ts';
import { encoderAttention, packedStarts } from '../reference/encoder.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

interface Case {
  name: string;
  lengths: number[];
  heads: number;
  kvHeads: number;
  headDim: number;
  fused?: boolean;
  qScale?: number;
  options?: AttentionEncoderOptions;
  reach?: { before?: number; after?: number };
}

const CASES: Case[] = [
  { name: 'ragged lengths 1, 7, 33, 2, 64, 5 (tiles span sequences), H=4, D=16', lengths: [1, 7, 33, 2, 64, 5], heads: 4, kvHeads: 4, headDim: 16 },
  { name: 'all-MiniLM shape H=12, D=32, fused q|k|v (T, 3C) in place, lengths 9, 130, 3', lengths: [9, 130, 3], heads: 12, kvHeads: 12, headDim: 32, fused: true },
  { name: 'GQA 4/2 at D=256, lengths 6, 11', lengths: [6, 11], heads: 4, kvHeads: 2, headDim: 256 },
  { name: 'large scores (q x 300): a stable softmax, lengths 17, 40', lengths: [17, 40], heads: 2, kvHeads: 2, headDim: 64, qScale: 300 },
  { name: 'one sequence of one token', lengths: [1], heads: 3, kvHeads: 1, headDim: 8 },
  { name: 'many one- and two-token inputs', lengths: Array.from({ length: 40 }, (_, i) => 1 + (i % 2)), heads: 2, kvHeads: 2, headDim: 12 },
  { name: 'causal (after 0), Qwen3-Embedding-like GQA 4/2, lengths 1, 9, 70', lengths: [1, 9, 70], heads: 4, kvHeads: 2, headDim: 32, reach: { after: 0 } },
  { name: 'a causal window (before 5, after 0), lengths 3, 50', lengths: [3, 50], heads: 2, kvHeads: 1, headDim: 16, reach: { before: 5, after: 0 } },
  { name: 'a symmetric window (±6: EmbeddingGemma\'s ±256 in small), GQA 3/1 at D = 256, lengths 4, 45, 13', lengths: [4, 45, 13], heads: 3, kvHeads: 1, headDim: 256, reach: { before: 6, after: 6 } },
  { name: 'a reach wider than every sequence = none', lengths: [7, 20], heads: 2, kvHeads: 2, headDim: 8, reach: { before: 1000, after: 1000 } },
];

describe.each(['rows', 'workgroup'] as const)('attention-encoder (%s)', (variant) => {
  for (const c of CASES) {
    test(c.name, async () => {
      const gpu = await testGpu();
      const starts = packedStarts(c.lengths);
      const T = starts[c.lengths.length];
      const [qw, kw] = [c.heads * c.headDim, c.kvHeads * c.headDim];
      const seed = T + c.headDim;
      let q, k, v;
      let data: Float32Array[];
      if (c.fused) {
        const stride = qw + 2 * kw;
        const qkv = randomF32(T * stride, seed);
        data = [qkv];
        q = { data: qkv, stride, offset: 0 };
        k = { data: qkv, stride, offset: qw };
        v = { data: qkv, stride, offset: qw + kw };
      } else {
        const qd = randomF32(T * qw, seed, c.qScale ?? 1);
        const [kd, vd] = [randomF32(T * kw, seed + 1), randomF32(T * kw, seed + 2)];
        data = [qd, kd, vd];
        q = { data: qd, stride: qw, offset: 0 };
        k = { data: kd, stride: kw, offset: 0 };
        v = { data: vd, stride: kw, offset: 0 };
      }
      const bufs = data.map((d) => upload(gpu, d));
      const [qb, kb, vb] = c.fused ? [bufs[0], bufs[0], bufs[0]] : bufs;
      const out = scratch(gpu, T * qw * 4);
      const attn = createAttentionEncoder(gpu, { heads: c.heads, kvHeads: c.kvHeads, headDim: c.headDim }, { variant, ...c.options });
      expect(attn.variant).toBe(variant);
      await run(gpu, (pass) =>
        attn.encode(pass, {
          q: { buffer: qb, stride: q.stride, offset: q.offset },
          k: { buffer: kb, stride: k.stride, offset: k.offset },
          v: { buffer: vb, stride: v.stride, offset: v.offset },
          out, seqStarts: upload(gpu, starts), sequences: c.lengths.length, tokens: T,
          ...(c.reach ? { reach: c.reach } : {}),
        }),
      );
      const got = await readF32(gpu, out, T * qw);
      expect(got.every(Number.isFinite)).toBe(true);
      const want = encoderAttention(q, k, v, starts, c.heads, c.kvHeads, c.headDim, undefined, c.reach);
      expectClose(got, want, { atol: 2e-5, rtol: 1e-4 });
      // A reach that cuts keys changes the result (the twin is not the bidirectional one in disguise); one that cuts
      // none changes nothing.
      if (c.reach) {
        const longest = Math.max(...c.lengths);
        const cuts = (c.reach.before ?? Infinity) < longest - 1 || (c.reach.after ?? Infinity) < longest - 1;
        const all = encoderAttention(q, k, v, starts, c.heads, c.kvHeads, c.headDim);
        const gap = Math.max(...want.map((x, i) => Math.abs(x - all[i])));
        if (cuts) expect(gap).toBeGreaterThan(1e-3);
        else expect(gap).toBe(0);
      }
    });
  }
});

describe('attention-encoder (workgroup tuning)', () => {
  test('small query tiles and 4-key tiles: many tiles per sequence and sequences per tile', async () => {
    const gpu = await testGpu();
    const lengths = [3, 29, 1, 18];
    const starts = packedStarts(lengths);
    const T = starts[lengths.length];
    const [H, D] = [2, 20];
    const [qd, kd, vd] = [randomF32(T * H * D, 1), randomF32(T * H * D, 2), randomF32(T * H * D, 3)];
    const want = encoderAttention({ data: qd, stride: H * D, offset: 0 }, { data: kd, stride: H * D, offset: 0 }, { data: vd, stride: H * D, offset: 0 }, starts, H, H, D);
    for (const [workgroupSize, keyTile] of [[16, 4], [8, 12], [256, 32]]) {
      const out = scratch(gpu, T * H * D * 4);
      const attn = createAttentionEncoder(gpu, { heads: H, headDim: D }, { variant: 'workgroup', workgroupSize, keyTile });
      await run(gpu, (pass) =>
        attn.encode(pass, { q: { buffer: upload(gpu, qd) }, k: { buffer: upload(gpu, kd) }, v: { buffer: upload(gpu, vd) }, out, seqStarts: upload(gpu, starts), sequences: lengths.length, tokens: T }),
      );
      expectClose(await readF32(gpu, out, T * H * D), want, { atol: 2e-5, rtol: 1e-4, label: `workgroup ${workgroupSize}, key tile ${keyTile}` });
    }
  });

  test('bad shapes and layouts are ShapeErrors', async () => {
    const gpu = await testGpu();
    expect(() => createAttentionEncoder(gpu, { heads: 6, kvHeads: 4, headDim: 16 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'heads' }));
    expect(() => createAttentionEncoder(gpu, { heads: 2, headDim: 18 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'headDim' }));
    expect(() => createAttentionEncoder(gpu, { heads: 2, headDim: 16 }, { variant: 'workgroup', keyTile: 6 })).toThrow(expect.objectContaining({ argument: 'keyTile' }));
    expect(() => createAttentionEncoder(gpu, { heads: 2, headDim: 16 }, { variant: 'rows', keyTile: 8 })).toThrow(/keyTile/);
    const attn = createAttentionEncoder(gpu, { heads: 2, headDim: 16 });
    const buf = scratch(gpu, 4096);
    const seqStarts = upload(gpu, packedStarts([4]));
    const args = { q: { buffer: buf }, k: { buffer: buf }, v: { buffer: buf }, out: scratch(gpu, 4096), seqStarts, sequences: 1, tokens: 4 };
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, k: { buffer: buf, stride: 34 } }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'k' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, v: { buffer: buf, stride: 32, offset: 4 } }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'v' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, q: { buffer: scratch(gpu, 64) } }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'q' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, sequences: 4 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'seqStarts' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, reach: { before: -1 } }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'reach.before' });
    await expect(run(gpu, (pass) => attn.encode(pass, { ...args, reach: { after: 1.5 } }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'reach.after' });
  });
});
