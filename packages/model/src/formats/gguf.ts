// GGUF v2/v3 reader (llama.cpp's model format): header, metadata, tensor infos, alignment, split files.
// Written here rather than with @huggingface/gguf: that parser takes a URI (http or a local path, not a Blob or
// any ByteSource), throws plain Errors, trusts counts and lengths (a bad string length becomes a RangeError that
// it answers by fetching more) and checks no offsets. intab needs reads through any ByteSource, a header pulled
// in growing chunks (a multi-GB file is never read whole), and every count, length, dim and offset validated
// against the file size BEFORE allocating, with typed errors naming the field. Past 500 lines as one job: one
// format's reader, its limits and its split files.

import { BLOCK, GGML_TYPE_ID, type WeightDtype } from '@intab/gpu';
import { ModelFormatError, ModelMismatchError, UnsupportedModelError } from '../errors.ts';
import type { ByteSource, GgufValue, TensorInfo } from '../types.ts';
import { fileBaseName } from '../source.ts';

// ---- ggml types ----

/** One ggml tensor type: its name and block layout (ggml.c type_traits). `removed` ids are no longer valid. */
export interface GgmlType {
  readonly name: string;
  readonly blockElems: number;
  readonly blockBytes: number;
  readonly removed?: boolean;
}

/** Every ggml type id up to mxfp4 (ggml.h enum ggml_type), with its block size in elements and bytes. */
export const GGML_TYPES: ReadonlyMap<number, GgmlType> = new Map<number, GgmlType>([
  [0, { name: 'f32', blockElems: 1, blockBytes: 4 }],
  [1, { name: 'f16', blockElems: 1, blockBytes: 2 }],
  [2, { name: 'q4_0', blockElems: 32, blockBytes: 18 }],
  [3, { name: 'q4_1', blockElems: 32, blockBytes: 20 }],
  [4, { name: 'q4_2', blockElems: 32, blockBytes: 18, removed: true }],
  [5, { name: 'q4_3', blockElems: 32, blockBytes: 20, removed: true }],
  [6, { name: 'q5_0', blockElems: 32, blockBytes: 22 }],
  [7, { name: 'q5_1', blockElems: 32, blockBytes: 24 }],
  [8, { name: 'q8_0', blockElems: 32, blockBytes: 34 }],
  [9, { name: 'q8_1', blockElems: 32, blockBytes: 36 }],
  [10, { name: 'q2_K', blockElems: 256, blockBytes: 84 }],
  [11, { name: 'q3_K', blockElems: 256, blockBytes: 110 }],
  [12, { name: 'q4_K', blockElems: 256, blockBytes: 144 }],
  [13, { name: 'q5_K', blockElems: 256, blockBytes: 176 }],
  [14, { name: 'q6_K', blockElems: 256, blockBytes: 210 }],
  [15, { name: 'q8_K', blockElems: 256, blockBytes: 292 }],
  [16, { name: 'iq2_xxs', blockElems: 256, blockBytes: 66 }],
  [17, { name: 'iq2_xs', blockElems: 256, blockBytes: 74 }],
  [18, { name: 'iq3_xxs', blockElems: 256, blockBytes: 98 }],
  [19, { name: 'iq1_s', blockElems: 256, blockBytes: 50 }],
  [20, { name: 'iq4_nl', blockElems: 32, blockBytes: 18 }],
  [21, { name: 'iq3_s', blockElems: 256, blockBytes: 110 }],
  [22, { name: 'iq2_s', blockElems: 256, blockBytes: 82 }],
  [23, { name: 'iq4_xs', blockElems: 256, blockBytes: 136 }],
  [24, { name: 'i8', blockElems: 1, blockBytes: 1 }],
  [25, { name: 'i16', blockElems: 1, blockBytes: 2 }],
  [26, { name: 'i32', blockElems: 1, blockBytes: 4 }],
  [27, { name: 'i64', blockElems: 1, blockBytes: 8 }],
  [28, { name: 'f64', blockElems: 1, blockBytes: 8 }],
  [29, { name: 'iq1_m', blockElems: 256, blockBytes: 56 }],
  [30, { name: 'bf16', blockElems: 1, blockBytes: 2 }],
  [31, { name: 'q4_0_4_4', blockElems: 32, blockBytes: 18, removed: true }],
  [32, { name: 'q4_0_4_8', blockElems: 32, blockBytes: 18, removed: true }],
  [33, { name: 'q4_0_8_8', blockElems: 32, blockBytes: 18, removed: true }],
  [34, { name: 'tq1_0', blockElems: 256, blockBytes: 54 }],
  [35, { name: 'tq2_0', blockElems: 256, blockBytes: 66 }],
  [36, { name: 'iq4_nl_4_4', blockElems: 32, blockBytes: 18, removed: true }],
  [37, { name: 'iq4_nl_4_8', blockElems: 32, blockBytes: 18, removed: true }],
  [38, { name: 'iq4_nl_8_8', blockElems: 32, blockBytes: 18, removed: true }],
  [39, { name: 'mxfp4', blockElems: 32, blockBytes: 17 }],
]);

