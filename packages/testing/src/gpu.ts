// Helpers for the GPU test tier of every package: a shared device, seeded inputs, upload/readback, validation
// scopes, ../shared's files through Vite, and expectClose which reports max error, the first bad index and values
// side by side.

import { GpuValidationError, requestGpu, type Gpu, type RequestGpuOptions } from '@intab/gpu';

export { mulberry32, randn, randomF32 } from './random.ts';

/** Where the browser test tier reads `path` of ../shared: Vite serves it under /@fs (vite.config.ts defines INTAB_SHARED). */
export function sharedUrl(path: string): string {
  return `/@fs${import.meta.env.INTAB_SHARED}/${path}`;
}

/** The bytes of `path` in ../shared (models, golden ids), fetched through sharedUrl. */
export async function fetchShared(path: string): Promise<Uint8Array> {
  const url = sharedUrl(path);
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} (is ../shared beside the repository?)`);
  return new Uint8Array(await res.arrayBuffer());
}

let shared: Gpu | undefined;
const variants = new Map<string, Gpu>();

/** A Gpu shared by the tests of one file (or a fresh one per feature set when `disable` is given). */
export async function testGpu(options: RequestGpuOptions = {}): Promise<Gpu> {
  const key = JSON.stringify(options.disable ?? {});
  if (key === '{}') return (shared ??= await requestGpu(options));
  let g = variants.get(key);
  if (!g) variants.set(key, (g = await requestGpu(options)));
  return g;
}

export const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** A storage buffer holding `data` (padded to 4 bytes). */
export function upload(gpu: Gpu, data: ArrayBufferView, label = 'test.input'): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 4) * 4);
  const buffer = gpu.device.createBuffer({ label, size, usage: STORAGE, mappedAtCreation: true });
  new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  buffer.unmap();
  return buffer;
}

/** An uninitialized-but-zeroed storage buffer of `bytes`. */
export function scratch(gpu: Gpu, bytes: number, label = 'test.output'): GPUBuffer {
  return gpu.device.createBuffer({ label, size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: STORAGE });
}

/**
 * Record with `record(pass)` in one compute pass, submit, and fail on any validation error.
 * Resolves when the GPU is done.
 */
export async function run(gpu: Gpu, record: (pass: GPUComputePassEncoder) => void, label = 'test'): Promise<void> {
  const { device } = gpu;
  device.pushErrorScope('internal');
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const encoder = device.createCommandEncoder({ label });
  const pass = encoder.beginComputePass({ label });
  try {
    record(pass);
  } catch (err) {
    pass.end();
    await Promise.all([device.popErrorScope(), device.popErrorScope(), device.popErrorScope()]);
    throw err;
  }
  pass.end();
  gpu.submit([encoder.finish()]);
  gpu.uniforms.reset();
  const [validation, oom, internal] = await Promise.all([device.popErrorScope(), device.popErrorScope(), device.popErrorScope()]);
  const err = validation ?? oom ?? internal;
  if (err) {
    const kind = validation ? 'validation' : oom ? 'out-of-memory' : 'internal';
    throw new GpuValidationError(kind, label, err.message);
  }
  await device.queue.onSubmittedWorkDone();
}

export async function readF32(gpu: Gpu, buffer: GPUBuffer, count?: number): Promise<Float32Array> {
  const bytes = await gpu.readback.read(buffer, 0, count === undefined ? buffer.size : count * 4);
  return new Float32Array(bytes);
}

export async function readU32(gpu: Gpu, buffer: GPUBuffer, count?: number): Promise<Uint32Array> {
  const bytes = await gpu.readback.read(buffer, 0, count === undefined ? buffer.size : count * 4);
  return new Uint32Array(bytes);
}

export interface CloseOptions {
  /** Absolute tolerance. */
  atol?: number;
  /** Relative tolerance (of |expected|). */
  rtol?: number;
  label?: string;
}

/** Compare element-wise; throws with max error, first bad index and a few values side by side. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, options: CloseOptions = {}): void {
  const { atol = 1e-5, rtol = 1e-4, label = 'values' } = options;
  if (actual.length < expected.length) {
    throw new Error(`${label}: got ${actual.length} values, expected ${expected.length}`);
  }
  let maxErr = 0;
  let maxAt = -1;
  let firstBad = -1;
  let bad = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i];
    const e = expected[i];
    const err = Math.abs(a - e);
    const ok = (Number.isNaN(e) && Number.isNaN(a)) || a === e || err <= atol + rtol * Math.abs(e);
    if (!(err <= maxErr) || Number.isNaN(err)) {
      if (!(Number.isNaN(e) && Number.isNaN(a))) {
        maxErr = Number.isNaN(err) ? Infinity : err;
        maxAt = i;
      }
    }
    if (!ok) {
      bad++;
      if (firstBad < 0) firstBad = i;
    }
  }
  if (bad > 0) {
    const from = Math.max(0, firstBad - 2);
    const rows: string[] = [];
    for (let i = from; i < Math.min(expected.length, from + 6); i++) {
      rows.push(`  [${i}] got ${actual[i]} expected ${expected[i]}`);
    }
    throw new Error(
      `${label}: ${bad}/${expected.length} values out of tolerance (atol ${atol}, rtol ${rtol}); ` +
        `max error ${maxErr} at [${maxAt}] (got ${actual[maxAt]}, expected ${expected[maxAt]}); ` +
        `first bad index ${firstBad}:\n${rows.join('\n')}`,
    );
  }
}

/** Exact equality of two integer arrays, with the same kind of report. */
export function expectEqual(actual: ArrayLike<number>, expected: ArrayLike<number>, label = 'values'): void {
  expectClose(actual, expected, { atol: 0, rtol: 0, label });
}
