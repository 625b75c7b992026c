// Tiny, self-contained readers for the CPU reference and its tests: a safetensors file (8-byte header
// length + JSON header + data) and a GGUF v2/v3 file, both decoded whole into Float32Arrays (f32, f16,
// bf16 only). They exist so the reference forward can be checked against real files independently of
// the streaming readers in ../formats; they are not the loaders intab ships and hold everything in memory.

import { bf16ToF32, f16ToF32 } from '@intab/gpu';
import { ModelFormatError, UnsupportedModelError } from '../errors.ts';

/** One decoded tensor: row-major shape outermost first ((N, K) for a matrix) and its values. */
export interface LiteTensor {
  readonly shape: number[];
  readonly data: Float32Array;
}

function decode(dtype: 'f32' | 'f16' | 'bf16', bytes: Uint8Array, offset: number, count: number): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  if (dtype === 'f32') for (let i = 0; i < count; i++) out[i] = view.getFloat32(offset + 4 * i, true);
  else if (dtype === 'f16') for (let i = 0; i < count; i++) out[i] = f16ToF32(view.getUint16(offset + 2 * i, true));
  else for (let i = 0; i < count; i++) out[i] = bf16ToF32(view.getUint16(offset + 2 * i, true));
  return out;
}

const elemCount = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);

// ---- safetensors ----

const ST_DTYPES: Record<string, ['f32' | 'f16' | 'bf16', number]> = { F32: ['f32', 4], F16: ['f16', 2], BF16: ['bf16', 2] };

/**
 * Decodes every tensor of a safetensors file held in memory.
 * @example
 * const tensors = readSafetensors(new Uint8Array(await readFile(path)), path);
 */