const DTYPE_BY_GGML_ID = new Map<number, WeightDtype>(
  (Object.entries(GGML_TYPE_ID) as [WeightDtype, number][]).map(([d, id]) => [id, d]),
);

/** The TensorInfo dtype of a ggml type id: a WeightDtype intab runs, else `unsupported:<ggml name>`. */
export function ggmlDtype(typeId: number): TensorInfo['dtype'] | undefined {
  const d = DTYPE_BY_GGML_ID.get(typeId);
  if (d) return d;
  const t = GGML_TYPES.get(typeId);
  return t ? `unsupported:${t.name}` : undefined;
}

// ---- metadata value types ----

/** GGUF metadata value type ids (gguf.h enum gguf_type). */
export const GGUF_VALUE_TYPE = {
  u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12,
} as const;
export type GgufValueTypeName = keyof typeof GGUF_VALUE_TYPE;
const VALUE_TYPE_NAMES = Object.keys(GGUF_VALUE_TYPE) as GgufValueTypeName[];
/** Bytes of a fixed-size value type; strings and arrays are variable. */
const FIXED_SIZE: Partial<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** A GGUF tensor as stored: TensorInfo plus its ggml type id and its offset relative to the data section. */
export interface GgufTensorInfo extends TensorInfo {
  readonly ggmlType: number;
  /** Offset from the start of the data section (what the file stores); `offset` is absolute. */
  readonly dataOffset: number;
}

/** A parsed GGUF file (or a merged set of split files, see parseGgufSplits). */
export interface GgufFile {
  /** The (first) file. */
  readonly source: ByteSource;
  readonly version: 2 | 3;
  /**
   * Metadata in file order. u64/i64 values are numbers when within ±2^53, else bigint; strings are UTF-8
   * decoded (invalid sequences become U+FFFD in values; keys must be valid UTF-8); arrays are JS arrays.
   */
  readonly metadata: ReadonlyMap<string, GgufValue>;
  /** Each key's stored type: 'u32', 'string', 'array<string>', 'array<array<u8>>', ... */
  readonly metadataTypes: ReadonlyMap<string, string>;
  readonly tensors: readonly GgufTensorInfo[];
  /** general.alignment, or 32. */
  readonly alignment: number;
  /** Absolute offset of the tensor data section (of the first file, for splits). */
  readonly dataOffset: number;
  /** The individual files when this is a merge of splits, in split.no order. */
  readonly splits?: readonly GgufFile[];
}

export interface ParseGgufOptions {
  signal?: AbortSignal;
}

// ---- limits (validated before anything is allocated) ----

const MAX_TENSORS = 1_000_000;
const MAX_KVS = 1_000_000;
const MAX_ARRAY_ITEMS = 64 * 1024 * 1024;
const MAX_STRING_BYTES = 256 * 1024 * 1024;
const MAX_ARRAY_DEPTH = 8;
const MAX_DIMS = 4;
const DEFAULT_ALIGNMENT = 32;
const FIRST_CHUNK = 64 * 1024;
const MAX_CHUNK = 16 * 1024 * 1024;

