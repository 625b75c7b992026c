// Correctness checks the lab runs on the visitor's GPU: each kernel against its CPU twin on seeded
// inputs (the same comparisons as the GPU test tier, reported as max error instead of asserted).

import {
  WEIGHT_DTYPES,
  createGemv,
  createRmsNorm,
  createSwiglu,
  createWeight,
  type Gpu,
} from '@intab/gpu';
import { gated, matmul, mulberry32, randomF32, randomWeights, rmsnorm, silu } from '@intab/gpu/reference';

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
  gpu.device.queue.submit([enc.finish()]);
  gpu.uniforms.reset();
  return new Float32Array(await gpu.readback.read(out, 0, count * 4));
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
