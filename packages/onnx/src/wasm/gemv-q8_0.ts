// gemv-q8_0 (wasm SIMD128): y[n] = Σ_k W[n,k]·x[k] with W in GGUF q8_0 blocks, the CPU counterpart of
// shaders/matmul/gemv.wgsl with shaders/lib/weights/q8_0.wgsl, for the browser without a GPU adapter. As llama.cpp's
// CPU path does, x is first quantized to q8_0 (kernel-lib.ts emitQuantizeX), so each block is an int8·int8 dot in
// i32, scaled by d_w·d_x and accumulated in f32.
//   W: (N, K/32) blocks of 34 bytes as GGUF stores them: f16 d at +0, i8 qs[32] at +2 (the 'gguf' layout reads them
//      in place, unaligned)
// Two block dots (kernel-lib.ts BlockDot):
//   i16:     one block → four i16x8 vectors: qs[0..7], qs[8..15] from the first 16 bytes, qs[16..31] from the next 16
//   relaxed: the relaxed dot wants one operand in 0..127, so x is the i7 operand in two non-negative parts.
//            'add' form: x = x⁺ − x⁻ with x⁺ = max(x, 0), x⁻ = max(−x, 0) (both ≤ 127: q8_0 quants of x never reach
//            −128), written by the quantizer; w·x = Σ w·x⁺ − Σ w·x⁻, four i32x4.relaxed_dot_i8x16_i7x16_add_s and
//            one subtraction (in Chromium 156, 4–7% faster than llama.cpp's AVX2 sign trick, which needs two ops per
//            weight vector and token). 'u8' form (engines that compute the dot's second operand as unsigned bytes
//            exactly): the quants stored + 128 as that operand, two dots as q4_0's (U8_BLOCK). 'dot16' form (engines whose add form is
//            wrong): the sign trick, w·x = sign(w, x)·|x| with sign(w, x) = (w XOR m) − m, m = (x < 0 ? −1 : 0) per
//            byte; two i16x8.relaxed_dot_i8x16_i7x16_s, each widened by extadd_pairwise (pairs ≤ 2·127·127, so two
//            would overflow i16), summed. Exact unless a weight quant is −128 (its negation wraps): ggml's quantizer
//            never writes one, but a matrix holding one runs the i16 dot (relaxedExact, checked at load).
// The scale is read in any layout (kernel-lib.ts WeightLayout): inline f16 decoded in the kernel ('gguf', bytes
// identical to the file, 34 B/block) or pre-expanded to f32 at load ('split', and 'split4' with rows interleaved in
// fours: 36 B/block, quants 16-byte aligned). 'split4' is the default (cpu-matmul.ts DEFAULT_LAYOUTS says why).

import { loadVectors, unsignedWeights, type BlockDot, type WeightFormat, type WordDot } from './kernel-lib.ts';

const ZERO = new Uint8Array(16);

/**
 * The 'u8' form: the quants stored + 128 (cpu-matmul.ts weight) are the dot's unsigned operand and x's quants the
 * signed one, so Σ x·w = Σ x·(w + 128) − 128·Σx, the last from the x slot (+48) once per (row, token): two dots per
 * block, as q4_0's nibbles (gemv-q4_0.ts), against four with x⁺/x⁻. Exact for every quant, −128 included (a lane sums
 * four products, |x·(w + 128)| ≤ 127·255, without pmaddubsw's saturating pairs: the form is only probed true there).
 */
const U8_BLOCK: BlockDot = {
  xLayout: 'i8',
  wRegs: 2,
  xRegs: 2,
  sum: 'i32',
  xTerm: 48,
  unpackW: (c, ptr, offset, w) => loadVectors(c, ptr, offset, w),
  loadX: unsignedWeights.loadX,
  dot: unsignedWeights.dot,
};

/** The 'u8' form over 'split4w': words of x's quants splat against the group's words (quants + 128), −128·Σx added. */
const U8_WORDS: WordDot = {
  wRegs: 8,
  xRegs: 9,
  unpackW: (c, pw, w) => loadVectors(c, pw, 0, w),
  loadX: (c, px, x) => unsignedWeights.wordsLoadX(c, px, x, 48), // x[8] = the −128·Σx term
  dot: unsignedWeights.wordsDot,
};

