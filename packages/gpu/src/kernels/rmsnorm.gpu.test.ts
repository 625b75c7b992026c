// RMSNorm against its float64 twin: ragged and unaligned row lengths, outliers, short buffers.
import { describe, expect, test } from 'vitest';
import { createRmsNorm } from './rmsnorm.ts';
import { rmsnorm } from '../reference/norm.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('rmsnorm', () => {
  for (const [rows, cols] of [[1, 64], [5, 576], [3, 1000], [2, 7]] as const) {
    test(`matches CPU (${rows}x${cols})`, async () => {
      const gpu = await testGpu();
      const x = randomF32(rows * cols, 1 + cols, 3);
      const w = randomF32(cols, 2 + cols);
      const out = scratch(gpu, x.byteLength);
      await run(gpu, (pass) =>
        createRmsNorm(gpu).encode(pass, { x: upload(gpu, x), weight: upload(gpu, w), out, rows, cols, eps: 1e-5 }),
      );
      expectClose(await readF32(gpu, out, rows * cols), rmsnorm(x, w, rows, cols, 1e-5), { atol: 1e-5, rtol: 1e-4 });
    });
  }

  test('accumulate: out += the normed rows (Gemma\'s post-norms onto the stream)', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 640];
    const x = randomF32(rows * cols, 21, 3);
    const w = randomF32(cols, 22);
    const h = randomF32(rows * cols, 23);
    const out = upload(gpu, h);
    await run(gpu, (pass) => createRmsNorm(gpu, { accumulate: true }).encode(pass, { x: upload(gpu, x), weight: upload(gpu, w), out, rows, cols, eps: 1e-6 }));
    const normed = rmsnorm(x, w, rows, cols, 1e-6);
    expectClose(await readF32(gpu, out, rows * cols), h.map((v, i) => v + normed[i]), { atol: 1e-5, rtol: 1e-4 });
  });

  test('large outliers', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [4, 300];
    const x = randomF32(rows * cols, 7);
    x[5] = 1e4;
    x[cols + 3] = -3e4;
    const w = randomF32(cols, 9);
    const out = scratch(gpu, x.byteLength);
    await run(gpu, (pass) => createRmsNorm(gpu).encode(pass, { x: upload(gpu, x), weight: upload(gpu, w), out, rows, cols, eps: 1e-6 }));
    expectClose(await readF32(gpu, out, rows * cols), rmsnorm(x, w, rows, cols, 1e-6), { atol: 1e-5, rtol: 1e-4 });
  });

  test('every workgroup size from 2 (lib/reduce.wgsl\'s last level alone) to 256', async () => {
    const gpu = await testGpu();
    const [rows, cols] = [3, 577];
    const x = randomF32(rows * cols, 11, 3);
    const w = randomF32(cols, 12);
    const want = rmsnorm(x, w, rows, cols, 1e-5);
    for (const workgroupSize of [2, 32, 128, 256]) {
      const out = scratch(gpu, x.byteLength);
      await run(gpu, (pass) =>
        createRmsNorm(gpu, { workgroupSize }).encode(pass, { x: upload(gpu, x), weight: upload(gpu, w), out, rows, cols, eps: 1e-5 }),
      );
      expectClose(await readF32(gpu, out, rows * cols), want, { atol: 1e-5, rtol: 1e-4, label: `workgroup ${workgroupSize}` });
    }
  });

  test('a workgroup size that is not a power of two ≥ 2 is a ShapeError', async () => {
    const gpu = await testGpu();
    for (const workgroupSize of [1, 48, 0, 2 * gpu.limits.maxComputeInvocationsPerWorkgroup]) {
      expect(() => createRmsNorm(gpu, { workgroupSize }), String(workgroupSize)).toThrow(
        expect.objectContaining({ name: 'ShapeError', argument: 'workgroupSize', actual: String(workgroupSize) }),
      );
    }
  });

  test('rejects short buffers with a ShapeError', async () => {
    const gpu = await testGpu();
    const small = scratch(gpu, 16);
    await expect(
      run(gpu, (pass) => createRmsNorm(gpu).encode(pass, { x: small, weight: small, out: small, rows: 2, cols: 64, eps: 1e-5 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'x' });
  });
});
