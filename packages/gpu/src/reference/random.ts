// Seeded inputs for tests and benchmarks (normal floats, valid random weight blocks): the same seed gives the
// same inputs everywhere. The RNG itself is production's (../random.ts), which the engine samples with.

import { BLOCK, rowBytes, type WeightDtype } from '../formats/blocks.ts';
import { quantize } from '../formats/codecs.ts';
import { f32ToF16 } from '../formats/half.ts';
import { mulberry32 } from '../random.ts';

/** Standard normal samples (Box–Muller). */
export function randn(rng: () => number): number {
  const u = Math.max(rng(), 1e-12);
  const v = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** `n` f32 values ~ N(0, scale²), seeded. */
export function randomF32(n: number, seed: number, scale = 1): Float32Array {
  const rng = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = randn(rng) * scale;
  return out;
}

/**
 * Valid random blocks of any format (random scales and quants, as a quantizer could write them), for tests and
 * benchmarks of the K-quants, whose files come from llama.cpp's quantizer. Scales stay small so sums stay finite.
 */
export function randomWeights(dtype: WeightDtype, n: number, k: number, rng: () => number, scale = 0.05): Uint8Array {
  const rb = rowBytes(dtype, k);
  const out = new Uint8Array(n * rb);
  const dv = new DataView(out.buffer);
  const blocks = (n * rb) / BLOCK[dtype].bytes;
  const B = BLOCK[dtype].bytes;
  switch (dtype) {
    case 'f32':
    case 'f16':
    case 'bf16': {
      const x = new Float32Array(n * k);
      for (let i = 0; i < x.length; i++) x[i] = randn(rng) * scale;
      return quantize(dtype, x, n, k);
    }
    default:
      for (let i = 0; i < out.length; i++) out[i] = (rng() * 256) | 0;
      for (let b = 0; b < blocks; b++) {
        const o = b * B;
        // Scales that give every format weights of about the same spread (≈ 0.6·scale): q8_0's quants span ±127, the
        // others' a few units.
        const d = f32ToF16(((0.5 + rng()) * scale) / (dtype === 'q4_K' || dtype === 'q6_K' ? 16 : dtype === 'q8_0' ? 127 : 8));
        if (dtype === 'q6_K') {
          dv.setUint16(o + 208, d, true);
        } else {
          dv.setUint16(o, d, true);
          if (dtype === 'q4_K') dv.setUint16(o + 2, f32ToF16((0.5 + rng()) * scale / 16), true);
          // q8_0 quants in −127..127, as ggml's quantizer writes them (round(x / (amax / 127)) never reaches −128):
          // llama.cpp's x86 dot negates a weight by the sign of x, which wraps −128, so a file holding it is not one
          // llama.cpp computes right.
          if (dtype === 'q8_0') for (let j = o + 2; j < o + B; j++) if (out[j] === 0x80) out[j] = 0x81;
        }
      }
      return out;
  }
}
