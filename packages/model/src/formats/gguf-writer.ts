// A small GGUF v2/v3 writer: builds test fixtures (every metadata type, odd dtypes, split files) and embeds
// tokenizers into GGUF metadata. It writes what it is told in the layout llama.cpp writes (header, kv pairs,
// tensor infos, padding to general.alignment, data), so the reader can be tested against known bytes.

import type { WeightDtype } from '@intab/gpu';
import { GGML_TYPE_ID } from '@intab/gpu';
import { GGUF_VALUE_TYPE, ggmlByteLength, type GgufValueTypeName } from './gguf.ts';
import { ggufKeyTypes } from './gguf-keys.ts';

/** A metadata value with its GGUF type spelled out (JS numbers alone do not say u8 or f64). */
export type GgufTypedValue =
  | { readonly type: 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly type: 'u64' | 'i64'; readonly value: number | bigint }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'array'; readonly value: readonly GgufTypedValue[]; readonly itemType?: GgufValueTypeName };

/**
 * A metadata value as written: a GgufTypedValue, or a plain JS value whose type is inferred — a number under a key
 * the GGUF spec types (gguf-keys.ts: rope.freq_base is f32 even when it is 10000) in that type; else string →
 * string, boolean → bool, integer → u32 (i32 if negative, u64/i64 if larger), other numbers → f32, bigint →
 * u64/i64, arrays → array of the first item's inferred type.
 */
export type GgufWriteValue = GgufTypedValue | string | number | boolean | bigint | readonly GgufWriteValue[];

export interface GgufWriteTensor {
  readonly name: string;
  /** A WeightDtype, or a raw ggml type id (to write types intab does not run). */
  readonly type: WeightDtype | number;
  /** Row-major shape, outermost first (written as ne[] reversed). */
  readonly shape: readonly number[];
  /** The tensor's bytes: exactly the size its type and shape need. */
  readonly data: Uint8Array;
}

export interface WriteGgufOptions {
  /** 3 (default) or 2; any other number is written as is (for bad-input tests). */
  readonly version?: number;
  /** Metadata in order. general.alignment, if present, sets the padding. */
  readonly metadata?: Iterable<readonly [string, GgufWriteValue]> | Readonly<Record<string, GgufWriteValue>>;
  readonly tensors?: readonly GgufWriteTensor[];
}

/** Shorthand for a typed value: `ggufTyped('u16', 7)`. */
export function ggufTyped(type: 'array', value: readonly GgufTypedValue[], itemType?: GgufValueTypeName): GgufTypedValue;
export function ggufTyped(type: Exclude<GgufValueTypeName, 'array'>, value: number | bigint | boolean | string): GgufTypedValue;
export function ggufTyped(type: GgufValueTypeName, value: unknown, itemType?: GgufValueTypeName): GgufTypedValue {
  return (type === 'array' ? { type, value, itemType } : { type, value }) as GgufTypedValue;
}

function isTyped(v: GgufWriteValue): v is GgufTypedValue {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v;
}

const NUMERIC = new Set<string>(['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'f32', 'f64']);

/** A plain number (or array of them) under a key the spec types (gguf-keys.ts): stored in the spec's type. */
function inferForKey(v: GgufWriteValue, key: string, arch: string | undefined): GgufTypedValue {
  const spec = ggufKeyTypes(key, arch)?.[0];
  if (!spec || isTyped(v)) return infer(v);
  if (typeof v === 'number' && NUMERIC.has(spec)) return { type: spec, value: v } as GgufTypedValue;
  const item = /^array<(.+)>$/.exec(spec)?.[1] as GgufValueTypeName | undefined;
  if (item && NUMERIC.has(item) && Array.isArray(v) && v.every((x) => typeof x === 'number')) {
    return { type: 'array', value: (v as number[]).map((x) => ({ type: item, value: x }) as GgufTypedValue), itemType: item };
  }
  return infer(v);
}

function infer(v: GgufWriteValue): GgufTypedValue {
  if (isTyped(v)) return v;
  if (typeof v === 'string') return { type: 'string', value: v };
  if (typeof v === 'boolean') return { type: 'bool', value: v };
  if (typeof v === 'bigint') return { type: v < 0n ? 'i64' : 'u64', value: v };
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) return { type: 'f32', value: v };
    if (v >= 0 && v <= 0xffffffff) return { type: 'u32', value: v };
    if (v < 0 && v >= -0x80000000) return { type: 'i32', value: v };
    return { type: v < 0 ? 'i64' : 'u64', value: v };
  }
  const items = (v as readonly GgufWriteValue[]).map(infer);
  return { type: 'array', value: items, itemType: items[0]?.type ?? 'u8' };
}

