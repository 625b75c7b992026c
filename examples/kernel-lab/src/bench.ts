// The kernel benchmark: baselines (copyBufferToBuffer bandwidth, the best streaming-read kernel of a
// sweep), then one JSON record per case (GEMV, GEMM, decode attention, the kernels that reduce across a
// workgroup: RMSNorm and the sampler's pick, and Qwen3.5's causal conv and gated delta rule) with median_ms, gbps
// (bytes the kernel must read / time), gflops and both ratios. Runs on whatever GPU the page gets; `intab bench
// kernels` runs it headless.

import {
  BLOCK,
  kMultiple,
  mulberry32,
  packSamplingBatch,
  createAttentionDecode,
  createCausalConv1d,
  createGatedDelta,
  createGemm,
  createGemv,
  createRmsNorm,
  createSampler,
  createStreamRead,
  createWeight,
  rowBytes,
  streamReadOutBytes,
  writeRows,
  type Gpu,
  type SamplingParams,
  type WeightDtype,
  type WeightTensor,
} from '@intab/gpu';
import { randomF32, randomWeights } from '@intab/gpu/reference';
import { timeRecording, type Timing } from './timing.ts';
import { MODELS, gemvShapes } from './shapes.ts';

export type BenchRecord = Record<string, unknown>;
export type Report = (record: BenchRecord) => void;

export interface BenchOptions {
  /** Smaller shapes and fewer cases: a smoke run (e2e, CI). */
  quick?: boolean;
  /** Only cases whose kernel/dtype/shape label contains this. */
  filter?: string;
  dtypes?: WeightDtype[];
}

const GB = 1e9;
const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

interface ReadConfig {
  workgroupSize: number;
  spanBytes: number;
}

