// The ONNX model format as plain objects, and a protobuf wire-format writer for it (field numbers from
// onnx.proto3): enough of ModelProto / GraphProto / NodeProto / TensorProto / ValueInfoProto /
// AttributeProto / OperatorSetIdProto to write the graphs llama-graph.ts builds, with weights inline
// (raw_data) or in an external data file (the onnx-community `model.onnx_data` layout, needed past 2 GiB).
// Large byte arrays are never copied until the one final concatenation. Kept over protobufjs and its generated ONNX
// schema: as fast on a SmolLM2-135M graph, and 13 KB minified with onnx-read.ts against ~128 KB (issue 23, item 10).

import { OnnxWriteError } from './errors.ts';

// ---- the model as objects ----

/** TensorProto.DataType values intab writes or reads back by name. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  BFLOAT16: 16,
} as const;
export type DataTypeId = number;

/** Bytes per element of a fixed-size data type (0 for STRING and unknown types). */
export function dataTypeSize(t: DataTypeId): number {
  switch (t) {
    case DataType.FLOAT:
    case DataType.INT32:
    case DataType.UINT32:
      return 4;
    case DataType.UINT8:
    case DataType.INT8:
    case DataType.BOOL:
      return 1;
    case DataType.UINT16:
    case DataType.INT16:
    case DataType.FLOAT16:
    case DataType.BFLOAT16:
      return 2;
    case DataType.INT64:
    case DataType.UINT64:
    case DataType.DOUBLE:
      return 8;
    default:
      return 0;
  }
}

/** Where an EXTERNAL tensor's bytes are: `location` relative to the .onnx file, at `offset`, `length` bytes. */
export interface ExternalLocation {
  location: string;
  offset: number;
  length: number;
}

/** A tensor (initializer or attribute value): little-endian bytes inline, or a place in an external file. */
export interface OnnxTensor {
  name: string;
  dataType: DataTypeId;
  dims: readonly number[];
  /** Row-major little-endian bytes (TensorProto.raw_data), when stored inline. */
  data?: Uint8Array;
  /** data_location = EXTERNAL: the bytes live in another file. */
  external?: ExternalLocation;
}

/** A graph input or output: a tensor type whose dims are fixed (number) or symbolic (dim_param, string). */
export interface OnnxValueInfo {
  name: string;
  elemType: DataTypeId;
  dims: readonly (number | string)[];
}

export type OnnxAttribute =
  | { name: string; kind: 'int'; value: number }
  | { name: string; kind: 'float'; value: number }
  | { name: string; kind: 'string'; value: string }
  | { name: string; kind: 'ints'; value: readonly number[] }
  | { name: string; kind: 'floats'; value: readonly number[] }
  | { name: string; kind: 'tensor'; value: OnnxTensor };

export interface OnnxNode {
  opType: string;
  /** '' (or absent) for the ONNX domain; 'com.microsoft' for ORT's contrib ops. */
  domain?: string;
  name?: string;
  /** Value names; '' for an omitted optional input. */
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: readonly OnnxAttribute[];
}

export interface OnnxGraph {
  name: string;
  nodes: readonly OnnxNode[];
  initializers: readonly OnnxTensor[];
  inputs: readonly OnnxValueInfo[];
  outputs: readonly OnnxValueInfo[];
}

export interface OpsetImport {
  /** '' for the ONNX domain. */
  domain: string;
  version: number;
}

export interface OnnxModel {
  irVersion: number;
  opsetImports: readonly OpsetImport[];
  producerName?: string;
  producerVersion?: string;
  graph: OnnxGraph;
  /** ModelProto.metadata_props. */
  metadata?: Readonly<Record<string, string>>;
}

/** Attribute helpers: `attr.int('axis', -1)`. */
export const attr = {
  int: (name: string, value: number): OnnxAttribute => ({ name, kind: 'int', value }),
  float: (name: string, value: number): OnnxAttribute => ({ name, kind: 'float', value }),
  string: (name: string, value: string): OnnxAttribute => ({ name, kind: 'string', value }),
  ints: (name: string, value: readonly number[]): OnnxAttribute => ({ name, kind: 'ints', value }),
  floats: (name: string, value: readonly number[]): OnnxAttribute => ({ name, kind: 'floats', value }),
  tensor: (name: string, value: OnnxTensor): OnnxAttribute => ({ name, kind: 'tensor', value }),
};

/** A FLOAT tensor from f32 values (the bytes are a view when the platform is little-endian, as every browser is). */
export function f32Tensor(name: string, dims: readonly number[], values: Float32Array): OnnxTensor {
  return { name, dataType: DataType.FLOAT, dims, data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) };
}