export const Q8_0: WeightFormat = {
  bytes: 34,
  quantBytes: 32,
  unpackI16(c, ptr, offset, w, tmp) {
    c.get(ptr).v128_load(offset).tee(tmp).i16x8_extend_low_i8x16_s().set(w[0]);
    c.get(tmp).i16x8_extend_high_i8x16_s().set(w[1]);
    c.get(ptr).v128_load(offset + 16).tee(tmp).i16x8_extend_low_i8x16_s().set(w[2]);
    c.get(tmp).i16x8_extend_high_i8x16_s().set(w[3]);
  },
  relaxed: (form) => (form === 'u8' ? U8_BLOCK : {
    xLayout: 'i8',
    wRegs: 2,
    xRegs: 4,
    sum: 'i32',
    unpackW: (c, ptr, offset, w) => loadVectors(c, ptr, offset, w),
    loadX(c, px, x, tmp) {
      if (form === 'add') {
        // x[0..1] = x⁺ (elements 0–15, 16–31), x[2..3] = x⁻, as the quantizer wrote them
        for (let i = 0; i < 4; i++) c.get(px).v128_load(64 + 16 * i).set(x[i]);
        return;
      }
      // 'dot16': x[0..1] = |q| of elements 0–15, 16–31; x[2..3] = their sign masks (0 > q: one pcmpgtb)
      for (let h = 0; h < 2; h++) {
        c.get(px).v128_load(16 * h).tee(tmp).i8x16_abs().set(x[h]);
        c.v128_const(ZERO).get(tmp).i8x16_gt_s().set(x[2 + h]);
      }
    },
    dot(c, w, x) {
      // pmaddubsw's i16 pairs ≤ 2·127·127 < 2^15; lanes ≤ 8·127·127
      const signed = (h: number) => c.get(w[h]).get(x[2 + h]).v128_xor().get(x[2 + h]).i8x16_sub();
      if (form === 'add') {
        // Σ w·x⁺ − Σ w·x⁻: two dots of each half into lanes ≤ 8·128·127, one subtraction
        for (const o of [0, 2]) {
          c.get(w[1]).get(x[o + 1]);
          c.get(w[0]).get(x[o]).v128_const(ZERO).i32x4_relaxed_dot_i8x16_i7x16_add_s();
          c.i32x4_relaxed_dot_i8x16_i7x16_add_s();
        }
        c.i32x4_sub();
        return;
      }
      for (let h = 0; h < 2; h++) {
        signed(h);
        c.get(x[h]).i16x8_relaxed_dot_i8x16_i7x16_s().i32x4_extadd_pairwise_i16x8_s();
      }
      c.i32x4_add();
    },
  }),
  // 'split4w': v128 v < 8 holds bytes (elements) 4v..4v+3 of the group's 4 rows; x⁺ and x⁻ come word by word, each
  // splat from the x slot (+64, +96) as the dot needs it, so nothing of x is prepared. Exact for every quant, −128
  // included (pmaddubsw pairs ≥ 2·−128·127).
  words: (form) => (form === 'u8' ? U8_WORDS : {
    wRegs: 8,
    xRegs: 0,
    unpackW: (c, pw, w) => loadVectors(c, pw, 0, w),
    loadX() {},
    dot(c, w, _x, px) {
      const splat = (o: number, j: number) => c.get(px).v128_load32_splat(64 + 32 * o + 4 * j);
      if (form === 'add') {
        // four chains of four dots (their latency): (P₀ + P₁) − (N₀ + N₁)
        for (const o of [0, 1]) {
          for (const lo of [0, 4]) {
            for (let j = lo + 3; j >= lo; j--) {
              c.get(w[j]);
              splat(o, j);
            }
            c.v128_const(ZERO);
            for (let j = 0; j < 4; j++) c.i32x4_relaxed_dot_i8x16_i7x16_add_s();
          }
          c.i32x4_add();
        }
        c.i32x4_sub();
        return;
      }
      // pairs ≤ 2·128·127: each dot widened before the next
      for (const o of [0, 1]) {
        for (let j = 0; j < 8; j++) {
          c.get(w[j]);
          splat(o, j);
          c.i16x8_relaxed_dot_i8x16_i7x16_s().i32x4_extadd_pairwise_i16x8_s();
          if (j > 0) c.i32x4_add();
        }
      }
      c.i32x4_sub();
    },
  }),
  relaxedExact(blocks) {
    for (let o = 0; o < blocks.length; o += 34) {
      for (let j = 2; j < 34; j++) if (blocks[o + j] === 0x80) return false;
    }
    return true;
  },
};