/** Growable little-endian byte writer (the GGUF fuzzer's lying writer extends it). */
export class ByteWriter {
  buf = new Uint8Array(1024);
  view = new DataView(this.buf.buffer);
  pos = 0;
  private readonly utf8 = new TextEncoder();
  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.pos + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(v: number) { this.room(1); this.view.setUint8(this.pos, v); this.pos += 1; }
  i8(v: number) { this.room(1); this.view.setInt8(this.pos, v); this.pos += 1; }
  u16(v: number) { this.room(2); this.view.setUint16(this.pos, v, true); this.pos += 2; }
  i16(v: number) { this.room(2); this.view.setInt16(this.pos, v, true); this.pos += 2; }
  u32(v: number) { this.room(4); this.view.setUint32(this.pos, v, true); this.pos += 4; }
  i32(v: number) { this.room(4); this.view.setInt32(this.pos, v, true); this.pos += 4; }
  f32(v: number) { this.room(4); this.view.setFloat32(this.pos, v, true); this.pos += 4; }
  f64(v: number) { this.room(8); this.view.setFloat64(this.pos, v, true); this.pos += 8; }
  u64(v: number | bigint) { this.room(8); this.view.setBigUint64(this.pos, BigInt(v), true); this.pos += 8; }
  i64(v: number | bigint) { this.room(8); this.view.setBigInt64(this.pos, BigInt(v), true); this.pos += 8; }
  bytes(b: Uint8Array) { this.room(b.length); this.buf.set(b, this.pos); this.pos += b.length; }
  string(s: string) { const b = this.utf8.encode(s); this.u64(b.length); this.bytes(b); }
  padTo(alignment: number) { const n = (alignment - (this.pos % alignment)) % alignment; this.room(n); this.pos += n; }
  result(): Uint8Array { return this.buf.slice(0, this.pos); }
}

function writeValue(o: ByteWriter, v: GgufTypedValue): void {
  switch (v.type) {
    case 'u8': return o.u8(v.value);
    case 'i8': return o.i8(v.value);
    case 'u16': return o.u16(v.value);
    case 'i16': return o.i16(v.value);
    case 'u32': return o.u32(v.value);
    case 'i32': return o.i32(v.value);
    case 'f32': return o.f32(v.value);
    case 'f64': return o.f64(v.value);
    case 'u64': return o.u64(v.value);
    case 'i64': return o.i64(v.value);
    case 'bool': return o.u8(v.value ? 1 : 0);
    case 'string': return o.string(v.value);
    case 'array': {
      const itemType = v.itemType ?? v.value[0]?.type ?? 'u8';
      o.u32(GGUF_VALUE_TYPE[itemType]);
      o.u64(v.value.length);
      for (const item of v.value) {
        if (item.type !== itemType) throw new TypeError(`GGUF arrays hold one type: ${itemType} array has a ${item.type} item`);
        writeValue(o, item);
      }
      return;
    }
  }
}

/**
 * Serializes a GGUF file. Tensors are laid out in order, each padded to general.alignment (default 32).
 * @example
 * const bytes = writeGguf({ metadata: { 'general.architecture': 'llama' },
 *   tensors: [{ name: 'w', type: 'f32', shape: [2, 2], data: new Uint8Array(16) }] });
 */
export function writeGguf(options: WriteGgufOptions): Uint8Array {
  const version = options.version ?? 3;
  const md = options.metadata ?? [];
  const entries: (readonly [string, GgufWriteValue])[] =
    Symbol.iterator in md ? [...(md as Iterable<readonly [string, GgufWriteValue]>)] : Object.entries(md);
  const tensors = options.tensors ?? [];
  const alignEntry = entries.find(([k]) => k === 'general.alignment');
  // An invalid general.alignment is still written (bad-input fixtures); padding then uses 32.
  const asked = alignEntry ? Number((infer(alignEntry[1]) as { value: number }).value) : 32;
  const alignment = Number.isSafeInteger(asked) && asked > 0 ? asked : 32;

  const o = new ByteWriter();
  o.bytes(new Uint8Array([0x47, 0x47, 0x55, 0x46])); // 'GGUF'
  o.u32(version);
  o.u64(tensors.length);
  o.u64(entries.length);
  const arch = entries.find(([k]) => k === 'general.architecture')?.[1];
  for (const [key, raw] of entries) {
    const v = inferForKey(raw, key, typeof arch === 'string' ? arch : undefined);
    o.string(key);
    o.u32(GGUF_VALUE_TYPE[v.type]);
    writeValue(o, v);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const typeId = typeof t.type === 'number' ? t.type : GGML_TYPE_ID[t.type];
    const elems = t.shape.reduce((a, b) => a * b, 1);
    const need = ggmlByteLength(typeId, elems);
    if (t.data.length !== need) throw new RangeError(`tensor ${t.name}: ${t.data.length} bytes given, type ${typeId} shape [${t.shape}] needs ${need}`);
    o.string(t.name);
    o.u32(t.shape.length);
    for (let d = t.shape.length - 1; d >= 0; d--) o.u64(t.shape[d]);
    o.u32(typeId);
    o.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(t.data.length / alignment) * alignment;
  }
  o.padTo(alignment);
  const dataStart = o.pos;
  tensors.forEach((t, i) => {
    o.pos = dataStart + offsets[i];
    o.bytes(t.data);
  });
  if (tensors.length > 0) o.padTo(alignment);
  return o.result();
}
