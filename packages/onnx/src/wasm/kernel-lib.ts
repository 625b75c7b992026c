// What the wasm SIMD128 matmul kernels share (the CPU counterpart of shaders/lib/): the f16 → f32 scale decode, the
// activation quantizer (x → q8_0, as llama.cpp's CPU path quantizes x before an integer dot), the i16 block dot, and
// the tiled loop nest that gemv-q8_0.ts and gemv-q4_0.ts instantiate with their block dots. No entry points here;
// cpu-matmul.ts assembles the module.
//
// Quantized activations (xq, xd) are kept in an expanded layout of our own, since x is small and read N times. xq
// gives each 32-element block a 128-byte slot (4 bytes per element, so xq is (M, K) × 4 bytes in either layout):
//   xq 'i16': the q8_0 quants of x, widened to i16 so the i16 dot needs no extend on the x side; +64 unused
//   xq 'i8':  +0 the 32 quants as i8, +32 the i32 −8·Σq (q4_0's offset, see gemv-q4_0.ts), +36 zeros to +48,
//             +48 the i32 −128·Σq (q8_0's offset on the 'u8' form), +64 x⁺ = max(q, 0) and +96 x⁻ = max(−q, 0) as
//             i8 (q8_0's add form takes x as x⁺ − x⁻, see gemv-q8_0.ts); read by the relaxed-SIMD dots (and,
//             widened in the kernel, by the i16 dot)
//   xd: (M, K/32) f32 — each block's scale d = amax/127, rounded to f16 and back (ggml stores it as f16; rounding it
//                       here makes d_w·d_x the very product ggml's vec_dot forms)

import { Code, F32, I32, V128 } from './wasm-module.ts';

/**
 * Which relaxed-SIMD dot the relaxed kernels use: 'add' is i32x4.relaxed_dot_i8x16_i7x16_add_s (x64 V8: pmaddubsw +
 * pmaddwd + paddd, or vpdpbusd where it uses AVX-VNNI); 'dot16' is i16x8.relaxed_dot_i8x16_i7x16_s (pmaddubsw) widened
 * and summed by SIMD128 ops, for engines whose add form gives wrong sums (Node 20's V8 11.3 behind its flag: it drops
 * the accumulator and doubles the dot). In Chromium 150 'add' measured 10–25% faster than 'dot16'. 'u8' is the add
 * form where the engine computes an unsigned 8-bit second operand exactly (cpu-matmul.ts relaxedSimdForms), which
 * q8_0 takes as its quants + 128 (gemv-q8_0.ts); q4_0 runs it as 'add'.
 */
export type RelaxedForm = 'add' | 'dot16' | 'u8';

/** How x's quants sit in the xq scratch (see the header): one X_SLOT-byte slot per block either way. */
export type XLayout = 'i16' | 'i8';

/** Bytes of a block's slot in xq (the header). */
export const X_SLOT = 128;

/**
 * One way to form a block's exact integer dot Σ_j qw_j·qx_j: which x layout it reads, how many v128 locals the
 * unpacked weight block and the prepared x block take, and the code for each step. The loop nest unpacks a weight
 * block once per tile row and prepares an x block once per tile token, then calls `dot` for every (row, token).
 */
export interface BlockDot {
  readonly xLayout: XLayout;
  readonly wRegs: number;
  readonly xRegs: number;
  /**
   * What `dot` leaves: 'i32', an i32x4; 'i16', an i16x8 whose lanes are below 2^14 in magnitude, so two of them add
   * without overflow (the loop nest widens it with extadd_pairwise, in 'split4' after adding its lanes in pairs).
   */
  readonly sum: 'i32' | 'i16';
  /** Where set, the x slot holds at this offset an i32 the loop nest adds to every (row, token) dot (q4_0's −8·Σx). */
  readonly xTerm?: number;
  /** Reads the weight quants at local `ptr` + `offset` into locals `w[0..wRegs)`; `tmp` is a v128 scratch local. */
  unpackW(c: Code, ptr: number, offset: number, w: readonly number[], tmp: number): void;
  /** Reads the x slot at local `px` into locals `x[0..xRegs)`. */
  loadX(c: Code, px: number, x: readonly number[], tmp: number): void;
  /** Leaves a vector (see `sum`) whose lanes sum to the block's integer dot, less xTerm (each lane exact, below 2^24). */
  dot(c: Code, w: readonly number[], x: readonly number[]): void;
}

/** A GGUF weight format: its block size and its block dots. */
export interface WeightFormat {
  /** Bytes per 32-element block as GGUF stores it (f16 scale at +0, then the quants). */
  readonly bytes: number;
  /** Bytes of one block's quants alone. */
  readonly quantBytes: number;
  /** Emits code that reads the quants at local `ptr` + `offset` and sets locals `w[0..3]` to the block as four i16x8 vectors (elements 0–7, 8–15, 16–23, 24–31); `tmp` is a v128 scratch local. */
  unpackI16(c: Code, ptr: number, offset: number, w: readonly number[], tmp: number): void;
  /** The relaxed-SIMD dot over the 'i8' x layout, in either form (RelaxedForm). */
  relaxed(form: RelaxedForm): BlockDot;
  /** Whether the relaxed dot is exact for these GGUF blocks (q8_0: no quant is −128); else the i16 dot runs. */
  relaxedExact(blocks: Uint8Array): boolean;
  /** The relaxed-SIMD dot over 'split4w' (rows interleaved by 4-byte words) and the 'i8' x layout, in either form. */
  words(form: RelaxedForm): WordDot;
}