export async function runKernelBench(gpu: Gpu, report: Report, o: BenchOptions = {}): Promise<void> {
  const quick = o.quick ?? false;
  report({ type: 'device', ...gpu.adapterInfo, features: gpu.features, maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize });

  // ---- baselines ----
  const baseBytes = quick ? 8 << 20 : 64 << 20;
  const copy = await copyBandwidth(gpu, baseBytes, quick);
  report({ type: 'baseline', kernel: 'copyBufferToBuffer', bytes: baseBytes, median_ms: round(copy.median_ms), gbps: round(baseBytes / GB / (copy.median_ms / 1e3)), clock: copy.clock });
  const copyGbps = baseBytes / GB / (copy.median_ms / 1e3);

  const sweep = await streamReadSweep(gpu, baseBytes, quick);
  const best = sweep[0];
  report({
    type: 'baseline',
    kernel: 'stream-read',
    bytes: baseBytes,
    workgroup_size: best.config.workgroupSize,
    span_bytes: best.config.spanBytes,
    median_ms: round(best.timing.median_ms),
    gbps: round(best.gbps),
    swept: sweep.length,
    clock: best.timing.clock,
  });
  const topConfigs = sweep.slice(0, 3).map((s) => s.config);

  // ---- GEMV at real decode shapes, GEMM (prefill / verify / batched decode) at T = 16 and 128 ----
  const ctx: CaseContext = { gpu, report, copyGbps, topConfigs, quick };
  const dtypes = o.dtypes ?? (quick ? ['q4_0', 'q8_0'] : ['q4_0', 'q8_0', 'q4_K', 'q6_K', 'f16']);
  const models = quick ? MODELS.slice(0, 1) : MODELS;
  for (const model of models) {
    const shapes = gemvShapes(model).filter(([name]) => !quick || name !== 'lm_head');
    for (const [op, n, k] of shapes) {
      for (const dtype of dtypes) {
        const label = `gemv ${dtype} ${model.name}.${op}`;
        if (!o.filter || label.includes(o.filter)) await matmulCase(ctx, label, dtype, model.name, op, n, k, 1);
      }
    }
  }
  // Small steps (batched decode, speculative verify) on the first model: GEMV over B vectors against
  // GEMM over T = B tokens, the two ways the model can route them.
  {
    const model = MODELS[0];
    const small = gemvShapes(model).filter(([name]) => name !== 'attn.q' && (!quick || name !== 'lm_head'));
    for (const b of quick ? [4] : [2, 4]) {
      for (const [op, n, k] of small) {
        for (const dtype of ['q4_0', 'q8_0'] as const) {
          if (o.dtypes && !o.dtypes.includes(dtype)) continue;
          const gemv = `gemv ${dtype} ${model.name}.${op} B=${b}`;
          if (!o.filter || gemv.includes(o.filter)) await matmulCase(ctx, gemv, dtype, model.name, op, n, k, b, 'gemv');
          const gemm = `gemm ${dtype} ${model.name}.${op} T=${b}`;
          if (!o.filter || gemm.includes(o.filter)) await matmulCase(ctx, gemm, dtype, model.name, op, n, k, b, 'gemm');
        }
      }
    }
  }
  const gemmDtypes = o.dtypes ?? (quick ? ['q4_0'] : ['q4_0', 'q8_0', 'q4_K', 'f16']);
  for (const model of models) {
    const [op, n, k] = gemvShapes(model).find(([name]) => name === 'ffn.up')!;
    for (const t of quick ? [16] : [16, 128]) {
      for (const dtype of gemmDtypes) {
        const label = `gemm ${dtype} ${model.name}.${op} T=${t}`;
        if (!o.filter || label.includes(o.filter)) await matmulCase(ctx, label, dtype, model.name, op, n, k, t);
      }
    }
  }

  // ---- decode attention over a paged f32 KV-cache (one sequence, one query token) ----
  for (const model of models) {
    for (const context of quick ? [128] : [128, 1024, 4096]) {
      const label = `attention-decode ${model.name} S=${context}`;
      if (o.filter && !label.includes(o.filter)) continue;
      await guarded(report, label, async () => report(await benchDecodeAttention(gpu, model, context, copyGbps, topConfigs, quick)));
    }
  }

  // ---- workgroup reductions (shaders/lib/reduce.wgsl): RMSNorm rows (prefill) and the sampler's pick ----
  for (const model of models) {
    for (const t of quick ? [16] : [1, 16, 128]) {
      const label = `rmsnorm ${model.name} T=${t}`;
      if (!o.filter || label.includes(o.filter)) await guarded(report, label, async () => report(await benchRmsNorm(gpu, model, t, copyGbps, topConfigs, quick)));
    }
    for (const [mode, params] of SAMPLING_MODES) {
      const label = `sample ${mode} ${model.name}`;
      if (!o.filter || label.includes(o.filter)) await guarded(report, label, async () => report(await benchSample(gpu, model, mode, params, copyGbps, topConfigs, quick)));
    }
  }

  // ---- Qwen3.5's linear attention: the causal conv and the gated delta rule (decode T = 1, prefill scan) ----
  for (const t of quick ? [16] : [1, 16, 64, 256]) {
    for (const kernel of ['causal-conv1d', 'gated-delta'] as const) {
      const label = `${kernel} ${QWEN35_LINEAR.name} T=${t}`;
      if (!o.filter || label.includes(o.filter)) await guarded(report, label, async () => report(await benchLinearAttention(gpu, kernel, t, copyGbps, topConfigs, quick)));
    }
  }

  report({ type: 'done' });
}

/** Qwen3.5-0.8B's linear-attention layer (config.json: linear_num_{key,value}_heads 16, head dims 128, conv 4). */
const QWEN35_LINEAR = { name: 'Qwen3.5-0.8B', vHeads: 16, kHeads: 16, keyDim: 128, valueDim: 128, convSize: 4 };

