// What the wasm SIMD128 matmul kernels share (the CPU counterpart of shaders/lib/): the f16 → f32 scale decode, the
// activation quantizer (x → q8_0, as llama.cpp's CPU path quantizes x before an integer dot), and the tiled loop nest
// that gemv-q8_0.ts and gemv-q4_0.ts instantiate with their block unpackers. No entry points here; cpu-matmul.ts
// assembles the module.
//
// Quantized activations (xq, xd) are kept in an expanded layout of our own, since x is small and read N times:
//   xq: (M, K) i16  — the q8_0 quants of x, already widened to i16 so the dot needs no extend on the x side
//   xd: (M, K/32) f32 — each block's scale d = amax/127, rounded to f16 and back (ggml stores it as f16; rounding it
//                       here makes d_w·d_x the very product ggml's vec_dot forms)

import { Code, F32, I32, V128 } from './wasm-module.ts';

/** How a weight format's block becomes four i16x8 vectors (elements 0–7, 8–15, 16–23, 24–31 of the block). */
export interface BlockUnpacker {
  /** Bytes per 32-element block as GGUF stores it (f16 scale at +0, then the quants). */
  readonly bytes: number;
  /** Bytes of one block's quants alone. */
  readonly quantBytes: number;
  /** Emits code that reads the quants at local `ptr` + `offset` and sets locals `w[0..3]` (v128, i16x8 each); `tmp` is a v128 scratch local. */
  unpack(c: Code, ptr: number, offset: number, w: readonly number[], tmp: number): void;
}

/**
 * Where a weight matrix's scales live (W is (N, K/32) blocks either way):
 *   'gguf':  the blocks as the file stores them, f16 scale inline; decoded in the kernel (emitF16ToF32)
 *   'split': repacked at load: the scales as f32, (N, K/32), then (from the next 16-byte boundary) the quants,
 *            (N, K/32) × quantBytes. 4/2 more bytes per block (q4_0 20 B against 18, q8_0 36 against 34), but a
 *            block's scale is one f32 load instead of a dozen scalar ops, and the quants are 16-byte aligned.
 */
export type WeightLayout = 'gguf' | 'split';

/** Bytes a (N, K) matrix takes in `layout`. */
export function layoutBytes(u: BlockUnpacker, layout: WeightLayout, n: number, k: number): number {
  const blocks = (n * k) / 32;
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

/** v128.const bytes: the same byte in all 16 lanes. */
export const splat16 = (b: number): Uint8Array => new Uint8Array(16).fill(b);
const f32x4Bytes = (v: number) => new Uint8Array(new Float32Array([v, v, v, v]).buffer);
const u32x4Bytes = (v: number) => new Uint8Array(new Uint32Array([v, v, v, v]).buffer);

/**
 * quantize_x(x, xq, xd, blocks): quantizes `blocks` consecutive 32-element blocks of f32 x into the (xq, xd) layout
 * above, bit-exact with ggml's quantize_row_q8_0_ref (codecs.ts quantize): d = amax/127 in f32, id = 1/d (0 when
 * d = 0), q = roundf(x·id) with ties away from zero, and the stored scale is f16(d). M rows of x are M·K/32 blocks.
 */
export function emitQuantizeX(c: Code): void {
  const [x, xq, xd, blocks] = [0, 1, 2, 3];
  const amax = c.local(V128);
  const idv = c.local(V128);
  const v = c.local(V128);
  const t = c.local(V128);
  const lo = c.local(V128);
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
    c.f32x4_add().i32x4_trunc_sat_f32x4_s();
    if (j % 2 === 0) c.set(lo);
    else c.set(t).get(xq).get(lo).get(t).i16x8_narrow_i32x4_s().v128_store(16 * (j >> 1));
  }
  c.get(x).i32_const(128).i32_add().set(x);
  c.get(xq).i32_const(64).i32_add().set(xq);
  c.get(xd).i32_const(4).i32_add().set(xd);
  c.get(blocks).i32_const(1).i32_sub().tee(blocks).br_if(0);
  c.end();
}

