// The wasm SIMD128 matmul kernels against their CPU twin (reference.ts): the activation quantizer bit-exact with
// ggml's q8_0 codec, and gemv/gemm within the f32 rounding bound of the exact integer-dot sum, on seeded random
// blocks, ragged N / M / K and adversarial blocks; plus a looser check against the f32 product of the dequantized
// weights and the unquantized x (the error llama.cpp's CPU path accepts by quantizing x).

import { describe, expect, test } from 'vitest';
import { ShapeError, dequantize, f16ToF32, f32ToF16, mulberry32, quantize } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { CpuMatmul, buildCpuMatmulModule, type CpuMatmulDtype, type WeightLayout } from './cpu-matmul.ts';
import { cpuMatmulTwin } from './reference.ts';
import { Code, I32, WasmModule, sleb, uleb } from './wasm-module.ts';

const DTYPES: CpuMatmulDtype[] = ['q8_0', 'q4_0'];
const LAYOUTS: WeightLayout[] = ['gguf', 'split'];

/**
 * |kernel − twin| ≤ (K/32 + 4)·2^-23·absSum: per block the kernel rounds d_w·d_x and its product with the (exact)
 * lane sum once each, then adds into a lane over K/32 blocks and sums 4 lanes in 2 levels: at most K/32 + 4
 * roundings of relative size 2^-24 on terms whose magnitudes add up to absSum (the standard γ_n summation bound,
 * doubled for margin).
 */
