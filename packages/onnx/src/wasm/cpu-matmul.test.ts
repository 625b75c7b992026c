// The wasm SIMD128 matmul kernels against their CPU twin (reference.ts): the activation quantizer bit-exact with
// ggml's q8_0 codec (both x layouts), and gemv/gemm within the f32 rounding bound of the exact integer-dot sum, for
// every kernel (relaxed SIMD, i16, i8) and tile shape, on seeded random blocks, ragged N / M / K and adversarial
// blocks; plus a looser check against the f32 product of the dequantized weights and the unquantized x (the error
// llama.cpp's CPU path accepts by quantizing x), and weightRow's rows in every layout. Node 20 gates relaxed SIMD
// behind a V8 flag, which is set here (and computes its add form wrong: the 'relaxed' kernel is tested in Chromium,
// cpu-matmul.gpu.test.ts).

import v8 from 'node:v8';
import { describe, expect, test } from 'vitest';
import { ShapeError, dequantize, f16ToF32, f32ToF16, mulberry32, quantize } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { CpuMatmul, availableKernels, buildCpuMatmulModule, relaxedSimdForms, type CpuKernel, type CpuMatmulDtype } from './cpu-matmul.ts';
import { cpuMatmulTwin } from './reference.ts';
import { expectTwin, layoutsOf, runTiling } from './test-cpu-matmul.ts';
import { Code, I32, WasmModule, sleb, uleb } from './wasm-module.ts';

const DTYPES: CpuMatmulDtype[] = ['q8_0', 'q4_0'];

// Node 20's V8 has relaxed SIMD behind --experimental-wasm-relaxed-simd; a wasm feature flag takes effect for modules
// compiled after it is set, so the relaxed kernels are tested here too (Chromium ships it on; cpu-matmul.gpu.test.ts).
if (relaxedSimdForms().length === 0) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');
const KERNELS: CpuKernel[] = availableKernels();

/** Seeded q8_0/q4_0 weights (random quants, scales ~0.05/8; q8_0 without −128) and N(0, 1) activations. */
function inputs(dtype: CpuMatmulDtype, n: number, k: number, m: number, seed: number) {
  const w = randomWeights(dtype, n, k, mulberry32(seed));
  // random q8_0 quants include −128, which ggml never writes and the relaxed kernels hand to the i16 dot (tested apart)
  if (dtype === 'q8_0') for (let o = 0; o < w.length; o += 34) for (let j = 2; j < 34; j++) if (w[o + j] === 0x80) w[o + j] = 0x81;
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

  test('relaxed SIMD is on for these tests (the flag took effect)', () => {
    expect(KERNELS).toContain('relaxed16');
  });

  test('every kernel and tile configuration validates', () => {
    for (const kernel of KERNELS) {
      for (const [rows, prefillRows, tokens] of [[1, 1, 1], [2, 1, 4], [4, 4, 4], [3, 3, 2], [1, 2, 8], [4, 2, 4]]) {
        for (const [streams, decodeTokens] of [[1, 1], [2, 4], [3, 2], [4, 2], [8, 1], [1, 8]]) {
          for (const touch of [0, 2048]) expect(WebAssembly.validate(buildCpuMatmulModule({ kernel, rows, prefillRows, tokens, streams, decodeTokens, touch })), `${kernel} ${rows}, ${prefillRows}×${tokens}, ${streams}×${decodeTokens}, touch ${touch}`).toBe(true);
        }
      }
    }
  });
});

