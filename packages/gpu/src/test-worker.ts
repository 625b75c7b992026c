// Runs inside a dedicated Worker for the GPU test tier: acquires a device there (workers have
// navigator.gpu too), runs a decode-style chain (RMSNorm → GEMV q4_0) and posts the result with
// its CPU twin, so the test can compare them. The engine will live in such a worker.

import { requestGpu } from './device.ts';
import { createRmsNorm } from './kernels/rmsnorm.ts';
import { createGemv } from './kernels/gemv.ts';
import { createWeight } from './weights.ts';
import { mulberry32 } from './random.ts';
import { matmul } from './reference/matmul.ts';
import { rmsnorm } from './reference/norm.ts';
import { randomF32, randomWeights } from './reference/random.ts';

self.onmessage = async () => {
  try {
    const gpu = await requestGpu();
    const [n, k] = [96, 256];
    const x = randomF32(k, 1, 2);
    const nw = randomF32(k, 2);
    const wBytes = randomWeights('q4_0', n, k, mulberry32(3));
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
    const mk = (data: Float32Array | number) => {
      const b = gpu.device.createBuffer({ label: 'worker.buf', size: typeof data === 'number' ? data : data.byteLength, usage });
      if (typeof data !== 'number') gpu.device.queue.writeBuffer(b, 0, data);
      return b;
    };
    const xBuf = mk(x);
    const normed = mk(k * 4);
    const y = mk(n * 4);
    const weight = createWeight(gpu, { dtype: 'q4_0', n, k, data: wBytes, label: 'worker.w' });
    const enc = gpu.device.createCommandEncoder({ label: 'worker.step' });
    const pass = enc.beginComputePass({ label: 'worker.step' });
    createRmsNorm(gpu).encode(pass, { x: xBuf, weight: mk(nw), out: normed, rows: 1, cols: k, eps: 1e-5 });
    createGemv(gpu, { dtype: 'q4_0' }).encode(pass, { weight, x: normed, y });
    pass.end();
    const ticket = gpu.readback.encodeCopy(enc, y);
    gpu.submit([enc.finish()]);
    const got = new Float32Array(await ticket.read());
    const want = matmul('q4_0', wBytes, n, k, rmsnorm(x, nw, 1, k, 1e-5), 1);
    const isWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined' && !('document' in globalThis);
    gpu.destroy();
    postMessage({ ok: true, got, want, isWorker, features: gpu.features });
  } catch (err) {
    postMessage({ ok: false, name: (err as Error).name, message: (err as Error).message });
  }
};
