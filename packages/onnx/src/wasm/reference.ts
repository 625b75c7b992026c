// CPU twin of the wasm matmul kernels (cpu-matmul.ts): the same math in plain loops, float64 where it matters. x is
// quantized with @intab/gpu's q8_0 codec (ggml's quantize_row_q8_0_ref), the block scales decoded with its f16ToF32,
// and each block's integer dot is formed exactly, so the kernel can differ from this only by its f32 scaling and
// accumulation; `absSum` gives the scale for that bound. For tests and benchmarks only.

import { BLOCK, f16ToF32, quantize, rowBytes } from '@intab/gpu';
import type { CpuMatmulDtype } from './cpu-matmul.ts';

export interface CpuMatmulTwin {
  /** (M, N): Σ_b d_w·d_x·Σ_j qw·qx in float64. */
  readonly y: Float64Array;
  /** (M, N): Σ_b |d_w·d_x|·Σ_j |qw·qx|, the size of the terms the kernel rounds. */
  readonly absSum: Float64Array;
  /** x as q8_0 blocks, (M, K/32) × 34 bytes. */
  readonly xq8: Uint8Array;
}

/** The integer quants of one weight block (element order), from its GGUF bytes at `o`. */
function blockQuants(dtype: CpuMatmulDtype, bytes: Uint8Array, o: number, q: Int32Array): void {
  if (dtype === 'q8_0') {
    for (let j = 0; j < 32; j++) q[j] = (bytes[o + 2 + j] << 24) >> 24;
  } else {
    for (let j = 0; j < 16; j++) {
      q[j] = (bytes[o + 2 + j] & 0xf) - 8;
      q[j + 16] = (bytes[o + 2 + j] >> 4) - 8;
    }
  }
}

/** y = x·Wᵀ as the kernels compute it: W (N, K) `dtype` blocks, x (M, K) f32 quantized to q8_0 per block. */
export function cpuMatmulTwin(dtype: CpuMatmulDtype, w: Uint8Array, n: number, k: number, x: Float32Array, m: number): CpuMatmulTwin {
  const rb = rowBytes(dtype, k);
  const nb = k / 32;
  const xq8 = quantize('q8_0', x, m, k);
  const y = new Float64Array(m * n);
  const absSum = new Float64Array(m * n);
  const qw = new Int32Array(32);
  const B = BLOCK[dtype].bytes;
  const half = (bytes: Uint8Array, o: number) => f16ToF32(bytes[o] | (bytes[o + 1] << 8));
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < nb; b++) {
      const o = r * rb + b * B;
      const dw = half(w, o);
      blockQuants(dtype, w, o, qw);
      for (let t = 0; t < m; t++) {
        const ox = (t * nb + b) * 34;
        const dx = half(xq8, ox);
        let isum = 0;
        let iabs = 0;
        for (let j = 0; j < 32; j++) {
          const p = qw[j] * ((xq8[ox + 2 + j] << 24) >> 24);
          isum += p;
          iabs += Math.abs(p);
        }
        y[t * n + r] += dw * dx * isum;
        absSum[t * n + r] += Math.abs(dw * dx) * iabs;
      }
    }
  }
  return { y, absSum, xq8 };
}
