// GGUF reader against the real stories260K file and against fixtures written by gguf-writer.ts: every
// metadata type, v2 and v3, dtypes intab does not run, split files, and one typed error per kind of damage.

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BLOCK, GGML_TYPE_ID, WEIGHT_DTYPES, mulberry32 } from '@intab/gpu';
import { IntabModelError, ModelFormatError, ModelMismatchError, UnsupportedModelError } from '../errors.ts';
import { bytesSource, pathSource } from '../source.ts';
import type { ByteSource } from '../types.ts';
import { GGML_TYPES, parseGguf, parseGgufSplitName, parseGgufSplits } from './gguf.ts';
import { ggufTyped, writeGguf, type GgufWriteTensor } from './gguf-writer.ts';
import { parseSafetensors } from './safetensors.ts';
import { readGgufLite } from '../reference/safetensors-lite.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const STORIES = `${SHARED}models/stories260K/`;

/** Counts what a parser reads, to prove the header is read in chunks, not whole. */
function counting(src: ByteSource): ByteSource & { reads: [number, number][] } {
  const reads: [number, number][] = [];
  return { name: src.name, size: src.size, reads, read: (o, n, s) => (reads.push([o, n]), src.read(o, n, s)) };
}

function bytesOf(n: number, seed: number): Uint8Array {
  const rng = mulberry32(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(rng() * 256));
}

function f32Bytes(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

function indexOf(hay: Uint8Array, needle: string, from = 0): number {
  const n = new TextEncoder().encode(needle);
  outer: for (let i = from; i <= hay.length - n.length; i++) {
    for (let j = 0; j < n.length; j++) if (hay[i + j] !== n[j]) continue outer;
    return i;
  }
  throw new Error(`"${needle}" not in the fixture`);
}

function setU64(buf: Uint8Array, at: number, v: bigint): Uint8Array {
  const out = buf.slice();
  new DataView(out.buffer).setBigUint64(at, v, true);
  return out;
}
function setU32(buf: Uint8Array, at: number, v: number): Uint8Array {
  const out = buf.slice();
  new DataView(out.buffer).setUint32(at, v, true);
  return out;
}

async function rejection(p: Promise<unknown>): Promise<IntabModelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(IntabModelError);
    return e as IntabModelError;
  }
  throw new Error('expected the parse to fail');
}

const parse = (bytes: Uint8Array, name = 'fixture.gguf') => parseGguf(bytesSource(name, bytes));

// ---- the real file ----

