// Opt-in benchmark (INTAB_CPU_KERNEL_BENCH=1) of the wasm SIMD128 matmul kernels against onnxruntime-web's f32
// MatMul (wasm EP, one thread) on the shapes of SmolLM2-135M and Qwen3-0.6B, in Node (V8's wasm engine, as in
// Chromium). One JSON line per (shape, system): ms per call (min and median over interleaved rounds) and GB/s of
// weights read; then one line per model summing a decode step's matrices (layers × per-layer + head). Times are of
// quantize_x + the kernel on data already in wasm memory (what a runner holding x in its memory pays), and of
// session.run for ORT (including its per-call overhead, which a graph node pays in part). Not a pass/fail test.

import * as ort from 'onnxruntime-web';
import { describe, test } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { IR_VERSION, OPSET } from '../graph-builder.ts';
import { DataType, encodeModel } from '../onnx-proto.ts';
import { CpuMatmul, type CpuMatmulDtype, type WeightLayout } from './cpu-matmul.ts';

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

interface ModelShape {
  readonly model: string;
  readonly layers: number;
  /** Per layer: [N, K, count] of each matrix a decode step multiplies. */
  readonly perLayer: readonly [n: number, k: number, label: string][];
  /** The LM head: [N, K]. */
  readonly head: readonly [n: number, k: number];
}

// SmolLM2-135M: C 576, H 9 × D 64, Hkv 3, F 1536, L 30, tied embeddings (vocab 49,152 in the real model; 151,669
// with the Qwen3 tokenizer that `make-model --tokenizer qwen3` puts in, as the llama.cpp comparison runs).
// Qwen3-0.6B: C 1024, H 16 × D 128, Hkv 8, F 3072, L 28, vocab 151,936.
const MODELS: readonly ModelShape[] = [
  { model: 'smollm2-135m', layers: 30, perLayer: [[576, 576, 'q'], [192, 576, 'k'], [192, 576, 'v'], [576, 576, 'o'], [1536, 576, 'gate'], [1536, 576, 'up'], [576, 1536, 'down']], head: [49152, 576] },
  { model: 'smollm2-135m (qwen3 vocab)', layers: 30, perLayer: [[576, 576, 'q'], [192, 576, 'k'], [192, 576, 'v'], [576, 576, 'o'], [1536, 576, 'gate'], [1536, 576, 'up'], [576, 1536, 'down']], head: [151669, 576] },
  { model: 'qwen3-0.6b', layers: 28, perLayer: [[2048, 1024, 'q'], [1024, 1024, 'k'], [1024, 1024, 'v'], [1024, 2048, 'o'], [3072, 1024, 'gate'], [3072, 1024, 'up'], [1024, 3072, 'down']], head: [151936, 1024] },
];

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

/** Our kernel on a weight matrix already in wasm memory: quantize x, then gemv (M = 1) or gemm. */
function ourMatmul(cpu: CpuMatmul, dtype: CpuMatmulDtype, layout: WeightLayout, n: number, k: number, m: number, tiling: 'gemv' | 'gemm' = 'gemv'): { call: () => void; bytes: number } {
  const w = cpu.weight(dtype, randomWeights(dtype, n, k, mulberry32(n + k)), n, k, layout);
  const x = cpu.upload(new Uint8Array(randomF32(m * k, 5).buffer));
  const xq = cpu.alloc(2 * m * k);
  const xd = cpu.alloc((m * k) / 8);
  const y = cpu.alloc(4 * m * n);
  const call = () => {
    cpu.quantizeX(x, xq, xd, (m * k) / 32);
    cpu.raw(w, xq, xd, y, m, tiling);
  };
  return { call, bytes: w.bytes };
}

const stats = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return { min: s[0], median: s[s.length >> 1] };
};
const r4 = (v: number) => Math.round(v * 1e4) / 1e4;