/**
 * A group's block dot over 'split4w': each v128 of weights holds one 4-byte word of each of the group's 4 rows, so a
 * relaxed dot of it with a splat of x's matching word leaves lane r = row r's partial dot: the 4 rows' dots come out
 * in the lanes of one vector with no transpose-add (emitReduce4's 6 shuffles and 3 adds per group, token and block).
 */
export interface WordDot {
  /** v128 locals a group's unpacked block takes (reused across a tile's tokens). */
  readonly wRegs: number;
  /** v128 locals a token's prepared x block takes (shared by a tile's groups when it has one token). */
  readonly xRegs: number;
  /** Reads the group's block of quants (4·quantBytes bytes) at local `pw` into `w[0..wRegs)`. */
  unpackW(c: Code, pw: number, w: readonly number[], tmp: number): void;
  /** Reads the x slot at local `px` into `x[0..xRegs)`. */
  loadX(c: Code, px: number, x: readonly number[], tmp: number): void;
  /** Leaves the i32x4 whose lane r is row r's exact integer dot of the block (with q4_0's −8·Σx); `px` is the x slot. */
  dot(c: Code, w: readonly number[], x: readonly number[], px: number): void;
}

/**
 * The i16 dot: weight and x as four i16x8 vectors each, four i32x4.dot_i16x8_s (pmaddwd) summed. Exact: a lane is
 * at most 8·128·127. Over the 'i8' x layout the x block is widened in the kernel (two loads, four extends).
 */
export function i16Dot(f: WeightFormat, xLayout: XLayout): BlockDot {
  return {
    xLayout,
    wRegs: 4,
    xRegs: 4,
    sum: 'i32',
    unpackW: (c, ptr, offset, w, tmp) => f.unpackI16(c, ptr, offset, w, tmp),
    loadX(c, px, x, tmp) {
      if (xLayout === 'i16') {
        for (let i = 0; i < 4; i++) c.get(px).v128_load(16 * i).set(x[i]);
        return;
      }
      for (let h = 0; h < 2; h++) {
        c.get(px).v128_load(16 * h).tee(tmp).i16x8_extend_low_i8x16_s().set(x[2 * h]);
        c.get(tmp).i16x8_extend_high_i8x16_s().set(x[2 * h + 1]);
      }
    },
    dot(c, w, x) {
      for (let i = 0; i < 4; i++) {
        c.get(w[i]).get(x[i]).i32x4_dot_i16x8_s();
        if (i > 0) c.i32x4_add();
      }
    },
  };
}

/**
 * Where a weight matrix's scales live (W is (N, K/32) blocks either way):
 *   'gguf':   the blocks as the file stores them, f16 scale inline; decoded in the kernel (emitF16ToF32)
 *   'split':  repacked at load: the scales as f32, (N, K/32), then (from the next 16-byte boundary) the quants,
 *             (N, K/32) × quantBytes. 4/2 more bytes per block (q4_0 20 B against 18, q8_0 36 against 34), but a
 *             block's scale is one f32 load instead of a dozen scalar ops, and the quants are 16-byte aligned.
 *   'split4': 'split' with the rows interleaved in groups of 4 (N padded to a multiple of 4 with zero rows): the
 *             scales (⌈N/4⌉, K/32, 4) f32, then the quants (⌈N/4⌉, K/32, 4) × quantBytes. A group's block is one
 *             pointer with static offsets and its 4 scales one v128 load, and the 4 rows' dots are reduced into the
 *             4 lanes of one vector (emitMatmul4), so the f32 scaling is one vector op per 4 (row, token) pairs.
 *   'split4w': 'split4' with a group's block of quants interleaved by 4-byte words: byte j of row r at
 *              (j >> 2)·16 + r·4 + (j & 3) (WordDot). The relaxed kernels' own; the i16 dots do not read it.
 */
export type WeightLayout = 'gguf' | 'split' | 'split4' | 'split4w';

/** Whether a layout interleaves rows in fours ('split4', 'split4w'). */
export const interleaved = (layout: WeightLayout): boolean => layout === 'split4' || layout === 'split4w';

/** Bytes a (N, K) matrix takes in `layout`. */
export function layoutBytes(u: WeightFormat, layout: WeightLayout, n: number, k: number): number {
  const blocks = ((interleaved(layout) ? Math.ceil(n / 4) * 4 : n) * k) / 32;
  return layout === 'gguf' ? blocks * u.bytes : Math.ceil((blocks * 4) / 16) * 16 + blocks * u.quantBytes;
}

/** Leaves on the stack the f32 value of the f16 at `ptr + offset` (exact: normal, subnormal, ±0, ±inf, NaN). */
export function emitF16ToF32(c: Code, ptr: number, offset: number, h: number, bits: number): void {
  // bits = |h| << 13 puts the f16 exponent and mantissa at the f32's; as an f32 that is the value times 2^-112
  // (subnormal halves become subnormal floats, still exact), so one multiply by 2^112 rebiases both cases.
  c.get(ptr).i32_load16_u(offset).set(h);
  c.get(h).i32_const(0x7fff).i32_and().i32_const(13).i32_shl().set(bits);
  c.get(bits).i32_const(0x7f800000).i32_or().f32_reinterpret_i32(); // exponent 31: inf / NaN
  c.get(bits).f32_reinterpret_i32().f32_const(2 ** 112).f32_mul();
  c.get(h).i32_const(0x7c00).i32_and().i32_const(0x7c00).i32_eq();
  c.select();
  c.get(h).i32_const(16).i32_shl().f32_reinterpret_i32().f32_copysign();
}