// ---- incremental reader ----

/**
 * Reads the header through source.read() in chunks that double in size (64 KiB → 16 MiB), keeping only
 * the unread tail of the window. `ensure(n)` returns undefined when the bytes are already buffered, so the
 * hot path (millions of small values in a tokenizer vocabulary) does not await per value.
 */
class HeaderReader {
  pos = 0;
  private buf = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  private start = 0; // file offset of buf[0]
  private chunk = FIRST_CHUNK;
  // ignoreBOM: a string's leading U+FEFF is its own text (Gemma 3 has tokens '\uFEFF#', ...), not a byte-order mark
  // to drop; dropping it would give two tokens the text '#' and map '#' to the wrong one.
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  private readonly utf8Lenient = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(
    readonly source: ByteSource,
    private readonly signal: AbortSignal | undefined,
  ) {}

  get name(): string {
    return this.source.name;
  }
  get remaining(): number {
    return this.source.size - this.pos;
  }

  fail(field: string, problem: string): ModelFormatError {
    return new ModelFormatError(this.source.name, field, problem);
  }

  /** Makes bytes [pos, pos + n) available; undefined when they already are. */
  ensure(n: number, field: string): Promise<void> | undefined {
    const end = this.pos + n;
    if (end > this.source.size) {
      throw this.fail(field, `needs ${n} bytes at offset ${this.pos}, but the file ends at ${this.source.size} (truncated)`);
    }
    if (end <= this.start + this.buf.length) return undefined;
    return this.fill(end);
  }

  private async fill(end: number): Promise<void> {
    if (this.signal?.aborted) throw this.signal.reason;
    const keepFrom = Math.min(this.pos, this.start + this.buf.length);
    const have = this.start + this.buf.length;
    const want = Math.min(this.source.size - have, Math.max(end - have, this.chunk));
    this.chunk = Math.min(this.chunk * 2, MAX_CHUNK);
    const got = await this.source.read(have, want, this.signal);
    if (got.length !== want) throw this.fail(`bytes ${have}..${have + want}`, `the source returned ${got.length} bytes instead of ${want}`);
    const kept = this.buf.subarray(keepFrom - this.start);
    const next = new Uint8Array(kept.length + got.length);
    next.set(kept, 0);
    next.set(got, kept.length);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
    this.start = keepFrom;
  }

  private at(): number {
    return this.pos - this.start;
  }
  // Fixed-size reads; callers ensure() the bytes first.
  u8(): number { const v = this.buf[this.at()]; this.pos += 1; return v; }
  i8(): number { const v = this.view.getInt8(this.at()); this.pos += 1; return v; }
  u16(): number { const v = this.view.getUint16(this.at(), true); this.pos += 2; return v; }
  i16(): number { const v = this.view.getInt16(this.at(), true); this.pos += 2; return v; }
  u32(): number { const v = this.view.getUint32(this.at(), true); this.pos += 4; return v; }
  i32(): number { const v = this.view.getInt32(this.at(), true); this.pos += 4; return v; }
  f32(): number { const v = this.view.getFloat32(this.at(), true); this.pos += 4; return v; }
  f64(): number { const v = this.view.getFloat64(this.at(), true); this.pos += 8; return v; }
  u64(): bigint { const v = this.view.getBigUint64(this.at(), true); this.pos += 8; return v; }
  i64(): bigint { const v = this.view.getBigInt64(this.at(), true); this.pos += 8; return v; }
  /** A u64 that must be a count/size ≤ max; checked before anyone allocates by it. */
  async count(field: string, max: number, what: string): Promise<number> {
    const p = this.ensure(8, field);
    if (p) await p;
    const v = this.u64();
    if (v > BigInt(max)) throw this.fail(field, `${what} ${v} is absurd (more than ${max})`);
    return Number(v);
  }
  /** A GGUF string: u64 byte length, then UTF-8 bytes. `strict` rejects invalid UTF-8 (keys, names). */
  async string(field: string, strict: boolean): Promise<string> {
    let p = this.ensure(8, `${field}.length`);
    if (p) await p;
    const len = this.u64();
    if (len > BigInt(Math.min(this.remaining, MAX_STRING_BYTES))) {
      throw this.fail(`${field}.length`, `string length ${len} runs past the end of the file (${this.remaining} bytes left)`);
    }
    const n = Number(len);
    p = this.ensure(n, field);
    if (p) await p;
    const bytes = this.buf.subarray(this.at(), this.at() + n);
    this.pos += n;
    if (!strict) return this.utf8Lenient.decode(bytes);
    try {
      return this.utf8.decode(bytes);
    } catch (e) {
      throw new ModelFormatError(this.source.name, field, 'the string is not valid UTF-8', { cause: e });
    }
  }
}

