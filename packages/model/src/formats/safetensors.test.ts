// safetensors reader against stories260K's HF checkpoint and against written fixtures: dtypes, metadata,
// sharded checkpoints through an index, and a typed error for each kind of damage.

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { IntabModelError, ModelFormatError, ModelMismatchError } from '../errors.ts';
import { bytesSource, pathSource } from '../source.ts';
import { parseSafetensors, parseSafetensorsIndex, writeSafetensors, type SafetensorsWriteTensor } from './safetensors.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));

const f32 = (v: number[]) => new Uint8Array(new Float32Array(v).buffer);
const u8 = (n: number, fill = 7) => new Uint8Array(n).fill(fill);

async function rejection(p: Promise<unknown>): Promise<IntabModelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(IntabModelError);
    return e as IntabModelError;
  }
  throw new Error('expected the parse to fail');
}

/** A file with a hand-written header (to write what the writer would refuse). */
function rawFile(header: unknown, dataBytes: number): Uint8Array {
  const hb = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + hb.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  return out;
}

describe('stories260K hf/model.safetensors', () => {
  it('parses every tensor', async () => {
    const st = await parseSafetensors(await pathSource(`${SHARED}models/stories260K/hf/model.safetensors`));
    expect(st.metadata).toEqual({ format: 'pt' });
    const emb = st.tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
    expect(emb).toMatchObject({ dtype: 'f32', shape: [512, 64], byteLength: 512 * 64 * 4, offset: st.dataOffset });
    expect(st.tensors.find((t) => t.name === 'model.layers.4.self_attn.k_proj.weight')!.shape).toEqual([32, 64]);
    expect(st.tensors.filter((t) => t.name.startsWith('model.layers.')).length).toBe(45);
    const last = st.tensors[st.tensors.length - 1];
    expect(last.offset + last.byteLength).toBe(st.source.size);
  });
});

describe('written fixtures', () => {
  const tensors: SafetensorsWriteTensor[] = [
    { name: 'a.f32', dtype: 'F32', shape: [2, 3], data: f32([1, 2, 3, 4, 5, 6]) },
    { name: 'b.f16', dtype: 'F16', shape: [4], data: u8(8, 1) },
    { name: 'c.bf16', dtype: 'BF16', shape: [1, 2], data: u8(4, 2) },
    { name: 'd.i8', dtype: 'I8', shape: [3], data: u8(3, 3) },
    { name: 'e.f64', dtype: 'F64', shape: [], data: u8(8, 4) },
    { name: 'f.fp4', dtype: 'F4', shape: [4], data: u8(2, 5) },
    { name: 'g.empty', dtype: 'F32', shape: [0, 8], data: u8(0) },
  ];

  it('maps dtypes and reads the bytes back', async () => {
    const st = await parseSafetensors(bytesSource('x.safetensors', writeSafetensors(tensors, { format: 'pt', note: 'ü' })));
    expect(st.metadata).toEqual({ format: 'pt', note: 'ü' });
    expect(st.dataOffset % 8).toBe(0);
    expect(st.tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength])).toEqual([
      ['a.f32', 'f32', [2, 3], 24],
      ['b.f16', 'f16', [4], 8],
      ['c.bf16', 'bf16', [1, 2], 4],
      ['d.i8', 'unsupported:I8', [3], 3],
      ['e.f64', 'unsupported:F64', [], 8],
      ['f.fp4', 'unsupported:F4', [4], 2],
      ['g.empty', 'f32', [0, 8], 0],
    ]);
    const a = st.tensors[0];
    expect([...new Float32Array((await a.source.read(a.offset, a.byteLength)).slice().buffer)]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('keeps a dtype it does not know as unsupported, with the stored size', async () => {
    const st = await parseSafetensors(bytesSource('x.safetensors', rawFile({ w: { dtype: 'Q9', shape: [3], data_offsets: [0, 5] } }, 5)));
    expect(st.tensors[0]).toMatchObject({ dtype: 'unsupported:Q9', byteLength: 5 });
  });

  const bad: [string, Uint8Array, string, typeof ModelFormatError | typeof ModelMismatchError][] = [
    ['too short for the length', new Uint8Array(5), 'header length', ModelFormatError],
    ['absurd header length', (() => { const b = new Uint8Array(64); new DataView(b.buffer).setBigUint64(0, 2n ** 60n, true); return b; })(), 'header length', ModelFormatError],
    ['header longer than the file', (() => { const b = rawFile({}, 0); new DataView(b.buffer).setBigUint64(0, 100n, true); return b; })(), 'header length', ModelFormatError],
    ['header is not JSON', rawFile('{"a": ', 0), 'header', ModelFormatError],
    ['header is not UTF-8', rawFile('{"\xff": 1}', 0).map((x, i, a) => (i === 10 ? 0xff : a[i])), 'header', ModelFormatError],
    ['header is an array', rawFile([], 0), 'header', ModelFormatError],
    ['entry is not an object', rawFile({ w: 3 }, 0), 'tensors["w"]', ModelFormatError],
    ['dtype missing', rawFile({ w: { shape: [1], data_offsets: [0, 4] } }, 4), 'tensors["w"].dtype', ModelFormatError],
    ['shape with a negative dim', rawFile({ w: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, 4), 'tensors["w"].shape[0]', ModelFormatError],
    ['shape with a fraction', rawFile({ w: { dtype: 'F32', shape: [1.5], data_offsets: [0, 4] } }, 4), 'tensors["w"].shape[0]', ModelFormatError],
    ['shape overflowing 2^53', rawFile({ w: { dtype: 'F32', shape: [2 ** 30, 2 ** 30], data_offsets: [0, 4] } }, 4), 'tensors["w"].shape', ModelFormatError],
    ['offsets not a pair', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [0] } }, 4), 'tensors["w"].data_offsets', ModelFormatError],
    ['offsets decreasing', rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [4, 0] } }, 4), 'tensors["w"].data_offsets', ModelFormatError],
    ['offsets past the end', rawFile({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, 4), 'tensors["w"].data_offsets', ModelFormatError],
    ['offsets disagree with the shape', rawFile({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, 8), 'tensors["w"].data_offsets', ModelMismatchError],
    ['overlapping tensors', rawFile({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, 8), 'tensors["b"].data_offsets', ModelFormatError],
    ['__metadata__ with a number', rawFile({ __metadata__: { a: 1 } }, 0), '__metadata__.a', ModelFormatError],
    ['truncated data', writeSafetensors(tensors).slice(0, -1), 'tensors["f.fp4"].data_offsets', ModelFormatError],
  ];
  it.each(bad)('%s', async (_label, bytes, field, cls) => {
    const e = await rejection(parseSafetensors(bytesSource('bad.safetensors', bytes)));
    expect(e).toBeInstanceOf(cls);
    expect((e as ModelFormatError).field).toBe(field);
    expect(e.message).toContain('bad.safetensors');
  });
});