/**
 * The add-form relaxed dot of x's signed quants (the 'i8' slot) against weights that are the dot's unsigned operand:
 * q4_0's nibbles (0..15) and, on the 'u8' form, q8_0's quants + 128 (0..255). The offset this leaves out (−8·Σx,
 * −128·Σx) is the x slot's xTerm, which the loop nest adds (BlockDot) or `wordsLoadX` puts in x[8] (WordDot).
 */
export const unsignedWeights = {
  /** x[0..1]: the slot's 32 quants. */
  loadX(c: Code, px: number, x: readonly number[]): void {
    for (let i = 0; i < 2; i++) c.get(px).v128_load(16 * i).set(x[i]);
  },
  /** Two chained dots of x[h] with w[h], from zero. */
  dot(c: Code, w: readonly number[], x: readonly number[]): void {
    c.get(x[1]).get(w[1]).get(x[0]).get(w[0]).v128_const(new Uint8Array(16));
    c.i32x4_relaxed_dot_i8x16_i7x16_add_s().i32x4_relaxed_dot_i8x16_i7x16_add_s();
  },
  /** 'split4w': x[j] = x's word j (elements 4j..4j+3) in every lane, x[8] = the slot's i32 at `xTerm`. */
  wordsLoadX(c: Code, px: number, x: readonly number[], xTerm: number): void {
    for (let j = 0; j < 8; j++) c.get(px).v128_load32_splat(4 * j).set(x[j]);
    c.get(px).v128_load32_splat(xTerm).set(x[8]);
  },
  /** 'split4w': the 8 words' dots in two chains of four (the dot's latency), the first from x[8], added. */
  wordsDot(c: Code, w: readonly number[], x: readonly number[]): void {
    for (const [lo, init] of [[0, true], [4, false]] as const) {
      for (let j = lo + 3; j >= lo; j--) c.get(x[j]).get(w[j]);
      if (init) c.get(x[8]);
      else c.v128_const(new Uint8Array(16));
      for (let j = 0; j < 4; j++) c.i32x4_relaxed_dot_i8x16_i7x16_add_s();
    }
    c.i32x4_add();
  },
};

/** v128 loads of `w.length` consecutive vectors at local `ptr` + `offset` into w (weights used as stored). */
export function loadVectors(c: Code, ptr: number, offset: number, w: readonly number[]): void {
  for (let v = 0; v < w.length; v++) c.get(ptr).v128_load(offset + 16 * v).set(w[v]);
}

/** v128.const bytes: the same byte in all 16 lanes. */
export const splat16 = (b: number): Uint8Array => new Uint8Array(16).fill(b);
const f32x4Bytes = (v: number) => new Uint8Array(new Float32Array([v, v, v, v]).buffer);
const u32x4Bytes = (v: number) => new Uint8Array(new Uint32Array([v, v, v, v]).buffer);

/**
 * quantize_x(x, xq, xd, blocks): quantizes `blocks` consecutive 32-element blocks of f32 x into the (xq, xd) layout
 * above, bit-exact with ggml's quantize_row_q8_0_ref (codecs.ts quantize): d = amax/127 in f32, id = 1/d (0 when
 * d = 0), q = roundf(x·id) with ties away from zero, and the stored scale is f16(d). M rows of x are M·K/32 blocks.
 */
export function emitQuantizeX(c: Code, xLayout: XLayout): void {
  const [x, xq, xd, blocks] = [0, 1, 2, 3];
  const amax = c.local(V128);
  const idv = c.local(V128);
  const v = c.local(V128);
  const t = c.local(V128);
  const lo = c.local(V128);
  const q = c.local(V128);
  const h = [c.local(V128), c.local(V128)];
  const sum = c.local(V128);
  const d = c.local(F32);
  const bitsI = c.local(I32);
  const r = c.local(F32);
  c.get(blocks).i32_eqz().if_().return_().end();
  c.loop();
  // amax over the block's 8 vectors, then across lanes
  c.get(x).v128_load(0).f32x4_abs().set(amax);
  for (let j = 1; j < 8; j++) c.get(amax).get(x).v128_load(16 * j).f32x4_abs().f32x4_pmax().set(amax);
  c.get(amax).f32x4_extract_lane(0).get(amax).f32x4_extract_lane(1).f32_max();
  c.get(amax).f32x4_extract_lane(2).get(amax).f32x4_extract_lane(3).f32_max().f32_max();
  c.f32_const(127).f32_div().set(d);
  // id = d ? 1/d : 0
  c.f32_const(1).get(d).f32_div().f32_const(0).get(d).f32_const(0).f32_ne().select().f32x4_splat().set(idv);
  // xd = f16(d) as f32, round to nearest even: below 2^-14 the f16 is subnormal with quantum 2^-24, which adding and
  // subtracting 0.5 rounds to; above, drop 13 mantissa bits with the round-half-even carry; past 65504 it is inf.
  c.get(d).f32_const(0.5).f32_add().f32_const(0.5).f32_sub();
  c.get(d).i32_reinterpret_f32().tee(bitsI).i32_const(0xfff).i32_add();
  c.get(bitsI).i32_const(13).i32_shr_u().i32_const(1).i32_and().i32_add().i32_const(0xffffe000).i32_and().f32_reinterpret_i32();
  c.get(d).f32_const(2 ** -14).f32_lt().select().set(r);
  c.get(xd).f32_const(Infinity).get(r).get(r).f32_const(65504).f32_gt().select().f32_store(0);
  // q = roundf(x·id): trunc, then ±1 where the dropped fraction is ≥ 0.5 (exact: |v − trunc v| is exact in f32)
  for (let j = 0; j < 8; j++) {
    c.get(x).v128_load(16 * j).get(idv).f32x4_mul().set(v);
    c.get(v).f32x4_trunc().set(t);
    c.get(t);
    c.get(v).v128_const(u32x4Bytes(0x80000000)).v128_and().v128_const(f32x4Bytes(1)).v128_or();
    c.get(v).get(t).f32x4_sub().f32x4_abs().v128_const(f32x4Bytes(0.5)).f32x4_ge().v128_and();
    // to i32: |q| ≤ 127 is an integer, so adding 1.5·2^23 puts it in the low mantissa bits, and subtracting the
    // constant's bits leaves it (two ops; trunc_sat's saturation rules cost x64 several more)
    c.f32x4_add().v128_const(f32x4Bytes(12582912)).f32x4_add().v128_const(u32x4Bytes(0x4b400000)).i32x4_sub().set(q);
    if (xLayout === 'i16') storeI16(c, xq, j, q, lo);
    else storeI8(c, xq, j, q, lo, h, sum);
  }
  c.get(x).i32_const(128).i32_add().set(x);
  c.get(xq).i32_const(X_SLOT).i32_add().set(xq);
  c.get(xd).i32_const(4).i32_add().set(xd);
  c.get(blocks).i32_const(1).i32_sub().tee(blocks).br_if(0);
  c.end();
}

