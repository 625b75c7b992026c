// LayerNorm against its float64 twin: ragged and unaligned row lengths, BERT's eps 1e-12, a residual at stride C and
// broadcast (stride 0), the sum written out, outliers and a large common offset, every workgroup size, bad inputs.
import { describe, expect, test } from 'vitest';
import { createLayerNorm } from './layernorm.ts';
import { layernorm } from '../reference/norm.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('layernorm', () => {
  for (const [rows, cols] of [[1, 64], [5, 384], [3, 1000], [2, 7]] as const) {
    test(`matches CPU (${rows}x${cols}, eps 1e-12)`, async () => {
      const gpu = await testGpu();
      const x = randomF32(rows * cols, 1 + cols, 3);
      const [g, b] = [randomF32(cols, 2 + cols), randomF32(cols, 3 + cols)];
      const out = scratch(gpu, x.byteLength);
      await run(gpu, (pass) =>
        createLayerNorm(gpu).encode(pass, { x: upload(gpu, x), gamma: upload(gpu, g), beta: upload(gpu, b), out, rows, cols, eps: 1e-12 }),
      );
      expectClose(await readF32(gpu, out, rows * cols), layernorm(x, g, b, rows, cols, 1e-12), { atol: 2e-5, rtol: 1e-4 });
    });
  }

  test('residual at stride C, with the sum written out (x + r is the next residual)', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [7, 193];
    const x = randomF32(rows * cols, 31, 2);
    const r = randomF32(rows * cols, 32, 2);
    const [g, b] = [randomF32(cols, 33), randomF32(cols, 34)];
    const [out, sum] = [scratch(gpu, x.byteLength), scratch(gpu, x.byteLength)];
    await run(gpu, (pass) =>
      createLayerNorm(gpu, { residual: true, sumOut: true }).encode(pass, {
        x: upload(gpu, x), residual: upload(gpu, r), gamma: upload(gpu, g), beta: upload(gpu, b), out, sum, rows, cols, eps: 1e-5,
      }),
    );
    expectClose(await readF32(gpu, out, rows * cols), layernorm(x, g, b, rows, cols, 1e-5, r), { atol: 2e-5, rtol: 1e-4 });
    expectClose(await readF32(gpu, sum, rows * cols), x.map((v, i) => v + r[i]), { atol: 0, rtol: 0, label: 'sum' });
  });

  test('a broadcast residual row (stride 0: BERT\'s token-type row 0 added to every token)', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [9, 384];
    const x = randomF32(rows * cols, 41);
    const typeRows = randomF32(2 * cols, 42); // token_types (2, C): row 0 is added
    const [g, b] = [randomF32(cols, 43), randomF32(cols, 44)];
    const out = scratch(gpu, x.byteLength);
    await run(gpu, (pass) =>
      createLayerNorm(gpu, { residual: true }).encode(pass, {
        x: upload(gpu, x), residual: upload(gpu, typeRows), residualStride: 0, gamma: upload(gpu, g), beta: upload(gpu, b), out, rows, cols, eps: 1e-12,
      }),
    );
    expectClose(await readF32(gpu, out, rows * cols), layernorm(x, g, b, rows, cols, 1e-12, typeRows, 0), { atol: 2e-5, rtol: 1e-4 });
  });

  test('large outliers and a common offset (the variance is taken about the mean, not as E[x²] - E[x]²)', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [4, 300];
    const x = randomF32(rows * cols, 7);
    x[5] = 1e4;
    x[cols + 3] = -3e4;
    for (let c = 0; c < cols; c++) x[2 * cols + c] += 100; // row 2: offset 100, unit spread
    const [g, b] = [randomF32(cols, 9), randomF32(cols, 10)];
    const out = scratch(gpu, x.byteLength);
    await run(gpu, (pass) => createLayerNorm(gpu).encode(pass, { x: upload(gpu, x), gamma: upload(gpu, g), beta: upload(gpu, b), out, rows, cols, eps: 1e-12 }));
    expectClose(await readF32(gpu, out, rows * cols), layernorm(x, g, b, rows, cols, 1e-12), { atol: 1e-4, rtol: 1e-4 });
  });

  test('every workgroup size from 2 to 256', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 577];
    const x = randomF32(rows * cols, 11, 3);
    const [g, b] = [randomF32(cols, 12), randomF32(cols, 13)];
    const want = layernorm(x, g, b, rows, cols, 1e-12);
    for (const workgroupSize of [2, 32, 128, 256]) {
      const out = scratch(gpu, x.byteLength);
      await run(gpu, (pass) =>
        createLayerNorm(gpu, { workgroupSize }).encode(pass, { x: upload(gpu, x), gamma: upload(gpu, g), beta: upload(gpu, b), out, rows, cols, eps: 1e-12 }),
      );
      expectClose(await readF32(gpu, out, rows * cols), want, { atol: 2e-5, rtol: 1e-4, label: `workgroup ${workgroupSize}` });
    }
  });

  test('bad sizes and missing operands are refused before anything is recorded', async () => {
    const gpu = await testGpu();
    const small = scratch(gpu, 16);
    const big = scratch(gpu, 4096);
    expect(() => createLayerNorm(gpu, { workgroupSize: 48 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'workgroupSize' }));
    await expect(
      run(gpu, (pass) => createLayerNorm(gpu).encode(pass, { x: small, gamma: big, beta: big, out: big, rows: 2, cols: 64, eps: 1e-12 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'x' });
    await expect(
      run(gpu, (pass) => createLayerNorm(gpu, { residual: true }).encode(pass, { x: big, residual: small, gamma: big, beta: big, out: scratch(gpu, 4096), rows: 2, cols: 64, eps: 1e-12 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'residual' });
    await expect(
      run(gpu, (pass) => createLayerNorm(gpu, { sumOut: true }).encode(pass, { x: big, gamma: big, beta: big, out: scratch(gpu, 4096), rows: 2, cols: 64, eps: 1e-12 })),
    ).rejects.toThrow(/'sum' is required/);
  });
});
