// The gated delta rule against its CPU twin (reference/gated-delta.ts: l2NormRows then gatedDeltaSequence per
// sequence, float64 sums): decode (one token per sequence) and prefill of sequences of different lengths in one
// dispatch on shuffled state slots, Hk < Hv in both head orders, the real head size (Dk = Dv = 128), q|k|v read at
// offsets of a wider row; g and β formed in the kernel from raw projections; two steps in a row equal one step
// over the concatenation (bit for bit: the same f32 operations in the same order); slots and rows not in the step
// untouched.
// Tolerance: the kernel rounds to f32 where the twin sums in float64 and applies the norms as scalars after the
// sums; measured max abs error 1.2e-7 on o (|o| ≤ 0.44) and 3.6e-7 on S (|S| ≤ 1.6) after a 33-token scan at
// Dk = Dv = 128, a few ulp, so atol 1e-6 + rtol 1e-5 leaves room without hiding a wrong index or order.

import { describe, expect, test } from 'vitest';
import type { Gpu } from '../device.ts';
import { createGatedDelta, type GatedDeltaOptions } from './gated-delta.ts';
import { gatedDeltaSequence, l2NormRows } from '../reference/gated-delta.ts';
import { expectClose, mulberry32, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

interface Step {
  /** Tokens of each sequence row (0 = the row has no token in the step). */
  lengths: number[];
  /** (T, row) q|k|v rows. */
  qkv: Float32Array;
  g: Float32Array;
  beta: Float32Array;
}

/** Random inputs of one step: q|k|v at the default offsets followed by `extra` floats a row; g in [−3, 0], β in (0, 1). */
function randomStep(o: GatedDeltaOptions, lengths: number[], seed: number, extra = 0): Step {
  const T = lengths.reduce((a, n) => a + n, 0);
  const row = 2 * o.kHeads * o.keyDim + o.vHeads * o.valueDim + extra;
  const rng = mulberry32(seed);
  const g = Float32Array.from({ length: T * o.vHeads }, () => (rng() < 0.2 ? -1e-3 * rng() : -3 * rng()));
  const beta = Float32Array.from({ length: T * o.vHeads }, () => 0.02 + 0.96 * rng());
  return { lengths, qkv: randomF32(T * row, seed + 1), g, beta };
}

/** The twin over one step: each row's tokens from its slot of `state` (updated in place); (T, Hv, Dv) outputs. */
function twinStep(o: GatedDeltaOptions, s: Step, state: Float32Array, slotIds: number[], extra = 0): Float32Array {
  const [Hv, Hk, Dk, Dv] = [o.vHeads, o.kHeads, o.keyDim, o.valueDim];
  const row = 2 * Hk * Dk + Hv * Dv + extra;
  const T = s.lengths.reduce((a, n) => a + n, 0);
  const out = new Float32Array(T * Hv * Dv);
  // q and k expanded to Hv heads for the twin (its kHeads = Hv): value head h's key head in either order.
  const keyHead = (h: number) => (o.headOrder === 'grouped' ? Math.floor(h / (Hv / Hk)) : h % Hk);
  let t0 = 0;
  s.lengths.forEach((n, b) => {
    if (n === 0) return;
    const q = new Float32Array(n * Hv * Dk);
    const k = new Float32Array(n * Hv * Dk);
    const v = new Float32Array(n * Hv * Dv);
    for (let t = 0; t < n; t++) {
      const r = (t0 + t) * row;
      for (let h = 0; h < Hv; h++) {
        const src = r + keyHead(h) * Dk;
        q.set(s.qkv.subarray(src, src + Dk), (t * Hv + h) * Dk);
        k.set(s.qkv.subarray(src + Hk * Dk, src + Hk * Dk + Dk), (t * Hv + h) * Dk);
      }
      v.set(s.qkv.subarray(r + 2 * Hk * Dk, r + 2 * Hk * Dk + Hv * Dv), t * Hv * Dv);
    }
    l2NormRows(q, n * Hv, Dk, o.eps ?? 1e-6, 1 / Math.sqrt(Dk));
    l2NormRows(k, n * Hv, Dk, o.eps ?? 1e-6);
    const S = state.subarray(slotIds[b] * Hv * Dk * Dv, (slotIds[b] + 1) * Hv * Dk * Dv);
    const gs = s.g.subarray(t0 * Hv, (t0 + n) * Hv);
    const bs = s.beta.subarray(t0 * Hv, (t0 + n) * Hv);
    out.set(gatedDeltaSequence(S, q, k, v, gs, bs, n, Hv, Dk, Dv), t0 * Hv * Dv);
    t0 += n;
  });
  return out;
}

const rowsOf = (lengths: number[]) => new Uint32Array(lengths.flatMap((n, b) => Array<number>(n).fill(b)));

/**
 * Raw gate inputs for a rawGates kernel, and the step's g and β (for the twin) formed from them in float64:
 * one (T, 2Hv) buffer of [b | a] rows (as one fused projection would give), a with values past softplus's
 * threshold of 20, and [ssm_a | dt_bias] with ssm_a = −exp(A_log).
 */
function rawGates(gpu: Gpu, s: Step, Hv: number, seed: number) {
  const T = s.g.length / Hv;
  const ba = randomF32(T * 2 * Hv, seed, 2);
  ba[Hv] = 25; // token 0, head 0: a + dt_bias past 20
  ba[3 * Hv + 1] = -30;
  const gateW = new Float32Array([...randomF32(Hv, seed + 1, 0.5).map((x) => -Math.exp(x)), ...randomF32(Hv, seed + 2)]);
  const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < Hv; h++) {
      s.g[t * Hv + h] = gateW[h] * softplus(ba[t * 2 * Hv + Hv + h] + gateW[Hv + h]);
      s.beta[t * Hv + h] = 1 / (1 + Math.exp(-ba[t * 2 * Hv + h]));
    }
  }
  const buf = upload(gpu, ba);
  return { g: buf, gStride: 2 * Hv, gOffset: Hv, beta: buf, betaStride: 2 * Hv, betaOffset: 0, gateWeights: upload(gpu, gateW) };
}