/** 'i16' xq: quants 4j..4j+3 (i32x4 `q`) narrowed to i16 in pairs of vectors (|q| ≤ 127, so nothing saturates). */
function storeI16(c: Code, xq: number, j: number, q: number, lo: number): void {
  if (j % 2 === 0) c.get(q).set(lo);
  else c.get(xq).get(lo).get(q).i16x8_narrow_i32x4_s().v128_store(16 * (j >> 1));
}

/** 'i8' xq: quants narrowed to i8 in fours of vectors, with their x⁺ and x⁻; after the last, −8·Σq at +32 and zeros to +48. */
function storeI8(c: Code, xq: number, j: number, q: number, lo: number, h: readonly number[], sum: number): void {
  if (j === 0) c.get(q).set(sum);
  else c.get(sum).get(q).i32x4_add().set(sum);
  if (j % 2 === 0) {
    c.get(q).set(lo);
    return;
  }
  c.get(lo).get(q).i16x8_narrow_i32x4_s().set(h[(j >> 1) % 2]);
  if (j % 4 === 3) {
    const at = 16 * (j >> 2);
    c.get(xq).get(h[0]).get(h[1]).i8x16_narrow_i16x8_s().tee(lo).v128_store(at);
    // x⁺ = max(q, 0) at +64, x⁻ = x⁺ − q at +96 (|q| ≤ 127: both in 0..127)
    c.get(xq).get(lo).v128_const(new Uint8Array(16)).i8x16_max_s().tee(h[0]).v128_store(64 + at);
    c.get(xq).get(h[0]).get(lo).i8x16_sub().v128_store(96 + at);
  }
  if (j === 7) {
    c.get(xq).v128_const(new Uint8Array(16)).v128_store(32);
    c.get(xq).i32_const(0);
    for (let l = 0; l < 4; l++) c.get(sum).i32x4_extract_lane(l).i32_sub();
    c.i32_const(3).i32_shl().i32_store(32);
    c.get(xq).get(xq).i32_load(32).i32_const(4).i32_shl().i32_store(48); // −128·Σq
  }
}

/**
 * The matmul loop nest, params (w, xq, xd, y, n, k, m, r0, r1): y[t, r] = Σ_b d_w[r,b]·d_x[t,b]·Σ_j qw[r,b,j]·qx[t,b,j]
 * for the rows r0 ≤ r < r1 (0 and N for all of them; threads take parts).
 *   w: (N, K/32) blocks of format `f`, stored in `layout`   xq, xd: (M, K) and (M, K/32), see above   y: (M, N) f32
 * The N × M output is covered by tiles of R rows × T tokens: R > 1 reuses each prepared x block across R weight
 * rows, T > 1 reuses each unpacked weight block across T tokens. Ragged edges fall back to R × 1, 1 × T and 1 × 1
 * tiles (rows in steps of R then 1; per row group, tokens in steps of T then 1). Per tile, each (row, token) keeps an
 * f32x4 of partial sums: a block's integer dot (`dot`, exact in i32) is converted to f32 and scaled by d_w·d_x, as
 * ggml's AVX vec_dot does; the four lanes are summed once at the end.
 */
export function emitMatmul(c: Code, f: WeightFormat, dot: BlockDot, layout: WeightLayout, R: number, T: number): void {
  if (!(Number.isInteger(R) && Number.isInteger(T) && R >= 1 && T >= 1 && R * T <= 16)) throw new RangeError(`tiles take 1 ≤ R·T ≤ 16; got ${R}×${T}`);
  const [w, xq, xd, y, n, k, m, r0, r1] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const v128s = (count: number) => Array.from({ length: count }, () => c.local(V128));
  const i32s = (count: number) => Array.from({ length: count }, () => c.local(I32));
  const L: Locals = {
    nb: c.local(I32), // K/32
    rb: c.local(I32), // bytes per weight row ('gguf') or of its quants ('split')
    qbase: c.local(I32), // 'split': where the quants start
    row: c.local(I32),
    tok: c.local(I32),
    b: c.local(I32),
    h: c.local(I32),
    bits: c.local(I32),
    dx: c.local(V128),
    xt: c.local(V128),
    tmp: c.local(V128),
    dw: v128s(R),
    pw: i32s(R),
    ps: i32s(R),
    px: i32s(T),
    pd: i32s(T),
    // T = 1 unpacks one row at a time into wv[0]; T > 1 unpacks all R rows first (each is reused across T tokens)
    wv: Array.from({ length: T === 1 ? 1 : R }, () => v128s(dot.wRegs)),
    xv: v128s(dot.xRegs),
    acc: v128s(R * T),
  };
  c.get(k).i32_const(5).i32_shr_u().tee(L.nb).i32_const(layout === 'gguf' ? f.bytes : f.quantBytes).i32_mul().set(L.rb);
  if (layout === 'split') c.get(w).get(n).get(L.nb).i32_mul().i32_const(4).i32_mul().i32_const(15).i32_add().i32_const(-16).i32_and().i32_add().set(L.qbase);
  c.get(r0).set(L.row);
  const p = { w, xq, xd, y, n, k };
  for (const rs of R > 1 ? [R, 1] : [1]) {
    c.block().loop();
    c.get(L.row).i32_const(rs).i32_add().get(r1).i32_gt_u().br_if(1);
    c.i32_const(0).set(L.tok);
    for (const ts of T > 1 ? [T, 1] : [1]) {
      c.block().loop();
      c.get(L.tok).i32_const(ts).i32_add().get(m).i32_gt_u().br_if(1);
      emitTile(c, f, dot, layout, L, p, rs, ts);
      c.get(L.tok).i32_const(ts).i32_add().set(L.tok);
      c.br(0).end().end();
    }
    c.get(L.row).i32_const(rs).i32_add().set(L.row);
    c.br(0).end().end();
  }
}