describe('quantize_x', () => {
  /**
   * Runs the wasm quantizer and checks every quant and scale against ggml's codec, in the kernel's x layout ('i16':
   * i16 quants; 'i8': i8 quants at +0 of each 128-byte slot, the i32 −8·Σq at +32 and zeros to +48, x⁺ at +64 and
   * x⁻ at +96).
   */
  async function expectQuantizeExact(x: Float32Array, kernel: CpuKernel): Promise<void> {
    const cpu = await CpuMatmul.create({ kernel });
    const blocks = x.length / 32;
    const xp = cpu.upload(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));
    const xq = cpu.alloc(4 * x.length);
    const xd = cpu.alloc(4 * blocks);
    cpu.quantizeX(xp, xq, xd, blocks);
    const q16 = new Int16Array(cpu.memory.buffer, xq, 2 * x.length);
    const q8 = new Int8Array(cpu.memory.buffer, xq, 4 * x.length);
    const corr = new Int32Array(cpu.memory.buffer, xq, x.length);
    const d = new Float32Array(cpu.memory.buffer, xd, blocks);
    const ref = quantize('q8_0', x, 1, x.length);
    for (let b = 0; b < blocks; b++) {
      const refD = f16ToF32(ref[b * 34] | (ref[b * 34 + 1] << 8));
      expect(d[b], `scale of block ${b}`).toBe(refD);
      let sum = 0;
      for (let j = 0; j < 32; j++) {
        const want = (ref[b * 34 + 2 + j] << 24) >> 24;
        sum += want;
        const got = kernel === 'i16' ? q16[b * 64 + j] : q8[b * 128 + j];
        expect(got, `quant ${b * 32 + j} (x = ${x[b * 32 + j]})`).toBe(want);
        if (kernel !== 'i16') expect([q8[b * 128 + 64 + j], q8[b * 128 + 96 + j]], `x⁺, x⁻ of quant ${b * 32 + j}`).toEqual([Math.max(want, 0), Math.max(-want, 0)]);
      }
      if (kernel !== 'i16') expect([...corr.slice(b * 32 + 8, b * 32 + 12)], `−8·Σq of block ${b}, then zeros`).toEqual([-8 * sum || 0, 0, 0, 0]);
    }
  }

  test('bit-exact with the q8_0 codec on random x', async () => {
    for (const kernel of KERNELS) await expectQuantizeExact(randomF32(32 * 37, 7), kernel);
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
    for (const kernel of KERNELS) await expectQuantizeExact(x, kernel);
  });
});

