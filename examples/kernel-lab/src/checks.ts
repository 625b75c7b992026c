// Correctness checks the lab runs on the visitor's GPU: each kernel against its CPU twin on seeded
// inputs (the same comparisons as the GPU test tier, reported as max error instead of asserted).

import {
  WEIGHT_DTYPES,
  createAttentionDecode,
  createAttentionPrefill,
  createEmbedding,
  createGemm,
  createGemv,
  createRmsNorm,
  createRopeKvAppend,
  createSampler,
  createSwiglu,
  createWeight,
  mulberry32,
  packSamplingBatch,
  unpackSamples,
  type Gpu,
  type SampleResult,
  type SamplingParams,
} from '@intab/gpu';
import {
  embedding,
  gated,
  matmul,
  pagedAttention,
  randn,
  randomF32,
  randomPagedCache,
  randomWeights,
  rmsnorm,
  ropeKvAppend,
  sampleReference,
  silu,
} from '@intab/gpu/reference';

export interface CheckResult {
  name: string;
  maxError: number;
  tolerance: number;
  ok: boolean;
}

interface Check {
  name: string;
  tolerance: number;
  run(gpu: Gpu): Promise<{ got: Float32Array; want: Float32Array }>;
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

function upload(gpu: Gpu, data: ArrayBufferView): GPUBuffer {
  const b = gpu.device.createBuffer({ label: 'check.input', size: Math.max(16, Math.ceil(data.byteLength / 4) * 4), usage: STORAGE });
  gpu.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, Math.ceil(data.byteLength / 4) * 4);
  return b;
}

async function runAndRead(gpu: Gpu, out: GPUBuffer, count: number, record: (pass: GPUComputePassEncoder) => void): Promise<Float32Array> {
  const enc = gpu.device.createCommandEncoder({ label: 'check' });
  const pass = enc.beginComputePass();
  record(pass);
  pass.end();
  gpu.submit([enc.finish()]);
  gpu.uniforms.reset();
  return new Float32Array(await gpu.readback.read(out, 0, count * 4));
}

const SAMPLING_CHECK: SamplingParams[] = [
  { temperature: 0, u: 0 },
  { temperature: 0.8, topK: 40, topP: 0.9, u: 0.37, repetitionPenalty: 1.3, history: [1, 2, 3, 2] },
  { temperature: 1.1, minP: 0.05, u: 0.91, presencePenalty: 0.5, frequencyPenalty: 0.2, history: [7, 7, 9] },
  { temperature: 0, u: 0.5, topLogprobs: 5 },
  { temperature: 1, u: 0.63, topLogprobs: 3 },
];

/** The sampler on the GPU and its CPU twin over the same seeded logits (V = 5000). */
async function sampleBoth(gpu: Gpu): Promise<{ got: SampleResult[]; want: SampleResult[] }> {
  const vocab = 5000;
  const seqs = SAMPLING_CHECK;
  const logits = randomF32(seqs.length * vocab, 61, 3);
  const sampler = createSampler(gpu, { vocab, maxBatch: seqs.length });
  const packed = packSamplingBatch(vocab, seqs, { maxTopLogprobs: sampler.maxTopLogprobs });
  const out = gpu.device.createBuffer({ label: 'out', size: seqs.length * sampler.outStride * 4, usage: STORAGE });
  const words = await runAndRead(gpu, out, seqs.length * sampler.outStride, (pass) =>
    sampler.encode(pass, {
      logits: upload(gpu, logits), params: upload(gpu, packed.params), history: upload(gpu, packed.history),
      bias: upload(gpu, packed.bias), mask: upload(gpu, packed.mask), out, batch: seqs.length,
    }),
  );
  sampler.destroy();
  const got = unpackSamples(new Uint32Array(words.buffer), sampler.outStride, seqs.map((q) => q.topLogprobs ?? 0));
  return { got, want: sampleReference(logits, vocab, seqs) };
}

