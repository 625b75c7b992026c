// gemv-q4_0 (wasm SIMD128): y[n] = Σ_k W[n,k]·x[k] with W in GGUF q4_0 blocks, the CPU counterpart of
// shaders/matmul/gemv.wgsl with shaders/lib/weights/q4_0.wgsl, for the browser without a GPU adapter. x is quantized
// to q8_0 first (as llama.cpp's ggml_vec_dot_q4_0_q8_0), so each block is an int dot of (nibble − 8) with the i8
// quants of x, scaled by d_w·d_x.
//   W: (N, K/32) blocks of 18 bytes as GGUF stores them: f16 d at +0, u8 qs[16] at +2 ('gguf' reads them in place);
//      element j < 16 is the low nibble of qs[j], element 16 + j its high nibble; value = (nibble − 8)·d
// Two block dots (kernel-lib.ts BlockDot):
//   i16:     one block → four i16x8 vectors: (lo − 8) widened low/high = elements 0–15, (hi − 8) = elements 16–31
//   relaxed: the raw nibbles (0..15) are the i7 operand of the relaxed dot and x's i8 quants the signed one, so
//            Σ x·(nibble − 8) = Σ x·nibble − 8·Σx; the −8·Σx lanes come with x (the 'i8' slot's +32, computed once
//            per x block by the quantizer) and are added once per (row, token) by the loop nest (BlockDot.xTerm),
//            after the 4-row reduction in 'split4'. 'add' form: two i32x4.relaxed_dot_i8x16_i7x16_add_s; 'dot16'
//            form (engines whose add form is wrong, see cpu-matmul.ts): two i16x8.relaxed_dot_i8x16_i7x16_s summed
//            in i16 (pairs ≤ 2·15·127, so two fit), widened by the loop nest.
// The scale is inline f16 decoded in the kernel ('gguf', 18 B/block) or pre-expanded to f32 at load ('split' and
// 'split4', 20 B/block; 'split4' the default), as gemv-q8_0.ts says.

import { splat16, unsignedWeights, type WeightFormat } from './kernel-lib.ts';

export const Q4_0: WeightFormat = {
  bytes: 18,
  quantBytes: 16,
  unpackI16(c, ptr, offset, w, tmp) {
    // lo − 8 and hi − 8 are in −8..7, so i8 lanes hold them before widening
    c.get(ptr).v128_load(offset).tee(tmp).v128_const(splat16(0x0f)).v128_and().v128_const(splat16(8)).i8x16_sub().set(w[1]);
    c.get(w[1]).i16x8_extend_low_i8x16_s().set(w[0]);
    c.get(w[1]).i16x8_extend_high_i8x16_s().set(w[1]);
    // hi: a 16-bit shift (one psrlw) then the nibble mask, not i8x16.shr_u (which x64 lacks and V8 emulates)
    c.get(tmp).i32_const(4).i16x8_shr_u().v128_const(splat16(0x0f)).v128_and().v128_const(splat16(8)).i8x16_sub().set(w[3]);
    c.get(w[3]).i16x8_extend_low_i8x16_s().set(w[2]);
    c.get(w[3]).i16x8_extend_high_i8x16_s().set(w[3]);
  },
  relaxed: (form) => ({
    xLayout: 'i8',
    wRegs: 2,
    xRegs: 2,
    // 'add': the i32 lanes of two chained dots; 'dot16': two pmaddubsw summed in i16, lanes ≤ 2·2·15·127 < 2^13
    sum: form !== 'dot16' ? 'i32' : 'i16',
    xTerm: 32,
    unpackW(c, ptr, offset, w, tmp) {
      c.get(ptr).v128_load(offset).tee(tmp).v128_const(splat16(0x0f)).v128_and().set(w[0]);
      c.get(tmp).i32_const(4).i16x8_shr_u().v128_const(splat16(0x0f)).v128_and().set(w[1]);
    },
    loadX: unsignedWeights.loadX,
    dot(c, w, x) {
      if (form !== 'dot16') {
        unsignedWeights.dot(c, w, x);
        return;
      }
      c.get(x[0]).get(w[0]).i16x8_relaxed_dot_i8x16_i7x16_s().get(x[1]).get(w[1]).i16x8_relaxed_dot_i8x16_i7x16_s().i16x8_add();
    },
  }),
  relaxedExact: () => true,
  // 'split4w': v128 v < 4 holds bytes 4v..4v+3 of the group's 4 rows: low nibbles elements 4v.., high 16 + 4v..
  words: (form) => ({
    wRegs: 8,
    xRegs: 9,
    unpackW(c, pw, w, tmp) {
      for (let v = 0; v < 4; v++) {
        c.get(pw).v128_load(16 * v).tee(tmp).v128_const(splat16(0x0f)).v128_and().set(w[v]);
        c.get(tmp).i32_const(4).i16x8_shr_u().v128_const(splat16(0x0f)).v128_and().set(w[4 + v]);
      }
    },
    loadX: (c, px, x) => unsignedWeights.wordsLoadX(c, px, x, 32), // x[8] = the −8·Σx term
    dot(c, w, x) {
      if (form !== 'dot16') {
        unsignedWeights.wordsDot(c, w, x);
        return;
      }
      // pairs ≤ 2·127·15, so the eight dots add in i16 (≤ 30480) before one widening
      for (let j = 0; j < 8; j++) {
        c.get(x[j]).get(w[j]).i16x8_relaxed_dot_i8x16_i7x16_s();
        if (j > 0) c.i16x8_add();
      }
      c.i32x4_extadd_pairwise_i16x8_s().get(x[8]).i32x4_add();
    },
  }),
};
