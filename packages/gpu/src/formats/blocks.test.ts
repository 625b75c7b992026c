// Block layouts pinned by hand-computed fixtures: bytes written by hand, values worked out on paper
// from ggml-common.h's definitions.
import { describe, expect, test } from 'vitest';
import { BLOCK, rowBytes } from './blocks.ts';
import { dequantize, quantize } from './codecs.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half.ts';
import { mulberry32 } from '../random.ts';
import { randomF32, randomWeights } from '../reference/random.ts';

describe('half precision', () => {
  test('f32 → f16 rounds to nearest even and handles the edges', () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(-2)).toBe(0xc000);
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // tie at the top rounds to even = infinity
    expect(f32ToF16(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16(2 ** -26)).toBe(0x0000);
    expect(f32ToF16(1 / 3)).toBe(0x3555);
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie → even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (up)
    expect(f32ToF16(Infinity)).toBe(0x7c00);
    expect(f32ToF16(NaN) & 0x7c00).toBe(0x7c00);
  });
  test('f16 → f32 is exact', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0x3555)).toBe(0.333251953125);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(f16ToF32(0xfbff)).toBe(-65504);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
  });
  test('bf16 rounds to nearest even and keeps NaN quiet', () => {
    expect(f32ToBf16(1)).toBe(0x3f80);
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(f32ToBf16(-0.5)).toBe(0xbf00);
    expect(f32ToBf16(NaN)).toBe(0x7fc0);
    expect(bf16ToF32(0x4049)).toBe(3.140625);
  });
});

describe('block layouts', () => {
  test('sizes match ggml', () => {
    expect(BLOCK.q8_0).toEqual({ elems: 32, bytes: 34 });
    expect(BLOCK.q4_0).toEqual({ elems: 32, bytes: 18 });
    expect(BLOCK.q4_K).toEqual({ elems: 256, bytes: 144 });
    expect(BLOCK.q6_K).toEqual({ elems: 256, bytes: 210 });
    expect(rowBytes('q4_K', 2048)).toBe(8 * 144);
    expect(() => rowBytes('q4_0', 48)).toThrow(/multiple of 32/);
  });

  test('q4_0: d=0.5, nibbles low = first half, high = second half', () => {
    const b = new Uint8Array(18).fill(0x88);
    b[0] = 0x00; b[1] = 0x38; // d = 0.5
    b[2] = 0x9f; // x[0] = (15-8)*0.5 = 3.5, x[16] = (9-8)*0.5 = 0.5
    b[3] = 0x08; // x[1] = 0, x[17] = (0-8)*0.5 = -4
    const x = dequantize('q4_0', b, 1, 32);
    expect([x[0], x[16], x[1], x[17], x[2], x[31]]).toEqual([3.5, 0.5, 0, -4, 0, 0]);
  });

  test('q8_0: d=0.25, signed bytes', () => {
    const b = new Uint8Array(34);
    b[0] = 0x00; b[1] = 0x34; // d = 0.25
    b[2] = 127; b[3] = 0x80; b[4] = 1; b[5] = 0xff;
    const x = dequantize('q8_0', b, 1, 32);
    expect([x[0], x[1], x[2], x[3], x[4]]).toEqual([31.75, -32, 0.25, -0.25, 0]);
  });

  test('q4_K: 6-bit scales/mins packed in 12 bytes', () => {
    const b = new Uint8Array(144);
    b[0] = 0x00; b[1] = 0x3c; // d = 1
    b[2] = 0x00; b[3] = 0x38; // dmin = 0.5
    const s = 4; // scales[12] start
    b[s + 0] = 0x42; // sc0 = 2, top bits 01 → sc4 += 16
    b[s + 4] = 0x84; // m0 = 4, top bits 10 → m4 += 32
    b[s + 8] = 0x53; // sc4 = 3 | 16 = 19, m4 = 5 | 32 = 37
    b[s + 1] = 0x01; // sc1 = 1, m1 = 0
    const q = 16; // qs[128] start
    b[q + 0] = 0x7a; // x[0] = 2*10 - 0.5*4 = 18; x[32] = 1*7 - 0 = 7
    b[q + 64] = 0x03; // x[128] = 19*3 - 0.5*37 = 38.5; x[160] = 0
    const x = dequantize('q4_K', b, 1, 256);
    expect([x[0], x[1], x[32], x[33], x[128], x[160]]).toEqual([18, -2, 7, 0, 38.5, 0]);
  });

  test('q6_K: 4 low bits in ql, 2 high bits in qh, int8 scales, d last', () => {
    const b = new Uint8Array(210);
    b[208] = 0x00; b[209] = 0x38; // d = 0.5
    b[0] = 0x21; // ql[0]: low 1 (x[0]), high 2 (x[64])
    b[32] = 0x0f; // ql[32]: low 15 (x[32]), high 0 (x[96])
    b[128] = 0xe4; // qh[0] = 11 10 01 00 → x[0] +0, x[32] +16, x[64] +32, x[96] +48
    b[192 + 0] = 3; b[192 + 2] = 0xfe; b[192 + 4] = 1; b[192 + 6] = 1; // sc[0]=3, sc[2]=-2, sc[4]=1, sc[6]=1
    const x = dequantize('q6_K', b, 1, 256);
    // x[0] = 0.5*3*(1-32) ; x[32] = 0.5*-2*(31-32) ; x[64] = 0.5*1*(34-32) ; x[96] = 0.5*1*(48-32)
    expect([x[0], x[32], x[64], x[96]]).toEqual([-46.5, 1, 1, 8]);
    expect(x[1]).toBe(0.5 * 3 * -32);
  });
});