/** One sequence of T tokens from a state slot: the conv over its q|k|v channels, or the delta rule's scan. */
async function benchLinearAttention(gpu: Gpu, kernel: 'causal-conv1d' | 'gated-delta', tokens: number, copyGbps: number, topConfigs: ReadConfig[], quick: boolean): Promise<BenchRecord> {
  const m = QWEN35_LINEAR;
  const channels = 2 * m.kHeads * m.keyDim + m.vHeads * m.valueDim;
  const u32 = (a: Uint32Array) => {
    const b = gpu.device.createBuffer({ label: 'bench.u32', size: Math.max(16, a.byteLength), usage: STORAGE });
    gpu.device.queue.writeBuffer(b, 0, a);
    return b;
  };
  const x = buffer(gpu, randomF32(tokens * channels, 9));
  const seqIds = u32(new Uint32Array(tokens));
  const slotIds = u32(new Uint32Array([0]));
  const owned = [x, seqIds, slotIds];
  try {
    let record: (pass: GPUComputePassEncoder) => void;
    let bytes: number;
    let flops: number;
    if (kernel === 'causal-conv1d') {
      const conv = createCausalConv1d(gpu, { channels, kernelSize: m.convSize });
      const weight = buffer(gpu, randomF32(channels * m.convSize, 10));
      const state = gpu.device.createBuffer({ label: 'bench.conv-state', size: conv.slotBytes, usage: STORAGE });
      const out = gpu.device.createBuffer({ label: 'out', size: tokens * channels * 4, usage: STORAGE });
      owned.push(weight, state, out);
      record = (pass) => conv.encode(pass, { x, weight, state, out, seqIds, slotIds, tokens, sequences: 1 });
      bytes = (tokens + m.convSize) * channels * 4; // x, weight, state
      flops = 2 * m.convSize * tokens * channels;
    } else {
      const delta = createGatedDelta(gpu, m);
      const g = buffer(gpu, randomF32(tokens * m.vHeads, 11, 0.1).map((v) => -Math.abs(v)));
      const beta = buffer(gpu, randomF32(tokens * m.vHeads, 12, 0.1).map((v) => 0.5 + v));
      const state = gpu.device.createBuffer({ label: 'bench.delta-state', size: delta.slotBytes, usage: STORAGE });
      const out = gpu.device.createBuffer({ label: 'out', size: tokens * m.vHeads * m.valueDim * 4, usage: STORAGE });
      owned.push(g, beta, state, out);
      record = (pass) => delta.encode(pass, { qkv: x, g, beta, state, out, seqIds, slotIds, tokens, sequences: 1 });
      bytes = delta.slotBytes + tokens * (channels + 2 * m.vHeads) * 4; // the state once, q|k|v, g and beta
      flops = 8 * m.vHeads * m.keyDim * m.valueDim * tokens; // per state element and token: decay+write, Sᵀk, Sᵀq
    }
    const t = await timeRecording(gpu, record, { samples: quick ? 3 : 5, maxReps: 20 });
    const readGbps = await readBandwidth(gpu, bytes, topConfigs, quick);
    const shape = `T=${tokens} Hv=${m.vHeads} Hk=${m.kHeads} Dk=${m.keyDim} Dv=${m.valueDim}`;
    return caseRecord(kernel, 'f32', kernel === 'gated-delta' ? shape : `T=${tokens} C=${channels} K=${m.convSize}`, m.name, 'linear-attn', t, bytes, flops, copyGbps, readGbps);
  } finally {
    for (const b of owned) b.destroy();
  }
}

async function benchRmsNorm(gpu: Gpu, model: (typeof MODELS)[number], rows: number, copyGbps: number, topConfigs: ReadConfig[], quick: boolean): Promise<BenchRecord> {
  const cols = model.hidden;
  const x = buffer(gpu, randomF32(rows * cols, 6));
  const w = buffer(gpu, randomF32(cols, 7));
  const out = gpu.device.createBuffer({ label: 'out', size: rows * cols * 4, usage: STORAGE });
  const norm = createRmsNorm(gpu);
  try {
    const t = await timeRecording(gpu, (pass) => norm.encode(pass, { x, weight: w, out, rows, cols, eps: 1e-5 }), { samples: quick ? 3 : 5 });
    const bytes = (2 * rows + 1) * cols * 4; // x twice (sum of squares, then scale), w once
    const readGbps = await readBandwidth(gpu, bytes, topConfigs, quick);
    return caseRecord('rmsnorm', 'f32', `T=${rows} C=${cols}`, model.name, 'norm', t, bytes, 4 * rows * cols, copyGbps, readGbps);
  } finally {
    for (const b of [x, w, out]) b.destroy();
  }
}

