// The CPU forward's RMSNorm and residual add as wasm SIMD128, over rows of the kernels' memory: what the JS loops did,
// the same arithmetic. RMSNorm keeps the JS version's float64: Σx² summed in f64 (two f64x2 accumulators, so the
// order differs from a sequential sum only in f64's last bits), 1/√(Σx²/n + ε) in f64, and each output x·inv·w formed
// in f64 and rounded once to f32, as a Float32Array store rounds. The add is f32, as the JS `+=` on a Float32Array.
//
// Exports (pointers are byte offsets into the memory, n a multiple of 4):
//   rms_norm(x, w, out, n, rows, eps): out[r·n + i] = x[r·n + i] · inv_r · w[i] for each of `rows` rows (out may be x)
//   add(y, x, n): y[i] += x[i]

import { F64, I32, V128, WasmModule, type Code } from './wasm-module.ts';
import { isShared } from './wasm-threads.ts';

/** Bytes-lane shuffle that moves f32 lanes 2 and 3 to lanes 0 and 1. */
const HIGH_HALF = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
/** Lanes 0 and 1 of the first f32x4 then lanes 0 and 1 of the second. */
const JOIN_LOWS = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];

/** The module's binary (`shared`: for a shared memory, wasm threads). */
export function buildNormModule(shared = false): Uint8Array<ArrayBuffer> {
  const mod = new WasmModule({ memoryPages: 1, shared });
  emitRmsNorm(mod.func('rms_norm', [I32, I32, I32, I32, I32, F64], []));
  emitAdd(mod.func('add', [I32, I32, I32], []));
  return mod.encode();
}

function emitRmsNorm(c: Code): void {
  const [x, w, out, n, rows, eps] = [0, 1, 2, 3, 4, 5];
  // i: byte offset in the row; v: 4 of x; lo, hi: Σx² of lanes 0–1 and 2–3 (then w's 4); inv: the row's 1/rms, twice
  const [i, v, lo, hi, inv, ss] = ([I32, V128, V128, V128, V128, F64] as const).map((t) => c.local(t));
  c.get(rows).i32_eqz().if_().return_().end();
  c.loop();
  {
    // Σx² in two f64x2 accumulators (lanes 0–1 and 2–3 of each vector)
    c.f64_const(0).f64x2_splat().set(lo);
    c.f64_const(0).f64x2_splat().set(hi);
    c.i32_const(0).set(i);
    c.loop();
    c.get(x).get(i).i32_add().v128_load(0).set(v);
    c.get(v).f64x2_promote_low_f32x4().tee(inv).get(inv).f64x2_mul().get(lo).f64x2_add().set(lo);
    c.get(v).get(v).i8x16_shuffle(HIGH_HALF).f64x2_promote_low_f32x4().tee(inv).get(inv).f64x2_mul().get(hi).f64x2_add().set(hi);
    c.get(i).i32_const(16).i32_add().tee(i).get(n).i32_const(2).i32_shl().i32_lt_u().br_if(0);
    c.end();
    c.get(lo).f64x2_extract_lane(0).get(lo).f64x2_extract_lane(1).f64_add().get(hi).f64x2_extract_lane(0).get(hi).f64x2_extract_lane(1).f64_add().f64_add().set(ss);
    // inv = 1 / √(Σx²/n + ε)
    c.f64_const(1).get(ss).get(n).f64_convert_i32_u().f64_div().get(eps).f64_add().f64_sqrt().f64_div().f64x2_splat().set(inv);
    // out = f32(x · inv · w)
    c.i32_const(0).set(i);
    c.loop();
    c.get(x).get(i).i32_add().v128_load(0).set(v);
    c.get(w).get(i).i32_add().v128_load(0).set(hi);
    c.get(out).get(i).i32_add();
    c.get(v).f64x2_promote_low_f32x4().get(inv).f64x2_mul().get(hi).f64x2_promote_low_f32x4().f64x2_mul().f32x4_demote_f64x2_zero();
    c.get(v).get(v).i8x16_shuffle(HIGH_HALF).f64x2_promote_low_f32x4().get(inv).f64x2_mul();
    c.get(hi).get(hi).i8x16_shuffle(HIGH_HALF).f64x2_promote_low_f32x4().f64x2_mul().f32x4_demote_f64x2_zero();
    c.i8x16_shuffle(JOIN_LOWS).v128_store(0);
    c.get(i).i32_const(16).i32_add().tee(i).get(n).i32_const(2).i32_shl().i32_lt_u().br_if(0);
    c.end();
    // the next row
    c.get(n).i32_const(2).i32_shl().set(i);
    c.get(x).get(i).i32_add().set(x);
    c.get(out).get(i).i32_add().set(out);
    c.get(rows).i32_const(1).i32_sub().tee(rows).br_if(0);
  }
  c.end();
}

function emitAdd(c: Code): void {
  const [y, x, n] = [0, 1, 2];
  const end = c.local(I32);
  c.get(n).i32_eqz().if_().return_().end();
  c.get(y).get(n).i32_const(2).i32_shl().i32_add().set(end);
  c.loop();
  c.get(y).get(y).v128_load(0).get(x).v128_load(0).f32x4_add().v128_store(0);
  c.get(x).i32_const(16).i32_add().set(x);
  c.get(y).i32_const(16).i32_add().tee(y).get(end).i32_lt_u().br_if(0);
  c.end();
}

/** The norm kernels, instantiated over a memory (CpuMatmul.memory). */
export interface NormKernels {
  rms_norm(x: number, w: number, out: number, n: number, rows: number, eps: number): void;
  add(y: number, x: number, n: number): void;
}

/**
 * @example
 * const norm = await createNormKernels(cpu.memory);
 * norm.rms_norm(xPtr, wPtr, outPtr, C, M, 1e-6);
 */
export async function createNormKernels(memory: WebAssembly.Memory): Promise<NormKernels> {
  const { instance } = await WebAssembly.instantiate(buildNormModule(isShared(memory)), { env: { memory } });
  return instance.exports as unknown as NormKernels;
}
