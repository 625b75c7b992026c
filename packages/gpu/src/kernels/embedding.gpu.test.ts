// Embedding gather, bit for bit against reference/embedding.ts (formats/codecs.ts's dequantize), for every
// weight format, split and unsplit weights, out-of-range ids, T = 1, extreme values and bad inputs.

import { describe, expect, test } from 'vitest';
import { createEmbedding } from './embedding.ts';
import { createWeight } from '../weights.ts';
import { embedding } from '../reference/embedding.ts';
import { BLOCK, WEIGHT_DTYPES, rowBytes, type WeightDtype } from '../formats/blocks.ts';
import { quantize } from '../formats/codecs.ts';
import { f32ToF16 } from '../formats/half.ts';
import { randomWeights } from '../reference/random.ts';
import { expectEqual, mulberry32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

/** Bit-exact: compares the f32 bit patterns (so -0 vs 0 and any rounding difference fail). */
function expectBits(actual: Float32Array, expected: Float32Array, label: string): void {
  const bits = (a: Float32Array, n: number) => new Uint32Array(a.buffer, a.byteOffset, n);
  expectEqual(bits(actual, expected.length), bits(expected, expected.length), label);
}

/** C for a test: several chunks, not a multiple of the 64-invocation workgroup (in chunks). */
const cFor = (dtype: WeightDtype) => (BLOCK[dtype].elems === 256 ? 768 : dtype.startsWith('q') ? 96 : 172);

/** T random ids in [0, V), with the first and last rows and some out-of-range ids mixed in. */
function randomIds(t: number, v: number, seed: number): Uint32Array {
  const rng = mulberry32(seed);
  const ids = new Uint32Array(t);
  for (let i = 0; i < t; i++) ids[i] = Math.floor(rng() * v);
  if (t > 4) {
    ids[0] = v - 1;
    ids[1] = 0;
    ids[2] = v; // out of range → zeros
    ids[t - 1] = 0xffffffff; // a -1 as u32 → zeros
  }
  return ids;
}

describe('embedding', () => {
  for (const dtype of WEIGHT_DTYPES) {
    test(`${dtype}: bit-exact gather, unsplit and split into parts, out-of-range ids`, async () => {
      const gpu = await testGpu();
      const [v, t] = [53, 13];
      const c = cFor(dtype);
      const bytes = randomWeights(dtype, v, c, mulberry32(v + c));
      const ids = randomIds(t, v, c);
      const whole = createWeight(gpu, { dtype, n: v, k: c, data: bytes, label: 'emb' });
      // 16 rows per part → 4 parts, the last one ragged.
      const split = createWeight(gpu, { dtype, n: v, k: c, data: bytes, label: 'emb', maxPartBytes: 16 * rowBytes(dtype, c) + 4 });
      expect(split.parts.length).toBe(4);
      const idsBuf = upload(gpu, ids);
      const outWhole = upload(gpu, new Float32Array(t * c).fill(7)); // stale values must be overwritten
      const outSplit = upload(gpu, new Float32Array(t * c).fill(7));
      const outOne = upload(gpu, new Float32Array(c).fill(7));
      const embed = createEmbedding(gpu, { dtype });
      await run(gpu, (pass) => {
        embed.encode(pass, { weight: whole, ids: idsBuf, out: outWhole, tokens: t });
        embed.encode(pass, { weight: split, ids: idsBuf, out: outSplit, tokens: t });
        // T = 1: only the first id (V - 1, the last row of the last part).
        embed.encode(pass, { weight: split, ids: idsBuf, out: outOne, tokens: 1 });
      });
      const ref = embedding(dtype, bytes, v, c, ids);
      expectBits(await readF32(gpu, outWhole, t * c), ref, `${dtype} unsplit`);
      expectBits(await readF32(gpu, outSplit, t * c), ref, `${dtype} split`);
      expectBits(await readF32(gpu, outOne, c), ref.subarray(0, c), `${dtype} T = 1`);
      expect(ref.subarray(2 * c, 3 * c).every((x) => x === 0)).toBe(true);
      whole.destroy();
      split.destroy();
    });
  }

  test('scale (Gemma\'s √C): each gathered value times the f32 scale, one rounding, split or not; a non-f32 scale is a ShapeError', async () => {
    const gpu = await testGpu();
    const [v, t, scale] = [53, 13, Math.fround(Math.sqrt(640))];
    for (const dtype of ['f32', 'q4_0', 'q6_K'] as const) {
      const c = cFor(dtype);
      const bytes = randomWeights(dtype, v, c, mulberry32(3 * v + c));
      const ids = randomIds(t, v, c + 1);
      const split = createWeight(gpu, { dtype, n: v, k: c, data: bytes, label: 'emb', maxPartBytes: 16 * rowBytes(dtype, c) + 4 });
      const out = upload(gpu, new Float32Array(t * c).fill(7));
      await run(gpu, (pass) => createEmbedding(gpu, { dtype, scale }).encode(pass, { weight: split, ids: upload(gpu, ids), out, tokens: t }));
      // f32 × f32 is rounded once (IEEE), as Math.fround of the exact product; ids out of range stay 0.
      expectBits(await readF32(gpu, out, t * c), embedding(dtype, bytes, v, c, ids).map((x) => Math.fround(x * scale)), `${dtype} scaled`);
      split.destroy();
    }
    expect(() => createEmbedding(gpu, { dtype: 'f32', scale: Math.sqrt(640) })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'scale' }));
  });

  test('extreme values: huge, tiny (subnormal), infinite and signed-zero weights stay bit-exact', async () => {
    const gpu = await testGpu();
    const [v, c] = [4, 8];
    const values = new Float32Array(v * c);
    values.set([3e38, -3e38, 1e-40, -1e-45, 1.17e-38, -0, 0, Infinity]); // f32 subnormals included
    values.set([65504, -65504, 6e-8, -6e-8, 3e-5, -0, 1e5, -Infinity], c); // f16 max, subnormals, overflow
    values.set([1, -2, 0.5, 1e-3, -1e3, 1e30, -1e-30, 12345.678], 2 * c);
    values.set([-1, 2, -0.5, -1e-3, 1e3, -1e30, 1e-30, -12345.678], 3 * c);
    const ids = upload(gpu, new Uint32Array([0, 1, 2, 3, 1, 0]));
    const idList = new Uint32Array([0, 1, 2, 3, 1, 0]);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      const bytes = quantize(dtype, values, v, c);
      const weight = createWeight(gpu, { dtype, n: v, k: c, data: bytes, label: 'emb' });
      const out = scratch(gpu, 6 * c * 4);
      await run(gpu, (pass) => createEmbedding(gpu, { dtype }).encode(pass, { weight, ids, out, tokens: 6 }));
      expectBits(await readF32(gpu, out, 6 * c), embedding(dtype, bytes, v, c, idList), dtype);
      weight.destroy();
    }
    // Quantized blocks at the f16 scale's extremes: d = 65504 (max) and d = 2^-24 (the smallest subnormal).
    for (const [dtype, d] of [['q8_0', 0x7bff], ['q4_0', 0x0001], ['q8_0', 0x0001], ['q4_0', f32ToF16(-1000)]] as const) {
      const bytes = randomWeights(dtype, 2, 64, mulberry32(d));
      for (let b = 0; b < 4; b++) new DataView(bytes.buffer).setUint16(b * BLOCK[dtype].bytes, d, true);
      const weight = createWeight(gpu, { dtype, n: 2, k: 64, data: bytes, label: 'emb' });
      const out = scratch(gpu, 2 * 64 * 4);
      const two = new Uint32Array([1, 0]);
      await run(gpu, (pass) => createEmbedding(gpu, { dtype }).encode(pass, { weight, ids: upload(gpu, two), out, tokens: 2 }));
      expectBits(await readF32(gpu, out, 128), embedding(dtype, bytes, 2, 64, two), `${dtype} d=0x${d.toString(16)}`);
      weight.destroy();
    }
  });

  test('rejects short buffers and bad token counts with a ShapeError', async () => {
    const gpu = await testGpu();
    const weight = createWeight(gpu, { dtype: 'q8_0', n: 10, k: 64, label: 'emb' });
    const embed = createEmbedding(gpu, { dtype: 'q8_0' });
    const ids = scratch(gpu, 16);
    await expect(
      run(gpu, (pass) => embed.encode(pass, { weight, ids, out: scratch(gpu, 3 * 64 * 4 - 4), tokens: 3 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'out' });
    await expect(
      run(gpu, (pass) => embed.encode(pass, { weight, ids, out: scratch(gpu, 8 * 64 * 4), tokens: 8 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'ids' });
    await expect(
      run(gpu, (pass) => embed.encode(pass, { weight, ids, out: scratch(gpu, 64 * 4), tokens: 0 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'tokens' });
    await expect(
      run(gpu, (pass) => createEmbedding(gpu, { dtype: 'q4_0' }).encode(pass, { weight, ids, out: scratch(gpu, 64 * 4), tokens: 1 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'weight' });
    expect(() => createEmbedding(gpu, { dtype: 'iq2_xs' })).toThrow(/iq2_xs.*not supported/);
    weight.destroy();
  });
});
