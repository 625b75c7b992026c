// ggml's block codecs on the CPU, bit-exact with its reference (de)quantizers: all arithmetic is rounded to f32
// at the same points as ggml's C code. The loader uses them (upload.ts: 1-D tensors become f32, f32/f16/bf16
// matrices may be quantized to q8_0/q4_0 on load); the GPU tests use dequantize as the decode the WGSL
// unpackers must reproduce. blocks.test.ts pins both directions with bytes and values worked out by hand.

import { rowBytes, type WeightDtype } from './blocks.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from './half.ts';

const fr = Math.fround;

// ---- dequantization (the decode that shaders/lib/weights/*.wgsl do on the GPU) ----

/** Dequantize `k` elements of one row starting at byte `offset` of `bytes`. */
export function dequantizeRow(dtype: WeightDtype, bytes: Uint8Array, offset: number, k: number, out = new Float32Array(k)): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const half = (o: number) => f16ToF32(dv.getUint16(o, true));
  switch (dtype) {
    case 'f32':
      for (let i = 0; i < k; i++) out[i] = dv.getFloat32(offset + 4 * i, true);
      break;
    case 'f16':
      for (let i = 0; i < k; i++) out[i] = half(offset + 2 * i);
      break;
    case 'bf16':
      for (let i = 0; i < k; i++) out[i] = bf16ToF32(dv.getUint16(offset + 2 * i, true));
      break;
    case 'q8_0':
      for (let b = 0; b < k / 32; b++) {
        const o = offset + b * 34;
        const d = half(o);
        for (let j = 0; j < 32; j++) out[b * 32 + j] = fr(dv.getInt8(o + 2 + j) * d);
      }
      break;
    case 'q4_0':
      for (let b = 0; b < k / 32; b++) {
        const o = offset + b * 18;
        const d = half(o);
        for (let j = 0; j < 16; j++) {
          const q = bytes[o + 2 + j];
          out[b * 32 + j] = fr(((q & 0xf) - 8) * d);
          out[b * 32 + j + 16] = fr(((q >> 4) - 8) * d);
        }
      }
      break;
    case 'q4_K':
      for (let b = 0; b < k / 256; b++) {
        const o = offset + b * 144;
        const d = half(o);
        const dmin = half(o + 2);
        const scales = bytes.subarray(o + 4, o + 16);
        const qs = o + 16;
        for (let j = 0; j < 4; j++) {
          const [sc1, m1] = scaleMinK4(2 * j, scales);
          const [sc2, m2] = scaleMinK4(2 * j + 1, scales);
          const d1 = fr(d * sc1);
          const mm1 = fr(dmin * m1);
          const d2 = fr(d * sc2);
          const mm2 = fr(dmin * m2);
          for (let l = 0; l < 32; l++) {
            const q = bytes[qs + 32 * j + l];
            out[b * 256 + 64 * j + l] = fr(fr(d1 * (q & 0xf)) - mm1);
            out[b * 256 + 64 * j + 32 + l] = fr(fr(d2 * (q >> 4)) - mm2);
          }
        }
      }
      break;
    case 'q6_K':
      for (let b = 0; b < k / 256; b++) {
        const o = offset + b * 210;
        const d = half(o + 208);
        for (let n = 0; n < 2; n++) {
          const ql = o + 64 * n;
          const qh = o + 128 + 32 * n;
          const sc = o + 192 + 8 * n;
          const y = b * 256 + 128 * n;
          for (let l = 0; l < 32; l++) {
            const is = l >> 4;
            const h = bytes[qh + l];
            const q1 = ((bytes[ql + l] & 0xf) | (((h >> 0) & 3) << 4)) - 32;
            const q2 = ((bytes[ql + l + 32] & 0xf) | (((h >> 2) & 3) << 4)) - 32;
            const q3 = ((bytes[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
            const q4 = ((bytes[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
            out[y + l] = fr(fr(d * dv.getInt8(sc + is)) * q1);
            out[y + l + 32] = fr(fr(d * dv.getInt8(sc + is + 2)) * q2);
            out[y + l + 64] = fr(fr(d * dv.getInt8(sc + is + 4)) * q3);
            out[y + l + 96] = fr(fr(d * dv.getInt8(sc + is + 6)) * q4);
          }
        }
      }
      break;
  }
  return out;
}

/** Dequantize an (n, k) row-major tensor. */
export function dequantize(dtype: WeightDtype, bytes: Uint8Array, n: number, k: number): Float32Array {
  const rb = rowBytes(dtype, k);
  if (bytes.byteLength < n * rb) throw new RangeError(`${dtype} (${n}, ${k}) needs ${n * rb} bytes, got ${bytes.byteLength}`);
  const out = new Float32Array(n * k);
  for (let r = 0; r < n; r++) dequantizeRow(dtype, bytes, r * rb, k, out.subarray(r * k, (r + 1) * k));
  return out;
}

/** get_scale_min_k4: the 6-bit scale and min of sub-block j (0..7) of a q4_K super-block. */
function scaleMinK4(j: number, s: Uint8Array): [number, number] {
  if (j < 4) return [s[j] & 63, s[j + 4] & 63];
  return [(s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)];
}

// ---- quantization (ggml's reference quantizers: quantize_row_*_ref) ----

/** roundf: half away from zero. */
const roundf = (x: number) => (x < 0 ? -Math.round(-x) : Math.round(x));

/** Encode an (n, k) f32 tensor. q4_K and q6_K are produced by the model files, not by intab. */
export function quantize(dtype: Exclude<WeightDtype, 'q4_K' | 'q6_K'>, x: Float32Array, n: number, k: number): Uint8Array {
  const rb = rowBytes(dtype, k);
  const out = new Uint8Array(n * rb);
  const dv = new DataView(out.buffer);
  for (let r = 0; r < n; r++) {
    const src = x.subarray(r * k, (r + 1) * k);
    const o = r * rb;
    switch (dtype) {
      case 'f32':
        for (let i = 0; i < k; i++) dv.setFloat32(o + 4 * i, src[i], true);
        break;
      case 'f16':
        for (let i = 0; i < k; i++) dv.setUint16(o + 2 * i, f32ToF16(src[i]), true);
        break;
      case 'bf16':
        for (let i = 0; i < k; i++) dv.setUint16(o + 2 * i, f32ToBf16(src[i]), true);
        break;
      case 'q8_0':
        for (let b = 0; b < k / 32; b++) {
          let amax = 0;
          for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(src[b * 32 + j]));
          const d = fr(amax / 127);
          const id = d ? fr(1 / d) : 0;
          dv.setUint16(o + b * 34, f32ToF16(d), true);
          for (let j = 0; j < 32; j++) dv.setInt8(o + b * 34 + 2 + j, roundf(fr(src[b * 32 + j] * id)));
        }
        break;
      case 'q4_0':
        for (let b = 0; b < k / 32; b++) {
          let amax = 0;
          let max = 0;
          for (let j = 0; j < 32; j++) {
            const v = src[b * 32 + j];
            if (amax < Math.abs(v)) {
              amax = Math.abs(v);
              max = v;
            }
          }
          const d = fr(max / -8);
          const id = d ? fr(1 / d) : 0;
          dv.setUint16(o + b * 18, f32ToF16(d), true);
          for (let j = 0; j < 16; j++) {
            const x0 = fr(src[b * 32 + j] * id);
            const x1 = fr(src[b * 32 + 16 + j] * id);
            const xi0 = Math.min(15, Math.trunc(fr(x0 + 8.5)) << 24 >> 24);
            const xi1 = Math.min(15, Math.trunc(fr(x1 + 8.5)) << 24 >> 24);
            out[o + b * 18 + 2 + j] = (xi0 & 0xff) | ((xi1 & 0xf) << 4);
          }
        }
        break;
    }
  }
  return out;
}
