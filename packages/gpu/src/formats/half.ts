// IEEE half and bfloat16 bit conversions, rounded as ggml and the hardware round (nearest even): the
// f16/bf16 weight formats, and the d/dmin scales inside the quantized blocks (codecs.ts).

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

/** bfloat16 bits → f32 value (exact). */
export function bf16ToF32(h: number): number {
  u32buf[0] = (h & 0xffff) << 16;
  return f32buf[0];
}