const CHECKS: Check[] = [
  ...WEIGHT_DTYPES.map<Check>((dtype) => ({
    name: `gemv ${dtype}`,
    tolerance: 1e-3,
    async run(gpu) {
      const [n, k] = [67, 512];
      const bytes = randomWeights(dtype, n, k, mulberry32(11));
      const x = randomF32(k, 12);
      const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: `check.${dtype}` });
      const y = gpu.device.createBuffer({ label: 'y', size: n * 4, usage: STORAGE });
      const got = await runAndRead(gpu, y, n, (pass) => createGemv(gpu, { dtype }).encode(pass, { weight, x: upload(gpu, x), y }));
      weight.destroy();
      return { got, want: matmul(dtype, bytes, n, k, x, 1) };
    },
  })),
  ...(['q4_0', 'q4_K'] as const).map<Check>((dtype) => ({
    name: `gemm ${dtype} T=7`,
    tolerance: 1e-3,
    async run(gpu) {
      const [t, n, k] = [7, 45, 512];
      const bytes = randomWeights(dtype, n, k, mulberry32(21));
      const x = randomF32(t * k, 22);
      const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: `check.${dtype}` });
      const y = gpu.device.createBuffer({ label: 'y', size: t * n * 4, usage: STORAGE });
      const got = await runAndRead(gpu, y, t * n, (pass) => createGemm(gpu, { dtype }).encode(pass, { weight, x: upload(gpu, x), y, tokens: t }));
      weight.destroy();
      return { got, want: matmul(dtype, bytes, n, k, x, t) };
    },
  })),
  {
    name: 'embedding q6_K',
    tolerance: 0,
    async run(gpu) {
      const [v, c] = [50, 256];
      const bytes = randomWeights('q6_K', v, c, mulberry32(31));
      const ids = new Uint32Array([3, 49, 0, 17]);
      const weight = createWeight(gpu, { dtype: 'q6_K', n: v, k: c, data: bytes, label: 'check.embd' });
      const out = gpu.device.createBuffer({ label: 'out', size: ids.length * c * 4, usage: STORAGE });
      const got = await runAndRead(gpu, out, ids.length * c, (pass) =>
        createEmbedding(gpu, { dtype: 'q6_K' }).encode(pass, { weight, ids: upload(gpu, ids), out, tokens: ids.length }),
      );
      weight.destroy();
      return { got, want: embedding('q6_K', bytes, v, c, ids) };
    },
  },
  {
    name: 'rope + kv-append neox llama3, q/k norm',
    tolerance: 1e-4,
    async run(gpu) {
      const [t, h, hkv, d, page] = [3, 4, 2, 64, 16];
      const row = (h + 2 * hkv) * d;
      const qkv = randomF32(t * row, 41);
      const norm = randomF32(2 * d, 42, 0.5).map((x) => 1 + x);
      const positions = new Uint32Array([0, 777, 31000]);
      const seqIds = new Uint32Array([0, 1, 2]);
      const cache = randomPagedCache({ lengths: [1, 778, 31001], pageSize: page, kvHeads: hkv, headDim: d, rng: mulberry32(43), randn });
      const r = createRopeKvAppend(gpu, {
        heads: h, kvHeads: hkv, headDim: d, pageSize: page, theta: 500000, style: 'neox', qkNorm: true,
        scaling: { type: 'llama3', factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 },
      });
      const q = gpu.device.createBuffer({ label: 'q', size: t * h * d * 4, usage: STORAGE });
      const got = await runAndRead(gpu, q, t * h * d, (pass) =>
        r.encode(pass, {
          qkv: upload(gpu, qkv), q, kCache: upload(gpu, cache.k), vCache: upload(gpu, cache.v), pageTable: upload(gpu, cache.pageTable),
          sequences: 3, maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, seqIds), positions: upload(gpu, positions), tokens: t,
          norm: upload(gpu, norm), eps: 1e-6,
        }),
      );
      const want = ropeKvAppend(cache, qkv, h, seqIds, positions, r.invFreq, 'neox', { q: norm.subarray(0, d), k: norm.subarray(d), eps: 1e-6 }).q;
      r.destroy();
      return { got, want };
    },
  },
  ...(['decode', 'prefill'] as const).map<Check>((kind) => ({
    name: `attention ${kind} (paged, GQA)`,
    tolerance: 1e-4,
    async run(gpu) {
      const [heads, kvHeads, headDim, pageSize] = [8, 2, 64, 16];
      const lengths = [5, 300];
      const cache = randomPagedCache({ lengths, pageSize, kvHeads, headDim, rng: mulberry32(51), randn });
      const seqIds = kind === 'decode' ? [0, 1] : [1, 1, 1, 0];
      const positions = kind === 'decode' ? [4, 299] : [297, 298, 299, 4];
      const t = seqIds.length;
      const q = randomF32(t * heads * headDim, 52);
      const out = gpu.device.createBuffer({ label: 'out', size: q.byteLength, usage: STORAGE });
      const shape = { heads, kvHeads, headDim, pageSize };
      const common = {
        q: upload(gpu, q), out, kCache: upload(gpu, cache.k), vCache: upload(gpu, cache.v), pageTable: upload(gpu, cache.pageTable),
        sequences: lengths.length, maxPagesPerSeq: cache.maxPages, seqIds: upload(gpu, new Uint32Array(seqIds)),
        positions: upload(gpu, new Uint32Array(positions)), tokens: t,
      };
      const got = await runAndRead(gpu, out, q.length, (pass) => {
        if (kind === 'decode') createAttentionDecode(gpu, shape, { split: 64 }).encode(pass, { ...common, maxContext: 300 });
        else createAttentionPrefill(gpu, shape).encode(pass, common);
      });
      return { got, want: Float32Array.from(pagedAttention(cache, q, heads, seqIds, positions)) };
    },
  })),
  {
    name: 'sampling (greedy, top-k/top-p, penalties)',
    tolerance: 0,
    async run(gpu) {
      const { got, want } = await sampleBoth(gpu);
      const ids = (rs: SampleResult[]) => Float32Array.from(rs.flatMap((r) => [r.id, ...r.top.map((t) => t.id)]));
      return { got: ids(got), want: ids(want) };
    },
  },
  {
    // logZ comes from wg_max, then wg_sum over exp(z - max) (lib/reduce.wgsl): a max broadcast that one group of
    // invocations reads late (Mesa's GL compiler, see there) puts every logprob off by whole nats.
    name: 'sampling logprobs (log-softmax, top logprobs)',
    tolerance: 1e-4,
    async run(gpu) {
      const { got, want } = await sampleBoth(gpu);
      const logprobs = (rs: SampleResult[]) => Float32Array.from(rs.flatMap((r) => [r.logprob, ...r.top.map((t) => t.logprob)]));
      return { got: logprobs(got), want: logprobs(want) };
    },
  },
  {
    name: 'rmsnorm',
    tolerance: 1e-4,
    async run(gpu) {
      const [rows, cols] = [3, 576];
      const x = randomF32(rows * cols, 1);
      const w = randomF32(cols, 2);
      const out = gpu.device.createBuffer({ label: 'out', size: x.byteLength, usage: STORAGE });
      const got = await runAndRead(gpu, out, rows * cols, (pass) =>
        createRmsNorm(gpu).encode(pass, { x: upload(gpu, x), weight: upload(gpu, w), out, rows, cols, eps: 1e-5 }),
      );
      return { got, want: rmsnorm(x, w, rows, cols, 1e-5) };
    },
  },
  {
    name: 'swiglu',
    tolerance: 1e-5,
    async run(gpu) {
      const [rows, cols] = [2, 1536];
      const g = randomF32(rows * cols, 3, 4);
      const u = randomF32(rows * cols, 4);
      const out = gpu.device.createBuffer({ label: 'out', size: g.byteLength, usage: STORAGE });
      const got = await runAndRead(gpu, out, rows * cols, (pass) =>
        createSwiglu(gpu).encode(pass, { x: upload(gpu, g), up: upload(gpu, u), out, rows, cols }),
      );
      return { got, want: gated(silu, g, u, rows, cols) };
    },
  },
];

/** Runs every check; a check's error is relative to max(1, |want|). */
export async function runChecks(gpu: Gpu, onResult: (r: CheckResult) => void): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const c of CHECKS) {
    let maxError = Infinity;
    try {
      const { got, want } = await c.run(gpu);
      maxError = 0;
      for (let i = 0; i < want.length; i++) {
        const e = Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i]));
        maxError = Number.isNaN(e) ? Infinity : Math.max(maxError, e);
      }
    } catch (err) {
      console.error(c.name, err);
    }
    const r = { name: c.name, maxError, tolerance: c.tolerance, ok: maxError <= c.tolerance };
    results.push(r);
    onResult(r);
  }
  return results;
}