/** What a tile's token side needs of either tiling's locals: the tile's first token, blocks per row, the block counter. */
type TokenLocals = { tok: number; nb: number; b: number; px: number[]; pd: number[] };

/** px[t] = xq + (tok + t)·nb·X_SLOT and pd[t] = xd + (tok + t)·4·nb: where each of the tile's T tokens' quantized x starts. */
function emitTokenPointers(c: Code, L: TokenLocals, p: { xq: number; xd: number }, T: number): void {
  for (let t = 0; t < T; t++) {
    c.get(p.xq).get(L.tok).i32_const(t).i32_add().get(L.nb).i32_mul().i32_const(X_SLOT).i32_mul().i32_add().set(L.px[t]);
    c.get(p.xd).get(L.tok).i32_const(t).i32_add().get(L.nb).i32_mul().i32_const(2).i32_shl().i32_add().set(L.pd[t]);
  }
}

/** The end of a tile's block loop: each token's x one block on (X_SLOT bytes of quants, 4 of scale), then the next block. */
function emitNextBlock(c: Code, L: TokenLocals, T: number): void {
  for (let t = 0; t < T; t++) {
    c.get(L.px[t]).i32_const(X_SLOT).i32_add().set(L.px[t]);
    c.get(L.pd[t]).i32_const(4).i32_add().set(L.pd[t]);
  }
  c.get(L.b).i32_const(1).i32_sub().tee(L.b).br_if(0);
  c.end();
}

interface Locals {
  nb: number; rb: number; qbase: number; row: number; tok: number; b: number; h: number; bits: number; dx: number; xt: number; tmp: number;
  dw: number[]; pw: number[]; ps: number[]; px: number[]; pd: number[]; wv: number[][]; xv: number[]; acc: number[];
}

function emitTile(c: Code, f: WeightFormat, dot: BlockDot, layout: WeightLayout, L: Locals, p: { w: number; xq: number; xd: number; y: number; n: number; k: number }, R: number, T: number): void {
  // pointers: pw[r] = w + (row + r)·rb ('gguf'; 'split': qbase + (row + r)·rb and ps[r] = w + (row + r)·4·nb);
  // px[t] = xq + (tok + t)·2K; pd[t] = xd + (tok + t)·4·nb
  const split = layout === 'split';
  const qOffset = split ? 0 : 2;
  for (let r = 0; r < R; r++) {
    c.get(split ? L.qbase : p.w).get(L.row).i32_const(r).i32_add().get(L.rb).i32_mul().i32_add().set(L.pw[r]);
    if (split) c.get(p.w).get(L.row).i32_const(r).i32_add().get(L.nb).i32_mul().i32_const(2).i32_shl().i32_add().set(L.ps[r]);
  }
  emitTokenPointers(c, L, p, T);
  const acc = (r: number, t: number) => L.acc[r * T + t];
  for (let i = 0; i < R * T; i++) c.v128_const(new Uint8Array(16)).set(L.acc[i]);
  c.get(L.nb).set(L.b);
  c.loop();
  // the scales splatted to f32x4 (one broadcast load each in 'split'), so d_w·d_x is one vector multiply per pair
  const scale = (r: number) => {
    if (split) c.get(L.ps[r]).v128_load32_splat(0);
    else {
      emitF16ToF32(c, L.pw[r], 0, L.h, L.bits);
      c.f32x4_splat();
    }
    c.set(L.dw[r]);
  };
  // acc(r, t) += f32(dot(w, x)) · (d_w·d_x), with x (token t) prepared in xv and d_x in dx
  const dotInto = (r: number, t: number, wv: readonly number[]) => {
    c.get(acc(r, t));
    dot.dot(c, wv, L.xv);
    if (dot.sum === 'i16') c.i32x4_extadd_pairwise_i16x8_s();
    if (dot.xTerm !== undefined) c.get(L.xt).i32x4_add();
    c.f32x4_convert_i32x4_s();
    c.get(L.dw[r]).get(L.dx).f32x4_mul().f32x4_mul();
    c.f32x4_add().set(acc(r, t));
  };
  const loadX = (t: number) => {
    dot.loadX(c, L.px[t], L.xv, L.tmp);
    if (dot.xTerm !== undefined) c.get(L.px[t]).v128_load32_zero(dot.xTerm).set(L.xt);
    c.get(L.pd[t]).v128_load32_splat(0).set(L.dx);
  };
  if (T === 1) {
    loadX(0);
    for (let r = 0; r < R; r++) {
      scale(r);
      dot.unpackW(c, L.pw[r], qOffset, L.wv[0], L.tmp);
      dotInto(r, 0, L.wv[0]);
    }
  } else {
    for (let r = 0; r < R; r++) {
      scale(r);
      dot.unpackW(c, L.pw[r], qOffset, L.wv[r], L.tmp);
    }
    for (let t = 0; t < T; t++) {
      loadX(t);
      for (let r = 0; r < R; r++) dotInto(r, t, L.wv[r]);
    }
  }
  for (let r = 0; r < R; r++) {
    c.get(L.pw[r]).i32_const(split ? f.quantBytes : f.bytes).i32_add().set(L.pw[r]);
    if (split) c.get(L.ps[r]).i32_const(4).i32_add().set(L.ps[r]);
  }
  emitNextBlock(c, L, T);
  // y[(tok + t)·N + row + r] = the four lanes of acc(r, t), summed
  for (let r = 0; r < R; r++) {
    for (let t = 0; t < T; t++) {
      c.get(p.y).get(L.tok).i32_const(t).i32_add().get(p.n).i32_mul().get(L.row).i32_add().i32_const(r).i32_add().i32_const(2).i32_shl().i32_add();
      const a = acc(r, t);
      c.get(a).f32x4_extract_lane(0).get(a).f32x4_extract_lane(1).f32_add();
      c.get(a).f32x4_extract_lane(2).f32_add().get(a).f32x4_extract_lane(3).f32_add();
      c.f32_store(0);
    }
  }
}

