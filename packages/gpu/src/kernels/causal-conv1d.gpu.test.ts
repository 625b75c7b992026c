// The causal conv1d against its CPU twin (reference/gated-delta.ts causalConv1d): several sequences of different
// lengths in one dispatch, each continuing from its own state slot; a sequence shorter than K−1 (the state shifts
// by less than its length); two steps in a row equal one step over the concatenation; slots and rows not in the
// step untouched; outliers that saturate the SiLU.
// Tolerance: 4 f32 products against a float64 sum; measured max abs error 9.5e-7 (|y| ≲ 10) and 3.1e-5 with
// |y| up to 493; the state holds raw inputs, so it must match bit for bit.

import { describe, expect, test } from 'vitest';
import { createCausalConv1d } from './causal-conv1d.ts';
import { causalConv1d } from '../reference/gated-delta.ts';
import { expectClose, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

/** (T) rows of a step whose row b holds lengths[b] tokens, in order. */
const rowsOf = (lengths: number[]) => new Uint32Array(lengths.flatMap((n, b) => Array<number>(n).fill(b)));

/** The CPU twin over one step: each row's tokens from its slot of `state` (updated in place); (T, C) outputs. */
function twinStep(x: Float32Array, state: Float32Array, weight: Float32Array, lengths: number[], slotIds: number[], C: number, K: number): Float32Array {
  const y = new Float32Array(x.length);
  const slot = (K - 1) * C;
  let t = 0;
  lengths.forEach((n, b) => {
    if (n === 0) return;
    const s = state.subarray(slotIds[b] * slot, (slotIds[b] + 1) * slot);
    y.set(causalConv1d(x.slice(t * C, (t + n) * C), s, weight, n, C, K), t * C);
    t += n;
  });
  return y;
}

describe('causal-conv1d', () => {
  test('3 sequences of 5, 1 and 2 tokens (< K−1) on shuffled slots, then a second step; slots not in the step untouched', async () => {
    const gpu = await testGpu();
    const [C, K, slots] = [24, 4, 5];
    const conv = createCausalConv1d(gpu, { channels: C, kernelSize: K });
    const weight = randomF32(C * K, 1, 0.5);
    const state0 = randomF32(slots * (K - 1) * C, 2);
    const slotIds = [3, 0, 4];
    const steps = [[5, 1, 2], [2, 3, 1]];
    const state = upload(gpu, state0);
    const w = upload(gpu, weight);
    const twin = state0.slice();
    let seed = 10;
    for (const lengths of steps) {
      const T = lengths.reduce((a, n) => a + n, 0);
      const x = randomF32(T * C, seed++, 2);
      const out = scratch(gpu, T * C * 4);
      await run(gpu, (pass) => conv.encode(pass, {
        x: upload(gpu, x), weight: w, state, out, seqIds: upload(gpu, rowsOf(lengths)), slotIds: upload(gpu, new Uint32Array(slotIds)), tokens: T, sequences: 3,
      }));
      const want = twinStep(x, twin, weight, lengths, slotIds, C, K);
      expectClose(await readF32(gpu, out, T * C), want, { atol: 2e-6, rtol: 2e-6, label: `y, lengths ${lengths}` });
      // The state holds raw inputs: copied, never computed, so bit for bit.
      expectClose(await readF32(gpu, state, state0.length), twin, { atol: 0, rtol: 0, label: `state, lengths ${lengths}` });
    }
    const got = await readF32(gpu, state, state0.length);
    for (const untouched of [1, 2]) {
      const at = untouched * (K - 1) * C;
      expect([...got.subarray(at, at + (K - 1) * C)]).toEqual([...state0.subarray(at, at + (K - 1) * C)]);
    }
  });

  test('two steps equal one step over the concatenation; a row with no token and a row with an out-of-range slot touch nothing', async () => {
    const gpu = await testGpu();
    const [C, K] = [8, 4];
    const conv = createCausalConv1d(gpu, { channels: C, kernelSize: K, workgroupSize: 4 });
    const weight = upload(gpu, randomF32(C * K, 3, 0.5));
    const state0 = randomF32(3 * (K - 1) * C, 4);
    // Row 0: 7 tokens split 2 + 5; row 1: 1 token then 2.
    const a = [randomF32(7 * C, 5), randomF32(3 * C, 6)];
    const x1 = new Float32Array([...a[0].subarray(0, 2 * C), ...a[1].subarray(0, C)]);
    const x2 = new Float32Array([...a[0].subarray(2 * C), ...a[1].subarray(C)]);
    const split = upload(gpu, state0);
    const y1 = scratch(gpu, x1.length * 4);
    const y2 = scratch(gpu, x2.length * 4);
    // Rows 2 (no token) and 3 (slot 7 of 3) ride along in both steps.
    const slotIds = upload(gpu, new Uint32Array([2, 0, 1, 7]));
    await run(gpu, (pass) => {
      conv.encode(pass, { x: upload(gpu, x1), weight, state: split, out: y1, seqIds: upload(gpu, rowsOf([2, 1])), slotIds, tokens: 3, sequences: 4 });
      conv.encode(pass, { x: upload(gpu, x2), weight, state: split, out: y2, seqIds: upload(gpu, rowsOf([5, 2, 0, 0])), slotIds, tokens: 7, sequences: 4 });
    });
    const whole = upload(gpu, state0);
    const y = scratch(gpu, 10 * C * 4);
    await run(gpu, (pass) =>
      conv.encode(pass, {
        x: upload(gpu, new Float32Array([...a[0], ...a[1]])), weight, state: whole, out: y, seqIds: upload(gpu, rowsOf([7, 3])), slotIds, tokens: 10, sequences: 4,
      }),
    );
    const [g1, g2, g] = [await readF32(gpu, y1, 3 * C), await readF32(gpu, y2, 7 * C), await readF32(gpu, y, 10 * C)];
    const rowOf = (v: Float32Array, from: number, n: number) => [...v.subarray(from * C, (from + n) * C)];
    expect([...rowOf(g1, 0, 2), ...rowOf(g2, 0, 5)]).toEqual(rowOf(g, 0, 7));
    expect([...rowOf(g1, 2, 1), ...rowOf(g2, 5, 2)]).toEqual(rowOf(g, 7, 3));
    const [sSplit, sWhole] = [await readF32(gpu, split, state0.length), await readF32(gpu, whole, state0.length)];
    expect([...sSplit]).toEqual([...sWhole]);
    const rest = (K - 1) * C;
    expect([...sSplit.subarray(rest, 2 * rest)]).toEqual([...state0.subarray(rest, 2 * rest)]); // slot 1: row 2, no token
  });

  test('outliers: |x| up to 300 saturate the SiLU to x or 0 without NaN; Qwen3.5-0.8B channel count (6144)', async () => {
    const gpu = await testGpu();
    const [C, K, T] = [6144, 4, 3];
    const conv = createCausalConv1d(gpu, { channels: C });
    const weight = randomF32(C * K, 7, 0.5);
    const x = randomF32(T * C, 8, 100);
    const state0 = new Float32Array((K - 1) * C); // a fresh sequence
    const state = upload(gpu, state0);
    const out = scratch(gpu, T * C * 4);
    await run(gpu, (pass) => conv.encode(pass, {
      x: upload(gpu, x), weight: upload(gpu, weight), state, out, seqIds: upload(gpu, rowsOf([T])),
      slotIds: upload(gpu, new Uint32Array([0])), tokens: T, sequences: 1,
    }));
    const want = causalConv1d(x, state0, weight, T, C, K);
    expectClose(await readF32(gpu, out, T * C), want, { atol: 2e-5, rtol: 2e-6, label: 'y' });
    expectClose(await readF32(gpu, state, state0.length), state0, { atol: 0, rtol: 0, label: 'state' });
  });

  test('typed errors: channels not a multiple of 4, taps out of range, short buffers', async () => {
    const gpu = await testGpu();
    expect(() => createCausalConv1d(gpu, { channels: 6 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'channels' }));
    expect(() => createCausalConv1d(gpu, { channels: 8, kernelSize: 9 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'kernelSize' }));
    const conv = createCausalConv1d(gpu, { channels: 8 });
    const buf = scratch(gpu, 1024);
    const args = { x: buf, weight: buf, state: buf, out: buf, seqIds: buf, slotIds: buf, tokens: 4, sequences: 2 };
    await expect(run(gpu, (pass) => conv.encode(pass, { ...args, x: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'x' });
    await expect(run(gpu, (pass) => conv.encode(pass, { ...args, state: scratch(gpu, 16) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'state' });
  });
});
