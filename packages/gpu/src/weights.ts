// Weight tensors on the GPU: raw ggml block bytes, split by rows into parts that each fit one
// storage binding (a 151k-vocab lm_head in f16 is ~270 MiB; some adapters bind only 128 MiB).
// Kernels that read weights join lib/bytes.wgsl with the format's lib/weights/<dtype>.wgsl.

import bytesLib from '../../../shaders/lib/bytes.wgsl?raw';
import f32 from '../../../shaders/lib/weights/f32.wgsl?raw';
import f16 from '../../../shaders/lib/weights/f16.wgsl?raw';
import bf16 from '../../../shaders/lib/weights/bf16.wgsl?raw';
import q8_0 from '../../../shaders/lib/weights/q8_0.wgsl?raw';
import q4_0 from '../../../shaders/lib/weights/q4_0.wgsl?raw';
import q4_KFormat from '../../../shaders/lib/weights/q4_K.wgsl?raw';
import q4_KScales from '../../../shaders/lib/weights/q4_K.scales.wgsl?raw';
import q6_K from '../../../shaders/lib/weights/q6_K.wgsl?raw';
import vec4Dot from '../../../shaders/lib/weights/vec4.dot.wgsl?raw';
import q8_0Dot from '../../../shaders/lib/weights/q8_0.dot.wgsl?raw';
import q4_0Dot from '../../../shaders/lib/weights/q4_0.dot.wgsl?raw';
import q4_KDot from '../../../shaders/lib/weights/q4_K.dot.wgsl?raw';
import q6_KDot from '../../../shaders/lib/weights/q6_K.dot.wgsl?raw';
import q4_0Gemm from '../../../shaders/lib/weights/q4_0.gemm.wgsl?raw';
import q8_0Gemm from '../../../shaders/lib/weights/q8_0.gemm.wgsl?raw';
import q4_KGemm from '../../../shaders/lib/weights/q4_K.gemm.wgsl?raw';
import type { Gpu } from './device.ts';
import { LimitError, ShapeError, UnsupportedError } from './errors.ts';
import { BLOCK, WEIGHT_DTYPES, isWeightDtype, rowBytes, type WeightDtype } from './formats/blocks.ts';

/** q4_K's libs share the scale and min decoding (lib/weights/q4_K.scales.wgsl). */
const q4_K = `${q4_KScales}\n${q4_KFormat}`;
const FORMAT_WGSL: Record<WeightDtype, string> = { f32, f16, bf16, q8_0, q4_0, q4_K, q6_K };

/** Elements per dequantized chunk in WGSL (K must be a multiple). */
export const CHUNK_ELEMS: Readonly<Record<WeightDtype, number>> = {
  f32: 4,
  f16: 4,
  bf16: 4,
  q8_0: 32,
  q4_0: 32,
  q4_K: 32,
  q6_K: 32,
};

/** The WGSL that lets a kernel read weights of `dtype`: byte helpers + the format's load_chunk. */
export function weightFormatWgsl(dtype: WeightDtype): string {
  return `${bytesLib}\n${FORMAT_WGSL[dtype]}`;
}

const DOT_WGSL: Record<WeightDtype, string> = {
  f32: vec4Dot,
  f16: vec4Dot,
  bf16: vec4Dot,
  q8_0: q8_0Dot,
  q4_0: q4_0Dot,
  q4_K: q4_KDot,
  q6_K: q6_KDot,
};

/**
 * The WGSL for kernels that only need dot products of weight chunks with an x vector (GEMV):
 * weightFormatWgsl plus the format's `chunk_dot(row_byte, c)`. The kernel declares
 * `var<private> xc: array<vec4<f32>, 8>` (the x chunk; CHUNK_V4 of it used) and `xc_sum`.
 */
export function weightDotWgsl(dtype: WeightDtype): string {
  return `${weightFormatWgsl(dtype)}\n${DOT_WGSL[dtype]}`;
}

