// Pooling + L2 normalization against the float64 twin: mean, CLS and last token over ragged packed sequences (an empty
// one among them), with and without normalization, Matryoshka truncation, C not a multiple of the workgroup.
import { describe, expect, test } from 'vitest';
import { createPool, type PoolingMode } from './pool.ts';
import { packedStarts, poolSequences } from '../reference/encoder.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

describe('pool', () => {
  const lengths = [3, 1, 0, 40, 7];
  for (const mode of ['mean', 'cls', 'last'] as PoolingMode[]) {
    for (const [cols, dims] of [[384, 384], [7, 7], [768, 100]]) {
      test(`${mode}, C=${cols}, dims ${dims}, normalized`, async () => {
        const gpu = await testGpu();
        const starts = packedStarts(lengths);
        const T = starts[lengths.length];
        const x = randomF32(T * cols, cols + T, 2);
        const out = scratch(gpu, lengths.length * dims * 4);
        const dimsArg = dims === cols ? {} : { dims };
        await run(gpu, (pass) => createPool(gpu, { mode }).encode(pass, { x: upload(gpu, x), cols, ...dimsArg, out, seqStarts: upload(gpu, starts), sequences: lengths.length, tokens: T }));
        const got = await readF32(gpu, out, lengths.length * dims);
        expectClose(got, poolSequences(x, cols, starts, mode, true, dims), { atol: 2e-6, rtol: 1e-5 });
        for (const b of [0, 1, 3, 4]) {
          const norm = Math.hypot(...got.subarray(b * dims, (b + 1) * dims));
          expect(Math.abs(norm - 1), `|v${b}|`).toBeLessThan(1e-5);
        }
        expect([...got.subarray(2 * dims, 3 * dims)].every((v) => v === 0)).toBe(true); // the empty sequence
      });
    }
  }

  test('without normalization: the pooled values themselves', async () => {
    const gpu = await testGpu();
    const ls = [5, 9];
    const starts = packedStarts(ls);
    const [T, C] = [14, 130];
    const x = randomF32(T * C, 3, 5);
    const out = scratch(gpu, 2 * C * 4);
    await run(gpu, (pass) => createPool(gpu, { mode: 'mean', normalize: false, workgroupSize: 32 }).encode(pass, { x: upload(gpu, x), cols: C, out, seqStarts: upload(gpu, starts), sequences: 2, tokens: T }));
    expectClose(await readF32(gpu, out, 2 * C), poolSequences(x, C, starts, 'mean', false), { atol: 2e-6, rtol: 1e-5 });
  });

  test('bad options and sizes are refused', async () => {
    const gpu = await testGpu();
    expect(() => createPool(gpu, { mode: 'max' as PoolingMode })).toThrow(/mode must be/);
    expect(() => createPool(gpu, { mode: 'mean', workgroupSize: 3 })).toThrow(expect.objectContaining({ argument: 'workgroupSize' }));
    const buf = scratch(gpu, 4096);
    const pool = createPool(gpu, { mode: 'cls' });
    await expect(run(gpu, (pass) => pool.encode(pass, { x: buf, cols: 8, dims: 9, out: scratch(gpu, 4096), seqStarts: buf, sequences: 1, tokens: 1 }))).rejects.toMatchObject({ argument: 'dims' });
    await expect(run(gpu, (pass) => pool.encode(pass, { x: buf, cols: 8, out: scratch(gpu, 16), seqStarts: buf, sequences: 2, tokens: 2 }))).rejects.toMatchObject({ argument: 'out' });
  });
});