function expectTwin(y: Float32Array, twin: { y: Float64Array; absSum: Float64Array }, k: number, label: string): void {
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

/** Seeded q8_0/q4_0 weights (random quants, scales ~0.05/8) and N(0, 1) activations. */
function inputs(dtype: CpuMatmulDtype, n: number, k: number, m: number, seed: number) {
  const w = randomWeights(dtype, n, k, mulberry32(seed));
  const x = randomF32(m * k, seed + 1);
  return { w, x };
}

describe('wasm module builder', () => {
  test('LEB128 encodings', () => {
    expect(uleb(0)).toEqual([0]);
    expect(uleb(127)).toEqual([0x7f]);
    expect(uleb(128)).toEqual([0x80, 0x01]);
    expect(uleb(624485)).toEqual([0xe5, 0x8e, 0x26]);
    expect(sleb(-1)).toEqual([0x7f]);
    expect(sleb(63)).toEqual([0x3f]);
    expect(sleb(64)).toEqual([0xc0, 0x00]);
    expect(sleb(-123456)).toEqual([0xc0, 0xbb, 0x78]);
    expect(sleb(0xffffe000)).toEqual(sleb(-8192));
  });

  test('a hand-written module runs', async () => {
    const mod = new WasmModule({ memoryPages: 1 });
    const f: Code = mod.func('muladd', [I32, I32], [I32]);
    f.get(0).get(1).i32_mul().i32_const(-5).i32_add();
    const memory = new WebAssembly.Memory({ initial: 1 });
    const { exports } = await WebAssembly.instantiate(await WebAssembly.compile(mod.encode()), { env: { memory } });
    expect((exports.muladd as (a: number, b: number) => number)(7, 6)).toBe(37);
  });

  test('every tile configuration validates', () => {
    for (const [r, t] of [[1, 1], [2, 1], [4, 4], [3, 2], [1, 4]]) expect(WebAssembly.validate(buildCpuMatmulModule(r, t)), `${r}×${t}`).toBe(true);
  });
});

describe('quantize_x', () => {
  /** Runs the wasm quantizer and checks every quant and scale against ggml's codec. */
  async function expectQuantizeExact(x: Float32Array): Promise<void> {
    const cpu = await CpuMatmul.create();
    const blocks = x.length / 32;
    const xp = cpu.upload(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
    const xq = cpu.alloc(2 * x.length);
    const xd = cpu.alloc(4 * blocks);
    cpu.quantizeX(xp, xq, xd, blocks);
    const q = new Int16Array(cpu.memory.buffer, xq, x.length);
    const d = new Float32Array(cpu.memory.buffer, xd, blocks);
    const ref = quantize('q8_0', x, 1, x.length);
    for (let b = 0; b < blocks; b++) {
      const refD = f16ToF32(ref[b * 34] | (ref[b * 34 + 1] << 8));
      expect(d[b], `scale of block ${b}`).toBe(refD);
      for (let j = 0; j < 32; j++) expect(q[b * 32 + j], `quant ${b * 32 + j} (x = ${x[b * 32 + j]})`).toBe((ref[b * 34 + 2 + j] << 24) >> 24);
    }
  }

  test('bit-exact with the q8_0 codec on random x', async () => {
    await expectQuantizeExact(randomF32(32 * 37, 7));
  });

  test('bit-exact on ties, zeros, outliers, f16-subnormal and f16-overflowing scales', async () => {
    const x = new Float32Array(32 * 6);
    // block 0: amax 127 → d = 1, so x·id lands on exact halves: roundf rounds them away from zero
    x.set([127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 3.49999976, -0.49999997, 126.5, -126.5, 0.25], 0);
    // block 1 stays all zero (d = 0, id = 0)
    // block 2: one large outlier among small values
    for (let j = 0; j < 32; j++) x[64 + j] = j === 17 ? -3.1e4 : 1e-3 * (j - 16);
    // block 3: tiny values, d below 2^-14 (a subnormal f16 scale)
    for (let j = 0; j < 32; j++) x[96 + j] = 3.7e-6 * Math.sin(j + 1);
    // block 4: amax 1e7, d past 65504 (f16 inf)
    for (let j = 0; j < 32; j++) x[128 + j] = j === 3 ? 1e7 : j;
    // block 5: d on f16 rounding ties (amax = 127·(1 + 2^-11) rounds half-even to 1)
    for (let j = 0; j < 32; j++) x[160 + j] = j === 0 ? 127 * (1 + 2 ** -11) : -j;
    await expectQuantizeExact(x);
  });
});

describe('gemv and gemm against the twin', () => {
  // ragged N (not a multiple of the 4-row tile), K a multiple of 32, M around the 4-token tile
  const SHAPES: [n: number, k: number, m: number][] = [
    [1, 32, 1],
    [3, 64, 1],
    [7, 96, 1],
    [13, 576, 1],
    [64, 1536, 1],
    [5, 160, 3],
    [6, 128, 4],
    [9, 224, 5],
    [11, 64, 9],
  ];
  for (const dtype of DTYPES) {
    for (const [n, k, m] of SHAPES) {
      test(`${dtype} N=${n} K=${k} M=${m}`, async () => {
        const { w, x } = inputs(dtype, n, k, m, 1000 * n + k + m);
        const twin = cpuMatmulTwin(dtype, w, n, k, x, m);
        for (const [rows, tokens] of [[4, 4], [1, 1], [3, 2]]) {
          const cpu = await CpuMatmul.create({ rows, tokens });
          for (const layout of LAYOUTS) {
            const y = cpu.matmul(cpu.weight(dtype, w, n, k, layout), x, m);
            expectTwin(y, twin, k, `${dtype} ${layout} (${n}, ${k}) M=${m} tile ${rows}×${tokens}`);
          }
        }
      });
    }
  }

  test('looser: within the x-quantization error of the f32 product', async () => {
    // |x_j − d16·q_j| ≤ d/2 (rounding) + 127·d·2^-11 (the f16 scale) ≤ 0.57·d with d = amax/127 (normal f16 range),
    // so |y_f32 − y| ≤ Σ_b 0.57·(amax_b/127)·Σ_j |w_bj| plus the kernel's own rounding (far smaller).
    const [n, k, m] = [23, 576, 2];
    for (const dtype of DTYPES) {
      const { w, x } = inputs(dtype, n, k, m, 99);
      const cpu = await CpuMatmul.create();
      const y = cpu.matmul(cpu.weight(dtype, w, n, k), x, m);
      const wf = dequantize(dtype, w, n, k);
      let worstRatio = 0;
      for (let t = 0; t < m; t++) {
        for (let r = 0; r < n; r++) {
          let exact = 0;
          let bound = 0;
          for (let b = 0; b < k / 32; b++) {
            let amax = 0;
            let wabs = 0;
            for (let j = 0; j < 32; j++) {
              exact += wf[r * k + b * 32 + j] * x[t * k + b * 32 + j];
              amax = Math.max(amax, Math.abs(x[t * k + b * 32 + j]));
              wabs += Math.abs(wf[r * k + b * 32 + j]);
            }
            bound += (0.57 * amax * wabs) / 127;
          }
          const err = Math.abs(y[t * n + r] - exact);
          expect(err, `${dtype} y[${t}, ${r}] = ${y[t * n + r]} vs f32 product ${exact}`).toBeLessThanOrEqual(bound * 1.001);
          worstRatio = Math.max(worstRatio, err / bound);
        }
      }
      // the bound is worst case; random rounding errors cancel, so the typical error is a small fraction of it
      expect(worstRatio).toBeLessThan(0.5);
    }
  });

  test('adversarial blocks: extreme quants, zero blocks, subnormal and large scales, outlier x', async () => {
    const [n, k, m] = [6, 256, 5];
    const nb = k / 32;
    for (const dtype of DTYPES) {
      const B = dtype === 'q8_0' ? 34 : 18;
      const w = randomWeights(dtype, n, k, mulberry32(5));
      const dv = new DataView(w.buffer);
      for (let b = 0; b < nb; b++) {
        // row 0: the most negative quant everywhere (q8_0 −128, q4_0 nibble 0 → −8) at a large scale
        dv.setUint16(b * B, f32ToF16(300), true);
        w.fill(dtype === 'q8_0' ? 0x80 : 0x00, b * B + 2, (b + 1) * B);
        // row 1: the most positive quant everywhere, negative scale
        dv.setUint16(k / 32 * B + b * B, f32ToF16(-2.5), true);
        w.fill(dtype === 'q8_0' ? 0x7f : 0xff, nb * B + b * B + 2, nb * B + (b + 1) * B);
        // row 2: all-zero blocks (d = 0, quants 0) — y must be exactly 0
        w.fill(0, 2 * nb * B + b * B, 2 * nb * B + (b + 1) * B);
        // row 3: subnormal f16 scales
        dv.setUint16(3 * nb * B + b * B, 1 + b, true);
        // row 4: alternating huge and tiny scales
        dv.setUint16(4 * nb * B + b * B, f32ToF16(b % 2 ? 6e4 : 1e-4), true);
      }
      const x = randomF32(m * k, 8);
      x.fill(0, 0, k); // token 0: all-zero x
      for (let j = 0; j < k; j += 37) x[k + j] = 5e4 * (j % 2 ? 1 : -1); // token 1: outliers
      for (let j = 0; j < k; j++) x[2 * k + j] = 1e-6 * Math.cos(j); // token 2: tiny (subnormal f16 x scales)
      const twin = cpuMatmulTwin(dtype, w, n, k, x, m);
      const cpu = await CpuMatmul.create();
      for (const layout of LAYOUTS) {
        const y = cpu.matmul(cpu.weight(dtype, w, n, k, layout), x, m);
        expectTwin(y, twin, k, `${dtype} ${layout} adversarial`);
        for (let r = 0; r < n; r++) expect(y[r], `token 0 (x = 0), row ${r}`).toBe(0);
        for (let t = 0; t < m; t++) expect(y[t * n + 2], `zero row 2, token ${t}`).toBe(0);
        expect(Math.abs(y[n + 0])).toBeGreaterThan(1e6); // row 0 × outlier token is large and still within the bound
      }
    }
  });
});

describe('CpuMatmul checks its arguments', () => {
  test('shape errors say what was expected', async () => {
    const cpu = await CpuMatmul.create();
    const blocks = new Uint8Array(2 * 18 * 2);
    const w = cpu.weight('q4_0', blocks, 2, 64);
    expect(() => cpu.matmul(w, new Float32Array(63))).toThrow(ShapeError);
    expect(() => cpu.matmul(w, new Float32Array(128), 2, new Float32Array(3))).toThrow(/out/);
    expect(() => cpu.weight('q4_0', blocks, 2, 48)).toThrow(RangeError);
    expect(() => cpu.weight('q4_0', blocks, 3, 64)).toThrow(/72 bytes/);
    expect(cpu.matmul(w, new Float32Array(64))).toEqual(new Float32Array(2));
    expect(cpu.weight('q4_0', blocks, 2, 64, 'split').bytes).toBe(16 + 4 * 16);
  });
});
