// Weight formats, bit-exact with ggml's block layouts (ggml-common.h) and its reference (de)quantizers.
// These are the CPU twins of the WGSL unpackers in shaders/lib/weights/, and the codecs the model
// loader uses. All arithmetic is rounded to f32 at the same points as ggml's C code.
//
//   f32   4 bytes / element
//   f16   2 bytes / element (IEEE half)          bf16  2 bytes / element (top half of an f32)
//   q8_0  34 B / 32:  f16 d, i8 qs[32]                     x = d * q
//   q4_0  18 B / 32:  f16 d, u8 qs[16]  (lo nibbles = 0..15, hi = 16..31)   x = d * (q - 8)
//   q4_K  144 B / 256: f16 d, f16 dmin, u8 scales[12] (8 × 6-bit scale + 6-bit min), u8 qs[128]
//                      x = d*sc_j * q - dmin*m_j     for sub-block j of 32
//   q6_K  210 B / 256: u8 ql[128], u8 qh[64], i8 scales[16], f16 d      x = d * sc_i * (q - 32)

export type WeightDtype = 'f32' | 'f16' | 'bf16' | 'q8_0' | 'q4_0' | 'q4_K' | 'q6_K';

export const WEIGHT_DTYPES: readonly WeightDtype[] = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_K', 'q6_K'];

/** ggml's type ids (enum ggml_type) for the formats intab runs. */
export const GGML_TYPE_ID: Readonly<Record<WeightDtype, number>> = {
  f32: 0,
  f16: 1,
  q4_0: 2,
  q8_0: 8,
  q4_K: 12,
  q6_K: 14,
  bf16: 30,
};

export interface BlockLayout {
  /** Elements per block. */
  readonly elems: number;
  /** Bytes per block. */
  readonly bytes: number;
}

export const BLOCK: Readonly<Record<WeightDtype, BlockLayout>> = {
  f32: { elems: 1, bytes: 4 },
  f16: { elems: 1, bytes: 2 },
  bf16: { elems: 1, bytes: 2 },
  q8_0: { elems: 32, bytes: 34 },
  q4_0: { elems: 32, bytes: 18 },
  q4_K: { elems: 256, bytes: 144 },
  q6_K: { elems: 256, bytes: 210 },
};

export function isWeightDtype(x: string): x is WeightDtype {
  return (WEIGHT_DTYPES as readonly string[]).includes(x);
}

/** Bytes of one row of `k` elements; throws unless k is a whole number of blocks. */
export function rowBytes(dtype: WeightDtype, k: number): number {
  const b = BLOCK[dtype];
  if (!Number.isInteger(k) || k <= 0 || k % b.elems !== 0) {
    throw new RangeError(`${dtype} rows need a positive multiple of ${b.elems} elements; got ${k}`);
  }
  return (k / b.elems) * b.bytes;
}

// ---- half precision ----

const f32buf = new Float32Array(1);
const u32buf = new Uint32Array(f32buf.buffer);

/** f32 → IEEE binary16 bits, round to nearest even (as F16C / _cvtss_sh). */
export function f32ToF16(x: number): number {
  f32buf[0] = x;
  const u = u32buf[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h; // a carry into the exponent is the correct rounding (up to inf)
}

/** IEEE binary16 bits → f32 value (exact). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** f32 → bfloat16 bits, round to nearest even; NaN stays quiet NaN (ggml_compute_fp32_to_bf16). */
export function f32ToBf16(x: number): number {
  f32buf[0] = x;
  const u = u32buf[0];
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16) & 0xffff;
}

export function bf16ToF32(h: number): number {
  u32buf[0] = (h & 0xffff) << 16;
  return f32buf[0];
}

const fr = Math.fround;

// ---- dequantization (CPU twin of shaders/lib/weights/*.wgsl) ----

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
export function scaleMinK4(j: number, s: Uint8Array): [number, number] {
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

/**
 * Valid random blocks of any format (random scales and quants), for tests and benchmarks of the
 * K-quants, whose files come from llama.cpp's quantizer. Scales stay small so sums stay finite.
 */
export function randomWeights(dtype: WeightDtype, n: number, k: number, rng: () => number, scale = 0.05): Uint8Array {
  const rb = rowBytes(dtype, k);
  const out = new Uint8Array(n * rb);
  const dv = new DataView(out.buffer);
  const blocks = (n * rb) / BLOCK[dtype].bytes;
  const B = BLOCK[dtype].bytes;
  const gauss = () => {
    const u = Math.max(rng(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
  };
  switch (dtype) {
    case 'f32':
    case 'f16':
    case 'bf16': {
      const x = new Float32Array(n * k);
      for (let i = 0; i < x.length; i++) x[i] = gauss() * scale;
      return quantize(dtype, x, n, k);
    }
    default:
      for (let i = 0; i < out.length; i++) out[i] = (rng() * 256) | 0;
      for (let b = 0; b < blocks; b++) {
        const o = b * B;
        const d = f32ToF16((0.5 + rng()) * scale / (dtype === 'q4_K' || dtype === 'q6_K' ? 16 : 8));
        if (dtype === 'q6_K') {
          dv.setUint16(o + 208, d, true);
        } else {
          dv.setUint16(o, d, true);
          if (dtype === 'q4_K') dv.setUint16(o + 2, f32ToF16((0.5 + rng()) * scale / 16), true);
        }
      }
      return out;
  }
}