describe('sharded checkpoints', () => {
  const shard1 = writeSafetensors([
    { name: 'x.weight', dtype: 'F32', shape: [2], data: f32([1, 2]) },
    { name: 'y.weight', dtype: 'F32', shape: [1], data: f32([3]) },
  ]);
  const shard2 = writeSafetensors([{ name: 'z.weight', dtype: 'BF16', shape: [2], data: u8(4) }]);
  const files = new Map([
    ['model-00001-of-00002.safetensors', bytesSource('model-00001-of-00002.safetensors', shard1)],
    ['model-00002-of-00002.safetensors', bytesSource('model-00002-of-00002.safetensors', shard2)],
  ]);
  const index = {
    metadata: { total_size: 16 },
    weight_map: { 'x.weight': 'model-00001-of-00002.safetensors', 'y.weight': 'model-00001-of-00002.safetensors', 'z.weight': 'model-00002-of-00002.safetensors' },
  };

  it('merges shards, each tensor with its own file', async () => {
    const idx = await parseSafetensorsIndex(JSON.stringify(index), files);
    expect(idx.metadata).toEqual({ total_size: 16 });
    expect(idx.shards.length).toBe(2);
    expect(idx.tensors.map((t) => [t.name, t.source.name, t.dtype])).toEqual([
      ['x.weight', 'model-00001-of-00002.safetensors', 'f32'],
      ['y.weight', 'model-00001-of-00002.safetensors', 'f32'],
      ['z.weight', 'model-00002-of-00002.safetensors', 'bf16'],
    ]);
    const y = idx.tensors[1];
    expect(new Float32Array((await y.source.read(y.offset, 4)).slice().buffer)[0]).toBe(3);
    const viaFn = await parseSafetensorsIndex(index, (f) => files.get(f));
    expect(viaFn.tensors.length).toBe(3);
  });

  it('rejects a missing shard, a wrong map and broken JSON', async () => {
    let e = await rejection(parseSafetensorsIndex(index, new Map([...files].slice(0, 1))));
    expect(e).toBeInstanceOf(ModelMismatchError);
    expect(e.message).toContain('model-00002-of-00002.safetensors');
    e = await rejection(parseSafetensorsIndex({ weight_map: { ...index.weight_map, 'z.weight': 'model-00001-of-00002.safetensors' } }, files));
    expect(e).toBeInstanceOf(ModelMismatchError);
    expect((e as ModelMismatchError).field).toBe('weight_map["z.weight"]');
    e = await rejection(parseSafetensorsIndex({ weight_map: { ...index.weight_map, 'w.weight': 'model-00002-of-00002.safetensors' } }, files));
    expect((e as ModelMismatchError).actual).toBe('in no shard');
    e = await rejection(parseSafetensorsIndex('{"weight_map": ', files, { name: 'idx.json' }));
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.message).toContain('idx.json');
    e = await rejection(parseSafetensorsIndex({ metadata: {} }, files));
    expect((e as ModelFormatError).field).toBe('weight_map');
    e = await rejection(parseSafetensorsIndex({ weight_map: { a: 5 } }, files));
    expect((e as ModelFormatError).field).toBe('weight_map["a"]');
  });
});
