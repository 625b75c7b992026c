// safetensors reader (Hugging Face's weight format), single files and shards through
// model.safetensors.index.json. Reads the 8-byte header length and the JSON header only; validates every
// entry (dtype, shape, data_offsets inside the data section and equal to shape × dtype size, no overlaps)
// so loaders can trust offsets. No library: the format is a u64 and a JSON object.

import { ModelFormatError, ModelMismatchError } from '../errors.ts';
import type { ByteSource, TensorInfo } from '../types.ts';

/** Same cap as the reference implementation (safetensors MAX_HEADER_SIZE). */
const MAX_HEADER_BYTES = 100_000_000;

/** Bits per element of each safetensors dtype; F32/F16/BF16 are the ones intab runs. */
const DTYPE_BITS: Readonly<Record<string, number>> = {
  BOOL: 8, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8, F4: 4, F6_E2M3: 6, F6_E3M2: 6,
  I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32, F64: 64, I64: 64, U64: 64, C64: 64,
};
const RUNS: Readonly<Record<string, TensorInfo['dtype']>> = { F32: 'f32', F16: 'f16', BF16: 'bf16' };

export interface SafetensorsFile {
  readonly source: ByteSource;
  /** `__metadata__` (string → string), empty when absent. */
  readonly metadata: Readonly<Record<string, string>>;
  /** In data-offset order. */
  readonly tensors: readonly TensorInfo[];
  /** Absolute offset of the data section (8 + header length). */
  readonly dataOffset: number;
}

export interface ParseSafetensorsOptions {
  signal?: AbortSignal;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Parses a safetensors file's header. Tensors with dtypes intab does not run get `unsupported:<DTYPE>`.
 * @example
 * const st = await parseSafetensors(await pathSource('hf/model.safetensors'));
 * st.tensors.find((t) => t.name === 'model.embed_tokens.weight')?.shape; // [512, 64]
 */
export async function parseSafetensors(source: ByteSource, options: ParseSafetensorsOptions = {}): Promise<SafetensorsFile> {
  const { signal } = options;
  const name = source.name;
  if (signal?.aborted) throw signal.reason;
  if (source.size < 8) throw new ModelFormatError(name, 'header length', `the file has ${source.size} bytes, fewer than the 8-byte header length; it is truncated or not safetensors`);
  const lenBytes = await source.read(0, 8, signal);
  const headerLen = new DataView(lenBytes.buffer, lenBytes.byteOffset, 8).getBigUint64(0, true);
  if (headerLen > BigInt(source.size - 8)) {
    throw new ModelFormatError(name, 'header length', `${headerLen} bytes of JSON header do not fit in the ${source.size}-byte file; it is truncated or not safetensors`);
  }
  if (headerLen > BigInt(MAX_HEADER_BYTES)) {
    throw new ModelFormatError(name, 'header length', `${headerLen} bytes is absurd for a JSON header (limit ${MAX_HEADER_BYTES})`);
  }
  const n = Number(headerLen);
  const dataOffset = 8 + n;
  const dataSize = source.size - dataOffset;
  const headerBytes = await source.read(8, n, signal);

  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (e) {
    throw new ModelFormatError(name, 'header', `the JSON header does not parse (${(e as Error).message})`, { cause: e });
  }
  if (!isObject(header)) throw new ModelFormatError(name, 'header', 'the JSON header is not an object');

  const metadata: Record<string, string> = Object.create(null);
  const tensors: TensorInfo[] = [];
  const spans: { name: string; begin: number; end: number }[] = [];
  for (const [key, entry] of Object.entries(header)) {
    if (key === '__metadata__') {
      if (!isObject(entry)) throw new ModelFormatError(name, '__metadata__', 'is not an object of strings');
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') throw new ModelFormatError(name, `__metadata__.${k}`, `is ${JSON.stringify(v)?.slice(0, 40)}, not a string`);
        metadata[k] = v;
      }
      continue;
    }
    const f = `tensors["${key}"]`;
    if (!isObject(entry)) throw new ModelFormatError(name, f, 'is not an object with dtype, shape and data_offsets');
    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string') throw new ModelFormatError(name, `${f}.dtype`, 'is missing or not a string');
    if (!Array.isArray(shape) || shape.length > 8) throw new ModelFormatError(name, `${f}.shape`, 'is not an array of at most 8 dims');
    let elems = 1;
    for (let d = 0; d < shape.length; d++) {
      const x = shape[d];
      if (!Number.isSafeInteger(x) || x < 0) throw new ModelFormatError(name, `${f}.shape[${d}]`, `is ${JSON.stringify(x)}, not a non-negative integer`);
      elems *= x;
      if (!Number.isSafeInteger(elems)) throw new ModelFormatError(name, `${f}.shape`, 'the element count overflows 2^53');
    }
    if (!Array.isArray(offsets) || offsets.length !== 2) throw new ModelFormatError(name, `${f}.data_offsets`, 'is not a [begin, end] pair');
    const [begin, end] = offsets as unknown[];
    if (!Number.isSafeInteger(begin) || !Number.isSafeInteger(end) || (begin as number) < 0 || (end as number) < (begin as number)) {
      throw new ModelFormatError(name, `${f}.data_offsets`, `[${String(begin)}, ${String(end)}] is not an increasing pair of integers`);
    }
    const b = begin as number;
    const e = end as number;
    if (e > dataSize) {
      throw new ModelFormatError(name, `${f}.data_offsets`, `[${b}, ${e}] runs past the end of the ${dataSize}-byte data section; the file is truncated`);
    }
    const bits = DTYPE_BITS[dtype];
    if (bits !== undefined) {
      const totalBits = elems * bits;
      if (totalBits % 8 !== 0 || totalBits / 8 !== e - b) {
        throw new ModelMismatchError(name, `${f}.data_offsets`, `${totalBits / 8} bytes (shape [${shape.join(', ')}] of ${dtype})`, `${e - b} bytes`);
      }
    }
    spans.push({ name: key, begin: b, end: e });
    tensors.push({
      name: key,
      dtype: RUNS[dtype] ?? `unsupported:${dtype}`,
      shape: shape as number[],
      source,
      offset: dataOffset + b,
      byteLength: e - b,
    });
  }
  spans.sort((x, y) => x.begin - y.begin || x.end - y.end);
  for (let i = 1; i < spans.length; i++) {
    if (spans[i].begin < spans[i - 1].end) {
      throw new ModelFormatError(name, `tensors["${spans[i].name}"].data_offsets`, `overlaps tensor ${spans[i - 1].name} (data bytes ${spans[i - 1].begin}..${spans[i - 1].end})`);
    }
  }
  tensors.sort((x, y) => x.offset - y.offset);
  return { source, metadata, tensors, dataOffset };
}