describe('gemv and gemm against the twin', () => {
  // ragged N (not a multiple of the row tiles), K a multiple of 32, M around and past the token tiles
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
    [10, 96, 11],
    [17, 64, 18],
  ];
  // [decode rows, prefill rows, prefill tokens, 'split4' decode streams × tokens, its prefill from M, touch]: the
  // defaults and shapes whose edges differ
  const TILES: [number, number, number, number, number, number, number][] = [[4, 2, 8, 4, 2, 12, 2048], [4, 2, 4, 2, 1, 4, 0], [2, 2, 2, 1, 3, 2, 64], [1, 1, 1, 3, 2, 1, 0], [3, 3, 2, 4, 1, 2, 2048], [2, 4, 3, 2, 4, 5, 0], [1, 2, 8, 1, 8, 3, 128]];
  for (const dtype of DTYPES) {
    for (const [n, k, m] of SHAPES) {
      test(`${dtype} N=${n} K=${k} M=${m}`, async () => {
        const { w, x } = inputs(dtype, n, k, m, 1000 * n + k + m);
        const twin = cpuMatmulTwin(dtype, w, n, k, x, m);
        for (const kernel of KERNELS) {
          for (const [rows, prefillRows, tokens, streams, decodeTokens, prefillFrom, touch] of TILES) {
            const cpu = await CpuMatmul.create({ kernel, rows, prefillRows, tokens, streams, decodeTokens, prefillFrom, touch });
            for (const layout of layoutsOf(kernel)) {
              const label = `${dtype} ${layout} ${kernel} (${n}, ${k}) M=${m} tiles ${rows}×1, ${prefillRows}×${tokens}, split4 ${streams}×${decodeTokens} to M ${prefillFrom}, touch ${touch}`;
              const wt = cpu.weight(dtype, w, n, k, layout);
              expect(wt.wide).toBe(false);
              expectTwin(cpu.matmul(wt, x, m), twin, k, label);
              for (const tiling of ['gemv', 'gemm'] as const) expectTwin(runTiling(cpu, wt, x, m, tiling), twin, k, `${label} ${tiling}`);
            }
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
      for (const kernel of KERNELS) {
        const cpu = await CpuMatmul.create({ kernel, tokens: 2 });
        for (const layout of layoutsOf(kernel)) {
          const wt = cpu.weight(dtype, w, n, k, layout);
          // q8_0 row 0 holds −128, which the relaxed sign trick cannot flip: that matrix runs the i16 dot ('split4w'
          // is exact for it)
          expect(wt.wide).toBe(kernel.startsWith('relaxed') && dtype === 'q8_0' && layout !== 'split4w');
          for (const tiling of ['gemv', 'gemm'] as const) {
            const y = runTiling(cpu, wt, x, m, tiling);
            expectTwin(y, twin, k, `${dtype} ${layout} ${kernel} ${tiling} adversarial`);
            for (let r = 0; r < n; r++) expect(y[r], `token 0 (x = 0), row ${r}`).toBe(0);
            for (let t = 0; t < m; t++) expect(y[t * n + 2], `zero row 2, token ${t}`).toBe(0);
            expect(Math.abs(y[n + 0])).toBeGreaterThan(1e6); // row 0 × outlier token is large and still within the bound
          }
        }
      }
    }
  });

  test('relaxed q8_0 is exact on ±127 quants against x of either sign (no −128: the relaxed dot itself runs)', async () => {
    const [n, k, m] = [4, 128, 6];
    const w = randomWeights('q8_0', n, k, mulberry32(11));
    for (let o = 0; o < w.length; o += 34) for (let j = 2; j < 34; j++) w[o + j] = (o / 34 + j) % 3 === 0 ? 0x81 : w[o + j] === 0x80 ? 0x7f : w[o + j];
    const x = randomF32(m * k, 12);
    for (let j = 0; j < x.length; j += 5) x[j] = x[j] < 0 ? -4 : 4; // amax lands on ±127 in most blocks
    const twin = cpuMatmulTwin('q8_0', w, n, k, x, m);
    for (const kernel of KERNELS) {
      const cpu = await CpuMatmul.create({ kernel });
      const wt = cpu.weight('q8_0', w, n, k);
      expect(wt.wide).toBe(false);
      for (const tiling of ['gemv', 'gemm'] as const) expectTwin(runTiling(cpu, wt, x, m, tiling), twin, k, `${kernel} ${tiling}`);
    }
  });
});

describe('weightRow', () => {
  test('dequantizes any row in every layout as the codec does', async () => {
    const [n, k] = [7, 96];
    for (const dtype of DTYPES) {
      const w = randomWeights(dtype, n, k, mulberry32(21));
      const want = dequantize(dtype, w, n, k);
      const cpu = await CpuMatmul.create();
      for (const layout of layoutsOf(cpu.config.kernel)) {
        const wt = cpu.weight(dtype, w, n, k, layout);
        const out = new Float32Array(k + 3);
        for (let r = 0; r < n; r++) {
          cpu.weightRow(wt, r, out, 3);
          expect([...out.subarray(3)], `${dtype} ${layout} row ${r}`).toEqual([...want.subarray(r * k, (r + 1) * k)]);
        }
      }
    }
  });
});

describe('CpuMatmul checks its arguments', () => {
  test('the scratch a caller sizes is the same for every kernel', async () => {
    for (const kernel of KERNELS) expect((await CpuMatmul.create({ kernel })).scratchBytes(3, 64)).toEqual({ xq: 4 * 3 * 64, xd: (4 * 3 * 64) / 32 });
  });

  test('the default kernel is relaxed where the engine has it', async () => {
    expect((await CpuMatmul.create()).config.kernel).toBe(KERNELS[0]);
  });

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
    expect(cpu.weight('q4_0', blocks, 2, 64, 'split4').bytes).toBe(32 + 8 * 16); // padded to a group of 4 rows
  });
});