// ---- values ----

function u64Value(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}
function i64Value(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
}

async function readValueType(r: HeaderReader, field: string): Promise<number> {
  const p = r.ensure(4, field);
  if (p) await p;
  const t = r.u32();
  if (t > 12) throw r.fail(field, `value type ${t} is not a GGUF type (0..12)`);
  return t;
}

/** Reads one value of type `t`; returns it with its type name ('array<u32>' for arrays). */
async function readValue(r: HeaderReader, t: number, field: string, depth: number): Promise<{ value: GgufValue; type: string }> {
  const fixed = FIXED_SIZE[t];
  if (fixed !== undefined) {
    const p = r.ensure(fixed, field);
    if (p) await p;
    return { value: readFixed(r, t, field), type: VALUE_TYPE_NAMES[t] };
  }
  if (t === GGUF_VALUE_TYPE.string) return { value: await r.string(field, false), type: 'string' };
  // array: item type u32, count u64, items
  if (depth >= MAX_ARRAY_DEPTH) throw r.fail(field, `arrays nest deeper than ${MAX_ARRAY_DEPTH} levels`);
  const itemType = await readValueType(r, `${field}.item_type`);
  const p = r.ensure(8, `${field}.count`);
  if (p) await p;
  const count = r.u64();
  // Each item takes at least this many bytes, so the count is bounded by what the file can hold.
  const minItem = FIXED_SIZE[itemType] ?? (itemType === GGUF_VALUE_TYPE.string ? 8 : 12);
  const fits = Math.floor(r.remaining / minItem);
  if (count > BigInt(Math.min(fits, MAX_ARRAY_ITEMS))) {
    throw r.fail(`${field}.count`, `array of ${count} ${VALUE_TYPE_NAMES[itemType]} items cannot fit in the ${r.remaining} bytes left in the file`);
  }
  const n = Number(count);
  const out: GgufValue[] = new Array(n);
  let itemTypeName: string = VALUE_TYPE_NAMES[itemType];
  if (FIXED_SIZE[itemType] !== undefined) {
    const q = r.ensure(n * minItem, field);
    if (q) await q;
    for (let i = 0; i < n; i++) out[i] = readFixed(r, itemType, field);
  } else if (itemType === GGUF_VALUE_TYPE.string) {
    for (let i = 0; i < n; i++) out[i] = await r.string(`${field}[${i}]`, false);
  } else {
    for (let i = 0; i < n; i++) {
      const inner = await readValue(r, itemType, `${field}[${i}]`, depth + 1);
      out[i] = inner.value;
      if (i === 0) itemTypeName = inner.type;
    }
  }
  return { value: out, type: `array<${itemTypeName}>` };
}

function readFixed(r: HeaderReader, t: number, field: string): GgufValue {
  switch (t) {
    case 0: return r.u8();
    case 1: return r.i8();
    case 2: return r.u16();
    case 3: return r.i16();
    case 4: return r.u32();
    case 5: return r.i32();
    case 6: return r.f32();
    case 7: {
      const b = r.u8();
      if (b > 1) throw r.fail(field, `bool byte is ${b}, not 0 or 1`);
      return b === 1;
    }
    case 10: return u64Value(r.u64());
    case 11: return i64Value(r.i64());
    default: return r.f64(); // 12
  }
}