// ---- sharded checkpoints ----

export interface SafetensorsIndex {
  /** The index's `metadata` object (e.g. total_size), as stored. */
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Every tensor of every shard, each with its shard as source. */
  readonly tensors: readonly TensorInfo[];
  readonly shards: readonly SafetensorsFile[];
}

export interface ParseSafetensorsIndexOptions {
  /** The index file's name, for error messages (default 'model.safetensors.index.json'). */
  name?: string;
  signal?: AbortSignal;
}

/**
 * Reads a sharded checkpoint: `indexJson` is model.safetensors.index.json (text or parsed), and each shard named in
 * its weight_map is looked up in `sourcesByFile`. Every mapped tensor must be in the shard the map names.
 * @example
 * const idx = await parseSafetensorsIndex(text, (f) => files.get(f));
 */
export async function parseSafetensorsIndex(
  indexJson: string | unknown,
  sourcesByFile: ReadonlyMap<string, ByteSource> | ((file: string) => ByteSource | undefined),
  options: ParseSafetensorsIndexOptions = {},
): Promise<SafetensorsIndex> {
  const indexName = options.name ?? 'model.safetensors.index.json';
  let index: unknown = indexJson;
  if (typeof indexJson === 'string') {
    try {
      index = JSON.parse(indexJson);
    } catch (e) {
      throw new ModelFormatError(indexName, '(json)', `does not parse (${(e as Error).message})`, { cause: e });
    }
  }
  if (!isObject(index)) throw new ModelFormatError(indexName, '(json)', 'is not a JSON object');
  const map = index.weight_map;
  if (!isObject(map)) throw new ModelFormatError(indexName, 'weight_map', 'is missing or not an object of tensor name → shard file');
  const metadata = isObject(index.metadata) ? index.metadata : {};
  const lookup = typeof sourcesByFile === 'function' ? sourcesByFile : (f: string) => sourcesByFile.get(f);

  const files: string[] = [];
  for (const [tensor, file] of Object.entries(map)) {
    if (typeof file !== 'string' || file.length === 0) throw new ModelFormatError(indexName, `weight_map["${tensor}"]`, 'is not a file name');
    if (!files.includes(file)) files.push(file);
  }
  const shards: SafetensorsFile[] = [];
  const byFile = new Map<string, SafetensorsFile>();
  for (const file of files) {
    const src = lookup(file);
    if (!src) throw new ModelMismatchError(indexName, `weight_map → ${file}`, 'a shard file next to the index', 'missing');
    const st = await parseSafetensors(src, { signal: options.signal });
    shards.push(st);
    byFile.set(file, st);
  }
  const tensors: TensorInfo[] = [];
  const owner = new Map<string, string>();
  for (const [file, st] of byFile) {
    for (const t of st.tensors) {
      const prev = owner.get(t.name);
      if (prev) throw new ModelMismatchError(file, `tensor ${t.name}`, 'in one shard only', `also in ${prev}`);
      owner.set(t.name, file);
      tensors.push(t);
    }
  }
  for (const [tensor, file] of Object.entries(map) as [string, string][]) {
    const actual = owner.get(tensor);
    if (actual !== file) throw new ModelMismatchError(indexName, `weight_map["${tensor}"]`, `a tensor in ${file}`, actual ? `in ${actual}` : 'in no shard');
  }
  return { metadata, tensors, shards };
}

// ---- writing (fixtures) ----

export interface SafetensorsWriteTensor {
  readonly name: string;
  /** Safetensors dtype name: 'F32', 'F16', 'BF16', 'I8', ... */
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly data: Uint8Array;
}

/**
 * Serializes a safetensors file (tensors laid out in the given order, header padded with spaces to 8 bytes,
 * as the reference writer does). For test fixtures and generated random-weight models.
 * @example
 * const bytes = writeSafetensors([{ name: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(8) }]);
 */
export function writeSafetensors(tensors: readonly SafetensorsWriteTensor[], metadata?: Readonly<Record<string, string>>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let at = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [at, at + t.data.length] };
    at += t.data.length;
  }
  let json = JSON.stringify(header);
  const utf8 = new TextEncoder();
  let hb = utf8.encode(json);
  if (hb.length % 8) {
    json += ' '.repeat(8 - (hb.length % 8));
    hb = utf8.encode(json);
  }
  const out = new Uint8Array(8 + hb.length + at);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  let p = 8 + hb.length;
  for (const t of tensors) {
    out.set(t.data, p);
    p += t.data.length;
  }
  return out;
}