export function readSafetensors(bytes: Uint8Array, file: string): Map<string, LiteTensor> {
  if (bytes.byteLength < 8) throw new ModelFormatError(file, 'header length', `needs 8 bytes, the file has ${bytes.byteLength}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  if (headerLen > bytes.byteLength - 8) throw new ModelFormatError(file, 'header length', `${headerLen} runs past the end of the ${bytes.byteLength}-byte file`);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen)));
  } catch (cause) {
    throw new ModelFormatError(file, 'header', 'is not valid JSON', { cause });
  }
  const base = 8 + headerLen;
  const out = new Map<string, LiteTensor>();
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = info as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dt = typeof t.dtype === 'string' ? ST_DTYPES[t.dtype] : undefined;
    if (!dt) throw new UnsupportedModelError(file, `${name}.dtype`, String(t.dtype), 'the reference reader decodes F32, F16 and BF16 tensors');
    if (!Array.isArray(t.shape) || t.shape.some((d) => !Number.isInteger(d) || d < 0)) throw new ModelFormatError(file, `${name}.shape`, 'should be a list of sizes');
    const offs = t.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !Number.isInteger(offs[0]) || !Number.isInteger(offs[1])) throw new ModelFormatError(file, `${name}.data_offsets`, 'should be [begin, end]');
    const shape = t.shape as number[];
    const count = elemCount(shape);
    const [begin, end] = offs as [number, number];
    if (end - begin !== count * dt[1] || begin < 0 || base + end > bytes.byteLength) {
      throw new ModelFormatError(file, `${name}.data_offsets`, `[${begin}, ${end}] does not hold ${count} ${t.dtype} values inside the file`);
    }
    out.set(name, { shape, data: decode(dt[0], bytes, base + begin, count) });
  }
  return out;
}

/** Encodes F32 tensors as a safetensors file (names sorted, 8-byte aligned header), for generated fixtures. */
export function writeSafetensors(tensors: Iterable<[string, LiteTensor]>, metadata?: Record<string, string>): Uint8Array {
  const list = [...tensors].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const [name, t] of list) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let p = 8 + headerBytes.length;
  for (const [, t] of list) {
    for (let i = 0; i < t.data.length; i++) view.setFloat32(p + 4 * i, t.data[i], true);
    p += t.data.length * 4;
  }
  return out;
}

// ---- GGUF ----

/** A GGUF file decoded whole: metadata values (u64/i64 as bigint, arrays as arrays) and f32/f16/bf16 tensors. */
export interface LiteGguf {
  readonly version: number;
  readonly metadata: Record<string, unknown>;
  /** Tensor names and row-major shapes (GGUF's ne[] reversed), in file order. */
  readonly tensorInfos: { name: string; shape: number[] }[];
  readonly tensors: Map<string, LiteTensor>;
}

const GGML_DTYPES: Record<number, ['f32' | 'f16' | 'bf16', number]> = { 0: ['f32', 4], 1: ['f16', 2], 30: ['bf16', 2] };

/**
 * Decodes a GGUF v2/v3 file held in memory (f32/f16/bf16 tensors).
 * @example
 * const gguf = readGgufLite(new Uint8Array(await readFile(path)), path);
 * const config = configFromGguf(gguf.metadata, path, gguf.tensorInfos);
 */
export function readGgufLite(bytes: Uint8Array, file: string): LiteGguf {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let p = 0;
  const need = (n: number, field: string) => {
    if (p + n > bytes.byteLength) throw new ModelFormatError(file, field, `needs ${n} bytes at offset ${p} but the file ends at ${bytes.byteLength}`);
  };
  const u32 = (field: string) => (need(4, field), (p += 4), view.getUint32(p - 4, true));
  const u64 = (field: string) => {
    need(8, field);
    p += 8;
    const v = view.getBigUint64(p - 8, true);
    if (v > BigInt(bytes.byteLength)) throw new ModelFormatError(file, field, `${v} is larger than the whole file`);
    return Number(v);
  };
  const str = (field: string) => {
    const n = u64(field);
    need(n, field);
    p += n;
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes.subarray(p - n, p)); // a leading U+FEFF is text
  };
  const value = (type: number, field: string): unknown => {
    switch (type) {
      case 0: return (need(1, field), view.getUint8(p++));
      case 1: return (need(1, field), view.getInt8(p++));
      case 2: return (need(2, field), (p += 2), view.getUint16(p - 2, true));
      case 3: return (need(2, field), (p += 2), view.getInt16(p - 2, true));
      case 4: return u32(field);
      case 5: return (need(4, field), (p += 4), view.getInt32(p - 4, true));
      case 6: return (need(4, field), (p += 4), view.getFloat32(p - 4, true));
      case 7: return (need(1, field), view.getUint8(p++) !== 0);
      case 8: return str(field);
      case 9: {
        const inner = u32(field);
        const n = u64(field);
        const arr: unknown[] = [];
        for (let i = 0; i < n; i++) arr.push(value(inner, `${field}[${i}]`));
        return arr;
      }
      case 10: return (need(8, field), (p += 8), view.getBigUint64(p - 8, true));
      case 11: return (need(8, field), (p += 8), view.getBigInt64(p - 8, true));
      case 12: return (need(8, field), (p += 8), view.getFloat64(p - 8, true));
      default: throw new ModelFormatError(file, field, `has unknown value type ${type}`);
    }
  };

  if (u32('magic') !== 0x46554747) throw new ModelFormatError(file, 'magic', 'is not "GGUF"');
  const version = u32('version');
  if (version !== 2 && version !== 3) throw new UnsupportedModelError(file, 'version', String(version), 'the reference reader reads GGUF v2 and v3');
  const tensorCount = u64('tensor_count');
  const kvCount = u64('metadata_kv_count');
  const metadata: Record<string, unknown> = {};
  for (let i = 0; i < kvCount; i++) {
    const key = str(`metadata[${i}].key`);
    metadata[key] = value(u32(`${key}.type`), key);
  }
  const infos: { name: string; shape: number[]; type: number; offset: number }[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = str(`tensors[${i}].name`);
    const nd = u32(`${name}.n_dims`);
    if (nd > 4) throw new ModelFormatError(file, `${name}.n_dims`, `should be at most 4 but is ${nd}`);
    const ne: number[] = [];
    for (let d = 0; d < nd; d++) ne.push(u64(`${name}.ne[${d}]`));
    infos.push({ name, shape: ne.reverse(), type: u32(`${name}.type`), offset: u64(`${name}.offset`) });
  }
  const align = metadata['general.alignment'] === undefined ? 32 : Number(metadata['general.alignment']);
  if (!(align > 0) || align % 8 !== 0) throw new ModelFormatError(file, 'general.alignment', `should be a positive multiple of 8 but is ${align}`);
  const dataStart = Math.ceil(p / align) * align;
  const tensors = new Map<string, LiteTensor>();
  for (const t of infos) {
    const dt = GGML_DTYPES[t.type];
    if (!dt) throw new UnsupportedModelError(file, `${t.name}.type`, String(t.type), 'the reference reader decodes F32, F16 and BF16 tensors');
    const count = elemCount(t.shape);
    const at = dataStart + t.offset;
    if (at + count * dt[1] > bytes.byteLength) throw new ModelFormatError(file, `${t.name}.offset`, `${t.offset} puts ${count * dt[1]} bytes past the end of the file`);
    tensors.set(t.name, { shape: t.shape, data: decode(dt[0], bytes, at, count) });
  }
  return { version, metadata, tensorInfos: infos.map(({ name, shape }) => ({ name, shape })), tensors };
}