describe('stories260K.gguf', () => {
  it('parses the header and its metadata', async () => {
    const src = counting(await pathSource(`${STORIES}stories260K.gguf`));
    const g = await parseGguf(src);
    expect(g.version).toBe(3);
    expect(g.metadata.get('general.architecture')).toBe('llama');
    expect(g.metadata.get('llama.embedding_length')).toBe(64);
    expect(g.metadata.get('llama.block_count')).toBe(5);
    expect(g.metadata.get('llama.attention.head_count')).toBe(8);
    expect(g.metadata.get('llama.attention.head_count_kv')).toBe(4);
    expect(g.alignment).toBe(32);
    expect(g.dataOffset % 32).toBe(0);
    expect(g.tensors.length).toBe(47); // 5 layers × 9 + token_embd + output_norm (output tied)
    const emb = g.tensors.find((t) => t.name === 'token_embd.weight')!;
    expect(emb.shape).toEqual([512, 64]);
    expect(emb.dtype).toBe('f32');
    expect(emb.byteLength).toBe(512 * 64 * 4);
    expect(g.tensors.find((t) => t.name === 'blk.0.ffn_gate.weight')!.shape).toEqual([172, 64]);
    expect(g.tensors.find((t) => t.name === 'blk.4.attn_k.weight')!.shape).toEqual([32, 64]);
    for (const t of g.tensors) {
      expect(t.dtype).toBe('f32');
      expect(t.offset + t.byteLength).toBeLessThanOrEqual(src.size);
      expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 4));
    }
    // The header came in chunks: far less than the ~1 MB file was read.
    const total = src.reads.reduce((a, [, n]) => a + n, 0);
    expect(total).toBeLessThan(g.dataOffset + 128 * 1024);
    expect(total).toBeLessThan(src.size / 4);
  });

  it('holds the same bytes as the HF safetensors for tensors that are not permuted', async () => {
    const g = await parseGguf(await pathSource(`${STORIES}stories260K.gguf`));
    const st = await parseSafetensors(await pathSource(`${STORIES}hf/model.safetensors`));
    expect(st.tensors.find((t) => t.name === 'model.embed_tokens.weight')!.shape).toEqual([512, 64]);
    const pairs: [string, string][] = [
      ['token_embd.weight', 'model.embed_tokens.weight'],
      ['output_norm.weight', 'model.norm.weight'],
      ['blk.0.attn_norm.weight', 'model.layers.0.input_layernorm.weight'],
      ['blk.3.ffn_norm.weight', 'model.layers.3.post_attention_layernorm.weight'],
      ['blk.2.ffn_down.weight', 'model.layers.2.mlp.down_proj.weight'],
      ['blk.1.attn_v.weight', 'model.layers.1.self_attn.v_proj.weight'],
    ];
    for (const [gn, hn] of pairs) {
      const a = g.tensors.find((t) => t.name === gn)!;
      const b = st.tensors.find((t) => t.name === hn)!;
      expect(a.shape, gn).toEqual(b.shape);
      const ab = await a.source.read(a.offset, a.byteLength);
      const bb = await b.source.read(b.offset, b.byteLength);
      expect(Buffer.from(ab).equals(Buffer.from(bb)), `${gn} vs ${hn}`).toBe(true);
      expect(new Float32Array(ab.slice().buffer).some((x) => x !== 0)).toBe(true);
    }
  });
});

describe('stories260K-vocab-ud.gguf', () => {
  it('reads the embedded vocabulary and the same tensors as stories260K.gguf', async () => {
    const g = await parseGguf(await pathSource(`${STORIES}stories260K-vocab-ud.gguf`));
    const plain = await parseGguf(await pathSource(`${STORIES}stories260K.gguf`));
    const tokens = g.metadata.get('tokenizer.ggml.tokens') as string[];
    expect(tokens.length).toBe(512);
    expect([tokens[0], tokens[1], tokens[2], tokens[3], tokens[258], tokens[259], tokens[511]]).toEqual(['<unk>', '<s>', '</s>', '<0x00>', '<0xFF>', '<t259>', '<t511>']);
    expect(g.metadataTypes.get('tokenizer.ggml.token_type')).toBe('array<i32>');
    expect((g.metadata.get('tokenizer.ggml.scores') as number[]).length).toBe(512);
    expect(g.metadata.get('tokenizer.ggml.add_bos_token')).toBe(true);
    expect(g.metadata.get('tokenizer.ggml.bos_token_id')).toBe(1);
    expect(g.tensors.map((t) => [t.name, t.shape, t.byteLength])).toEqual(plain.tensors.map((t) => [t.name, t.shape, t.byteLength]));
    for (const name of ['token_embd.weight', 'blk.4.attn_q.weight']) {
      const a = g.tensors.find((t) => t.name === name)!;
      const b = plain.tensors.find((t) => t.name === name)!;
      expect(Buffer.from(await a.source.read(a.offset, a.byteLength)).equals(Buffer.from(await b.source.read(b.offset, b.byteLength)))).toBe(true);
    }
  });
});

// ---- fixtures from the writer ----