/** Throughput load_chunk libs (whole words, unpack4x8unorm) for the formats that have one. */
const GEMM_WGSL: Partial<Record<WeightDtype, string>> = { q4_0: q4_0Gemm, q8_0: q8_0Gemm, q4_K: `${q4_KScales}\n${q4_KGemm}` };

/**
 * The WGSL for GEMM kernels: like weightFormatWgsl, but with a faster load_chunk where one exists.
 * Those fold 255 into the scale after unpack4x8unorm, so they are accurate to an ulp but not bit-exact;
 * the embedding gather, which must be bit-exact, uses weightFormatWgsl.
 */
export function weightGemmWgsl(dtype: WeightDtype): string {
  const lib = GEMM_WGSL[dtype];
  return lib ? `${bytesLib}\n${lib}` : weightFormatWgsl(dtype);
}

/** Throws UnsupportedError unless `dtype` is a format intab's kernels read. */
export function requireWeightDtype(dtype: string): asserts dtype is WeightDtype {
  if (!isWeightDtype(dtype)) {
    throw new UnsupportedError(
      `weight dtype '${dtype}'`,
      `intab's kernels read ${WEIGHT_DTYPES.join(', ')}; re-quantize the model to one of them (Q4_K_M, Q8_0 and F16 GGUF files work).`,
    );
  }
}

/** The smallest K a row of `dtype` may have, and the multiple it must be. */
export function kMultiple(dtype: WeightDtype): number {
  return Math.max(BLOCK[dtype].elems, CHUNK_ELEMS[dtype]);
}

/** Whole rows of `rowBytes` that fit one weight part under `limit` bytes (its last word is slack: weightPartBytes). */
export function rowsPerWeightPart(rowBytes: number, limit: number): number {
  return Math.floor((limit - 4) / rowBytes);
}

/** A weight part's buffer bytes for `rows` rows: rounded to words, +4 because straddling u32 reads may touch one word past the end. */
export function weightPartBytes(rows: number, rowBytes: number): number {
  return Math.ceil((rows * rowBytes) / 4) * 4 + 4;
}

/** One part of a weight: rows [row0, row0 + rows), starting at byte 0 of `buffer`. */
export interface WeightPart {
  readonly buffer: GPUBuffer;
  readonly row0: number;
  readonly rows: number;
}

/** An (N, K) weight on the GPU. */
export interface WeightTensor {
  readonly dtype: WeightDtype;
  /** Rows (output features). */
  readonly n: number;
  /** Columns (input features). */
  readonly k: number;
  readonly rowBytes: number;
  readonly parts: readonly WeightPart[];
  readonly label: string;
  /** Bytes on the GPU. */
  readonly bytes: number;
  destroy(): void;
}

export interface CreateWeightOptions {
  dtype: WeightDtype | string;
  /** Rows. */
  n: number;
  /** Columns. */
  k: number;
  label: string;
  /** Raw ggml bytes of the whole tensor, row-major. Omit to allocate and upload later with writeRows(). */
  data?: Uint8Array;
  /** Largest part in bytes; defaults to the adapter's maxStorageBufferBindingSize. Tests lower it. */
  maxPartBytes?: number;
}

/**
 * Allocate an (N, K) weight in its stored format, split by rows to fit storage bindings, and upload
 * `data` when given.
 *
 * @example
 * const w = createWeight(gpu, { dtype: 'q4_0', n: 576, k: 576, label: 'L0.attn.q', data });
 */