/**
 * The matmul loop nest over a 'split4' matrix, params as emitMatmul's (r0 a multiple of 4): tiles of S row groups (4 rows each) × T
 * tokens. The S groups of a tile lie far apart (S weight streams advance together: emitStreamLoops); each token tile
 * is T wide, then the M mod T tokens left run as one tile of that width. Per block, each row's dot is an i32x4 whose
 * lanes sum to the row's integer dot; a group's 4 rows' vectors are reduced (a 4×4 transpose-add, 6 shuffles and 3
 * adds, exact in i32) into one vector whose lane r is row r's dot, converted to f32 and scaled by the group's 4
 * scales times d_x, into acc (lane r = y[t, row + r]). T = 1 unpacks one row at a time; T > 1 unpacks a group's 4
 * rows once and reuses them across its T tokens. `touch` > 0 (bytes) reads each stream's weights that far ahead once
 * per block: a touch that starts the next lines' fetch from memory, for tiles whose compute per byte is high enough
 * that the hardware's prefetch falls behind (cpu-matmul.ts DEFAULT_TILES); the host keeps that much memory past its
 * last allocation.
 */
export function emitMatmul4(c: Code, f: WeightFormat, dot: BlockDot | WordDot, T: number, streams = 1, touch = 0): void {
  if (!(Number.isInteger(T) && Number.isInteger(streams) && T >= 1 && streams >= 1 && T * streams <= 8)) throw new RangeError(`'split4' tiles take 1 ≤ streams·T ≤ 8 (row groups × tokens); got ${streams}×${T}`);
  const [w, xq, xd, y, n, k, m, r0, r1] = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const v128s = (count: number) => Array.from({ length: count }, () => c.local(V128));
  const L: Locals4 = {
    nb: c.local(I32),
    qbase: c.local(I32),
    row: c.local(I32),
    rowS: Array.from({ length: streams }, () => c.local(I32)),
    part: c.local(I32),
    end: c.local(I32),
    tok: c.local(I32),
    b: c.local(I32),
    pw: Array.from({ length: streams }, () => c.local(I32)),
    ps: Array.from({ length: streams }, () => c.local(I32)),
    px: Array.from({ length: T }, () => c.local(I32)),
    pd: Array.from({ length: T }, () => c.local(I32)),
    ws: v128s(streams),
    dx: c.local(V128),
    tmp: c.local(V128),
    wv: Array.from({ length: T === 1 || 'sum' in dot === false ? 1 : 4 }, () => v128s(dot.wRegs)),
    xv: v128s(dot.xRegs),
    d: v128s(4),
    acc: v128s(T * streams),
  };
  // qbase = w + the scales, (⌈N/4⌉·4·nb) f32, rounded up to 16 bytes
  c.get(k).i32_const(5).i32_shr_u().set(L.nb);
  c.get(w).get(n).i32_const(3).i32_add().i32_const(-4).i32_and().get(L.nb).i32_mul().i32_const(4).i32_mul().i32_const(15).i32_add().i32_const(-16).i32_and().i32_add().set(L.qbase);
  emitStreamLoops(c, f, dot, L, { w, xq, xd, y, n, k }, { m, r0, r1 }, streams, T, touch);
}

/**
 * The order over S streams: the G row groups of rows r0..r1 split into S parts of P = ⌊G/S⌋ groups; the part's
 * group g runs beside groups g + P, g + 2P, … (S weight streams far apart in memory advance together and share each
 * x block), then the G − S·P last groups one by one; per tile, the tokens in tiles of T, then the rest as one tile (the tile's
 * weights stay in L1/L2 meanwhile). Measured on the 151669×576 head read from memory (Node 20): 4 streams 1.5–1.7×
 * faster than 1 at decode; from cache, alike (cpu-matmul.ts DEFAULT_TILES).
 */