describe('writer fixtures', () => {
  const metadata = [
    ['general.architecture', 'llama'],
    ['t.u8', ggufTyped('u8', 250)],
    ['t.i8', ggufTyped('i8', -100)],
    ['t.u16', ggufTyped('u16', 65000)],
    ['t.i16', ggufTyped('i16', -32000)],
    ['t.u32', ggufTyped('u32', 4_000_000_000)],
    ['t.i32', ggufTyped('i32', -2_000_000_000)],
    ['t.f32', ggufTyped('f32', 1.5)],
    ['t.f64', ggufTyped('f64', Math.PI)],
    ['t.bool.true', true],
    ['t.bool.false', false],
    ['t.u64.small', ggufTyped('u64', 123n)],
    ['t.u64.big', ggufTyped('u64', 2n ** 60n + 1n)],
    ['t.i64.neg', ggufTyped('i64', -5n)],
    ['t.i64.min', ggufTyped('i64', -(2n ** 63n))],
    ['t.string', 'héllo 世界 🦙'],
    ['t.string.empty', ''],
    ['t.array.u32', [1, 2, 3]],
    ['t.array.f32', ggufTyped('array', [ggufTyped('f32', 0.5), ggufTyped('f32', -2)])],
    ['t.array.string', ['a', 'ü', '🦙', '']],
    ['t.array.bool', [true, false, true]],
    ['t.array.empty', ggufTyped('array', [], 'string')],
    ['t.array.nested', [['x', 'y'], ['z']]],
    ['t.array.nested.u8', ggufTyped('array', [ggufTyped('array', [ggufTyped('u8', 1), ggufTyped('u8', 2)])])],
  ] as const;

  const tensors: GgufWriteTensor[] = [
    { name: 'w.f32', type: 'f32', shape: [3, 4], data: f32Bytes([...Array(12).keys()]) },
    { name: 'w.f16', type: 'f16', shape: [2, 8], data: bytesOf(32, 1) },
    { name: 'w.bf16', type: 'bf16', shape: [5], data: bytesOf(10, 2) },
    { name: 'w.q8_0', type: 'q8_0', shape: [2, 64], data: bytesOf(2 * 2 * 34, 3) },
    { name: 'w.q4_0', type: 'q4_0', shape: [32], data: bytesOf(18, 4) },
    { name: 'w.q4_K', type: 'q4_K', shape: [1, 256], data: bytesOf(144, 5) },
    { name: 'w.q6_K', type: 'q6_K', shape: [2, 1, 256], data: bytesOf(420, 6) },
    { name: 'w.q5_K', type: 13, shape: [256], data: bytesOf(176, 7) },
    { name: 'w.i8', type: 24, shape: [7], data: bytesOf(7, 8) },
    { name: 'w.iq4_xs', type: 23, shape: [1, 1, 1, 256], data: bytesOf(136, 9) },
  ];

  for (const version of [2, 3]) {
    it(`round-trips every metadata type and dtype (v${version})`, async () => {
      const bytes = writeGguf({ version, metadata, tensors });
      const g = await parse(bytes);
      expect(g.version).toBe(version);
      const md = Object.fromEntries(g.metadata);
      expect(md).toEqual({
        'general.architecture': 'llama',
        't.u8': 250,
        't.i8': -100,
        't.u16': 65000,
        't.i16': -32000,
        't.u32': 4_000_000_000,
        't.i32': -2_000_000_000,
        't.f32': 1.5,
        't.f64': Math.PI,
        't.bool.true': true,
        't.bool.false': false,
        't.u64.small': 123,
        't.u64.big': 2n ** 60n + 1n,
        't.i64.neg': -5,
        't.i64.min': -(2n ** 63n),
        't.string': 'héllo 世界 🦙',
        't.string.empty': '',
        't.array.u32': [1, 2, 3],
        't.array.f32': [0.5, -2],
        't.array.string': ['a', 'ü', '🦙', ''],
        't.array.bool': [true, false, true],
        't.array.empty': [],
        't.array.nested': [['x', 'y'], ['z']],
        't.array.nested.u8': [[1, 2]],
      });
      expect(g.metadataTypes.get('t.u64.big')).toBe('u64');
      expect(g.metadataTypes.get('t.array.nested')).toBe('array<array<string>>');
      expect(g.metadataTypes.get('t.array.empty')).toBe('array<string>');
      expect(g.metadataTypes.get('t.f64')).toBe('f64');

      expect(g.tensors.map((t) => [t.name, t.dtype, t.shape, t.byteLength])).toEqual([
        ['w.f32', 'f32', [3, 4], 48],
        ['w.f16', 'f16', [2, 8], 32],
        ['w.bf16', 'bf16', [5], 10],
        ['w.q8_0', 'q8_0', [2, 64], 136],
        ['w.q4_0', 'q4_0', [32], 18],
        ['w.q4_K', 'q4_K', [1, 256], 144],
        ['w.q6_K', 'q6_K', [2, 1, 256], 420],
        ['w.q5_K', 'unsupported:q5_K', [256], 176],
        ['w.i8', 'unsupported:i8', [7], 7],
        ['w.iq4_xs', 'unsupported:iq4_xs', [1, 1, 1, 256], 136],
      ]);
      for (const [i, t] of g.tensors.entries()) {
        expect(t.offset % 32).toBe(0);
        expect(t.ggmlType).toBe(typeof tensors[i].type === 'number' ? tensors[i].type : GGML_TYPE_ID[tensors[i].type as 'f32']);
        expect(Buffer.from(await t.source.read(t.offset, t.byteLength)).equals(Buffer.from(tensors[i].data))).toBe(true);
      }
    });
  }

  it('honours general.alignment', async () => {
    const bytes = writeGguf({ metadata: { 'general.alignment': ggufTyped('u32', 256) }, tensors: tensors.slice(0, 3) });
    const g = await parse(bytes);
    expect(g.alignment).toBe(256);
    expect(g.dataOffset % 256).toBe(0);
    for (const t of g.tensors) expect(t.offset % 256).toBe(0);
    expect(new Float32Array((await g.tensors[0].source.read(g.tensors[0].offset, 48)).slice().buffer)[11]).toBe(11);
  });

  it('parses a file with metadata and no tensors (vocab-only)', async () => {
    const g = await parse(writeGguf({ metadata: { 'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.tokens': ['<unk>', '<s>'] } }));
    expect(g.tensors).toEqual([]);
    expect(g.metadata.get('tokenizer.ggml.tokens')).toEqual(['<unk>', '<s>']);
  });

  it("keeps a string's leading U+FEFF: it is text (Gemma 3 has tokens such as U+FEFF '#'), not a byte-order mark", async () => {
    // Dropped, Gemma 3's '\uFEFF#' would read as '#', a second token of that text, and '#' would encode as the wrong id.
    const tokens = ['#', '\uFEFF#', '\uFEFF', 'a\uFEFF'];
    const bytes = writeGguf({ metadata: { 'general.name': '\uFEFFname', 'tokenizer.ggml.tokens': tokens } });
    const g = await parse(bytes);
    expect(g.metadata.get('tokenizer.ggml.tokens')).toEqual(tokens);
    expect(g.metadata.get('general.name')).toBe('\uFEFFname');
    expect(readGgufLite(bytes, 'bom.gguf').metadata['tokenizer.ggml.tokens']).toEqual(tokens); // the CPU reference's reader too
  });

  it('agrees with @intab/gpu BLOCK for every dtype intab runs', () => {
    for (const d of WEIGHT_DTYPES) {
      const t = GGML_TYPES.get(GGML_TYPE_ID[d])!;
      expect(t.name).toBe(d);
      expect([t.blockElems, t.blockBytes]).toEqual([BLOCK[d].elems, BLOCK[d].bytes]);
    }
  });

  it('reads a large vocabulary through the chunked reader', async () => {
    const tokens = Array.from({ length: 40_000 }, (_, i) => `tok_${i}_${'x'.repeat(i % 17)}`);
    const bytes = writeGguf({ metadata: { 'tokenizer.ggml.tokens': tokens, 'tokenizer.ggml.scores': ggufTyped('array', tokens.map((_, i) => ggufTyped('f32', -i))) }, tensors: tensors.slice(0, 1) });
    expect(bytes.length).toBeGreaterThan(256 * 1024);
    const src = counting(bytesSource('vocab.gguf', bytes));
    const g = await parseGguf(src);
    expect(g.metadata.get('tokenizer.ggml.tokens')).toEqual(tokens);
    expect((g.metadata.get('tokenizer.ggml.scores') as number[])[39_999]).toBe(-39_999);
    expect(src.reads.length).toBeGreaterThan(2);
    expect(src.reads[0][1]).toBe(64 * 1024);
  });
});