/** An INT64 tensor from integer values. */
export function i64Tensor(name: string, dims: readonly number[], values: readonly number[]): OnnxTensor {
  const data = new BigInt64Array(values.length);
  values.forEach((v, i) => (data[i] = BigInt(v)));
  return { name, dataType: DataType.INT64, dims, data: new Uint8Array(data.buffer) };
}

// ---- protobuf wire format ----

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;
/** Byte arrays longer than this are kept as their own chunk, not copied into the scratch buffer. */
const BIG = 4096;
const utf8 = new TextEncoder();

/** Writes one message as a list of chunks: small fields go through a scratch buffer, large bytes are referenced. */
class Writer {
  private chunks: Uint8Array[] = [];
  private buf = new Uint8Array(256);
  private pos = 0;

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  private flush(): void {
    if (this.pos === 0) return;
    this.chunks.push(this.buf.slice(0, this.pos));
    this.pos = 0;
  }

  /** A varint; negative int64 values take ten bytes (two's complement), as protobuf writes them. */
  varint(v: number): void {
    if (!Number.isSafeInteger(v)) throw new OnnxWriteError('varint', `${v} is not a safe integer`, 'pass whole numbers below 2^53');
    this.room(10);
    if (v < 0) {
      let b = BigInt.asUintN(64, BigInt(v));
      while (b >= 0x80n) {
        this.buf[this.pos++] = Number(b & 0x7fn) | 0x80;
        b >>= 7n;
      }
      this.buf[this.pos++] = Number(b);
    } else {
      while (v >= 0x80) {
        this.buf[this.pos++] = (v % 0x80) | 0x80;
        v = Math.floor(v / 0x80);
      }
      this.buf[this.pos++] = v;
    }
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  int(field: number, v: number): void {
    this.tag(field, WIRE_VARINT);
    this.varint(v);
  }

  float(field: number, v: number): void {
    this.tag(field, WIRE_I32);
    this.room(4);
    new DataView(this.buf.buffer).setFloat32(this.pos, v, true);
    this.pos += 4;
  }

  bytes(field: number, data: Uint8Array): void {
    this.tag(field, WIRE_LEN);
    this.varint(data.length);
    this.raw(data);
  }

  string(field: number, s: string): void {
    this.bytes(field, utf8.encode(s));
  }

  /** Packed repeated int64 (proto3's default for repeated scalars). */
  packedInts(field: number, values: readonly number[]): void {
    const w = new Writer();
    for (const v of values) w.varint(v);
    this.message(field, w);
  }

  packedFloats(field: number, values: readonly number[]): void {
    const data = new Uint8Array(values.length * 4);
    const dv = new DataView(data.buffer);
    values.forEach((v, i) => dv.setFloat32(4 * i, v, true));
    this.bytes(field, data);
  }

  message(field: number, m: Writer): void {
    const chunks = m.end();
    let n = 0;
    for (const c of chunks) n += c.length;
    this.tag(field, WIRE_LEN);
    this.varint(n);
    this.flush();
    for (const c of chunks) this.chunks.push(c);
  }

  private raw(data: Uint8Array): void {
    if (data.length > BIG) {
      this.flush();
      this.chunks.push(data);
      return;
    }
    this.room(data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
  }

  /** The message's chunks; the writer is spent. */
  end(): Uint8Array[] {
    this.flush();
    return this.chunks;
  }
}

// ---- messages (field numbers of onnx.proto3) ----

function writeTensor(t: OnnxTensor): Writer {
  const w = new Writer();
  if (t.dims.length) w.packedInts(1, t.dims); // dims
  w.int(2, t.dataType); // data_type
  w.string(8, t.name); // name
  if (t.external) {
    for (const [key, value] of [
      ['location', t.external.location],
      ['offset', String(t.external.offset)],
      ['length', String(t.external.length)],
    ]) {
      const e = new Writer();
      e.string(1, key);
      e.string(2, value);
      w.message(13, e); // external_data (StringStringEntryProto)
    }
    w.int(14, 1); // data_location = EXTERNAL
  } else if (t.data) {
    w.bytes(9, t.data); // raw_data
  }
  return w;
}

function writeValueInfo(v: OnnxValueInfo): Writer {
  const shape = new Writer();
  for (const d of v.dims) {
    const dim = new Writer();
    if (typeof d === 'number') dim.int(1, d); // dim_value
    else dim.string(2, d); // dim_param
    shape.message(1, dim); // TensorShapeProto.dim
  }
  const tensorType = new Writer();
  tensorType.int(1, v.elemType); // elem_type
  tensorType.message(2, shape); // shape
  const type = new Writer();
  type.message(1, tensorType); // TypeProto.tensor_type
  const w = new Writer();
  w.string(1, v.name);
  w.message(2, type);
  return w;
}

const ATTR_TYPE = { float: 1, int: 2, string: 3, tensor: 4, floats: 6, ints: 7 } as const;

function writeAttribute(a: OnnxAttribute): Writer {
  const w = new Writer();
  w.string(1, a.name);
  w.int(20, ATTR_TYPE[a.kind]); // type
  switch (a.kind) {
    case 'float':
      w.float(2, a.value);
      break;
    case 'int':
      w.int(3, a.value);
      break;
    case 'string':
      w.string(4, a.value);
      break;
    case 'tensor':
      w.message(5, writeTensor(a.value));
      break;
    case 'floats':
      w.packedFloats(7, a.value);
      break;
    case 'ints':
      w.packedInts(8, a.value);
      break;
  }
  return w;
}

function writeNode(n: OnnxNode): Writer {
  const w = new Writer();
  for (const i of n.inputs) w.string(1, i);
  for (const o of n.outputs) w.string(2, o);
  if (n.name) w.string(3, n.name);
  w.string(4, n.opType);
  for (const a of n.attributes ?? []) w.message(5, writeAttribute(a));
  if (n.domain) w.string(7, n.domain);
  return w;
}

function writeGraph(g: OnnxGraph): Writer {
  const w = new Writer();
  for (const n of g.nodes) w.message(1, writeNode(n));
  w.string(2, g.name);
  for (const t of g.initializers) w.message(5, writeTensor(t));
  for (const v of g.inputs) w.message(11, writeValueInfo(v));
  for (const v of g.outputs) w.message(12, writeValueInfo(v));
  return w;
}

/** Protobuf's hard limit on one message: past it, weights must go to external data. */
export const MAX_PROTO_BYTES = 2 ** 31 - 1;

/**
 * Serializes a model to ModelProto bytes (an .onnx file).
 * @example
 * const bytes = encodeModel({ irVersion: 10, opsetImports: [{ domain: '', version: 21 }], graph });
 * const session = await ort.InferenceSession.create(bytes);
 */
export function encodeModel(model: OnnxModel): Uint8Array {
  const w = new Writer();
  w.int(1, model.irVersion); // ir_version
  if (model.producerName) w.string(2, model.producerName);
  if (model.producerVersion) w.string(3, model.producerVersion);
  w.message(7, writeGraph(model.graph)); // graph
  for (const o of model.opsetImports) {
    const op = new Writer();
    if (o.domain) op.string(1, o.domain);
    op.int(2, o.version);
    w.message(8, op); // opset_import
  }
  for (const [key, value] of Object.entries(model.metadata ?? {})) {
    const e = new Writer();
    e.string(1, key);
    e.string(2, value);
    w.message(14, e); // metadata_props
  }
  return concat(w.end());
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  if (n > MAX_PROTO_BYTES) {
    throw new OnnxWriteError('model size', `the ModelProto would be ${n} bytes, past protobuf's 2 GiB limit`, 'store the weights as external data (an .onnx_data file)');
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

// ---- external data ----

/**
 * Collects initializer bytes for one external data file (e.g. `model.onnx_data`) and hands out the
 * EXTERNAL tensors that point into it. Offsets are aligned (default 64 bytes) so readers may map them.
 * @example
 * const ext = new ExternalDataBuilder('model.onnx_data');
 * initializers.push(ext.add({ name: 'w', dataType: DataType.FLOAT, dims: [2, 2], data }));
 * const dataFile = ext.bytes(); // write beside model.onnx
 */
export class ExternalDataBuilder {
  private chunks: Uint8Array[] = [];
  private size = 0;
  constructor(
    readonly location: string,
    private readonly align = 64,
  ) {}

  /** The tensor, moved out of line: its data goes to the file, the returned tensor points at it. */
  add(t: OnnxTensor): OnnxTensor {
    if (!t.data) return t;
    const pad = (this.align - (this.size % this.align)) % this.align;
    if (pad) {
      this.chunks.push(new Uint8Array(pad));
      this.size += pad;
    }
    const offset = this.size;
    this.chunks.push(t.data);
    this.size += t.data.length;
    return { name: t.name, dataType: t.dataType, dims: t.dims, external: { location: this.location, offset, length: t.data.length } };
  }

  get byteLength(): number {
    return this.size;
  }

  /** The file's bytes (one copy of everything added). */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}