/** The sampler's pick over one sequence's logits, read directly (no penalties, bias or mask: no adjust pass). */
const SAMPLING_MODES: readonly [string, SamplingParams][] = [
  ['greedy', { temperature: 0, u: 0 }],
  ['temperature', { temperature: 0.8, u: 0.42 }],
  ['top-k/top-p', { temperature: 0.8, topK: 40, topP: 0.9, u: 0.42 }],
];

async function benchSample(
  gpu: Gpu,
  model: (typeof MODELS)[number],
  mode: string,
  params: SamplingParams,
  copyGbps: number,
  topConfigs: ReadConfig[],
  quick: boolean,
): Promise<BenchRecord> {
  const vocab = model.vocab;
  const logits = buffer(gpu, randomF32(vocab, 8, 3));
  const sampler = createSampler(gpu, { vocab, maxBatch: 1 });
  const packed = packSamplingBatch(vocab, [params], { maxTopLogprobs: sampler.maxTopLogprobs });
  const records = gpu.device.createBuffer({ label: 'bench.params', size: packed.params.byteLength, usage: STORAGE });
  gpu.device.queue.writeBuffer(records, 0, packed.params);
  const out = gpu.device.createBuffer({ label: 'out', size: sampler.outStride * 4, usage: STORAGE });
  try {
    const args = { logits, params: records, out, batch: 1, adjust: packed.adjust, candidates: packed.candidates };
    const t = await timeRecording(gpu, (pass) => sampler.encode(pass, args), { samples: quick ? 3 : 5 });
    const bytes = vocab * 4; // the logits, at least once
    const readGbps = await readBandwidth(gpu, bytes, topConfigs, quick);
    return caseRecord('sample', 'f32', `V=${vocab} ${mode}`, model.name, 'sample', t, bytes, 2 * vocab, copyGbps, readGbps);
  } finally {
    sampler.destroy();
    for (const b of [logits, records, out]) b.destroy();
  }
}

async function benchDecodeAttention(
  gpu: Gpu,
  model: (typeof MODELS)[number],
  context: number,
  copyGbps: number,
  topConfigs: ReadConfig[],
  quick: boolean,
): Promise<BenchRecord> {
  const { heads, kvHeads, headDim } = model;
  const page = 16;
  const pages = Math.ceil(context / page);
  const rowFloats = kvHeads * headDim;
  const kCache = buffer(gpu, randomF32(pages * page * rowFloats, 2));
  const vCache = buffer(gpu, randomF32(pages * page * rowFloats, 3));
  // Pages in shuffled order, as a long-running cache hands them out.
  const ids = Uint32Array.from({ length: pages }, (_, i) => i);
  const rng = mulberry32(4);
  for (let i = pages - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const u32 = (a: Uint32Array) => {
    const b = gpu.device.createBuffer({ label: 'bench.u32', size: Math.max(16, a.byteLength), usage: STORAGE });
    gpu.device.queue.writeBuffer(b, 0, a);
    return b;
  };
  const pageTable = u32(ids);
  const seqIds = u32(new Uint32Array([0]));
  const positions = u32(new Uint32Array([context - 1]));
  const q = buffer(gpu, randomF32(heads * headDim, 5));
  const out = gpu.device.createBuffer({ label: 'out', size: heads * headDim * 4, usage: STORAGE });
  const attn = createAttentionDecode(gpu, { heads, kvHeads, headDim, pageSize: page });
  const args = { q, out, kCache, vCache, pageTable, sequences: 1, maxPagesPerSeq: pages, seqIds, positions, tokens: 1, maxContext: context };
  const t = await timeRecording(gpu, (pass) => attn.encode(pass, args), { samples: quick ? 3 : 5 });
  const bytes = 2 * context * rowFloats * 4 + heads * headDim * 4;
  const readGbps = await readBandwidth(gpu, bytes, topConfigs, quick);
  const flops = 4 * heads * headDim * context; // q·k and p·v
  for (const b of [kCache, vCache, pageTable, seqIds, positions, q, out]) b.destroy();
  attn.destroy();
  return caseRecord('attention-decode', 'f32', `S=${context} H=${heads} Hkv=${kvHeads} D=${headDim}`, model.name, 'attn', t, bytes, flops, copyGbps, readGbps);
}

interface CaseContext {
  gpu: Gpu;
  report: Report;
  copyGbps: number;
  topConfigs: ReadConfig[];
  quick: boolean;
}

/** Runs one case; a failure becomes an error record and the benchmark goes on with the next case. */
async function guarded(report: Report, label: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    report({ type: 'error', case: label, name: (err as Error).name, message: (err as Error).message });
  }
}

