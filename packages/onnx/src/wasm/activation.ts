// The gated feed-forward's activation as wasm SIMD128 (f32x4): h = act(g) · u over a (T, F) block in place of g, for
// intab's CPU forward. Both activations are x · sigmoid(a·x + b·x³): SiLU is a = 1, b = 0, and GELU's tanh form
// 0.5·x·(1 + tanh(z)) is x · sigmoid(2z) with z = √(2/π)·(x + 0.044715·x³). exp runs as Cephes' expf (a degree-6
// polynomial on the reduced argument, scaled by 2^n built in the exponent bits), within 2 ulp of the true value; wasm
// has no exp, and JS's Math.exp per element was 15 ms of a 32-token SmolLM2 prefill.
//
// Export: act_mul(g, u, n, a, b): g[i] = g[i] · sigmoid(a·g[i] + b·g[i]³) · u[i] for i < n (n a multiple of 4; pointers
// are byte offsets into the memory).

import { F32, I32, V128, WasmModule, type Code } from './wasm-module.ts';
import { isShared } from './wasm-threads.ts';

/** a and b of each activation (act(x) = x · sigmoid(a·x + b·x³)). */
export const ACTIVATION_COEFFICIENTS: Readonly<Record<'silu' | 'gelu_tanh', readonly [number, number]>> = {
  silu: [1, 0],
  gelu_tanh: [2 * Math.sqrt(2 / Math.PI), 2 * Math.sqrt(2 / Math.PI) * 0.044715],
};

export const f32x4 = (v: number) => new Uint8Array(new Float32Array([v, v, v, v]).buffer);

/** The module's binary (`shared`: for a shared memory, wasm threads). */
export function buildActivationModule(shared = false): Uint8Array<ArrayBuffer> {
  const mod = new WasmModule({ memoryPages: 1, shared });
  emitActMul(mod.func('act_mul', [I32, I32, I32, F32, F32], []));
  return mod.encode();
}

/**
 * Leaves exp(v) on the stack for the f32x4 on top of it, v clamped to [−87, 88] (where exp stays a finite, normal
 * f32): 2^k · e^r with k = nearest(v / ln 2) and r = v − k·ln 2 (ln 2 in two parts), e^r = 1 + r + r²·P(r) (Cephes'
 * expf), and 2^k built as k + 127 in the exponent field. `t` are three v128 scratch locals.
 */
export function emitExp(c: Code, t: readonly [number, number, number]): void {
  const [y, k, r] = t;
  // pmin/pmax: one minps/maxps each (min/max's NaN and −0 rules cost x64 several more; a NaN stays NaN either way)
  c.v128_const(f32x4(88)).f32x4_pmin().v128_const(f32x4(-87)).f32x4_pmax().set(y);
  c.get(y).v128_const(f32x4(Math.LOG2E)).f32x4_mul().f32x4_nearest().set(k);
  c.get(y).get(k).v128_const(f32x4(0.693359375)).f32x4_mul().f32x4_sub();
  c.get(k).v128_const(f32x4(-2.12194440e-4)).f32x4_mul().f32x4_sub().set(r);
  c.v128_const(f32x4(1.9875691500e-4));
  for (const coef of [1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1]) c.get(r).f32x4_mul().v128_const(f32x4(coef)).f32x4_add();
  c.get(r).get(r).f32x4_mul().f32x4_mul().get(r).f32x4_add().v128_const(f32x4(1)).f32x4_add();
  // 2^k: k + 127 + 1.5·2^23 puts k + 127 (1..254) in the low mantissa bits, which the shift moves into the exponent
  // field (one add and one shift; trunc_sat's saturation rules cost x64 several more)
  c.get(k).v128_const(f32x4(12582912 + 127)).f32x4_add().i32_const(23).i32x4_shl().f32x4_mul();
}

function emitActMul(c: Code): void {
  const [g, u, n, a, b] = [0, 1, 2, 3, 4];
  const end = c.local(I32);
  const av = c.local(V128);
  const bv = c.local(V128);
  const x = c.local(V128);
  const t = [c.local(V128), c.local(V128), c.local(V128)] as const;
  c.get(n).i32_eqz().if_().return_().end();
  c.get(a).f32x4_splat().set(av);
  c.get(b).f32x4_splat().set(bv);
  c.get(g).get(n).i32_const(2).i32_shl().i32_add().set(end);
  c.loop();
  {
    // g = x / (1 + exp(−(a·x + b·x³))) · u (sigmoid is 0 or 1 to f32 precision where the clamp bites)
    c.get(g);
    c.get(g).v128_load(0).set(x);
    c.get(x);
    c.get(x).get(x).f32x4_mul().get(bv).f32x4_mul().get(av).f32x4_add().get(x).f32x4_mul();
    c.v128_const(f32x4(-1)).f32x4_mul();
    emitExp(c, t);
    c.v128_const(f32x4(1)).f32x4_add().f32x4_div().get(u).v128_load(0).f32x4_mul();
    c.v128_store(0);
    c.get(g).i32_const(16).i32_add().set(g);
    c.get(u).i32_const(16).i32_add().set(u);
    c.get(g).get(end).i32_lt_u().br_if(0);
  }
  c.end();
}

/** The activation kernel, instantiated over a memory (CpuMatmul.memory). */
export interface ActivationKernel {
  act_mul(g: number, u: number, n: number, a: number, b: number): void;
}

/**
 * @example
 * const act = await createActivationKernel(cpu.memory);
 * act.act_mul(gatePtr, upPtr, T * F, ...ACTIVATION_COEFFICIENTS.silu);
 */
export async function createActivationKernel(memory: WebAssembly.Memory): Promise<ActivationKernel> {
  const { instance } = await WebAssembly.instantiate(buildActivationModule(isShared(memory)), { env: { memory } });
  return instance.exports as unknown as ActivationKernel;
}