// ---- the header ----

const MAGIC = 0x46554747; // 'GGUF' read as little-endian u32

/**
 * Parses a GGUF v2/v3 file's header: metadata and tensor infos, every field validated against the file size.
 * Reads only the header (in growing chunks), never the tensor data.
 * @example
 * const gguf = await parseGguf(await pathSource('stories260K.gguf'));
 * gguf.metadata.get('general.architecture'); // 'llama'
 */
export async function parseGguf(source: ByteSource, options: ParseGgufOptions = {}): Promise<GgufFile> {
  const { signal } = options;
  if (signal?.aborted) throw signal.reason;
  const r = new HeaderReader(source, signal);
  const name = source.name;

  // magic, version, counts
  let p = r.ensure(8, 'header.magic');
  if (p) await p;
  const magic = r.u32();
  if (magic !== MAGIC) {
    throw new ModelFormatError(name, 'header.magic', `expected "GGUF", found bytes ${hex4(magic)}; this is not a GGUF file`);
  }
  const version = r.u32();
  if (version === 1) {
    throw new UnsupportedModelError(name, 'header.version', '1', 'GGUF v1 files predate 64-bit counts; re-convert the model with a current llama.cpp (convert_hf_to_gguf.py) to get GGUF v3');
  }
  if (version !== 2 && version !== 3) {
    const swapped = ((version & 0xff) << 24) | ((version & 0xff00) << 8) | ((version >>> 8) & 0xff00) | (version >>> 24);
    const advice = swapped === 2 || swapped === 3
      ? 'this is a big-endian GGUF; intab reads little-endian files only: use the little-endian build of the model'
      : 'intab reads GGUF v2 and v3: re-convert the model with a current llama.cpp';
    throw new UnsupportedModelError(name, 'header.version', String(version), advice);
  }
  // A tensor info takes at least 8 (name len) + 4 (n_dims) + 8 (ne) + 4 (type) + 8 (offset) bytes; a kv at least 8 + 4 + 1.
  const tensorCount = await r.count('header.tensor_count', Math.min(MAX_TENSORS, Math.floor(r.remaining / 32)), 'tensor count');
  const kvCount = await r.count('header.kv_count', Math.min(MAX_KVS, Math.floor(r.remaining / 13)), 'metadata key count');

  // metadata
  const metadata = new Map<string, GgufValue>();
  const metadataTypes = new Map<string, string>();
  for (let i = 0; i < kvCount; i++) {
    const key = await r.string(`metadata[${i}].key`, true);
    if (key.length === 0) throw r.fail(`metadata[${i}].key`, 'the key is empty');
    if (metadata.has(key)) throw r.fail(key, 'the key appears twice');
    const t = await readValueType(r, `${key}.type`);
    const { value, type } = await readValue(r, t, key, 0);
    metadata.set(key, value);
    metadataTypes.set(key, type);
  }

  // alignment
  let alignment = DEFAULT_ALIGNMENT;
  if (metadata.has('general.alignment')) {
    const a = metadata.get('general.alignment');
    if (metadataTypes.get('general.alignment') !== 'u32' || typeof a !== 'number' || a === 0 || (a & (a - 1)) !== 0) {
      throw r.fail('general.alignment', `must be a u32 power of two, is ${metadataTypes.get('general.alignment')} ${String(a)}`);
    }
    alignment = a;
  }

  // tensor infos
  interface Raw { name: string; ne: number[]; type: number; rel: number; bytes: number; index: number }
  const raws: Raw[] = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const f = `tensors[${i}]`;
    const tname = await r.string(`${f}.name`, true);
    const tf = `tensors[${i}] (${tname})`;
    if (tname.length === 0) throw r.fail(`${f}.name`, 'the tensor name is empty');
    if (names.has(tname)) throw r.fail(`${tf}.name`, 'two tensors have this name');
    names.add(tname);
    p = r.ensure(4, `${tf}.n_dims`);
    if (p) await p;
    const nDims = r.u32();
    if (nDims < 1 || nDims > MAX_DIMS) throw r.fail(`${tf}.n_dims`, `is ${nDims}; GGUF tensors have 1 to ${MAX_DIMS} dims`);
    p = r.ensure(8 * nDims + 4 + 8, `${tf}.ne`);
    if (p) await p;
    const ne: number[] = [];
    let elems = 1;
    for (let d = 0; d < nDims; d++) {
      const v = r.u64();
      if (v === 0n) throw r.fail(`${tf}.ne[${d}]`, 'a dimension is 0');
      if (v > BigInt(Number.MAX_SAFE_INTEGER) || elems * Number(v) > Number.MAX_SAFE_INTEGER) {
        throw r.fail(`${tf}.ne[${d}]`, `dimension ${v} makes the element count overflow 2^53`);
      }
      elems *= Number(v);
      ne.push(Number(v));
    }
    const type = r.u32();
    const gt = GGML_TYPES.get(type);
    if (!gt) throw r.fail(`${tf}.type`, `ggml type id ${type} does not exist`);
    if (gt.removed) {
      throw new UnsupportedModelError(name, `${tf}.type`, gt.name, 'this ggml type was removed from llama.cpp (online repacking replaced it); re-convert or re-quantize the model with a current llama.cpp');
    }
    if (ne[0] % gt.blockElems !== 0) {
      throw r.fail(`${tf}.ne[0]`, `row of ${ne[0]} elements is not a whole number of ${gt.name} blocks (${gt.blockElems})`);
    }
    const bytes = ggmlByteLength(type, elems);
    const rel = r.u64();
    if (rel > BigInt(source.size)) throw r.fail(`${tf}.offset`, `offset ${rel} is past the end of the file (${source.size} bytes)`);
    const relN = Number(rel);
    if (relN % alignment !== 0) throw r.fail(`${tf}.offset`, `offset ${relN} is not a multiple of general.alignment (${alignment})`);
    raws.push({ name: tname, ne, type, rel: relN, bytes, index: i });
  }

  // data section
  const dataOffset = Math.ceil(r.pos / alignment) * alignment;
  const dataSize = source.size - dataOffset;
  for (const t of raws) {
    if (t.rel + t.bytes > dataSize) {
      throw r.fail(`tensors[${t.index}] (${t.name}).offset`, `bytes ${dataOffset + t.rel}..${dataOffset + t.rel + t.bytes} run past the end of the file (${source.size} bytes); the file is truncated`);
    }
  }
  const byOffset = [...raws].sort((a, b) => a.rel - b.rel);
  for (let i = 1; i < byOffset.length; i++) {
    const a = byOffset[i - 1];
    const b = byOffset[i];
    if (a.rel + a.bytes > b.rel) {
      throw r.fail(`tensors[${b.index}] (${b.name}).offset`, `overlaps tensor ${a.name} (data bytes ${a.rel}..${a.rel + a.bytes})`);
    }
  }

  const tensors: GgufTensorInfo[] = raws.map((t) => ({
    name: t.name,
    dtype: ggmlDtype(t.type)!,
    shape: [...t.ne].reverse(),
    source,
    offset: dataOffset + t.rel,
    byteLength: t.bytes,
    ggmlType: t.type,
    dataOffset: t.rel,
  }));
  return { source, version, metadata, metadataTypes, tensors, alignment, dataOffset };
}

