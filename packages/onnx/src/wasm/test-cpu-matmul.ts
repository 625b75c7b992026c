// What the wasm matmul kernels' tests share in Node (cpu-matmul.test.ts) and in Chromium (cpu-matmul.gpu.test.ts): a
// kernel's output held to its CPU twin within the f32 rounding bound, a multiplication through quantizeX and raw
// with the tiling named, and the layouts each kernel reads. Test-only.

import type { CpuKernel, CpuMatmul, CpuWeight, WeightLayout } from './cpu-matmul.ts';

/** The layouts `kernel` reads ('split4w' is the relaxed kernels' own). */
export function layoutsOf(kernel: CpuKernel): WeightLayout[] {
  return kernel.startsWith('relaxed') ? ['gguf', 'split', 'split4', 'split4w'] : ['gguf', 'split', 'split4'];
}

/**
 * |kernel − twin| ≤ (K/32 + 4)·2^-23·absSum: per block the kernel rounds d_w·d_x and its product with the (exact)
 * lane sum once each, then adds into a lane over K/32 blocks and sums 4 lanes in 2 levels: at most K/32 + 4
 * roundings of relative size 2^-24 on terms whose magnitudes add up to absSum (the standard γ_n summation bound,
 * doubled for margin).
 */
export function expectTwin(y: Float32Array, twin: { y: Float64Array; absSum: Float64Array }, k: number, label: string): void {
  const tol = (k / 32 + 4) * 2 ** -23;
  let worst = { i: -1, err: 0, bound: 0 };
  for (let i = 0; i < y.length; i++) {
    const err = Math.abs(y[i] - twin.y[i]);
    const bound = tol * twin.absSum[i] + 1e-30;
    if (!(err <= bound) && (worst.i < 0 || err / bound > worst.err / worst.bound)) worst = { i, err, bound };
  }
  if (worst.i >= 0) {
    const i = worst.i;
    throw new Error(`${label}: y[${i}] = ${y[i]}, twin ${twin.y[i]}, |err| ${worst.err} > bound ${worst.bound}; y[0..4] = ${[...y.slice(0, 4)]} vs ${[...twin.y.slice(0, 4)]}`);
  }
}

/** y = x·Wᵀ through quantizeX and raw with the tiling named (either tiling takes any M). */
export function runTiling(cpu: CpuMatmul, w: CpuWeight, x: Float32Array, m: number, tiling: 'gemv' | 'gemm'): Float32Array {
  const xp = cpu.upload(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
  const { xq, xd } = cpu.scratchBytes(m, w.k);
  const [xqp, xdp, yp] = [cpu.alloc(xq), cpu.alloc(xd), cpu.alloc(4 * m * w.n)];
  cpu.quantizeX(xp, xqp, xdp, (m * w.k) / 32);
  cpu.raw(w, xqp, xdp, yp, m, tiling);
  return new Float32Array(cpu.memory.buffer, yp, m * w.n).slice();
}