export function createWeight(gpu: Gpu, o: CreateWeightOptions): WeightTensor {
  requireWeightDtype(o.dtype);
  const dtype = o.dtype;
  const mult = kMultiple(dtype);
  if (!Number.isInteger(o.n) || o.n <= 0) throw new ShapeError('createWeight', `${o.label}.n`, 'a positive integer', String(o.n));
  if (!Number.isInteger(o.k) || o.k <= 0 || o.k % mult !== 0) {
    throw new ShapeError('createWeight', `${o.label}.k`, `a positive multiple of ${mult} for ${dtype}`, String(o.k));
  }
  const rb = rowBytes(dtype, o.k);
  const total = rb * o.n;
  if (o.data && o.data.byteLength < total) {
    throw new ShapeError('createWeight', `${o.label}.data`, `${total} bytes for ${dtype} (${o.n}, ${o.k})`, `${o.data.byteLength} bytes`);
  }
  const limit = Math.min(o.maxPartBytes ?? Infinity, gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
  const rowsPerPart = rowsPerWeightPart(rb, limit);
  if (rowsPerPart < 1) {
    throw new LimitError(`${o.label}: one row of ${dtype} (${o.k})`, 'maxStorageBufferBindingSize', rb, limit, 'use a smaller model.');
  }
  const parts: WeightPart[] = [];
  for (let row0 = 0; row0 < o.n; row0 += rowsPerPart) {
    const rows = Math.min(rowsPerPart, o.n - row0);
    const size = weightPartBytes(rows, rb);
    const buffer = gpu.device.createBuffer({
      label: parts.length || row0 + rows < o.n ? `${o.label}[${parts.length}]` : o.label,
      size,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    });
    parts.push({ buffer, row0, rows });
  }
  let destroyed = false;
  const tensor: WeightTensor = {
    dtype,
    n: o.n,
    k: o.k,
    rowBytes: rb,
    parts,
    label: o.label,
    bytes: parts.reduce((s, p) => s + p.buffer.size, 0),
    destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const p of parts) p.buffer.destroy();
    },
  };
  if (o.data) writeRows(gpu, tensor, 0, o.data.subarray(0, total));
  return tensor;
}

/**
 * Upload whole rows starting at `firstRow` (streaming loaders call this chunk by chunk).
 * `bytes` must hold a whole number of rows.
 */
export function writeRows(gpu: Gpu, t: WeightTensor, firstRow: number, bytes: Uint8Array): void {
  if (bytes.byteLength % t.rowBytes !== 0) {
    throw new ShapeError('writeRows', t.label, `a multiple of ${t.rowBytes} bytes (whole rows)`, `${bytes.byteLength} bytes`);
  }
  const rows = bytes.byteLength / t.rowBytes;
  if (firstRow + rows > t.n) throw new ShapeError('writeRows', t.label, `rows within ${t.n}`, `rows ${firstRow}..${firstRow + rows}`);
  let done = 0;
  for (const part of t.parts) {
    const start = Math.max(firstRow + done, part.row0);
    const end = Math.min(firstRow + rows, part.row0 + part.rows);
    if (start >= end) continue;
    const src = bytes.subarray((start - firstRow) * t.rowBytes, (end - firstRow) * t.rowBytes);
    const dst = (start - part.row0) * t.rowBytes;
    writePadded(gpu.device.queue, part.buffer, dst, src);
    done = end - firstRow;
  }
}

/**
 * writeBuffer needs 4-byte aligned offsets and sizes, and rows of 18/34/210 bytes are not. A write
 * must start on a 4-byte boundary; a ragged end is zero-padded, so it must be the last write into
 * its part (streaming loaders write an even number of rows per call, then the tail).
 */
function writePadded(queue: GPUQueue, buffer: GPUBuffer, offset: number, src: Uint8Array): void {
  if (offset % 4 !== 0) {
    throw new ShapeError(
      'writeRows',
      buffer.label,
      'a write starting on a 4-byte boundary (write an even number of rows per call, or the whole tensor)',
      `byte offset ${offset}`,
    );
  }
  if (src.byteLength % 4 === 0) {
    queue.writeBuffer(buffer, offset, src.buffer, src.byteOffset, src.byteLength);
    return;
  }
  const padded = new Uint8Array(Math.ceil(src.byteLength / 4) * 4);
  padded.set(src);
  queue.writeBuffer(buffer, offset, padded);
}
