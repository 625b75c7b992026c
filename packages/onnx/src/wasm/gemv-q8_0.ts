// gemv-q8_0 (wasm SIMD128): y[n] = Σ_k W[n,k]·x[k] with W in GGUF q8_0 blocks, the CPU counterpart of
// shaders/matmul/gemv.wgsl with shaders/lib/weights/q8_0.wgsl, for the browser without a GPU adapter. As llama.cpp's
// CPU path does, x is first quantized to q8_0 (kernel-lib.ts emitQuantizeX), so each block is an int8·int8 dot in
// i32, scaled by d_w·d_x and accumulated in f32.
//   W: (N, K/32) blocks of 34 bytes as GGUF stores them: f16 d at +0, i8 qs[32] at +2 (the 'gguf' layout reads them
//      in place, unaligned)
//   one block → four i16x8 vectors: qs[0..7], qs[8..15] from the first 16 bytes, qs[16..31] from the next 16
// The scale is read in either layout (kernel-lib.ts WeightLayout): inline f16 decoded in the kernel ('gguf', bytes
// identical to the file, 34 B/block) or pre-expanded to f32 at load ('split', 36 B/block, quants 16-byte aligned).
// 'split' is the default (cpu-matmul.ts DEFAULT_LAYOUT says why: one thread is instruction-bound, not byte-bound).

import type { BlockUnpacker } from './kernel-lib.ts';

export const Q8_0_UNPACK: BlockUnpacker = {
  bytes: 34,
  quantBytes: 32,
  unpack(c, ptr, offset, w, tmp) {
    c.get(ptr).v128_load(offset).tee(tmp).i16x8_extend_low_i8x16_s().set(w[0]);
    c.get(tmp).i16x8_extend_high_i8x16_s().set(w[1]);
    c.get(ptr).v128_load(offset + 16).tee(tmp).i16x8_extend_low_i8x16_s().set(w[2]);
    c.get(tmp).i16x8_extend_high_i8x16_s().set(w[3]);
  },
};