/** Runs `steps` in order on the GPU and the twin from the same random slots; compares outputs and every slot. */
async function stepCase(o: GatedDeltaOptions, steps: number[][], slotIds: number[], slots: number, seed: number, extra = 0) {
  const gpu = await testGpu();
  const delta = createGatedDelta(gpu, o);
  const slotFloats = o.vHeads * o.keyDim * o.valueDim;
  const state0 = randomF32(slots * slotFloats, seed, 0.3);
  const twin = state0.slice();
  const state = upload(gpu, state0);
  const slotBuf = upload(gpu, new Uint32Array(slotIds));
  for (const [i, lengths] of steps.entries()) {
    const s = randomStep(o, lengths, seed + 10 * (i + 1), extra);
    const T = s.g.length / o.vHeads;
    const out = scratch(gpu, T * o.vHeads * o.valueDim * 4);
    const gates = o.rawGates ? rawGates(gpu, s, o.vHeads, seed + 100 * (i + 1)) : { g: upload(gpu, s.g), beta: upload(gpu, s.beta) };
    await run(gpu, (pass) => delta.encode(pass, {
      qkv: upload(gpu, s.qkv), rowStride: s.qkv.length / T, ...gates, state, out,
      seqIds: upload(gpu, rowsOf(lengths)), slotIds: slotBuf, tokens: T, sequences: lengths.length,
    }));
    const want = twinStep(o, s, twin, slotIds, extra);
    const got = await readF32(gpu, out, want.length);
    expectClose(got, want, { atol: 1e-6, rtol: 1e-5, label: `o, step ${i} lengths ${lengths}` });
  }
  const got = await readF32(gpu, state, state0.length);
  expectClose(got, twin, { atol: 1e-6, rtol: 1e-5, label: 'state' });
  for (let slot = 0; slot < slots; slot++) {
    if (slotIds.includes(slot)) continue;
    expect([...got.subarray(slot * slotFloats, (slot + 1) * slotFloats)]).toEqual([...state0.subarray(slot * slotFloats, (slot + 1) * slotFloats)]);
  }
}