/**
 * GEMV (over t vectors; default for t = 1) or GEMM (t tokens; default for t > 1) on an (n, k) weight of
 * `dtype` filled with random blocks.
 */
async function matmulCase(
  c: CaseContext,
  label: string,
  dtype: WeightDtype,
  model: string,
  op: string,
  n: number,
  k: number,
  t: number,
  kernel: 'gemv' | 'gemm' = t === 1 ? 'gemv' : 'gemm',
): Promise<void> {
  const shape = t === 1 ? `${n}x${k}` : `${t}x${n}x${k}`;
  if (k % kMultiple(dtype) !== 0) {
    // llama.cpp stores such tensors in another type too (a K-quant needs K % 256 == 0).
    c.report({ type: 'skip', kernel, dtype, shape, model, op, reason: `K % ${kMultiple(dtype)} != 0` });
    return;
  }
  await guarded(c.report, label, async () => {
    const { gpu } = c;
    const weight = randomWeight(gpu, dtype, n, k, label);
    const x = buffer(gpu, randomF32(t * k, 1));
    const y = gpu.device.createBuffer({ label: 'y', size: t * n * 4, usage: STORAGE });
    try {
      let record: (pass: GPUComputePassEncoder) => void;
      if (kernel === 'gemv') {
        const gemv = createGemv(gpu, { dtype });
        record = (pass) => gemv.encode(pass, { weight, x, y, batch: t });
      } else {
        const gemm = createGemm(gpu, { dtype });
        record = (pass) => gemm.encode(pass, { weight, x, y, tokens: t });
      }
      const timing = await timeRecording(gpu, record, { samples: c.quick ? 3 : 5, maxReps: t <= 4 ? 200 : 50 });
      const bytes = weight.rowBytes * n + t * k * 4;
      const readGbps = await readBandwidth(gpu, bytes, c.topConfigs, c.quick);
      c.report(caseRecord(kernel, dtype, shape, model, op, timing, bytes, 2 * t * n * k, c.copyGbps, readGbps));
    } finally {
      weight.destroy();
      x.destroy();
      y.destroy();
    }
  });
}

function caseRecord(
  kernel: string,
  dtype: string,
  shape: string,
  model: string,
  op: string,
  t: Timing,
  bytes: number,
  flops: number,
  copyGbps: number,
  readGbps: number,
): BenchRecord {
  const gbps = bytes / GB / (t.median_ms / 1e3);
  return {
    type: 'case',
    kernel,
    dtype,
    shape,
    model,
    op,
    median_ms: round(t.median_ms),
    gbps: round(gbps),
    gflops: round(flops / GB / (t.median_ms / 1e3)),
    roofline_ratio: round(gbps / copyGbps),
    read_ratio: round(gbps / readGbps),
    read_gbps: round(readGbps),
    bytes,
    reps: t.reps,
    clock: t.clock,
  };
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}

function buffer(gpu: Gpu, data: Float32Array): GPUBuffer {
  const b = gpu.device.createBuffer({ label: 'bench.input', size: Math.max(16, data.byteLength), usage: STORAGE });
  gpu.device.queue.writeBuffer(b, 0, data);
  return b;
}

