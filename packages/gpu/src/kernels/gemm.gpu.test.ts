// GEMM against the float64 CPU twin and against GEMV, for every weight format and both variants
// (tiled, rows), ragged T, N and K, T = 1 and T = 512, weights split into parts, bias + accumulate,
// outliers and bad inputs.

import { describe, expect, test } from 'vitest';
import { createGemm, type GemmOptions, type GemmVariant } from './gemm.ts';
import { createGemv } from './gemv.ts';
import { createWeight } from '../weights.ts';
import { matmul } from '../reference/matmul.ts';
import { BLOCK, WEIGHT_DTYPES, type WeightDtype } from '../formats/blocks.ts';
import { quantize } from '../formats/codecs.ts';
import { randomWeights } from '../reference/random.ts';
import { expectClose, mulberry32, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

// Tolerance: f32 accumulation in a different order than the float64 reference.
const tol = (k: number) => ({ atol: 2e-5 * Math.sqrt(k), rtol: 2e-4 });

/** K for a test: a few chunks, not a multiple of the default K tile (128) where the format allows. */
const kFor = (dtype: WeightDtype) => (BLOCK[dtype].elems === 256 ? 512 : dtype.startsWith('q') ? 96 : 172);

const VARIANTS: readonly GemmVariant[] = ['tiled', 'rows'];

describe('gemm', () => {
  // q, k and v (or gate and up) written side by side into one wider y by separate GEMMs (yColumn, yStride), with
  // a bias indexed by y's column: the same as one GEMM over the concatenated weight, extra columns untouched.
  for (const variant of VARIANTS) {
    test(`${variant}: column ranges of a wider y, with a bias indexed by column`, async () => {
      const gpu = await testGpu();
      const [k, t] = [96, 11];
      const rows = [40, 13, 13];
      const n = rows.reduce((a, b) => a + b);
      const stride = n + 2;
      const bytes = randomWeights('q8_0', n, k, mulberry32(3));
      const x = randomF32(t * k, 4);
      const bias = randomF32(n, 5);
      const gemm = createGemm(gpu, { dtype: 'q8_0', variant, bias: true });
      const y = upload(gpu, new Float32Array(t * stride).fill(-3));
      const [xb, bb] = [upload(gpu, x), upload(gpu, bias)];
      const rowBytes = bytes.length / n;
      await run(gpu, (pass) => {
        let at = 0;
        for (const r of rows) {
          const weight = createWeight(gpu, { dtype: 'q8_0', n: r, k, data: bytes.subarray(at * rowBytes, (at + r) * rowBytes), label: `w${at}` });
          gemm.encode(pass, { weight, x: xb, y, bias: bb, tokens: t, yStride: stride, yColumn: at });
          at += r;
        }
      });
      const want = matmul('q8_0', bytes, n, k, x, t, bias);
      const got = await readF32(gpu, y, t * stride);
      for (let i = 0; i < t; i++) {
        expectClose(got.subarray(i * stride, i * stride + n), want.subarray(i * n, (i + 1) * n), { ...tol(k), label: `token ${i}` });
        expect([...got.subarray(i * stride + n, (i + 1) * stride)]).toEqual([-3, -3]);
      }
      await expect(run(gpu, (pass) => gemm.encode(pass, { weight: createWeight(gpu, { dtype: 'q8_0', n: 4, k, label: 'w' }), x: xb, y, bias: bb, tokens: t, yStride: 3 }))).rejects.toMatchObject({
        name: 'ShapeError',
      });
    });
  }

  for (const variant of VARIANTS) for (const dtype of WEIGHT_DTYPES) {
    const k0 = kFor(dtype);
    // [N, K, T]: N not a multiple of the 128-row tile or the 8-row invocation, T not a multiple of 8,
    // T = 1; f32/f16/bf16 K not a multiple of 32 (the rows variant's step).
    for (const [n, k, t] of [[37, k0, 13], [130, k0 * 2, 1]] as const) {
      test(`${variant}: ${dtype} (T ${t}, N ${n}, K ${k}) matches CPU and GEMV`, async () => {
        const gpu = await testGpu();
        const bytes = randomWeights(dtype, n, k, mulberry32(n * 31 + k + t));
        const x = randomF32(t * k, k + t);
        const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'w' });
        const xb = upload(gpu, x);
        const y = scratch(gpu, t * n * 4);
        const yv = scratch(gpu, t * n * 4);
        await run(gpu, (pass) => {
          createGemm(gpu, { dtype, variant }).encode(pass, { weight, x: xb, y, tokens: t });
          createGemv(gpu, { dtype }).encode(pass, { weight, x: xb, y: yv, batch: t });
        });
        const got = await readF32(gpu, y, t * n);
        expectClose(got, matmul(dtype, bytes, n, k, x, t), { ...tol(k), label: `${dtype} vs CPU` });
        expectClose(got, await readF32(gpu, yv, t * n), { ...tol(k), label: `${dtype} vs GEMV` });
        weight.destroy();
      });
    }
  }

  for (const variant of VARIANTS) test(`${variant}: T = 512 (prefill) with a ragged N`, async () => {
    const gpu = await testGpu();
    const [n, k, t] = [45, 160, 512];
    const bytes = randomWeights('q4_0', n, k, mulberry32(11));
    const x = randomF32(t * k, 12);
    const weight = createWeight(gpu, { dtype: 'q4_0', n, k, data: bytes, label: 'w' });
    const y = scratch(gpu, t * n * 4);
    await run(gpu, (pass) => createGemm(gpu, { dtype: 'q4_0', variant }).encode(pass, { weight, x: upload(gpu, x), y, tokens: t }));
    expectClose(await readF32(gpu, y, t * n), matmul('q4_0', bytes, n, k, x, t), tol(k));
  });

  // Split weights, bias and accumulate, under the default tile and under odd tile shapes that make
  // every edge ragged (rows past a part, tokens past T, a K step past K).
  const tiles: [string, Partial<GemmOptions>][] = [
    ['tiled, default tiles', { variant: 'tiled' }],
    ['tiled, odd tiles', { variant: 'tiled', workgroupSize: 24, rowsPerInvocation: 3, tokensPerWorkgroup: 5, kTile: 64 }],
    ['tiled, one row, sixteen tokens', { variant: 'tiled', workgroupSize: 32, rowsPerInvocation: 1, tokensPerWorkgroup: 16, kTile: 32 }],
    ['rows', { variant: 'rows' }],
    ['rows, 3 invocations per workgroup', { variant: 'rows', workgroupSize: 3 }],
  ];
  for (const dtype of ['q8_0', 'q6_K'] as const) {
    for (const [what, opts] of tiles) {
      test(`${dtype}: bias, accumulate and a weight split into parts (${what})`, async () => {
        const gpu = await testGpu();
        const [n, t] = [301, 11];
        const k = dtype === 'q6_K' ? 768 : 224;
        const bytes = randomWeights(dtype, n, k, mulberry32(5));
        const x = randomF32(t * k, 6);
        const bias = randomF32(n, 7);
        const y0 = randomF32(t * n, 8);
        const rb = (k / BLOCK[dtype].elems) * BLOCK[dtype].bytes;
        // 64 rows per part → 5 parts, the last one ragged.
        const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'w', maxPartBytes: 64 * rb + 4 });
        expect(weight.parts.length).toBe(5);
        const y = upload(gpu, y0);
        await run(gpu, (pass) =>
          createGemm(gpu, { dtype, bias: true, accumulate: true, ...opts }).encode(pass, {
            weight, x: upload(gpu, x), y, bias: upload(gpu, bias), tokens: t,
          }),
        );
        expectClose(await readF32(gpu, y, t * n), matmul(dtype, bytes, n, k, x, t, bias, y0), tol(k));
        weight.destroy();
      });
    }
  }

  for (const variant of VARIANTS) test(`${variant}: large outliers in x and weights stay accurate`, async () => {
    const gpu = await testGpu();
    const [n, k, t] = [20, 1024, 6];
    const xs = randomF32(t * k, 3);
    xs[17] = 3e4;
    xs[k + 900] = -2e4;
    xs[5 * k + 1] = 1e5;
    const w = randomF32(n * k, 4, 0.02);
    w[5] = 40;
    w[3 * k + 1] = -60000;
    const bytes = quantize('f16', w, n, k);
    const weight = createWeight(gpu, { dtype: 'f16', n, k, data: bytes, label: 'w' });
    const y = scratch(gpu, t * n * 4);
    await run(gpu, (pass) => createGemm(gpu, { dtype: 'f16', variant }).encode(pass, { weight, x: upload(gpu, xs), y, tokens: t }));
    expectClose(await readF32(gpu, y, t * n), matmul('f16', bytes, n, k, xs, t), { atol: 2e-2, rtol: 1e-4 });
  });

  test('typed errors for a wrong dtype, short buffers, bad token counts and bad tiles', async () => {
    const gpu = await testGpu();
    expect(() => createGemm(gpu, { dtype: 'q5_1' })).toThrow(/q5_1.*not supported/);
    const variant = 'tiled';
    expect(() => createGemm(gpu, { dtype: 'q8_0', variant, kTile: 48 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'kTile' }));
    expect(() => createGemm(gpu, { dtype: 'f32', variant, tokensPerWorkgroup: 17 })).toThrow(expect.objectContaining({ name: 'ShapeError' }));
    expect(() => createGemm(gpu, { dtype: 'f32', variant, rowsPerInvocation: 0 })).toThrow(expect.objectContaining({ name: 'ShapeError' }));
    expect(() => createGemm(gpu, { dtype: 'f32', variant: 'rows', rowsPerInvocation: 4 })).toThrow(/fixed 8 × 8 tile/);
    expect(() => createGemm(gpu, { dtype: 'f32', variant: 'square' as GemmVariant })).toThrow(/'tiled' or 'rows'/);
    // The default follows the adapter: barrier-free on software adapters.
    expect(createGemm(gpu, { dtype: 'f32' }).variant).toBe(gpu.adapterInfo.isFallbackAdapter ? 'rows' : 'tiled');
    const weight = createWeight(gpu, { dtype: 'f32', n: 4, k: 8, label: 'w' });
    const gemm = createGemm(gpu, { dtype: 'f32', variant: 'rows' });
    // x holds one token of 8, but 3 tokens are claimed.
    await expect(
      run(gpu, (pass) => gemm.encode(pass, { weight, x: scratch(gpu, 32), y: scratch(gpu, 48), tokens: 3 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'x' });
    await expect(
      run(gpu, (pass) => gemm.encode(pass, { weight, x: scratch(gpu, 96), y: scratch(gpu, 16), tokens: 3 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'y' });
    await expect(
      run(gpu, (pass) => gemm.encode(pass, { weight, x: scratch(gpu, 96), y: scratch(gpu, 48), tokens: 0 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'tokens' });
    await expect(
      run(gpu, (pass) => createGemm(gpu, { dtype: 'q8_0' }).encode(pass, { weight, x: scratch(gpu, 96), y: scratch(gpu, 48), tokens: 3 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'weight' });
    weight.destroy();
  });
});
