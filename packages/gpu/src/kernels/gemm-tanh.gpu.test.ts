// The GEMM's tanh epilogue (activation 'tanh': a reranker head's dense layer, tanh(W·x + b)) against its float64 twin
// (Math.tanh of the reference matmul) in both GEMM variants, with inputs large enough that many outputs saturate: the
// kernel clamps to ±15 before tanh, where f32 tanh is ±1 already, so nothing overflows into NaN.
import { describe, expect, test } from 'vitest';
import { createGemm } from './gemm.ts';
import { createWeight } from '../weights.ts';
import { matmul } from '../reference/matmul.ts';
import { randomWeights } from '../reference/random.ts';
import { expectClose, mulberry32, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('gemm tanh epilogue', () => {
  for (const variant of ['rows', 'tiled'] as const) {
    for (const dtype of ['f32', 'q8_0'] as const) {
      test(`tanh after the bias (${variant}, ${dtype}, T=5, N=96), saturating outputs finite`, async () => {
        const gpu = await testGpu();
        const [n, k, t] = [96, 64, 5];
        const bytes = randomWeights(dtype, n, k, mulberry32(11), 0.3);
        const x = randomF32(t * k, 12, 40); // W·x spans far past ±15
        const bias = randomF32(n, 13);
        const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'cls' });
        const y = scratch(gpu, t * n * 4);
        const gemm = createGemm(gpu, { dtype, variant, bias: true, activation: 'tanh' });
        await run(gpu, (pass) => gemm.encode(pass, { weight, x: upload(gpu, x), y, bias: upload(gpu, bias), tokens: t }));
        const pre = matmul(dtype, bytes, n, k, x, t, bias);
        const got = await readF32(gpu, y, t * n);
        expect(got.every(Number.isFinite)).toBe(true);
        expect(pre.filter((v) => Math.abs(v) > 15).length).toBeGreaterThan(10);
        expectClose(got, pre.map(Math.tanh), { atol: 1e-5, rtol: 1e-4 });
      });
    }
  }

  test('not with accumulate', async () => {
    const gpu = await testGpu();
    expect(() => createGemm(gpu, { dtype: 'f32', activation: 'tanh', accumulate: true })).toThrow(/not with accumulate/);
  });
});
