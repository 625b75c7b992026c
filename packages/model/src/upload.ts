// Streams tensor bytes from their files into GPU buffers in chunks, so a model never sits whole in JS
// memory: matrices stay in their stored format (split by rows to fit storage bindings), 1-D tensors
// (norms, biases) become f32. Progress is reported in bytes; an AbortSignal stops between chunks.

import { dequantize, dequantizeRow, isWeightDtype, quantize, rowBytes, writeRows, type Gpu, type WeightDtype, type WeightTensor } from '@intab/gpu';
import { ModelMismatchError, UnsupportedModelError } from './errors.ts';
import type { TensorInfo } from './types.ts';

/** Bytes read per chunk: large enough to amortize a range request, small enough to bound memory. */
const CHUNK_BYTES = 8 << 20;

export interface UploadOptions {
  /** Quantize f32/f16/bf16 matrices on load (rows of K % 32 == 0); already-quantized tensors stay as stored. */
  quantize?: 'q8_0' | 'q4_0';
  signal?: AbortSignal;
  /** Called with the bytes of this tensor uploaded so far, after each chunk. */
  onBytes?: (bytes: number) => void;
  /** Fed every byte of the tensor as read from its file (before any quantization), in order: a hash of the weights. */
  hash?: { update(bytes: Uint8Array): unknown };
}

function requireReadable(info: TensorInfo): asserts info is TensorInfo & { dtype: WeightDtype } {
  if (!isWeightDtype(info.dtype)) {
    throw new UnsupportedModelError(
      info.source.name,
      `tensor '${info.name}' dtype`,
      info.dtype.replace(/^unsupported:/, ''),
      'intab reads f32, f16, bf16, q8_0, q4_0, q4_K and q6_K: use a Q4_K_M, Q4_0, Q8_0 or F16 file.',
    );
  }
}

/** The format an (N, K) matrix has on the GPU: as stored, or o.quantize for f32/f16/bf16 rows of K % 32 == 0. */
export function uploadDtype(info: TensorInfo, quantize?: UploadOptions['quantize']): WeightDtype {
  requireReadable(info);
  const stored = info.dtype;
  const k = info.shape[info.shape.length - 1];
  const convert = quantize !== undefined && (stored === 'f32' || stored === 'f16' || stored === 'bf16') && k % 32 === 0;
  return convert ? quantize : stored;
}

function requireMatrix(info: TensorInfo): void {
  if (info.shape.length !== 2) {
    throw new ModelMismatchError(info.source.name, `tensor '${info.name}' shape`, 'a matrix (2 dimensions)', `[${info.shape.join(', ')}]`);
  }
}

/**
 * Streams an (N, K) matrix into rows [firstRow, firstRow + N) of `into` (its format must be uploadDtype's and its
 * K the same): several matrices stacked into one tensor, e.g. [q; k; v] for one GEMV.
 */
export async function uploadRows(gpu: Gpu, info: TensorInfo, into: WeightTensor, firstRow: number, o: UploadOptions = {}): Promise<void> {
  requireMatrix(info);
  const [n, k] = info.shape;
  const stored = info.dtype as WeightDtype;
  const target = uploadDtype(info, o.quantize);
  if (target !== into.dtype || k !== into.k || firstRow + n > into.n) {
    throw new ModelMismatchError(info.source.name, `tensor '${info.name}'`, `${into.dtype} rows of ${into.k} fitting '${into.label}' from row ${firstRow}`, `${target} [${n}, ${k}]`);
  }
  const srcRowBytes = rowBytes(stored, k);
  let rows = Math.max(2, Math.floor(CHUNK_BYTES / srcRowBytes));
  rows -= rows % 2; // even row counts keep every write 4-byte aligned (rows of 18/34/210 bytes)
  for (let r = 0; r < n; r += rows) {
    o.signal?.throwIfAborted();
    const count = Math.min(rows, n - r);
    let bytes = await info.source.read(info.offset + r * srcRowBytes, count * srcRowBytes, o.signal);
    o.hash?.update(bytes);
    if (target !== stored) bytes = quantize(target as 'q8_0' | 'q4_0', dequantize(stored, bytes, count, k), count, k);
    writeRows(gpu, into, firstRow + r, bytes);
    o.onBytes?.((r + count) * srcRowBytes);
  }
}

/** A 1-D tensor (norm weight, bias) as f32 values, on the CPU. */
export async function readVector(info: TensorInfo, o: UploadOptions = {}): Promise<Float32Array> {
  requireReadable(info);
  const n = info.shape.reduce((a, b) => a * b, 1);
  const bytes = await info.source.read(info.offset, info.byteLength, o.signal);
  o.hash?.update(bytes);
  o.onBytes?.(info.byteLength);
  const values = dequantizeRow(info.dtype, bytes, 0, n);
  if (info.valueOffset) for (let i = 0; i < n; i++) values[i] += info.valueOffset;
  if (info.valueTransform === 'negExp') for (let i = 0; i < n; i++) values[i] = -Math.exp(values[i]);
  return values;
}

/** A 1-D tensor as an f32 storage buffer. */
export async function uploadVector(gpu: Gpu, info: TensorInfo, label: string, o: UploadOptions = {}): Promise<GPUBuffer> {
  return uploadF32(gpu, await readVector(info, o), label);
}

/** f32 values as a storage buffer (at least 16 bytes). */
export function uploadF32(gpu: Gpu, values: Float32Array, label: string): GPUBuffer {
  const buffer = gpu.device.createBuffer({ label, size: Math.max(16, values.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  gpu.device.queue.writeBuffer(buffer, 0, values);
  return buffer;
}