describe('gated-delta', () => {
  test('prefill: 3 sequences of 6, 1 and 3 tokens on shuffled slots, then a decode step; Hk 2 < Hv 4 tiled', async () => {
    const o = { vHeads: 4, kHeads: 2, keyDim: 16, valueDim: 8 };
    await stepCase(o, [[6, 1, 3], [1, 1, 1]], [3, 0, 4], 5, 1);
  });

  test("'grouped' head order (Hugging Face), q|k|v inside a wider row, a row with no token", async () => {
    const o = { vHeads: 6, kHeads: 2, keyDim: 8, valueDim: 12, headOrder: 'grouped' as const };
    await stepCase(o, [[2, 0, 4], [3, 0, 1]], [1, 2, 0], 3, 2, 8);
  });

  test('Qwen3.5 head size: Dk = Dv = 128, 2 value heads, a 33-token prefill beside a 2-token one, then decode', async () => {
    const o = { vHeads: 2, kHeads: 2, keyDim: 128, valueDim: 128 };
    await stepCase(o, [[33, 2], [1, 1]], [1, 0], 2, 3);
  });

  test('raw gates: g = ssm_a·softplus(a + dt_bias) and β = sigmoid(b) in the kernel, from one [b | a] row a token', async () => {
    const o = { vHeads: 4, kHeads: 4, keyDim: 16, valueDim: 8, rawGates: true };
    await stepCase(o, [[4, 2], [1, 1]], [0, 2], 3, 6);
  });

  test('two steps equal one step over the concatenation, bit for bit; an out-of-range slot touches nothing', async () => {
    const gpu = await testGpu();
    const o = { vHeads: 2, kHeads: 1, keyDim: 8, valueDim: 4 };
    const delta = createGatedDelta(gpu, o);
    const state0 = randomF32(2 * delta.slotBytes / 4, 4, 0.3);
    const row = 2 * 8 + 2 * 4;
    // Row 0: 5 tokens split 2 + 3; row 1: 1 + 2; row 2 has slot 9 (of 2) and a token each time.
    const s = randomStep(o, [5, 3, 2], 5);
    const tok = (t: number) => [...s.qkv.subarray(t * row, (t + 1) * row)];
    const gb = (a: Float32Array, ts: number[]) => new Float32Array(ts.flatMap((t) => [...a.subarray(2 * t, 2 * t + 2)]));
    const [first, second] = [[0, 1, 5, 8], [2, 3, 4, 6, 7, 9]];
    const slotIds = upload(gpu, new Uint32Array([1, 0, 9]));
    const encodeTokens = (pass: GPUComputePassEncoder, ts: number[], lengths: number[], state: GPUBuffer, out: GPUBuffer) =>
      delta.encode(pass, {
        qkv: upload(gpu, new Float32Array(ts.flatMap(tok))), g: upload(gpu, gb(s.g, ts)), beta: upload(gpu, gb(s.beta, ts)), state, out,
        seqIds: upload(gpu, rowsOf(lengths)), slotIds, tokens: ts.length, sequences: 3,
      });
    const split = upload(gpu, state0);
    const [o1, o2] = [scratch(gpu, 4 * 8 * 4), scratch(gpu, 6 * 8 * 4)];
    await run(gpu, (pass) => {
      encodeTokens(pass, first, [2, 1, 1], split, o1);
      encodeTokens(pass, second, [3, 2, 1], split, o2);
    });
    const whole = upload(gpu, state0);
    const o12 = scratch(gpu, 10 * 8 * 4);
    await run(gpu, (pass) => encodeTokens(pass, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [5, 3, 2], whole, o12));
    const [g1, g2, g] = [await readF32(gpu, o1, 32), await readF32(gpu, o2, 48), await readF32(gpu, o12, 80)];
    const at = (v: Float32Array, t: number) => [...v.subarray(8 * t, 8 * t + 8)];
    // token order of the concatenated step: row 0 = 0..4, row 1 = 5..7 (rows 2's tokens are never computed)
    expect([...at(g1, 0), ...at(g1, 1), ...at(g2, 0), ...at(g2, 1), ...at(g2, 2)]).toEqual([0, 1, 2, 3, 4].flatMap((t) => at(g, t)));
    expect([...at(g1, 2), ...at(g2, 3), ...at(g2, 4)]).toEqual([5, 6, 7].flatMap((t) => at(g, t)));
    expect([...(await readF32(gpu, split, state0.length))]).toEqual([...(await readF32(gpu, whole, state0.length))]);
  });

  test('typed errors: Hv % Hk, Dk above 128, misaligned offsets, short buffers, missing gate weights', async () => {
    const gpu = await testGpu();
    const base = { vHeads: 4, kHeads: 2, keyDim: 8, valueDim: 8 };
    expect(() => createGatedDelta(gpu, { ...base, kHeads: 3 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'kHeads' }));
    expect(() => createGatedDelta(gpu, { ...base, keyDim: 256 })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'keyDim' }));
    const delta = createGatedDelta(gpu, base);
    const buf = scratch(gpu, 4096);
    const args = { qkv: buf, g: buf, beta: buf, state: buf, out: buf, seqIds: buf, slotIds: buf, tokens: 2, sequences: 2 };
    await expect(run(gpu, (pass) => delta.encode(pass, { ...args, vOffset: 34 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'vOffset' });
    await expect(run(gpu, (pass) => delta.encode(pass, { ...args, rowStride: 16 }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'kOffset' });
    await expect(run(gpu, (pass) => delta.encode(pass, { ...args, state: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'state' });
    await expect(run(gpu, (pass) => delta.encode(pass, { ...args, out: scratch(gpu, 64) }))).rejects.toMatchObject({ name: 'ShapeError', argument: 'out' });
    await expect(run(gpu, (pass) => delta.encode(pass, { ...args, betaStride: 8, betaOffset: 5 }))).rejects.toMatchObject({
      name: 'ShapeError',
      argument: 'betaOffset',
    });
    await expect(run(gpu, (pass) => createGatedDelta(gpu, { ...base, rawGates: true }).encode(pass, args))).rejects.toThrow(/gateWeights/);
  });
});