/** A weight filled by repeating a few MiB of valid random rows (timing does not depend on values). */
function randomWeight(gpu: Gpu, dtype: WeightDtype, n: number, k: number, label: string): WeightTensor {
  const weight = createWeight(gpu, { dtype, n, k, label });
  const rb = rowBytes(dtype, k);
  let rows = Math.max(2, Math.min(n, Math.floor((4 << 20) / rb)));
  rows -= rows % 2; // even row counts keep every write 4-byte aligned
  const pattern = randomWeights(dtype, rows, k, mulberry32(k + BLOCK[dtype].bytes));
  for (let r = 0; r < n; r += rows) {
    const count = Math.min(rows, n - r);
    writeRows(gpu, weight, r, pattern.subarray(0, count * rb));
  }
  return weight;
}

async function copyBandwidth(gpu: Gpu, bytes: number, quick: boolean): Promise<Timing> {
  const src = gpu.device.createBuffer({ label: 'copy.src', size: bytes, usage: STORAGE });
  const dst = gpu.device.createBuffer({ label: 'copy.dst', size: bytes, usage: STORAGE });
  try {
    const samples: number[] = [];
    const reps = quick ? 2 : 4;
    const once = async () => {
      const enc = gpu.device.createCommandEncoder({ label: 'copy' });
      for (let i = 0; i < reps; i++) enc.copyBufferToBuffer(src, 0, dst, 0, bytes);
      const t0 = performance.now();
      gpu.submit([enc.finish()]);
      await gpu.device.queue.onSubmittedWorkDone();
      return (performance.now() - t0) / reps;
    };
    await once();
    for (let i = 0; i < (quick ? 3 : 5); i++) samples.push(await once());
    samples.sort((a, b) => a - b);
    return { median_ms: samples[samples.length >> 1], min_ms: samples[0], reps, samples: samples.length, clock: 'wall-clock' };
  } finally {
    src.destroy();
    dst.destroy();
  }
}

interface SweepResult {
  config: ReadConfig;
  timing: Timing;
  gbps: number;
}

/** Streaming-read bandwidth for workgroup sizes 16–256 × spans 1–64 KiB, best first. */
async function streamReadSweep(gpu: Gpu, bytes: number, quick: boolean): Promise<SweepResult[]> {
  const wgs = quick ? [64, 256] : [16, 32, 64, 128, 256];
  const spans = quick ? [1024, 16384] : [1024, 2048, 4096, 8192, 16384, 32768, 65536];
  const results: SweepResult[] = [];
  for (const workgroupSize of wgs) {
    for (const spanBytes of spans) {
      const config = { workgroupSize, spanBytes };
      const timing = await timeRead(gpu, bytes, config, quick);
      results.push({ config, timing, gbps: bytes / GB / (timing.median_ms / 1e3) });
    }
  }
  return results.sort((a, b) => b.gbps - a.gbps);
}

const readSources = new Map<number, GPUBuffer>();

async function timeRead(gpu: Gpu, bytes: number, config: ReadConfig, quick: boolean): Promise<Timing> {
  const size = Math.ceil(bytes / 16) * 16;
  let src = readSources.get(size);
  if (!src) {
    for (const b of readSources.values()) b.destroy();
    readSources.clear();
    src = gpu.device.createBuffer({ label: 'stream-read.src', size, usage: STORAGE });
    readSources.set(size, src);
  }
  const out = gpu.device.createBuffer({ label: 'stream-read.out', size: Math.max(16, streamReadOutBytes(size, config.spanBytes)), usage: STORAGE });
  const kernel = createStreamRead(gpu, config);
  const buf = src;
  try {
    return await timeRecording(gpu, (pass) => kernel.encode(pass, { src: buf, bytes: size, out }), { samples: quick ? 3 : 5 });
  } finally {
    out.destroy();
  }
}

/** Best streaming-read bandwidth over `bytes` among the sweep's top configurations. */
async function readBandwidth(gpu: Gpu, bytes: number, configs: ReadConfig[], quick: boolean): Promise<number> {
  let best = 0;
  for (const c of configs) {
    const t = await timeRead(gpu, bytes, c, quick);
    best = Math.max(best, bytes / GB / (t.median_ms / 1e3));
  }
  return best;
}
