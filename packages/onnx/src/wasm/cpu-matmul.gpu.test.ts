// The wasm matmul kernels in real headless Chromium (where users run them; no GPU involved, the gpu tier is simply
// the one that runs a browser): which relaxed-SIMD forms this V8 computes right, every kernel it runs against the CPU
// twin (reference.ts) on ragged shapes, and, printed as JSON lines, the SmolLM2-135M decode and 64-token prefill step
// sums and a whole decode step streamed from memory, original kernel against the current ones (test-cpu-matmul-bench.ts;
// about a minute, q4_0 and q8_0; only with INTAB_CPU_KERNEL_BENCH=1).

import { describe, expect, inject, test } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    cpuKernelBench: boolean;
  }
}
import { dequantize, mulberry32 } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { CpuMatmul, availableKernels, relaxedSimdForms, type CpuMatmulDtype } from './cpu-matmul.ts';
import { MODELS, benchCall, benchSystems, benchWeights, r4, stepJobs, stepSums, streamedDecodeLines, timeInterleaved, type Timing } from './test-cpu-matmul-bench.ts';
import { cpuMatmulTwin } from './reference.ts';
import { expectTwin, layoutsOf, runTiling } from './test-cpu-matmul.ts';

describe('cpu matmul kernels in Chromium', () => {
  test('relaxed SIMD: both dot forms run right, so the default kernel is the add form (its u8 variant where it computes one)', async () => {
    console.log(JSON.stringify({ bench: 'cpu-kernels-engine', userAgent: navigator.userAgent, relaxedForms: relaxedSimdForms(), kernels: availableKernels() }));
    // 'u8' (an unsigned second operand computed exactly) only where x64 V8 uses AVX-VNNI, as on this machine
    const forms = relaxedSimdForms();
    expect(forms.slice(0, 2)).toEqual(['add', 'dot16']);
    expect((await CpuMatmul.create()).config.kernel).toBe(forms.includes('u8') ? 'relaxed-u8' : 'relaxed');
  });

  test('every kernel, layout and tiling against the twin (ragged N and M; q8_0 with and without −128)', async () => {
    for (const dtype of ['q4_0', 'q8_0'] as CpuMatmulDtype[]) {
      for (const [n, k, m] of [[13, 576, 1], [17, 64, 18], [10, 96, 11], [6, 128, 4]]) {
        for (const clean of dtype === 'q8_0' ? [true, false] : [true]) {
          const w = clean ? benchWeights(dtype, n, k) : randomWeights(dtype, n, k, mulberry32(n));
          const x = randomF32(m * k, n + m);
          const twin = cpuMatmulTwin(dtype, w, n, k, x, m);
          for (const kernel of availableKernels()) {
            const cpu = await CpuMatmul.create({ kernel, tokens: 3 });
            for (const layout of layoutsOf(kernel)) {
              const wt = cpu.weight(dtype, w, n, k, layout);
              for (const tiling of ['gemv', 'gemm'] as const) expectTwin(runTiling(cpu, wt, x, m, tiling), twin, k, `${dtype} ${kernel} ${layout} ${tiling} (${n}, ${k}) M=${m} wide=${wt.wide}`);
            }
          }
        }
      }
    }
  });

  test('weightRow dequantizes every kernel\'s layouts as the codec does (q8_0 stored + 128 on relaxed-u8)', async () => {
    const [n, k] = [7, 96];
    for (const dtype of ['q4_0', 'q8_0'] as CpuMatmulDtype[]) {
      const w = randomWeights(dtype, n, k, mulberry32(21));
      const want = dequantize(dtype, w, n, k);
      for (const kernel of availableKernels()) {
        const cpu = await CpuMatmul.create({ kernel });
        for (const layout of layoutsOf(kernel)) {
          const wt = cpu.weight(dtype, w, n, k, layout);
          expect(wt.offset ?? false).toBe(kernel === 'relaxed-u8' && dtype === 'q8_0' && layout !== 'gguf');
          const out = new Float32Array(k);
          for (let r = 0; r < n; r++) {
            cpu.weightRow(wt, r, out);
            expect([...out], `${dtype} ${kernel} ${layout} row ${r}`).toEqual([...want.subarray(r * k, (r + 1) * k)]);
          }
        }
      }
    }
  });

  test.runIf(inject('cpuKernelBench'))('SmolLM2-135M step sums, original vs current kernels (JSON lines; INTAB_CPU_KERNEL_BENCH=1)', async () => {
    const prefillM = 64;
    const models = MODELS.filter((mdl) => mdl.model.startsWith('smollm2'));
    const systems = benchSystems();
    const ms = new Map<string, Timing>();
    for (const [key, [n, k, m]] of stepJobs(models, prefillM)) {
      for (const dtype of ['q4_0', 'q8_0'] as CpuMatmulDtype[]) {
        const blocks = benchWeights(dtype, n, k);
        const calls = new Map<string, () => void>();
        for (const s of systems) calls.set(s.name, benchCall(await CpuMatmul.create(s.options), dtype, blocks, n, k, m).call);
        for (const [name, t] of await timeInterleaved(calls, 5)) {
          ms.set(`${name}/${dtype}|${key}`, t);
          console.log(JSON.stringify({ bench: 'cpu-kernels', engine: 'chromium', system: `${name}/${dtype}`, n, k, m, ms_min: r4(t.min), ms_median: r4(t.median), gmacs_median: r4((n * k * m) / t.median / 1e6) }));
        }
      }
    }
    for (const line of stepSums(models, ms, prefillM)) console.log(JSON.stringify({ ...line, engine: 'chromium' }));
    // a whole decode step, every layer's weights its own copies (read from memory as in a real step)
    const mdl = MODELS.find((x) => x.model === 'smollm2-135m (qwen3 vocab)')!;
    for (const dtype of ['q4_0', 'q8_0'] as CpuMatmulDtype[]) {
      for (const line of await streamedDecodeLines(systems, mdl, dtype, 5)) console.log(JSON.stringify({ ...line, engine: 'chromium' }));
    }
  }, 600_000);
});
