// What the CPU matmul benchmarks share (cpu-matmul.bench.test.ts in Node, cpu-matmul.gpu.test.ts in Chromium): the
// model shapes, a kernel call on data already in wasm memory, interleaved timing, the per-model step sums (a decode
// step, M = 1, and a prefill step of M tokens with the LM head for the last token only, as llama.cpp computes
// logits), and a whole decode step with every layer's weights of its own (streamed from memory, as in a real step).
// Test support only; nothing here is shipped.

import { mulberry32 } from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { CpuMatmul, availableKernels, type CpuKernel, type CpuMatmulDtype, type CpuMatmulOptions } from './cpu-matmul.ts';

export interface ModelShape {
  readonly model: string;
  readonly layers: number;
  /** Per layer: [N, K, label] of each matrix a decode step multiplies. */
  readonly perLayer: readonly [n: number, k: number, label: string][];
  /** The LM head: [N, K]. */
  readonly head: readonly [n: number, k: number];
}

// SmolLM2-135M: C 576, H 9 × D 64, Hkv 3, F 1536, L 30, tied embeddings (vocab 49,152 in the real model; 151,669
// with the Qwen3 tokenizer that `make-model --tokenizer qwen3` puts in, as the llama.cpp comparison runs).
// Qwen3-0.6B: C 1024, H 16 × D 128, Hkv 8, F 3072, L 28, vocab 151,936.
const SMOLLM2_LAYER: ModelShape['perLayer'] = [[576, 576, 'q'], [192, 576, 'k'], [192, 576, 'v'], [576, 576, 'o'], [1536, 576, 'gate'], [1536, 576, 'up'], [576, 1536, 'down']];
export const MODELS: readonly ModelShape[] = [
  { model: 'smollm2-135m', layers: 30, perLayer: SMOLLM2_LAYER, head: [49152, 576] },
  { model: 'smollm2-135m (qwen3 vocab)', layers: 30, perLayer: SMOLLM2_LAYER, head: [151669, 576] },
  { model: 'qwen3-0.6b', layers: 28, perLayer: [[2048, 1024, 'q'], [1024, 1024, 'k'], [1024, 1024, 'v'], [1024, 2048, 'o'], [3072, 1024, 'gate'], [3072, 1024, 'up'], [1024, 3072, 'down']], head: [151936, 1024] },
];

/** Seeded GGUF blocks; q8_0 without the quant −128, which ggml never writes (the relaxed kernels would run the i16 dot). */
export function benchWeights(dtype: CpuMatmulDtype, n: number, k: number): Uint8Array {
  const w = randomWeights(dtype, n, k, mulberry32(n + k));
  if (dtype === 'q8_0') for (let o = 0; o < w.length; o += 34) for (let j = 2; j < 34; j++) if (w[o + j] === 0x80) w[o + j] = 0x81;
  return w;
}

/** A kernel call on a weight matrix already in wasm memory: quantize x, then the tiling CpuMatmul picks for M (or `tiling`). */
export function benchCall(cpu: CpuMatmul, dtype: CpuMatmulDtype, blocks: Uint8Array, n: number, k: number, m: number, tiling?: 'gemv' | 'gemm'): { call: () => void; bytes: number } {
  const w = cpu.weight(dtype, blocks, n, k);
  const x = cpu.upload(new Uint8Array(randomF32(m * k, 5).buffer));
  const scratch = cpu.scratchBytes(m, k);
  const xq = cpu.alloc(scratch.xq);
  const xd = cpu.alloc(scratch.xd);
  const y = cpu.alloc(4 * m * n);
  const call = () => {
    cpu.quantizeX(x, xq, xd, (m * k) / 32);
    cpu.raw(w, xq, xd, y, m, tiling);
  };
  return { call, bytes: w.bytes };
}

export interface BenchSystem {
  readonly name: string;
  readonly options: CpuMatmulOptions;
}

/** 'old' (the first kernels: i16 dots, 'split', decode tiles 2×1, prefill 1×4) and every kernel this engine runs, with its defaults. */
export function benchSystems(kernels: readonly CpuKernel[] = availableKernels().filter((k) => k !== 'i8')): BenchSystem[] {
  return [{ name: 'old/i16/split/2x1,1x4', options: { kernel: 'i16', layout: 'split', rows: 2, prefillRows: 1, tokens: 4 } }, ...kernels.map((kernel) => ({ name: `new/${kernel}`, options: { kernel } }))];
}

const stats = (v: number[]) => {
  const s = [...v].sort((a, b) => a - b);
  return { min: s[0], median: s[s.length >> 1] };
};
export const r4 = (v: number): number => Math.round(v * 1e4) / 1e4;

export interface Timing {
  readonly min: number;
  readonly median: number;
  readonly iters: number;
}

/**
 * Times `calls` (name → function) with rounds interleaved: calls per timing so one timing lasts ≥ ~20 ms, after a
 * warm-up (JIT tier-up, first touch of memory). Returns name → ms per call (min and median over rounds).
 */