describe('reference quantizers', () => {
  test('q8_0 maps the block maximum to ±127 and errs by at most d/2', () => {
    const x = Float32Array.from({ length: 64 }, (_, i) => (i - 20) / 7);
    const b = quantize('q8_0', x, 2, 32);
    const y = dequantize('q8_0', b, 2, 32);
    expect(new Int8Array(b.buffer)[2]).toBe(-127); // x[0] = -20/7 is block 0's extreme
    expect(new Int8Array(b.buffer)[34 + 2 + 31]).toBe(127); // x[63] = 43/7 is block 1's
    for (let i = 0; i < 64; i++) expect(Math.abs(y[i] - x[i])).toBeLessThanOrEqual((i < 32 ? 20 / 7 : 43 / 7) / 127 / 2 + 1e-3);
  });
  test('q4_0 maps the signed extreme to -8·d', () => {
    const x = new Float32Array(32);
    x[3] = -4; // the extreme: d = -4 / -8 = 0.5, q = 0 → (0-8)*0.5 = -4
    x[20] = 1.5;
    const y = dequantize('q4_0', quantize('q4_0', x, 1, 32), 1, 32);
    expect(y[3]).toBe(-4);
    expect(y[20]).toBe(1.5);
    expect(y[0]).toBe(0);
  });
  test('f16/bf16 round-trip is within half an ulp', () => {
    const x = randomF32(256, 3);
    const h = dequantize('f16', quantize('f16', x, 1, 256), 1, 256);
    const bf = dequantize('bf16', quantize('bf16', x, 1, 256), 1, 256);
    for (let i = 0; i < 256; i++) {
      expect(Math.abs(h[i] - x[i])).toBeLessThanOrEqual(Math.abs(x[i]) * 2 ** -11 + 2 ** -25);
      expect(Math.abs(bf[i] - x[i])).toBeLessThanOrEqual(Math.abs(x[i]) * 2 ** -8);
    }
  });
  test('random K-quant blocks are finite', () => {
    for (const dt of ['q4_K', 'q6_K', 'q4_0', 'q8_0'] as const) {
      const y = dequantize(dt, randomWeights(dt, 3, 512, mulberry32(1)), 3, 512);
      expect(y.every(Number.isFinite)).toBe(true);
    }
  });
});
