// Opt-in benchmark (INTAB_CPU_KERNEL_BENCH=1) of the wasm SIMD128 matmul kernels on the shapes of SmolLM2-135M and
// Qwen3-0.6B, in Node (V8's wasm engine, as in Chromium), one thread: the original kernel ('old': i16 dots, decode
// tiles 2×1, prefill tiles 1×4) against the current ones (every kernel this engine runs, CpuMatmul's default tiles),
// all timed in one run with rounds interleaved. One JSON line per (shape, M, system): ms per call (min and median);
// then one line per (model, dtype, system) summing a decode step's matrices (layers × per-layer + head, M = 1) and a
// 64-token prefill step's (layers × per-layer at M = 64 + the head for the last token only, as llama.cpp computes
// logits). Times are of quantize_x + the kernel on data already in wasm memory (what a runner holding x in its memory
// pays); a matrix timed alone stays in cache across calls, so last comes a whole decode step per (model, dtype,
// system) with every layer's weights of its own, read from memory as in a real step ('cpu-kernels-decode-streamed'). Node 20 has relaxed SIMD only behind --experimental-wasm-relaxed-simd (not allowed in NODE_OPTIONS), so the
// bench sets that V8 flag itself unless INTAB_CPU_KERNEL_RELAXED=0; there 'relaxed16' runs (the add form computes
// wrong sums in that V8). INTAB_CPU_KERNEL_ORT=1 adds onnxruntime-web's f32 MatMul (wasm EP) at M = 1;
// INTAB_CPU_KERNEL_SWEEP=1 runs the tile-shape sweep instead. Not a pass/fail test.

import v8 from 'node:v8';
import * as ort from 'onnxruntime-web';
import { describe, test } from 'vitest';
import { randomF32 } from '@intab/gpu/reference';
import { IR_VERSION, OPSET } from '../graph-builder.ts';
import { DataType, encodeModel } from '../onnx-proto.ts';
import { CpuMatmul, availableKernels, relaxedSimdForms, type CpuKernel, type CpuMatmulDtype, type CpuMatmulOptions, type WeightLayout } from './cpu-matmul.ts';
import { MODELS, benchCall, benchSystems, benchWeights, r4, stepJobs, stepSums, streamedDecodeLines, timeInterleaved, type Timing } from './test-cpu-matmul-bench.ts';

if (process.env.INTAB_CPU_KERNEL_RELAXED !== '0' && relaxedSimdForms().length === 0) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

/** ORT's f32 MatMul x (1, K) · W (K, N) as a one-node graph, W an initializer. */
async function ortMatmul(n: number, k: number): Promise<{ run: () => Promise<void>; release: () => Promise<void> }> {
  const w = randomF32(n * k, 3, 0.05);
  const model = encodeModel({
    irVersion: IR_VERSION,
    opsetImports: [{ domain: '', version: OPSET }],
    graph: {
      name: 'matmul',
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'], name: 'mm' }],
      initializers: [{ name: 'w', dataType: DataType.FLOAT, dims: [k, n], data: new Uint8Array(w.buffer) }],
      inputs: [{ name: 'x', elemType: DataType.FLOAT, dims: [1, k] }],
      outputs: [{ name: 'y', elemType: DataType.FLOAT, dims: [1, n] }],
    },
  });
  const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: 'all' });
  const x = new ort.Tensor('float32', randomF32(k, 4), [1, k]);
  return {
    run: async () => {
      const out = await session.run({ x });
      out.y.dispose();
    },
    release: () => session.release(),
  };
}

