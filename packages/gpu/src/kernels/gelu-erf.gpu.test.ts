// GELU with erf against its float64 twin: the standalone kernel over a dense grid of x and outliers, a strided input,
// and the GEMM epilogue (activation 'gelu-erf', after the bias) in both GEMM variants.
import { describe, expect, test } from 'vitest';
import { createGeluErf } from './gelu-erf.ts';
import { createGemm } from './gemm.ts';
import { createWeight } from '../weights.ts';
import { geluErf } from '../reference/elementwise.ts';
import { matmul } from '../reference/matmul.ts';
import { randomWeights } from '../reference/random.ts';
import { expectClose, mulberry32, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('gelu-erf', () => {
  test('within 1e-6 of the float64 twin on [-14, 14] and at outliers', async () => {
    const gpu = await testGpu();
    const grid = Array.from({ length: 28001 }, (_, i) => (i - 14000) / 1000);
    const x = new Float32Array([...grid, 0, -0, 1e-30, -1e-30, 60, -60, 1e5, -1e5, 3e38, -3e38]);
    const [rows, cols] = [1, x.length];
    const out = scratch(gpu, x.byteLength);
    await run(gpu, (pass) => createGeluErf(gpu).encode(pass, { x: upload(gpu, x), out, rows, cols }));
    const got = await readF32(gpu, out, x.length);
    expect(got.every(Number.isFinite)).toBe(true);
    expectClose(got, Array.from(x, geluErf), { atol: 1e-6, rtol: 1e-6 });
  });

  test('reads rows at a stride (a column range of a wider output), ragged size', async () => {
    const gpu = await testGpu();
    const [rows, cols, stride] = [5, 301, 320];
    const x = randomF32(rows * stride, 3, 3);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) => createGeluErf(gpu).encode(pass, { x: upload(gpu, x), out, rows, cols, stride }));
    const want = new Float64Array(rows * cols);
    for (let t = 0; t < rows; t++) for (let i = 0; i < cols; i++) want[t * cols + i] = geluErf(x[t * stride + i]);
    expectClose(await readF32(gpu, out, rows * cols), want, { atol: 1e-6, rtol: 1e-6 });
  });

  for (const variant of ['rows', 'tiled'] as const) {
    for (const dtype of ['f32', 'q8_0'] as const) {
      test(`fused into the GEMM epilogue after the bias (${variant}, ${dtype}, T=13, N=75)`, async () => {
        const gpu = await testGpu();
        const [n, k, t] = [75, 96, 13];
        const bytes = randomWeights(dtype, n, k, mulberry32(7), 0.3);
        const x = randomF32(t * k, 8);
        const bias = randomF32(n, 9);
        const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'ffn_up' });
        const y = scratch(gpu, t * n * 4);
        const gemm = createGemm(gpu, { dtype, variant, bias: true, activation: 'gelu-erf' });
        await run(gpu, (pass) => gemm.encode(pass, { weight, x: upload(gpu, x), y, bias: upload(gpu, bias), tokens: t }));
        const want = matmul(dtype, bytes, n, k, x, t, bias).map(geluErf);
        expectClose(await readF32(gpu, y, t * n), want, { atol: 2e-5 * Math.sqrt(k), rtol: 2e-4 });
      });
    }
  }

  test('an activation with accumulate, or an unknown one, is refused', async () => {
    const gpu = await testGpu();
    expect(() => createGemm(gpu, { dtype: 'f32', activation: 'gelu-erf', accumulate: true })).toThrow(/not with accumulate/);
    expect(() => createGemm(gpu, { dtype: 'f32', activation: 'relu' as never })).toThrow(/activation must be/);
  });
});