function emitStreamLoops(c: Code, f: WeightFormat, dot: BlockDot | WordDot, L: Locals4, p: Params4, { m, r0, r1 }: { m: number; r0: number; r1: number }, S: number, T: number, touch: number): void {
  const eachTokenTile = (rows: readonly number[]) => {
    c.i32_const(0).set(L.tok);
    for (const ts of Array.from({ length: T }, (_, i) => T - i)) {
      c.block().loop();
      c.get(L.tok).i32_const(ts).i32_add().get(m).i32_gt_u().br_if(1);
      if ('sum' in dot) emitTile4(c, f, dot, L, p, rows, ts, touch);
      else emitTile4w(c, f, dot, L, p, rows, ts, touch);
      c.get(L.tok).i32_const(ts).i32_add().set(L.tok);
      c.br(0).end().end();
    }
  };
  // part = 4·P rows, the first stream's from r0 to end
  c.get(r1).get(r0).i32_sub().i32_const(3).i32_add().i32_const(2).i32_shr_u().i32_const(S).i32_div_u().i32_const(2).i32_shl().set(L.part);
  c.get(r0).tee(L.rowS[0]).get(L.part).i32_add().set(L.end);
  c.block().loop();
  c.get(L.rowS[0]).get(L.end).i32_ge_u().br_if(1);
  for (let s = 1; s < S; s++) c.get(L.rowS[s - 1]).get(L.part).i32_add().set(L.rowS[s]);
  eachTokenTile(L.rowS);
  c.get(L.rowS[0]).i32_const(4).i32_add().set(L.rowS[0]);
  c.br(0).end().end();
  if (S === 1) return;
  // the groups past S parts, one by one
  c.get(r0).get(L.part).i32_const(S).i32_mul().i32_add().set(L.row);
  c.block().loop();
  c.get(L.row).get(r1).i32_ge_u().br_if(1);
  eachTokenTile([L.row]);
  c.get(L.row).i32_const(4).i32_add().set(L.row);
  c.br(0).end().end();
}

interface Locals4 {
  nb: number; qbase: number; row: number; rowS: number[]; part: number; end: number; tok: number; b: number; pw: number[]; ps: number[];
  px: number[]; pd: number[]; ws: number[]; dx: number; tmp: number; wv: number[][]; xv: number[]; d: number[]; acc: number[];
}

const lanes32 = (...l: number[]) => l.flatMap((i) => [4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3]);

/** Leaves the i32x4 whose lane r is the sum of the lanes of d[r] (a transpose-add; x64: punpck{l,h}{dq,qdq} + paddd). */
function emitReduce4(c: Code, d: readonly number[], tmp: number): void {
  const pairSum = (a: number, b: number) => {
    c.get(a).get(b).i8x16_shuffle(lanes32(0, 4, 1, 5));
    c.get(a).get(b).i8x16_shuffle(lanes32(2, 6, 3, 7)).i32x4_add(); // [a0+a2, b0+b2, a1+a3, b1+b3]
  };
  pairSum(d[0], d[1]);
  c.set(tmp);
  pairSum(d[2], d[3]);
  c.set(d[3]);
  c.get(tmp).get(d[3]).i8x16_shuffle(lanes32(0, 1, 4, 5));
  c.get(tmp).get(d[3]).i8x16_shuffle(lanes32(2, 3, 6, 7)).i32x4_add();
}

/**
 * emitReduce4 for i16x8 dots (BlockDot.sum 'i16'): rows 0 and 1 (2 and 3) interleaved in i32 pairs and added in i16
 * (lanes < 2^15: each is below 2^14), widened with extadd_pairwise, then the i64 halves of the two added. 4 shuffles,
 * 2 extadds and 3 adds against emitReduce4's 6 shuffles and 3 adds after 4 extadds.
 */
function emitReduce4x16(c: Code, d: readonly number[], tmp: number): void {
  const pairSum = (a: number, b: number) => {
    c.get(a).get(b).i8x16_shuffle(lanes32(0, 4, 1, 5));
    c.get(a).get(b).i8x16_shuffle(lanes32(2, 6, 3, 7)).i16x8_add().i32x4_extadd_pairwise_i16x8_s();
  };
  pairSum(d[0], d[1]);
  c.set(tmp);
  pairSum(d[2], d[3]);
  c.set(d[3]);
  c.get(tmp).get(d[3]).i8x16_shuffle(lanes32(0, 1, 4, 5));
  c.get(tmp).get(d[3]).i8x16_shuffle(lanes32(2, 3, 6, 7)).i32x4_add();
}

type Params4 = { w: number; xq: number; xd: number; y: number; n: number; k: number };

/**
 * A 'split4' tile's start: each group's weight and scale pointers, each token's x pointers, the accumulators zeroed;
 * then the block loop opened, with each group's 4 scales loaded into ws[g] and the weights `touch` bytes on touched.
 */
function emitTileOpen4(c: Code, f: WeightFormat, L: Locals4, p: Params4, rows: readonly number[], T: number, touch: number): void {
  // per group g (first row in local rows[g]): pw = qbase + row·nb·qb (group·4·nb·qb), ps = w + row·nb·4
  for (let g = 0; g < rows.length; g++) {
    c.get(L.qbase).get(rows[g]).get(L.nb).i32_mul().i32_const(f.quantBytes).i32_mul().i32_add().set(L.pw[g]);
    c.get(p.w).get(rows[g]).get(L.nb).i32_mul().i32_const(2).i32_shl().i32_add().set(L.ps[g]);
  }
  emitTokenPointers(c, L, p, T);
  for (let i = 0; i < rows.length * T; i++) c.v128_const(new Uint8Array(16)).set(L.acc[i]);
  c.get(L.nb).set(L.b);
  c.loop();
  for (let g = 0; g < rows.length; g++) c.get(L.ps[g]).v128_load(0).set(L.ws[g]);
  emitTouch(c, f, L, rows.length, touch);
}