describe.skipIf(!process.env.INTAB_CPU_KERNEL_BENCH || process.env.INTAB_CPU_KERNEL_SWEEP)('bench cpu-kernels', () => {
  test('decode (M = 1) and prefill (M = 64) step sums, old vs new kernels, one thread', async () => {
    const rounds = Number(process.env.INTAB_CPU_KERNEL_ROUNDS ?? 7);
    const prefillM = Number(process.env.INTAB_CPU_KERNEL_PREFILL_M ?? 64);
    const dtypes = (process.env.INTAB_CPU_KERNEL_DTYPES ?? 'q4_0,q8_0').split(',') as CpuMatmulDtype[];
    const models = MODELS.filter((mdl) => !process.env.INTAB_CPU_KERNEL_MODELS || process.env.INTAB_CPU_KERNEL_MODELS.split(',').includes(mdl.model));
    const withOrt = process.env.INTAB_CPU_KERNEL_ORT === '1';
    const systems = benchSystems(process.env.INTAB_CPU_KERNEL_KERNELS?.split(',') as CpuKernel[] | undefined);
    const ms = new Map<string, Timing>(); // `${system}/${dtype}|${n}x${k}@${m}` → ms per call
    for (const [key, [n, k, m]] of stepJobs(models, prefillM)) {
      for (const dtype of dtypes) {
        const calls = new Map<string, () => void | Promise<void>>();
        const bytes = new Map<string, number>();
        const blocks = benchWeights(dtype, n, k);
        for (const s of systems) {
          const o = benchCall(await CpuMatmul.create(s.options), dtype, blocks, n, k, m);
          calls.set(s.name, o.call);
          bytes.set(s.name, o.bytes);
        }
        let release: (() => Promise<void>) | undefined;
        if (withOrt && m === 1 && dtype === dtypes[0] && n * k * 4 < 2 ** 30) {
          const o = await ortMatmul(n, k);
          calls.set('ort-web-wasm/f32-MatMul', o.run);
          release = o.release;
        }
        for (const [name, t] of await timeInterleaved(calls, rounds)) {
          const sys = name.startsWith('ort') ? name : `${name}/${dtype}`;
          ms.set(`${sys}|${key}`, t);
          const b = bytes.get(name) ?? n * k * 4;
          console.log(JSON.stringify({ bench: 'cpu-kernels', system: sys, n, k, m, threads: 1, ms_min: r4(t.min), ms_median: r4(t.median), gbps_median: r4(b / t.median / 1e6), gmacs_median: r4((n * k * m) / t.median / 1e6), calls_per_timing: t.iters, rounds }));
        }
        await release?.();
      }
    }
    for (const line of stepSums(models, ms, prefillM)) console.log(JSON.stringify(line));
    // whole decode steps with weights streamed from memory (each layer's matrices its own copies)
    for (const mdl of models) {
      for (const dtype of dtypes) {
        for (const line of await streamedDecodeLines(systems, mdl, dtype, rounds)) console.log(JSON.stringify({ ...line, rounds }));
      }
    }
  }, 3_600_000);
});

describe.skipIf(!process.env.INTAB_CPU_KERNEL_BENCH || !process.env.INTAB_CPU_KERNEL_SWEEP)('bench cpu-kernel tiles', () => {
  test('tile shapes per kernel: decode R×1 at M = 1, prefill R×T at M = 64', async () => {
    const rounds = Number(process.env.INTAB_CPU_KERNEL_ROUNDS ?? 5);
    const kernels = (process.env.INTAB_CPU_KERNEL_KERNELS?.split(',') ?? availableKernels().filter((k) => k !== 'i8')) as CpuMatmulOptions['kernel'][];
    const dtypes = (process.env.INTAB_CPU_KERNEL_DTYPES ?? 'q4_0,q8_0').split(',') as CpuMatmulDtype[];
    const layouts = (process.env.INTAB_CPU_KERNEL_LAYOUTS ?? 'split,split4').split(',') as WeightLayout[];
    // 'split4' takes rows in its groups of 4: only its token count varies
    const decodeTiles = (layout: WeightLayout): [number, number][] => (layout === 'split4' ? [[4, 1]] : [1, 2, 3, 4, 6].map((r) => [r, 1]));
    const prefillTiles = (layout: WeightLayout): [number, number][] =>
      layout === 'split4' ? [1, 2, 3, 4, 5, 6, 8].map((t) => [4, t]) : [[1, 4], [2, 2], [2, 3], [2, 4], [3, 2], [3, 3], [3, 4], [4, 2], [4, 3], [4, 4], [2, 6], [1, 8], [2, 8]];
    for (const dtype of dtypes) {
      for (const kernel of kernels) {
        for (const [n, k, m] of [[1536, 576, 1], [576, 1536, 1], [1536, 576, 64], [576, 1536, 64]] as const) {
          const calls = new Map<string, () => void>();
          const blocks = benchWeights(dtype, n, k);
          for (const layout of layouts) {
            for (const [r, t] of m === 1 ? decodeTiles(layout) : prefillTiles(layout)) {
              // T = 1 tiles at M = 64 run through the decode kernel
              const options: CpuMatmulOptions = t === 1 ? { kernel, layout, rows: r } : layout === 'split4' ? { kernel, layout, tokens: t } : { kernel, layout, prefillRows: r, tokens: t };
              calls.set(`${layout}/${r}x${t}`, benchCall(await CpuMatmul.create(options), dtype, blocks, n, k, m, t === 1 ? 'gemv' : 'gemm').call);
            }
          }
          for (const [tile, t] of await timeInterleaved(calls, rounds)) {
            console.log(JSON.stringify({ bench: 'cpu-kernel-tiles', kernel, dtype, tile, n, k, m, ms_min: r4(t.min), ms_median: r4(t.median), gmacs_median: r4((n * k * m) / t.median / 1e6) }));
          }
        }
      }
    }
  }, 3_600_000);
});
