// swiglu, gelu-tanh (GEGLU) and the sigmoid gate against their float64 twins, with ragged sizes, strided (fused gate_up) inputs and
// outliers that overflow naive exp/tanh.
import { describe, expect, test } from 'vitest';
import { createSwiglu } from './swiglu.ts';
import { createGeluTanh } from './gelu-tanh.ts';
import { createSigmoidGate } from './sigmoid-gate.ts';
import { gated, geluTanh, sigmoid, silu } from '../reference/elementwise.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('elementwise', () => {
  test('swiglu on separate gate/up buffers with outliers', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 173];
    const g = randomF32(rows * cols, 3, 4);
    g[0] = -500;
    g[1] = 500;
    g[2] = -88.5;
    const u = randomF32(rows * cols, 4);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) => createSwiglu(gpu).encode(pass, { x: upload(gpu, g), up: upload(gpu, u), out, rows, cols }));
    const got = await readF32(gpu, out, rows * cols);
    expect(got.every(Number.isFinite)).toBe(true);
    expectClose(got, gated(silu, g, u, rows, cols), { atol: 1e-6, rtol: 1e-5 });
  });

  test('swiglu reads a fused gate_up (T, 2F) in place', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [5, 64];
    const gu = randomF32(rows * 2 * cols, 5, 3);
    const buf = upload(gpu, gu);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) =>
      createSwiglu(gpu).encode(pass, { x: buf, up: buf, out, rows, cols, stride: 2 * cols, upStride: 2 * cols, upOffset: cols }),
    );
    expectClose(await readF32(gpu, out, rows * cols), gated(silu, gu, gu, rows, cols, 2 * cols, 2 * cols, cols), { atol: 1e-6, rtol: 1e-5 });
  });

  test('gelu-tanh gated (GEGLU) with outliers', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [2, 301];
    const x = randomF32(rows * cols, 6, 3);
    x[3] = 60; // naive tanh overflows here
    x[4] = -60;
    x[5] = 1e5;
    const u = randomF32(rows * cols, 7);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) => createGeluTanh(gpu).encode(pass, { x: upload(gpu, x), up: upload(gpu, u), out, rows, cols }));
    const got = await readF32(gpu, out, rows * cols);
    expect(got.every(Number.isFinite)).toBe(true);
    expectClose(got, gated(geluTanh, x, u, rows, cols), { atol: 1e-6, rtol: 1e-5 });
  });

  test('gelu-tanh reads a fused gate_up (T, 2F) in place', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 96];
    const gu = randomF32(rows * 2 * cols, 8, 3);
    const buf = upload(gpu, gu);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) =>
      createGeluTanh(gpu).encode(pass, { x: buf, up: buf, out, rows, cols, stride: 2 * cols, upStride: 2 * cols, upOffset: cols }),
    );
    expectClose(await readF32(gpu, out, rows * cols), gated(geluTanh, gu, gu, rows, cols, 2 * cols, 2 * cols, cols), { atol: 1e-6, rtol: 1e-5 });
  });

  test('sigmoid gate with saturating gates, reading a strided up', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 130];
    const x = randomF32(rows * cols, 9, 4);
    x[0] = 1e5; // 1
    x[1] = -1e5; // about 1e-35, not NaN
    const u = randomF32(rows * 2 * cols, 10, 2);
    const out = scratch(gpu, rows * cols * 4);
    await run(gpu, (pass) => createSigmoidGate(gpu).encode(pass, { x: upload(gpu, x), up: upload(gpu, u), out, rows, cols, upStride: 2 * cols, upOffset: cols }));
    const got = await readF32(gpu, out, rows * cols);
    expect(got[0]).toBe(u[cols]);
    expect(Math.abs(got[1])).toBeLessThan(1e-30);
    expectClose(got, gated(sigmoid, x, u, rows, cols, cols, 2 * cols, cols), { atol: 1e-6, rtol: 1e-5 });
  });

  test('shape errors name the argument', async () => {
    const gpu = await testGpu();
    const small = scratch(gpu, 16);
    await expect(run(gpu, (pass) => createSwiglu(gpu).encode(pass, { x: small, up: small, out: small, rows: 2, cols: 8 }))).rejects.toMatchObject({
      name: 'ShapeError',
      argument: 'x',
    });
    await expect(run(gpu, (pass) => createGeluTanh(gpu).encode(pass, { x: small, up: small, out: small, rows: 0, cols: 8 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'rows' });
  });
});