// ---- bad input ----

describe('bad input gives typed errors naming the field', () => {
  const base = () => writeGguf({
    metadata: { 'general.architecture': 'llama', 'general.name': 'tiny' },
    tensors: [
      { name: 'first', type: 'f32', shape: [2, 4], data: f32Bytes([1, 2, 3, 4, 5, 6, 7, 8]) },
      { name: 'second', type: 'f32', shape: [8], data: f32Bytes([8, 7, 6, 5, 4, 3, 2, 1]) },
    ],
  });
  // Positions inside base(): the tensor info of 'first' starts with its name.
  const infoOf = (bytes: Uint8Array, name: string) => {
    const at = indexOf(bytes, name, indexOf(bytes, 'tiny'));
    return { nDims: at + name.length, ne0: at + name.length + 4 };
  };

  it('accepts the untouched fixture', async () => {
    const g = await parse(base());
    expect(g.tensors.map((t) => t.name)).toEqual(['first', 'second']);
  });

  it.each([
    ['wrong magic', (b: Uint8Array) => { const o = b.slice(); o[0] = 0x67; return o; }, ModelFormatError, 'header.magic'],
    ['version 1', (b: Uint8Array) => setU32(b, 4, 1), UnsupportedModelError, 'header.version'],
    ['version 9', (b: Uint8Array) => setU32(b, 4, 9), UnsupportedModelError, 'header.version'],
    ['absurd tensor_count', (b: Uint8Array) => setU64(b, 8, 2n ** 40n), ModelFormatError, 'header.tensor_count'],
    ['tensor_count larger than the file holds', (b: Uint8Array) => setU64(b, 8, 100_000n), ModelFormatError, 'header.tensor_count'],
    ['absurd kv_count', (b: Uint8Array) => setU64(b, 16, 2n ** 63n), ModelFormatError, 'header.kv_count'],
    ['key length past the end', (b: Uint8Array) => setU64(b, 24, 2n ** 62n), ModelFormatError, 'metadata[0].key.length'],
    ['value type 13', (b: Uint8Array) => setU32(b, 24 + 8 + 'general.architecture'.length, 13), ModelFormatError, 'general.architecture.type'],
    ['string value length past the end', (b: Uint8Array) => setU64(b, 24 + 8 + 20 + 4, BigInt(b.length)), ModelFormatError, 'general.architecture.length'],
    ['n_dims 5', (b: Uint8Array) => setU32(b, infoOf(b, 'first').nDims, 5), ModelFormatError, 'tensors[0] (first).n_dims'],
    ['n_dims 0', (b: Uint8Array) => setU32(b, infoOf(b, 'first').nDims, 0), ModelFormatError, 'tensors[0] (first).n_dims'],
    ['a dimension of 0', (b: Uint8Array) => setU64(b, infoOf(b, 'first').ne0, 0n), ModelFormatError, 'tensors[0] (first).ne[0]'],
    ['dims that overflow 2^53', (b: Uint8Array) => setU64(setU64(b, infoOf(b, 'first').ne0, 2n ** 32n), infoOf(b, 'first').ne0 + 8, 2n ** 32n), ModelFormatError, 'tensors[0] (first).ne[1]'],
    ['a dimension above 2^53', (b: Uint8Array) => setU64(b, infoOf(b, 'first').ne0, 2n ** 60n), ModelFormatError, 'tensors[0] (first).ne[0]'],
    ['ggml type 99', (b: Uint8Array) => setU32(b, infoOf(b, 'first').ne0 + 16, 99), ModelFormatError, 'tensors[0] (first).type'],
    ['removed ggml type', (b: Uint8Array) => setU32(b, infoOf(b, 'first').ne0 + 16, 31), UnsupportedModelError, 'tensors[0] (first).type'],
    ['misaligned offset', (b: Uint8Array) => setU64(b, infoOf(b, 'second').ne0 + 8 + 4, 36n), ModelFormatError, 'tensors[1] (second).offset'],
    ['offset past the end', (b: Uint8Array) => setU64(b, infoOf(b, 'second').ne0 + 8 + 4, 1024n * 1024n), ModelFormatError, 'tensors[1] (second).offset'],
    ['offset just past the end', (b: Uint8Array) => setU64(b, infoOf(b, 'second').ne0 + 8 + 4, 64n), ModelFormatError, 'tensors[1] (second).offset'],
    ['overlapping tensors', (b: Uint8Array) => setU64(b, infoOf(b, 'second').ne0 + 8 + 4, 0n), ModelFormatError, 'tensors[1] (second).offset'],
    ['truncated data', (b: Uint8Array) => b.slice(0, b.length - 1), ModelFormatError, 'tensors[1] (second).offset'],
    ['truncated header', (b: Uint8Array) => b.slice(0, infoOf(b, 'second').ne0 + 3), ModelFormatError, 'tensors[1] (second).ne'],
    ['empty file', () => new Uint8Array(0), ModelFormatError, 'header.magic'],
  ])('%s', async (_label, mutate, cls, field) => {
    const e = await rejection(parse(mutate(base())));
    expect(e).toBeInstanceOf(cls);
    expect((e as ModelFormatError).field).toBe(field);
    expect(e.message).toContain('fixture.gguf');
  });

  it('big-endian files are named as such', async () => {
    const e = await rejection(parse(setU32(base(), 4, 0x03000000)));
    expect(e).toBeInstanceOf(UnsupportedModelError);
    expect(e.message).toContain('big-endian');
  });

  it('duplicate tensor names, duplicate keys, bad bools, invalid UTF-8 keys', async () => {
    const t = { name: 'same', type: 'f32' as const, shape: [1], data: f32Bytes([1]) };
    let e = await rejection(parse(writeGguf({ tensors: [t, t] })));
    expect((e as ModelFormatError).field).toBe('tensors[1] (same).name');
    e = await rejection(parse(writeGguf({ metadata: [['k', 1], ['k', 2]] })));
    expect((e as ModelFormatError).field).toBe('k');
    const withBool = writeGguf({ metadata: { flag: true } });
    const o = withBool.slice();
    o[indexOf(o, 'flag') + 4 + 4] = 2;
    e = await rejection(parse(o));
    expect((e as ModelFormatError).field).toBe('flag');
    const badKey = writeGguf({ metadata: { kkkk: 1 } });
    badKey[indexOf(badKey, 'kkkk')] = 0xff;
    e = await rejection(parse(badKey));
    expect((e as ModelFormatError).field).toBe('metadata[0].key');
  });

  it('rows that are not whole blocks, bad alignments, deep nesting', async () => {
    let e = await rejection(parse(writeGguf({ tensors: [{ name: 'q', type: 'q8_0', shape: [2, 16], data: bytesOf(34, 1) }] })));
    expect((e as ModelFormatError).field).toBe('tensors[0] (q).ne[0]');
    e = await rejection(parse(writeGguf({ metadata: { 'general.alignment': ggufTyped('u32', 48) } })));
    expect((e as ModelFormatError).field).toBe('general.alignment');
    e = await rejection(parse(writeGguf({ metadata: { 'general.alignment': ggufTyped('u64', 32n) } })));
    expect((e as ModelFormatError).field).toBe('general.alignment');
    e = await rejection(parse(writeGguf({ metadata: { 'general.alignment': ggufTyped('u32', 0) } })));
    expect((e as ModelFormatError).field).toBe('general.alignment');
    let deep: unknown = [1];
    for (let i = 0; i < 12; i++) deep = [deep];
    e = await rejection(parse(writeGguf({ metadata: { deep: deep as number[] } })));
    expect((e as ModelFormatError).field).toMatch(/^deep/);
    expect(e.message).toContain('nest');
  });

  it('stops on an aborted signal', async () => {
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await expect(parseGguf(bytesSource('x.gguf', base()), { signal: ac.signal })).rejects.toThrow('stop');
  });
});

