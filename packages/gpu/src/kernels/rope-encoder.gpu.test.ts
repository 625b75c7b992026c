// RoPE in place on packed encoder rows against its float64 twin: positions restart at 0 in every sequence, nomic-bert's
// neox pairs and GGUF's adjacent pairs, partial rotary, GQA, q and k inside a fused q|k|v row with v left untouched.
import { describe, expect, test } from 'vitest';
import { createRopeEncoder } from './rope-encoder.ts';
import { packedStarts, ropeEncoder } from '../reference/encoder.ts';
import { expectClose, randomF32, readF32, run, testGpu, upload } from '@intab/testing/gpu';

describe('rope-encoder', () => {
  const cases = [
    { name: 'nomic-bert: neox, theta 1000, H=4, D=32, lengths 5, 70, 1', style: 'neox', theta: 1000, heads: 4, kvHeads: 4, headDim: 32, lengths: [5, 70, 1] },
    { name: 'adjacent pairs, partial rotary 16 of 24, GQA 6/2, lengths 3, 9', style: 'normal', theta: 10000, heads: 6, kvHeads: 2, headDim: 24, rotaryDim: 16, lengths: [3, 9] },
    { name: 'positions up to 2047 (a long input), neox, D=64', style: 'neox', theta: 1000, heads: 1, kvHeads: 1, headDim: 64, lengths: [2048, 7] },
  ] as const;
  for (const c of cases) {
    test(c.name, async () => {
      const gpu = await testGpu();
      const starts = packedStarts(c.lengths);
      const T = starts[c.lengths.length];
      const [qw, kw] = [c.heads * c.headDim, c.kvHeads * c.headDim];
      const stride = qw + 2 * kw;
      const qkv = randomF32(T * stride, T + stride);
      const buf = upload(gpu, qkv);
      const rope = createRopeEncoder(gpu, { ...c });
      await run(gpu, (pass) => rope.encode(pass, { qkv: buf, seqStarts: upload(gpu, starts), sequences: c.lengths.length, tokens: T }));
      const want = ropeEncoder(qkv, stride, [{ offset: 0, heads: c.heads }, { offset: qw, heads: c.kvHeads }], c.headDim, starts, rope.invFreq, c.style);
      const got = await readF32(gpu, buf, T * stride);
      expectClose(got, want, { atol: 2e-6, rtol: 1e-5 });
      for (let t = 0; t < T; t++) {
        const v = [...got.subarray(t * stride + qw + kw, (t + 1) * stride)];
        if (v.some((x, i) => x !== qkv[t * stride + qw + kw + i])) throw new Error(`token ${t}: v changed`);
      }
      rope.destroy();
      rope.destroy(); // idempotent
      expect(() => rope.encode({} as GPUComputePassEncoder, { qkv: buf, seqStarts: buf, sequences: 1, tokens: 1 })).toThrow(/after destroy/);
    });
  }

  test('q and k at offsets of a wider row (separate projections side by side)', async () => {
    const gpu = await testGpu();
    const lengths = [4, 6];
    const starts = packedStarts(lengths);
    const T = 10;
    const [H, D, stride, qOffset, kOffset] = [2, 16, 80, 8, 44];
    const rows = randomF32(T * stride, 5);
    const buf = upload(gpu, rows);
    const rope = createRopeEncoder(gpu, { heads: H, headDim: D, theta: 1000, style: 'neox' });
    await run(gpu, (pass) => rope.encode(pass, { qkv: buf, stride, qOffset, kOffset, seqStarts: upload(gpu, starts), sequences: 2, tokens: T }));
    const want = ropeEncoder(rows, stride, [{ offset: qOffset, heads: H }, { offset: kOffset, heads: H }], D, starts, rope.invFreq, 'neox');
    expectClose(await readF32(gpu, buf, T * stride), want, { atol: 2e-6, rtol: 1e-5 });
    await expect(run(gpu, (pass) => rope.encode(pass, { qkv: buf, stride, qOffset, kOffset: 60, seqStarts: buf, sequences: 2, tokens: T }))).rejects.toMatchObject({
      name: 'ShapeError', argument: 'kOffset',
    });
    rope.destroy();
  });
});