function hex4(u: number): string {
  return [u & 0xff, (u >>> 8) & 0xff, (u >>> 16) & 0xff, u >>> 24].map((b) => b.toString(16).padStart(2, '0')).join(' ');
}

// ---- split files ----

/** `model-00001-of-00003.gguf` → { base: 'model', no: 0, count: 3 } (no is 0-based like split.no). */
export function parseGgufSplitName(name: string): { base: string; no: number; count: number } | undefined {
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(fileBaseName(name));
  if (!m) return undefined;
  return { base: m[1], no: Number(m[2]) - 1, count: Number(m[3]) };
}

/**
 * Parses the files of a split GGUF (`*-00001-of-00003.gguf` ...) in any order and merges them: metadata from
 * split 0, every tensor with its own file as source. Checks split.count / split.no / split.tensors.count.
 * One file without split keys parses as itself.
 * @example
 * const gguf = await parseGgufSplits(await Promise.all(paths.map(pathSource)));
 */
export async function parseGgufSplits(sources: readonly ByteSource[], options: ParseGgufOptions = {}): Promise<GgufFile> {
  if (sources.length === 0) throw new ModelFormatError('(no files)', 'splits', 'no GGUF files were given');
  const files: GgufFile[] = [];
  for (const s of sources) files.push(await parseGguf(s, options));
  const count0 = files[0].metadata.get('split.count');
  if (files.length === 1 && (count0 === undefined || count0 === 1)) return files[0];

  const bySplit: (GgufFile | undefined)[] = new Array(files.length);
  for (const f of files) {
    const n = f.source.name;
    const count = f.metadata.get('split.count');
    const no = f.metadata.get('split.no');
    if (typeof count !== 'number' || !Number.isInteger(count)) throw new ModelFormatError(n, 'split.count', 'is missing or not an integer; this file is not part of a split GGUF');
    if (typeof no !== 'number' || !Number.isInteger(no)) throw new ModelFormatError(n, 'split.no', 'is missing or not an integer; this file is not part of a split GGUF');
    if (count !== files.length) throw new ModelMismatchError(n, 'split.count', `${files.length} (the number of files given)`, String(count));
    if (no < 0 || no >= count) throw new ModelFormatError(n, 'split.no', `is ${no}, outside 0..${count - 1}`);
    const fromName = parseGgufSplitName(n);
    if (fromName && (fromName.no !== no || fromName.count !== count)) {
      throw new ModelMismatchError(n, 'split.no', `split ${fromName.no} of ${fromName.count} (from the file name)`, `split ${no} of ${count}`);
    }
    if (bySplit[no]) throw new ModelMismatchError(n, 'split.no', 'a different number in each file', `${no}, as in ${bySplit[no]!.source.name}`);
    bySplit[no] = f;
  }
  const ordered = bySplit as GgufFile[];
  const first = ordered[0];
  const tensors: GgufTensorInfo[] = [];
  const seen = new Map<string, string>();
  for (const f of ordered) {
    for (const t of f.tensors) {
      const prev = seen.get(t.name);
      if (prev) throw new ModelMismatchError(f.source.name, `tensor ${t.name}`, 'in one split only', `also in ${prev}`);
      seen.set(t.name, f.source.name);
      tensors.push(t);
    }
  }
  const total = first.metadata.get('split.tensors.count');
  if (total !== undefined && total !== tensors.length) {
    throw new ModelMismatchError(first.source.name, 'split.tensors.count', String(total), `${tensors.length} tensors in the ${ordered.length} files`);
  }
  return { ...first, tensors, splits: ordered };
}

/**
 * Bytes of a tensor of `elems` elements in ggml type `typeId`: from BLOCK (@intab/gpu) for the dtypes intab
 * runs, from GGML_TYPES for the others. Throws RangeError for an unknown type or a partial block.
 * @example
 * ggmlByteLength(GGML_TYPE_ID.q8_0, 64); // 68
 */
export function ggmlByteLength(typeId: number, elems: number): number {
  const d = DTYPE_BY_GGML_ID.get(typeId);
  const b = d ? { blockElems: BLOCK[d].elems, blockBytes: BLOCK[d].bytes } : GGML_TYPES.get(typeId);
  if (!b || elems % b.blockElems !== 0) throw new RangeError(`ggml type ${typeId}: ${elems} elements are not whole blocks`);
  return (elems / b.blockElems) * b.blockBytes;
}