/**
 * The matmul loop nest, params (w, xq, xd, y, n, k, m): y[t, r] = Σ_b d_w[r,b]·d_x[t,b]·Σ_j qw[r,b,j]·qx[t,b,j].
 *   w: (N, K/32) blocks in the format `u` unpacks, stored in `layout`   xq, xd: (M, K) and (M, K/32), see above
 *   y: (M, N) f32
 * The N × M output is covered by tiles of R rows × T tokens: R > 1 (decode) reuses each x vector across R weight
 * rows; T > 1 (prefill) reuses each unpacked weight block across T tokens. Ragged edges fall back to 1 × T and 1 × 1
 * tiles. Per tile, each (row, token) keeps an f32x4 of partial sums: a block's integer dot (i32x4.dot_i16x8_s, exact
 * in i32: |Σ| ≤ 32·128·127) is converted to f32 and scaled by d_w·d_x, as ggml's AVX vec_dot does; the four lanes
 * are summed once at the end.
 */
export function emitMatmul(c: Code, u: BlockUnpacker, layout: WeightLayout, R: number, T: number): void {
  if (!((R === 1 || T === 1) && R >= 1 && T >= 1 && R <= 4 && T <= 4)) throw new RangeError(`tiles are R×1 or 1×T with R, T ≤ 4; got ${R}×${T}`);
  const [w, xq, xd, y, n, k, m] = [0, 1, 2, 3, 4, 5, 6];
  const L = {
    nb: c.local(I32), // K/32
    rb: c.local(I32), // bytes per weight row ('gguf') or of its quants ('split')
    qbase: c.local(I32), // 'split': where the quants start
    row: c.local(I32),
    tok: c.local(I32),
    b: c.local(I32),
    h: c.local(I32),
    bits: c.local(I32),
    dw: c.local(F32),
    tmp: c.local(V128),
    pw: Array.from({ length: 4 }, () => c.local(I32)),
    ps: Array.from({ length: 4 }, () => c.local(I32)),
    px: Array.from({ length: 4 }, () => c.local(I32)),
    pd: Array.from({ length: 4 }, () => c.local(I32)),
    wv: Array.from({ length: 4 }, () => c.local(V128)),
    xv: Array.from({ length: 4 }, () => c.local(V128)),
    acc: Array.from({ length: 4 }, () => c.local(V128)),
  };
  c.get(k).i32_const(5).i32_shr_u().tee(L.nb).i32_const(layout === 'gguf' ? u.bytes : u.quantBytes).i32_mul().set(L.rb);
  if (layout === 'split') c.get(w).get(n).get(L.nb).i32_mul().i32_const(4).i32_mul().i32_const(15).i32_add().i32_const(-16).i32_and().i32_add().set(L.qbase);
  c.i32_const(0).set(L.row);
  const tiles: [number, number][] = R > 1 ? [[R, 1], [1, 1]] : T > 1 ? [[1, T], [1, 1]] : [[1, 1]];
  // rows in steps of R (then the ragged rest one by one); per row group, tokens in steps of T (then one by one)
  const rowSteps = R > 1 ? [R, 1] : [1];
  for (const rs of rowSteps) {
    c.block().loop();
    c.get(L.row).i32_const(rs).i32_add().get(n).i32_gt_u().br_if(1);
    c.i32_const(0).set(L.tok);
    for (const [tr, tt] of tiles.filter(([tr]) => tr === rs)) {
      c.block().loop();
      c.get(L.tok).i32_const(tt).i32_add().get(m).i32_gt_u().br_if(1);
      emitTile(c, u, layout, L, { w, xq, xd, y, n, k }, tr, tt);
      c.get(L.tok).i32_const(tt).i32_add().set(L.tok);
      c.br(0).end().end();
    }
    c.get(L.row).i32_const(rs).i32_add().set(L.row);
    c.br(0).end().end();
  }
}