describe.skipIf(!process.env.INTAB_CPU_KERNEL_BENCH)('bench cpu-kernels', () => {
  test('gemv q4_0 / q8_0 (wasm SIMD128) vs ORT f32 MatMul, one thread', async () => {
    const rounds = Number(process.env.INTAB_CPU_KERNEL_ROUNDS ?? 7);
    const withOrt = process.env.INTAB_CPU_KERNEL_ORT !== '0';
    const rowsVariants = (process.env.INTAB_CPU_KERNEL_ROWS ?? '4').split(',').map(Number);
    const layouts = (process.env.INTAB_CPU_KERNEL_LAYOUTS ?? 'gguf,split').split(',') as WeightLayout[];
    const shapes = new Map<string, [number, number]>();
    for (const mdl of MODELS) for (const [n, k] of [...mdl.perLayer.map(([n, k]) => [n, k] as const), mdl.head]) shapes.set(`${n}x${k}`, [n, k]);
    const msPerCall = new Map<string, number>(); // `${system}|${n}x${k}` → median ms
    const msMin = new Map<string, number>(); // … → min ms
    for (const [key, [n, k]] of shapes) {
      const systems: { name: string; bytes: number; call: () => void | Promise<void>; release?: () => Promise<void> }[] = [];
      for (const rows of rowsVariants) {
        for (const layout of layouts) {
          for (const dtype of ['q4_0', 'q8_0'] as const) {
            const cpu = await CpuMatmul.create({ rows });
            const { call, bytes } = ourMatmul(cpu, dtype, layout, n, k, 1);
            systems.push({ name: `intab-wasm-simd/${dtype}/${layout}${rowsVariants.length > 1 ? `/rows${rows}` : ''}`, bytes, call });
          }
        }
      }
      if (withOrt && n * k * 4 < 2 ** 30) {
        const o = await ortMatmul(n, k);
        systems.push({ name: 'ort-web-wasm/f32-MatMul', bytes: n * k * 4, call: o.run, release: o.release });
      }
      // calls per timing so one timing lasts ≥ ~20 ms; warm up (JIT tier-up, first-touch of memory) first
      const iters = new Map<string, number>();
      for (const s of systems) {
        await s.call();
        const t0 = performance.now();
        await s.call();
        iters.set(s.name, Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 1e-3))));
      }
      const times = new Map<string, number[]>(systems.map((s) => [s.name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const s of systems) {
          const it = iters.get(s.name)!;
          const t0 = performance.now();
          for (let i = 0; i < it; i++) await s.call();
          times.get(s.name)!.push((performance.now() - t0) / it);
        }
      }
      for (const s of systems) {
        const { min, median } = stats(times.get(s.name)!);
        msPerCall.set(`${s.name}|${key}`, median);
        msMin.set(`${s.name}|${key}`, min);
        console.log(JSON.stringify({ bench: 'cpu-kernels', system: s.name, n, k, m: 1, threads: 1, ms_min: r4(min), ms_median: r4(median), weight_bytes: s.bytes, gbps_median: r4(s.bytes / median / 1e6), gbps_best: r4(s.bytes / min / 1e6), calls_per_timing: iters.get(s.name), rounds }));
        await s.release?.();
      }
    }
    // a decode step's matmuls: layers × per-layer matrices + head (attention, norms, rope, sampling not included)
    const systemNames = [...new Set([...msPerCall.keys()].map((key) => key.split('|')[0]))];
    for (const mdl of MODELS) {
      for (const sys of systemNames) {
        const t = (n: number, k: number) => msPerCall.get(`${sys}|${n}x${k}`);
        const layer = mdl.perLayer.map(([n, k]) => t(n, k));
        const head = t(...mdl.head);
        if (layer.some((v) => v === undefined) || head === undefined) continue;
        const layerMs = layer.reduce((a, b) => a! + b!, 0)!;
        const stepMs = mdl.layers * layerMs + head;
        const best = (n: number, k: number) => msMin.get(`${sys}|${n}x${k}`)!;
        const bestMs = mdl.layers * mdl.perLayer.reduce((a, [n, k]) => a + best(n, k), 0) + best(...mdl.head);
        console.log(JSON.stringify({ bench: 'cpu-kernels-model', system: sys, model: mdl.model, layers: mdl.layers, head: mdl.head, layer_ms: r4(layerMs), head_ms: r4(head), matmul_ms_per_token: r4(stepMs), matmul_bound_tok_s: r4(1000 / stepMs), matmul_ms_per_token_from_mins: r4(bestMs), matmul_bound_tok_s_from_mins: r4(1000 / bestMs) }));
      }
    }
  }, 1_800_000);

  test('prefill: gemm (1 row × 4 tokens) vs the decode tiling (4 rows × 1 token) on M = 32 tokens', async () => {
    const rounds = Number(process.env.INTAB_CPU_KERNEL_ROUNDS ?? 7);
    const m = 32;
    for (const [n, k] of [[1536, 576], [576, 1536], [3072, 1024], [1024, 3072]] as const) {
      for (const dtype of ['q4_0', 'q8_0'] as const) {
        const cpu = await CpuMatmul.create();
        const systems = (['gemv', 'gemm'] as const).map((tiling) => ({ tiling, ...ourMatmul(cpu, dtype, 'split', n, k, m, tiling) }));
        for (const s of systems) s.call(); // warm up
        const times = new Map<string, number[]>(systems.map((s) => [s.tiling, []]));
        for (let round = 0; round < rounds; round++) {
          for (const s of systems) {
            const t0 = performance.now();
            for (let i = 0; i < 3; i++) s.call();
            times.get(s.tiling)!.push((performance.now() - t0) / 3);
          }
        }
        for (const s of systems) {
          const { min, median } = stats(times.get(s.tiling)!);
          console.log(JSON.stringify({ bench: 'cpu-kernels-prefill', system: `intab-wasm-simd/${dtype}/split`, tiling: s.tiling, n, k, m, threads: 1, ms_min: r4(min), ms_median: r4(median), ms_per_token_min: r4(min / m), rounds }));
        }
      }
    }
  }, 1_800_000);
});
