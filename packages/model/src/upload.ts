// Streams tensor bytes from their files into GPU buffers in chunks, so a model never sits whole in JS
// memory: matrices stay in their stored format (split by rows to fit storage bindings), 1-D tensors
// (norms, biases) become f32. Progress is reported in bytes; an AbortSignal stops between chunks.

import { createWeight, isWeightDtype, rowBytes, writeRows, type Gpu, type WeightDtype, type WeightTensor } from '@intab/gpu';
import { dequantize, dequantizeRow, quantize } from '@intab/gpu/reference';
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

/** An (N, K) matrix in its stored format, or quantized to o.quantize on the way (f32/f16/bf16 sources). */
export async function uploadMatrix(gpu: Gpu, info: TensorInfo, label: string, o: UploadOptions = {}): Promise<WeightTensor> {
  requireReadable(info);
  if (info.shape.length !== 2) {
    throw new ModelMismatchError(info.source.name, `tensor '${info.name}' shape`, 'a matrix (2 dimensions)', `[${info.shape.join(', ')}]`);
  }
  const [n, k] = info.shape;
  const stored = info.dtype;
  const convert = o.quantize !== undefined && (stored === 'f32' || stored === 'f16' || stored === 'bf16') && k % 32 === 0;
  const target: WeightDtype = convert ? o.quantize! : stored;
  const weight = createWeight(gpu, { dtype: target, n, k, label });
  const srcRowBytes = rowBytes(stored, k);
  try {
    let rows = Math.max(2, Math.floor(CHUNK_BYTES / srcRowBytes));
    rows -= rows % 2; // even row counts keep every write 4-byte aligned (rows of 18/34/210 bytes)
    for (let r = 0; r < n; r += rows) {
      o.signal?.throwIfAborted();
      const count = Math.min(rows, n - r);
      let bytes = await info.source.read(info.offset + r * srcRowBytes, count * srcRowBytes, o.signal);
      o.hash?.update(bytes);
      if (convert) bytes = quantize(o.quantize!, dequantize(stored, bytes, count, k), count, k);
      writeRows(gpu, weight, r, bytes);
      o.onBytes?.((r + count) * srcRowBytes);
    }
  } catch (err) {
    weight.destroy();
    throw err;
  }
  return weight;
}

/** A 1-D tensor (norm weight, bias) as f32 values, on the CPU. */
export async function readVector(info: TensorInfo, o: UploadOptions = {}): Promise<Float32Array> {
  requireReadable(info);
  const n = info.shape.reduce((a, b) => a * b, 1);
  const bytes = await info.source.read(info.offset, info.byteLength, o.signal);
  o.hash?.update(bytes);
  o.onBytes?.(info.byteLength);
  return dequantizeRow(info.dtype, bytes, 0, n);
}

/** A 1-D tensor as an f32 storage buffer. */
export async function uploadVector(gpu: Gpu, info: TensorInfo, label: string, o: UploadOptions = {}): Promise<GPUBuffer> {
  const values = await readVector(info, o);
  const buffer = gpu.device.createBuffer({ label, size: Math.max(16, values.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  gpu.device.queue.writeBuffer(buffer, 0, values);
  return buffer;
}