export async function timeInterleaved(calls: Map<string, () => void | Promise<void>>, rounds: number): Promise<Map<string, Timing>> {
  const iters = new Map<string, number>();
  for (const [name, call] of calls) {
    await call();
    const t0 = performance.now();
    await call();
    iters.set(name, Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 1e-3))));
  }
  const times = new Map<string, number[]>([...calls.keys()].map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, call] of calls) {
      const it = iters.get(name)!;
      const t0 = performance.now();
      for (let i = 0; i < it; i++) await call();
      times.get(name)!.push((performance.now() - t0) / it);
    }
  }
  return new Map([...times].map(([name, t]) => [name, { ...stats(t), iters: iters.get(name)! }]));
}

/** The (N, K, M) jobs a set of models' step sums need: per-layer matrices at M = 1 and `prefillM`, heads at M = 1. */
export function stepJobs(models: readonly ModelShape[], prefillM: number): Map<string, [n: number, k: number, m: number]> {
  const jobs = new Map<string, [number, number, number]>();
  for (const mdl of models) {
    for (const [n, k] of mdl.perLayer) for (const m of [1, prefillM]) jobs.set(`${n}x${k}@${m}`, [n, k, m]);
    jobs.set(`${mdl.head[0]}x${mdl.head[1]}@1`, [...mdl.head, 1]);
  }
  return jobs;
}

/**
 * One JSON-able line per (model, system) from per-job timings (`ms`: `${system}|${n}x${k}@${m}` → timing): a decode
 * step (layers × per-layer + head at M = 1) and a prefill step of `prefillM` tokens (layers × per-layer at M =
 * prefillM + the head at M = 1), from medians and from minimums.
 */
export function stepSums(models: readonly ModelShape[], ms: Map<string, Timing>, prefillM: number): Record<string, unknown>[] {
  const systems = [...new Set([...ms.keys()].map((key) => key.split('|')[0]))];
  const lines: Record<string, unknown>[] = [];
  for (const mdl of models) {
    for (const sys of systems) {
      const sum = (which: 'min' | 'median', m: number) => {
        const layer = mdl.perLayer.map(([n, k]) => ms.get(`${sys}|${n}x${k}@${m}`));
        const head = ms.get(`${sys}|${mdl.head[0]}x${mdl.head[1]}@1`);
        if (layer.some((t) => t === undefined) || head === undefined) return undefined;
        return mdl.layers * layer.reduce((a, t) => a + t![which], 0) + head[which];
      };
      const decode = sum('median', 1);
      if (decode === undefined) continue;
      const line: Record<string, unknown> = { bench: 'cpu-kernels-model', system: sys, model: mdl.model, layers: mdl.layers, head: mdl.head, decode_ms_median: r4(decode), decode_ms_from_mins: r4(sum('min', 1)!), decode_tok_s: r4(1000 / decode) };
      const prefill = sum('median', prefillM);
      if (prefill !== undefined) Object.assign(line, { prefill_m: prefillM, prefill_ms_median: r4(prefill), prefill_ms_from_mins: r4(sum('min', prefillM)!), prefill_ms_per_token: r4(prefill / prefillM), prefill_tok_s: r4((1000 * prefillM) / prefill) });
      lines.push(line);
    }
  }
  return lines;
}

/**
 * A whole decode step as a runner runs it, weights streamed from memory: every layer's matrices as copies of their
 * own (layers × per-layer, so the step reads ~all its weight bytes from DRAM as a real one does, unlike the per-shape
 * timings above, where one matrix stays in cache across calls) and the head, each quantizing its x then multiplying
 * (M = 1). Returns the call and the weight bytes it reads.
 */
export async function streamedDecodeStep(options: CpuMatmulOptions, mdl: ModelShape, dtype: CpuMatmulDtype): Promise<{ call: () => void; bytes: number }> {
  const cpu = await CpuMatmul.create(options);
  const shapes = [...Array.from({ length: mdl.layers }, () => mdl.perLayer.map(([n, k]) => [n, k] as const)).flat(), mdl.head];
  const blocks = new Map<string, Uint8Array>();
  const calls: (() => void)[] = [];
  let bytes = 0;
  for (const [n, k] of shapes) {
    const key = `${n}x${k}`;
    if (!blocks.has(key)) blocks.set(key, benchWeights(dtype, n, k));
    const c = benchCall(cpu, dtype, blocks.get(key)!, n, k, 1);
    calls.push(c.call);
    bytes += c.bytes;
  }
  return { call: () => calls.forEach((c) => c()), bytes };
}

/**
 * The streamed decode step (streamedDecodeStep) of each system, timed in interleaved rounds: one JSON record each
 * (`cpu-kernels-decode-streamed`: ms, the weight bytes read and GB/s).
 */
export async function streamedDecodeLines(systems: readonly BenchSystem[], mdl: ModelShape, dtype: CpuMatmulDtype, rounds: number): Promise<Record<string, unknown>[]> {
  const calls = new Map<string, () => void>();
  const bytes = new Map<string, number>();
  for (const s of systems) {
    const o = await streamedDecodeStep(s.options, mdl, dtype);
    calls.set(s.name, o.call);
    bytes.set(s.name, o.bytes);
  }
  return [...(await timeInterleaved(calls, rounds))].map(([name, t]) => ({
    bench: 'cpu-kernels-decode-streamed',
    system: `${name}/${dtype}`,
    model: mdl.model,
    ms_min: r4(t.min),
    ms_median: r4(t.median),
    weight_mb: r4(bytes.get(name)! / 1e6),
    gbps_median: r4(bytes.get(name)! / t.median / 1e6),
  }));
}