// ---- split files ----

describe('split files', () => {
  const mk = (no: number, count: number, names: string[], extra: Record<string, number> = {}) => writeGguf({
    metadata: {
      ...(no === 0 ? { 'general.architecture': 'llama', 'llama.block_count': 2 } : {}),
      'split.no': ggufTyped('u16', no),
      'split.count': ggufTyped('u16', count),
      'split.tensors.count': ggufTyped('i32', extra.total ?? 5),
    },
    tensors: names.map((n, i) => ({ name: n, type: 'f32' as const, shape: [4], data: f32Bytes([no, i, 0, 1]) })),
  });
  const files = () => [
    bytesSource('m-00001-of-00003.gguf', mk(0, 3, ['a', 'b'])),
    bytesSource('m-00002-of-00003.gguf', mk(1, 3, ['c', 'd'])),
    bytesSource('m-00003-of-00003.gguf', mk(2, 3, ['e'])),
  ];

  it('names', () => {
    expect(parseGgufSplitName('/x/Llama-3-8B-Q4_K_M-00002-of-00005.gguf')).toEqual({ base: 'Llama-3-8B-Q4_K_M', no: 1, count: 5 });
    expect(parseGgufSplitName('model.gguf')).toBeUndefined();
  });

  it('merges splits given in any order, each tensor reading from its own file', async () => {
    const [a, b, c] = files();
    const g = await parseGgufSplits([c, a, b]);
    expect(g.splits!.map((s) => s.source.name)).toEqual([a.name, b.name, c.name]);
    expect(g.metadata.get('general.architecture')).toBe('llama');
    expect(g.tensors.map((t) => [t.name, t.source.name])).toEqual([
      ['a', a.name], ['b', a.name], ['c', b.name], ['d', b.name], ['e', c.name],
    ]);
    const d = g.tensors[3];
    expect([...new Float32Array((await d.source.read(d.offset, d.byteLength)).slice().buffer)]).toEqual([1, 1, 0, 1]);
  });

  it('a single unsplit file parses as itself', async () => {
    const only = bytesSource('one.gguf', writeGguf({ tensors: [{ name: 'x', type: 'f32', shape: [1], data: f32Bytes([3]) }] }));
    const g = await parseGgufSplits([only]);
    expect(g.splits).toBeUndefined();
    expect(g.tensors[0].name).toBe('x');
  });

  it('rejects missing, repeated or mislabelled splits', async () => {
    const [a, b, c] = files();
    let e = await rejection(parseGgufSplits([a, b]));
    expect(e).toBeInstanceOf(ModelMismatchError);
    expect((e as ModelMismatchError).field).toBe('split.count');
    e = await rejection(parseGgufSplits([a, b, bytesSource('copy.gguf', mk(1, 3, ['z']))]));
    expect((e as ModelMismatchError).field).toBe('split.no');
    e = await rejection(parseGgufSplits([a, b, bytesSource('m-00001-of-00003.gguf', mk(2, 3, ['e']))].reverse()));
    expect((e as ModelMismatchError).field).toBe('split.no');
    e = await rejection(parseGgufSplits([a, b, bytesSource('m-00003-of-00003.gguf', mk(2, 3, ['a']))]));
    expect(e.message).toContain('tensor a');
    e = await rejection(parseGgufSplits([bytesSource('m-00001-of-00003.gguf', mk(0, 3, ['a', 'b'], { total: 9 })), b, c]));
    expect((e as ModelMismatchError).field).toBe('split.tensors.count');
    e = await rejection(parseGgufSplits([a, bytesSource('plain.gguf', writeGguf({})), c]));
    expect((e as ModelFormatError).field).toBe('split.count');
  });
});