interface Locals {
  nb: number; rb: number; qbase: number; row: number; tok: number; b: number; h: number; bits: number; dw: number; tmp: number;
  pw: number[]; ps: number[]; px: number[]; pd: number[]; wv: number[]; xv: number[]; acc: number[];
}

function emitTile(c: Code, u: BlockUnpacker, layout: WeightLayout, L: Locals, p: { w: number; xq: number; xd: number; y: number; n: number; k: number }, R: number, T: number): void {
  // pointers: pw[r] = w + (row + r)·rb ('gguf'; 'split': qbase + (row + r)·rb and ps[r] = w + (row + r)·4·nb);
  // px[t] = xq + (tok + t)·2K; pd[t] = xd + (tok + t)·4·nb
  const split = layout === 'split';
  const qOffset = split ? 0 : 2;
  for (let r = 0; r < R; r++) {
    c.get(split ? L.qbase : p.w).get(L.row).i32_const(r).i32_add().get(L.rb).i32_mul().i32_add().set(L.pw[r]);
    if (split) c.get(p.w).get(L.row).i32_const(r).i32_add().get(L.nb).i32_mul().i32_const(2).i32_shl().i32_add().set(L.ps[r]);
  }
  const scale = (r: number) => {
    if (split) c.get(L.ps[r]).f32_load(0);
    else emitF16ToF32(c, L.pw[r], 0, L.h, L.bits);
    c.set(L.dw);
  };
  for (let t = 0; t < T; t++) {
    c.get(p.xq).get(L.tok).i32_const(t).i32_add().get(p.k).i32_mul().i32_const(1).i32_shl().i32_add().set(L.px[t]);
    c.get(p.xd).get(L.tok).i32_const(t).i32_add().get(L.nb).i32_mul().i32_const(2).i32_shl().i32_add().set(L.pd[t]);
  }
  const acc = (r: number, t: number) => L.acc[r * T + t];
  for (let i = 0; i < R * T; i++) c.v128_const(new Uint8Array(16)).set(L.acc[i]);
  c.get(L.nb).set(L.b);
  c.loop();
  // one block's integer dot of weight vectors wv[] with token t's x, scaled into acc(r, t); dw is on hand
  const dotInto = (r: number, t: number, xFromLocals: boolean) => {
    const x = (i: number) => (xFromLocals ? c.get(L.xv[i]) : c.get(L.px[t]).v128_load(16 * i));
    c.get(acc(r, t));
    for (let i = 0; i < 4; i++) {
      c.get(L.wv[i]);
      x(i);
      c.i32x4_dot_i16x8_s();
      if (i > 0) c.i32x4_add();
    }
    c.f32x4_convert_i32x4_s();
    c.get(L.dw).get(L.pd[t]).f32_load(0).f32_mul().f32x4_splat().f32x4_mul();
    c.f32x4_add().set(acc(r, t));
  };
  if (T === 1) {
    for (let i = 0; i < 4; i++) c.get(L.px[0]).v128_load(16 * i).set(L.xv[i]);
    for (let r = 0; r < R; r++) {
      scale(r);
      u.unpack(c, L.pw[r], qOffset, L.wv, L.tmp);
      dotInto(r, 0, true);
    }
  } else {
    scale(0);
    u.unpack(c, L.pw[0], qOffset, L.wv, L.tmp);
    for (let t = 0; t < T; t++) dotInto(0, t, false);
  }
  for (let r = 0; r < R; r++) {
    c.get(L.pw[r]).i32_const(split ? u.quantBytes : u.bytes).i32_add().set(L.pw[r]);
    if (split) c.get(L.ps[r]).i32_const(4).i32_add().set(L.ps[r]);
  }
  for (let t = 0; t < T; t++) {
    c.get(L.px[t]).i32_const(64).i32_add().set(L.px[t]);
    c.get(L.pd[t]).i32_const(4).i32_add().set(L.pd[t]);
  }
  c.get(L.b).i32_const(1).i32_sub().tee(L.b).br_if(0);
  c.end();
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

