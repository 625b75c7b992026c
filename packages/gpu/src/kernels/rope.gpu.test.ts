import { describe, expect, test } from 'vitest';
import { createRope, ropeInvFreq, type RopeConfig } from './rope.ts';
import { rope } from '../reference/rope.ts';
import { expectClose, readF32, run, scratch, testGpu, upload, randomF32 } from '../testing.ts';

// Positions up to and past 32k: the phase must not lose accuracy as pos * inv_freq grows.
const POSITIONS = [0, 1, 7, 1023, 4097, 32767, 31999, 65535, 100003];

async function ropeCase(config: RopeConfig, T: number, H: number, Hkv: number, seed: number) {
  const gpu = await testGpu();
  const D = config.headDim;
  const positions = Array.from({ length: T }, (_, t) => POSITIONS[t % POSITIONS.length] + Math.floor(t / POSITIONS.length));
  const q = randomF32(T * H * D, seed);
  const k = randomF32(T * Hkv * D, seed + 1, 3);
  const r = createRope(gpu, config);
  const qb = upload(gpu, q);
  const kb = upload(gpu, k);
  await run(gpu, (pass) => r.encode(pass, { q: qb, k: kb, positions: upload(gpu, new Uint32Array(positions)), tokens: T, heads: H, kvHeads: Hkv }));
  const out = {
    q: await readF32(gpu, qb, q.length), k: await readF32(gpu, kb, k.length),
    wantQ: rope(q, T, H, D, positions, r.invFreq, config.style), wantK: rope(k, T, Hkv, D, positions, r.invFreq, config.style),
    q0: q, k0: k,
  };
  r.destroy();
  r.destroy();
  return out;
}

describe('rope', () => {
  test("'normal' pairs (GGUF), D=64, GQA 8/2, positions to 100k", async () => {
    const o = await ropeCase({ headDim: 64, theta: 10000, style: 'normal' }, 11, 8, 2, 1);
    expectClose(o.q, o.wantQ, { atol: 2e-6, rtol: 1e-4, label: 'q' });
    expectClose(o.k, o.wantK, { atol: 6e-6, rtol: 1e-4, label: 'k' });
  });

  test("'neox' rotate-half with partial rotary (64 of 128) and llama3 scaling", async () => {
    const D = 128;
    const o = await ropeCase({
      headDim: D, rotaryDim: 64, theta: 500000, style: 'neox',
      scaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
    }, 9, 4, 1, 2);
    expectClose(o.q, o.wantQ, { atol: 2e-6, rtol: 1e-4, label: 'q' });
    expectClose(o.k, o.wantK, { atol: 6e-6, rtol: 1e-4, label: 'k' });
    // Dimensions 64..127 of every head row are untouched, bit for bit.
    for (let r = 0; r < 9 * 4; r++) expect(Array.from(o.q.subarray(r * D + 64, r * D + D))).toEqual(Array.from(o.q0.subarray(r * D + 64, r * D + D)));
  });

  test("stories260K shape D=8, H=8, Hkv=4, 'normal', ragged token count", async () => {
    const o = await ropeCase({ headDim: 8, theta: 10000, style: 'normal' }, 13, 8, 4, 3);
    expectClose(o.q, o.wantQ, { atol: 2e-6, rtol: 1e-4, label: 'q' });
    expectClose(o.k, o.wantK, { atol: 6e-6, rtol: 1e-4, label: 'k' });
  });

  test('llama3 inv_freq: high frequencies kept, low ones divided by factor, the middle interpolated', () => {
    const base = ropeInvFreq({ headDim: 128, theta: 500000 });
    const s = { type: 'llama3' as const, factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 };
    const scaled = ropeInvFreq({ headDim: 128, theta: 500000, scaling: s });
    expect(base[5]).toBeCloseTo(500000 ** (-10 / 128), 15);
    let kept = 0, divided = 0, mixed = 0;
    for (let i = 0; i < 64; i++) {
      const wavelen = (2 * Math.PI) / base[i];
      if (wavelen < 8192 / 4) {
        expect(scaled[i]).toBe(base[i]);
        kept++;
      } else if (wavelen > 8192) {
        expect(scaled[i]).toBeCloseTo(base[i] / 8, 15);
        divided++;
      } else {
        const smooth = (8192 / wavelen - 1) / 3;
        expect(scaled[i]).toBeCloseTo((1 - smooth) * (base[i] / 8) + smooth * base[i], 15);
        expect(scaled[i]).toBeLessThan(base[i]);
        expect(scaled[i]).toBeGreaterThan(base[i] / 8);
        mixed++;
      }
    }
    expect([kept > 0, divided > 0, mixed > 0]).toEqual([true, true, true]);
  });

  test('typed errors: rotaryDim odd or above D, short k', async () => {
    const gpu = await testGpu();
    expect(() => createRope(gpu, { headDim: 64, rotaryDim: 66, theta: 1e4, style: 'neox' })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'rotaryDim' }));
    expect(() => createRope(gpu, { headDim: 64, rotaryDim: 31, theta: 1e4, style: 'neox' })).toThrow(expect.objectContaining({ name: 'ShapeError', argument: 'rotaryDim' }));
    const r = createRope(gpu, { headDim: 16, theta: 1e4, style: 'normal' });
    await expect(
      run(gpu, (pass) => r.encode(pass, { q: scratch(gpu, 4 * 16 * 4), k: scratch(gpu, 16), positions: scratch(gpu, 16), tokens: 2, heads: 2, kvHeads: 1 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'k' });
    r.destroy();
  });
});
