// What the wasm matmul kernels' tests share in Node (cpu-matmul.test.ts) and in Chromium (cpu-matmul.gpu.test.ts): a
// kernel's output held to its CPU twin within the f32 rounding bound, a multiplication through quantizeX and raw
// with the tiling named, the layouts each kernel reads, and the threads' products against one thread's. Test-only.

import { expect } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { CpuMatmul, buildCpuMatmulModule, type CpuKernel, type CpuWeight, type WeightLayout } from './cpu-matmul.ts';

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

/**
 * The same products on `threads` threads (every matmul split, splitFrom 0) as on one, bit for bit, for every kernel,
 * layout and tiling on ragged shapes: each thread runs whole rows with the one thread's arithmetic, so nothing may
 * differ. And the kernels' row ranges: a call for rows r0..r1 writes those rows of y and no other.
 */
export async function checkThreads(kernels: readonly CpuKernel[], threads: number): Promise<void> {
  const shapes: [n: number, k: number, m: number][] = [[1, 32, 1], [13, 576, 1], [67, 96, 5], [33, 64, 18], [9, 128, 12]];
  for (const kernel of kernels) {
    const one = await CpuMatmul.create({ kernel, tokens: 4 });
    const many = await CpuMatmul.create({ kernel, tokens: 4, threads, splitFrom: 0 });
    try {
      expect(many.threads).toBe(threads);
      for (const dtype of ['q4_0', 'q8_0'] as const) {
        for (const [n, k, m] of shapes) {
          const w = randomWeights(dtype, n, k, mulberry32(n * k));
          const x = randomF32(m * k, n + m);
          for (const layout of layoutsOf(kernel)) {
            const [a, b] = [one.weight(dtype, w, n, k, layout), many.weight(dtype, w, n, k, layout)];
            for (const tiling of ['gemv', 'gemm'] as const) expect(runTiling(many, b, x, m, tiling), `${kernel} ${dtype} ${layout} ${tiling} (${n}, ${k}) M=${m} on ${threads} threads`).toEqual(runTiling(one, a, x, m, tiling));
          }
        }
      }
      // rows 4..12 of a (21, 64) matrix, M = 3: y's other rows keep their NaN
      const [n, k, m] = [21, 64, 3];
      const exports = (await WebAssembly.instantiate(buildCpuMatmulModule(one.config), { env: { memory: one.memory } })).instance.exports as Record<string, (...a: number[]) => void>;
      const x = randomF32(m * k, 3);
      for (const dtype of ['q4_0', 'q8_0'] as const) {
        for (const layout of layoutsOf(kernel)) {
          const wt = one.weight(dtype, randomWeights(dtype, n, k, mulberry32(7)), n, k, layout);
          for (const tiling of ['gemv', 'gemm'] as const) {
            const whole = runTiling(one, wt, x, m, tiling);
            const xp = one.upload(new Uint8Array(x.buffer));
            const s = one.scratchBytes(m, k);
            const [xq, xd, y] = [one.alloc(s.xq), one.alloc(s.xd), one.alloc(4 * m * n)];
            one.quantizeX(xp, xq, xd, (m * k) / 32);
            new Float32Array(one.memory.buffer, y, m * n).fill(NaN);
            exports[`${tiling}_${dtype}_${layout}${wt.wide ? '_wide' : ''}`](wt.ptr, xq, xd, y, n, k, m, 4, 12);
            const got = new Float32Array(one.memory.buffer, y, m * n);
            for (let t = 0; t < m; t++) {
              for (let r = 0; r < n; r++) {
                const label = `${kernel} ${dtype} ${layout} ${tiling} rows 4..12: y[${t}, ${r}]`;
                if (r >= 4 && r < 12) expect(got[t * n + r], label).toBe(whole[t * n + r]);
                else expect(got[t * n + r], label).toBeNaN();
              }
            }
          }
        }
      }
    } finally {
      many.close();
    }
  }
}
