// The weight formats intab runs and their ggml block layouts (ggml-common.h): elements and bytes per block,
// and ggml's type ids. weights.ts sizes GPU tensors by them, gguf.ts maps type ids to formats, upload.ts checks
// what a file stores; the WGSL unpackers (shaders/lib/weights/) and codecs.ts decode these bytes.
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
