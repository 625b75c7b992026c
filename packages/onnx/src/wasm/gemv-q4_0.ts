// gemv-q4_0 (wasm SIMD128): y[n] = Σ_k W[n,k]·x[k] with W in GGUF q4_0 blocks, the CPU counterpart of
// shaders/matmul/gemv.wgsl with shaders/lib/weights/q4_0.wgsl, for the browser without a GPU adapter. x is quantized
// to q8_0 first (as llama.cpp's ggml_vec_dot_q4_0_q8_0), so each block is an int dot of (nibble − 8) with the i8
// quants of x, scaled by d_w·d_x.
//   W: (N, K/32) blocks of 18 bytes as GGUF stores them: f16 d at +0, u8 qs[16] at +2 ('gguf' reads them in place);
//      element j < 16 is the low nibble of qs[j], element 16 + j its high nibble; value = (nibble − 8)·d
//   one block → four i16x8 vectors: (lo − 8) widened low/high = elements 0–15, (hi − 8) = elements 16–31
// The scale is inline f16 decoded in the kernel ('gguf', 18 B/block) or pre-expanded to f32 at load ('split',
// 20 B/block, the default), as gemv-q8_0.ts says.

import { splat16, type BlockUnpacker } from './kernel-lib.ts';

export const Q4_0_UNPACK: BlockUnpacker = {
  bytes: 18,
  quantBytes: 16,
  unpack(c, ptr, offset, w, tmp) {
    // lo − 8 and hi − 8 are in −8..7, so i8 lanes hold them before widening
    c.get(ptr).v128_load(offset).tee(tmp).v128_const(splat16(0x0f)).v128_and().v128_const(splat16(8)).i8x16_sub().set(w[1]);
    c.get(w[1]).i16x8_extend_low_i8x16_s().set(w[0]);
    c.get(w[1]).i16x8_extend_high_i8x16_s().set(w[1]);
    // hi: a 16-bit shift (one psrlw) then the nibble mask, not i8x16.shr_u (which x64 lacks and V8 emulates)
    c.get(tmp).i32_const(4).i16x8_shr_u().v128_const(splat16(0x0f)).v128_and().v128_const(splat16(8)).i8x16_sub().set(w[3]);
    c.get(w[3]).i16x8_extend_low_i8x16_s().set(w[2]);
    c.get(w[3]).i16x8_extend_high_i8x16_s().set(w[3]);
  },
};