/** One read per 64-byte line of each group's block of quants and one of its scales, `touch` bytes on (values unused). */
function emitTouch(c: Code, f: WeightFormat, L: Locals4, G: number, touch: number): void {
  if (!touch) return;
  for (let g = 0; g < G; g++) {
    for (let o = 0; o < 4 * f.quantBytes; o += 64) c.get(L.pw[g]).i32_load(touch + o).drop();
    c.get(L.ps[g]).i32_load(touch >> 2).drop();
  }
}

/** A 'split4' tile's end: the pointers one block on, the block loop closed, acc(g, t) stored into y. */
function emitTileClose4(c: Code, f: WeightFormat, L: Locals4, p: Params4, rows: readonly number[], T: number): void {
  const G = rows.length;
  for (let g = 0; g < G; g++) {
    c.get(L.pw[g]).i32_const(4 * f.quantBytes).i32_add().set(L.pw[g]);
    c.get(L.ps[g]).i32_const(16).i32_add().set(L.ps[g]);
  }
  emitNextBlock(c, L, T);
  // y[(tok + t)·N + row .. row + 3] = acc(g, t): one store, or lane by lane in the last, partial group
  for (let g = 0; g < G; g++) {
    for (let t = 0; t < T; t++) {
      const acc = L.acc[g * T + t];
      const addr = () => c.get(p.y).get(L.tok).i32_const(t).i32_add().get(p.n).i32_mul().get(rows[g]).i32_add().i32_const(2).i32_shl().i32_add();
      c.get(rows[g]).i32_const(4).i32_add().get(p.n).i32_le_u().if_();
      addr();
      c.get(acc).v128_store(0);
      c.else_();
      for (let r = 0; r < 3; r++) {
        c.get(rows[g]).i32_const(r).i32_add().get(p.n).i32_lt_u().if_();
        addr();
        c.get(acc).v128_store32_lane(r, 4 * r);
        c.end();
      }
      c.end();
    }
  }
}

function emitTile4(c: Code, f: WeightFormat, dot: BlockDot, L: Locals4, p: Params4, rows: readonly number[], T: number, touch: number): void {
  emitTileOpen4(c, f, L, p, rows, T, touch);
  const G = rows.length;
  const acc = (g: number, t: number) => L.acc[g * T + t];
  const loadX = (t: number) => {
    dot.loadX(c, L.px[t], L.xv, L.tmp);
    c.get(L.pd[t]).v128_load32_splat(0).set(L.dx);
  };
  // acc(g, t) += f32(the group's 4 row dots + xTerm) · (d_w[0..3]·d_x)
  const accumulate = (g: number, t: number) => {
    c.get(acc(g, t));
    if (dot.sum === 'i16') emitReduce4x16(c, L.d, L.tmp);
    else emitReduce4(c, L.d, L.tmp);
    if (dot.xTerm !== undefined) c.get(L.px[t]).v128_load32_splat(dot.xTerm).i32x4_add();
    c.f32x4_convert_i32x4_s().get(L.ws[g]).get(L.dx).f32x4_mul().f32x4_mul().f32x4_add().set(acc(g, t));
  };
  if (T === 1) {
    loadX(0);
    for (let g = 0; g < G; g++) {
      for (let r = 0; r < 4; r++) {
        dot.unpackW(c, L.pw[g], r * f.quantBytes, L.wv[0], L.tmp);
        dot.dot(c, L.wv[0], L.xv);
        c.set(L.d[r]);
      }
      accumulate(g, 0);
    }
  } else {
    for (let g = 0; g < G; g++) {
      for (let r = 0; r < 4; r++) dot.unpackW(c, L.pw[g], r * f.quantBytes, L.wv[r], L.tmp);
      for (let t = 0; t < T; t++) {
        loadX(t);
        for (let r = 0; r < 4; r++) {
          dot.dot(c, L.wv[r], L.xv);
          c.set(L.d[r]);
        }
        accumulate(g, t);
      }
    }
  }
  emitTileClose4(c, f, L, p, rows, T);
}

/**
 * emitTile4's tile over 'split4w' (WordDot): a group's block dot leaves its 4 rows' dots in the lanes of one i32x4,
 * converted and scaled by the group's 4 scales times d_x into acc(g, t). One token: x is prepared once and shared by
 * the groups, each group unpacked in turn; more: each group unpacked once, then x prepared per token.
 */
function emitTile4w(c: Code, f: WeightFormat, dot: WordDot, L: Locals4, p: Params4, rows: readonly number[], T: number, touch: number): void {
  emitTileOpen4(c, f, L, p, rows, T, touch);
  const G = rows.length;
  const acc = (g: number, t: number) => L.acc[g * T + t];
  const accumulate = (g: number, t: number) => {
    c.get(acc(g, t));
    dot.dot(c, L.wv[0], L.xv, L.px[t]);
    c.f32x4_convert_i32x4_s().get(L.ws[g]).get(L.pd[t]).v128_load32_splat(0).f32x4_mul().f32x4_mul().f32x4_add().set(acc(g, t));
  };
  if (T === 1) {
    dot.loadX(c, L.px[0], L.xv, L.tmp);
    for (let g = 0; g < G; g++) {
      dot.unpackW(c, L.pw[g], L.wv[0], L.tmp);
      accumulate(g, 0);
    }
  } else {
    for (let g = 0; g < G; g++) {
      dot.unpackW(c, L.pw[g], L.wv[0], L.tmp);
      for (let t = 0; t < T; t++) {
        dot.loadX(c, L.px[t], L.xv, L.tmp);
        accumulate(g, t);
      }
    }
  }
  emitTileClose4(c, f, L, p, rows, T);
}
