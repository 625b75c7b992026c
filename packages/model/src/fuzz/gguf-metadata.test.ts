// Fuzzing the GGUF path as the product takes it: openGguf (header, metadata, tensor infos, config) and, when the
// metadata has a tokenizer, tokenizerFromGguf with an encode and a decode. Cases are the stories260K GGUFs (with and
// without the embedded vocabulary) re-serialized by a writer that can lie: values swapped for other types and
// extremes, keys dropped, repeated and invented, arrays cut and grown, strings long or not UTF-8, and counts, string
// lengths, array lengths, dims, types and offsets that disagree with what follows; then a few raw byte flips. Every
// case must open or end in a typed IntabModelError, and none may hang.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { IntabModelError } from '../errors.ts';
import { GGUF_VALUE_TYPE, parseGguf } from '../formats/gguf.ts';
import { ByteWriter } from '../formats/gguf-writer.ts';
import { openGguf } from '../load.ts';
import { bytesSource } from '../source.ts';
import { tokenizerFromGguf } from '../tokenizer/gguf-tokenizer.ts';
import type { GgufValue } from '../types.ts';
import { headerSource } from './test-header-source.ts';
import { checkTensorTable } from './test-model-checks.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const HANG_MS = 5_000;

// ---- a GGUF header as data, and a writer that writes what it is told ----

type Val =
  | { t: number; v: number | bigint | boolean } // fixed-size types (and invalid type ids, written as nothing)
  | { t: 8; s: string | Uint8Array; lenLie?: bigint }
  | { t: 9; item: number; items: Val[]; countLie?: bigint };
interface Kv {
  key: string | Uint8Array;
  v: Val;
}
interface TensorInfo {
  name: string;
  ne: bigint[];
  nDimsLie?: number;
  type: number;
  offset: bigint;
}
interface Header {
  magic: number;
  version: number;
  tensorCountLie?: bigint;
  kvCountLie?: bigint;
  kvs: Kv[];
  tensors: TensorInfo[];
  dataBytes: number;
  flips: [number, number][];
}

/** ByteWriter, plus the lies: string and array lengths that disagree with what follows, and type ids written as told. */
class Writer extends ByteWriter {
  override string(s: string | Uint8Array, lenLie?: bigint) {
    const b = typeof s === 'string' ? enc.encode(s) : s;
    this.u64(lenLie ?? BigInt(b.length));
    this.bytes(b);
  }
  /** Writes `v` as its type id says (a value of another shape is coerced: an item forced to its array's type). */
  value(v: Val): void {
    if (v.t === 8) return this.string('s' in v ? v.s : String((v as { v: unknown }).v), (v as { lenLie?: bigint }).lenLie);
    if (v.t === 9) {
      const a = v as { item?: number; items?: Val[]; countLie?: bigint };
      const items = a.items ?? [];
      this.u32(a.item ?? 0);
      this.u64(a.countLie ?? BigInt(items.length));
      for (const x of items) this.value(x);
      return;
    }
    const x = (v as { v: number | bigint | boolean }).v;
    const n = typeof x === 'boolean' ? Number(x) : x;
    switch (v.t) {
      case 0: case 7: return this.u8(Number(n));
      case 1: return this.i8(Number(n));
      case 2: return this.u16(Number(n));
      case 3: return this.i16(Number(n));
      case 4: return this.u32(Number(n));
      case 5: return this.i32(Number(n));
      case 6: return this.f32(Number(n));
      case 10: return this.u64(BigInt.asUintN(64, toBig(n)));
      case 11: return this.i64(BigInt.asIntN(64, toBig(n)));
      case 12: return this.f64(Number(n));
      default: return; // an invalid type id: nothing follows it
    }
  }
}

const enc = new TextEncoder();
const toBig = (n: number | bigint) => (typeof n === 'bigint' ? n : Number.isFinite(n) ? BigInt(Math.trunc(n)) : 0n);

function serialize(h: Header): Uint8Array {
  const w = new Writer();
  w.u32(h.magic);
  w.u32(h.version);
  w.u64(h.tensorCountLie ?? BigInt(h.tensors.length));
  w.u64(h.kvCountLie ?? BigInt(h.kvs.length));
  for (const kv of h.kvs) {
    w.string(kv.key);
    w.u32(kv.v.t);
    w.value(kv.v);
  }
  for (const t of h.tensors) {
    w.string(t.name);
    w.u32(t.nDimsLie ?? t.ne.length);
    for (const d of t.ne) w.u64(d);
    w.u32(t.type);
    w.u64(t.offset);
  }
  w.padTo(alignmentOf(h));
  const out = w.result();
  for (const [at, b] of h.flips) if (at < out.length) out[at] = b;
  return out;
}

function alignmentOf(h: Header): number {
  const a = h.kvs.find((kv) => kv.key === 'general.alignment')?.v as { v?: unknown } | undefined;
  const n = Number(a?.v);
  return Number.isSafeInteger(n) && n > 0 && n <= 1 << 16 ? n : 32;
}

/** A parsed value and its stored type ('u32', 'array<string>', ...) as a Val. */
function toVal(value: GgufValue, type: string): Val {
  if (type.startsWith('array<')) {
    const inner = type.slice(6, -1);
    const item = inner.startsWith('array<') ? 9 : GGUF_VALUE_TYPE[inner as keyof typeof GGUF_VALUE_TYPE];
    return { t: 9, item, items: (value as GgufValue[]).map((x) => toVal(x, inner)) };
  }
  const t = GGUF_VALUE_TYPE[type as keyof typeof GGUF_VALUE_TYPE];
  return t === 8 ? { t: 8, s: value as string } : { t, v: value as number | bigint | boolean };
}

async function realHeader(file: string): Promise<Header> {
  const bytes = new Uint8Array(await readFile(`${SHARED}models/stories260K/${file}`));
  const g = await parseGguf(bytesSource(file, bytes));
  return {
    magic: 0x46554747,
    version: g.version,
    kvs: [...g.metadata].map(([key, value]) => ({ key, v: toVal(value, g.metadataTypes.get(key)!) })),
    tensors: g.tensors.map((t) => ({ name: t.name, ne: [...t.shape].reverse().map(BigInt), type: t.ggmlType, offset: BigInt(t.dataOffset) })),
    dataBytes: bytes.length - g.dataOffset,
    flips: [],
  };
}

// ---- mutations ----

const KEYS = ['general.architecture', 'general.alignment', 'llama.block_count', 'llama.embedding_length', 'llama.attention.head_count', 'llama.attention.head_count_kv', 'llama.rope.freq_base', 'llama.context_length', 'llama.vocab_size', 'llama.rope.scaling.type', 'tokenizer.ggml.model', 'tokenizer.ggml.pre', 'tokenizer.ggml.merges', 'tokenizer.ggml.bos_token_id', 'tokenizer.ggml.eos_token_id', 'tokenizer.ggml.eot_token_id', 'tokenizer.ggml.add_bos_token', 'tokenizer.ggml.add_space_prefix', 'tokenizer.chat_template', 'tokenizer.chat_templates', 'split.count', 'qwen3.block_count'];
const STRINGS = ['', 'llama', 'gpt2', 'qwen2', 'llama-bpe', 'mistral', '<0x41>', '<0xZZ>', '▁the', 'a b', ' ', '\u0000', '😀', 'x'.repeat(3000), '{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}'];
const BIG = [0n, 1n, 2n, 0xffffffffn, 0x100000000n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n];

function randomVal(r: Random, depth = 0): Val {
  const t = r.int(depth > 1 ? 9 : 14);
  if (t === 8 || t === 13) return { t: 8, s: r.pick(STRINGS) };
  if (t === 9) {
    const item = r.pick([0, 4, 5, 6, 8, 9, 10, 12, 13]);
    return { t: 9, item, items: Array.from({ length: r.int(6) }, () => ({ ...randomVal(r, depth + 1), t: item }) as Val) };
  }
  const v = r.pick<number | bigint | boolean>([0, 1, -1, 5, 64, 512, 1e9, 2 ** 31, 0.5, 1e-5, 1e30, NaN, -Infinity, true, false, ...BIG]);
  return { t: t === 13 ? 4 : t, v };
}

/** Bytes that are not UTF-8: lone continuation bytes, an overlong form, a surrogate, a cut sequence. */
const BAD_UTF8 = [Uint8Array.of(0x80), Uint8Array.of(0xc0, 0xaf), Uint8Array.of(0xed, 0xa0, 0x80), Uint8Array.of(0xe2, 0x82), Uint8Array.of(0xff)];

function mutate(r: Random, base: Header): Header {
  const h: Header = { ...base, kvs: base.kvs.map((kv) => ({ ...kv })), tensors: base.tensors.map((t) => ({ ...t, ne: [...t.ne] })), flips: [] };
  for (let m = 1 + r.int(3); m > 0; m--) {
    const kv = h.kvs.length ? r.pick(h.kvs) : undefined;
    const ti = h.tensors.length ? r.pick(h.tensors) : undefined;
    switch (r.int(16)) {
      case 0: if (kv) kv.v = randomVal(r); break;
      case 1: if (kv) h.kvs.splice(h.kvs.indexOf(kv), 1); break;
      case 2: if (kv) h.kvs.push({ ...kv }); break; // a key twice
      case 3: h.kvs.splice(r.int(h.kvs.length + 1), 0, { key: r.chance(0.7) ? r.pick(KEYS) : r.pick(STRINGS), v: randomVal(r) }); break;
      case 4: {
        // an array cut or grown (tokens, scores, types disagree), or its items replaced
        const arrays = h.kvs.filter((x) => x.v.t === 9);
        if (!arrays.length) break;
        const a = r.pick(arrays);
        if (!Array.isArray((a.v as { items?: unknown }).items)) break;
        const items = [...(a.v as { items: Val[] }).items];
        const n = r.pick([0, 1, 3, items.length >> 1, items.length - 1, items.length + 7]);
        const grown = n > items.length ? [...items, ...Array.from({ length: n - items.length }, () => items[0] ?? randomVal(r))] : items.slice(0, n);
        if (r.chance(0.3) && grown.length) grown[r.int(grown.length)] = { ...randomVal(r), t: (a.v as { item: number }).item } as Val;
        a.v = { ...(a.v as { t: 9; item: number; items: Val[] }), items: grown };
        break;
      }
      case 5: {
        // a string of the vocabulary made long, empty or not UTF-8
        const tok = h.kvs.find((x) => x.key === 'tokenizer.ggml.tokens');
        if (!tok || !Array.isArray((tok.v as { items?: unknown }).items)) break;
        const items = [...(tok.v as { items: Val[] }).items];
        if (!items.length) break;
        items[r.int(items.length)] = { t: 8, s: r.chance(0.5) ? r.pick(BAD_UTF8) : r.pick(STRINGS) };
        tok.v = { ...(tok.v as { t: 9; item: number; items: Val[] }), items };
        break;
      }
      case 6: if (kv) kv.key = r.chance(0.5) ? r.pick(BAD_UTF8) : ''; break;
      case 7: h.kvCountLie = BigInt(h.kvs.length) + r.pick([-1n, 1n, 1000n, 2n ** 40n]); break;
      case 8: h.tensorCountLie = BigInt(h.tensors.length) + r.pick([-1n, 1n, 100n, 2n ** 40n]); break;
      case 9: {
        // a string or array length that disagrees with its bytes
        const candidates = h.kvs.filter((x) => x.v.t === 8 || x.v.t === 9);
        if (!candidates.length) break;
        const s = r.pick(candidates);
        if (s.v.t === 8) s.v = { ...(s.v as { t: 8; s: string }), lenLie: r.pick(BIG) };
        else s.v = { ...(s.v as { t: 9; item: number; items: Val[] }), countLie: r.pick(BIG) };
        break;
      }
      case 10: if (ti) ti.ne[r.int(ti.ne.length)] = r.pick(BIG); break;
      case 11: if (ti) ti.nDimsLie = r.pick([0, 3, 5, 0xffffffff]); break;
      case 12: if (ti) ti.type = r.pick([1, 2, 4, 8, 12, 31, 40, 0xffffffff]); break;
      case 13: if (ti) ti.offset = r.pick([...BIG, ti.offset + 1n, ti.offset + 32n]); break;
      case 14: if (ti && h.tensors.length > 1) ti.name = r.chance(0.5) ? '' : h.tensors[0]!.name; break;
      default: {
        const size = 24 + h.kvs.length * 16;
        h.flips.push([r.int(size), r.int(256)]);
        if (r.chance(0.1)) h.magic = r.int(2 ** 32);
        if (r.chance(0.1)) h.version = r.pick([1, 2, 4, 0x03000000]);
      }
    }
  }
  return h;
}

test('fuzz: GGUF metadata and tensor infos open or end in a typed IntabModelError, none hangs', async () => {
  const bases = [await realHeader('stories260K.gguf'), await realHeader('stories260K-vocab-ud.gguf')];
  const report = await fuzz<{ header: Header; tokenizer: boolean }>({
    name: 'gguf-metadata',
    seed: 0x5eed11,
    generate: (r) => ({ header: mutate(r, r.pick(bases)), tokenizer: r.chance(0.25) }),
    run: async ({ header, tokenizer }) => {
      const bytes = serialize(header);
      const model = await openGguf(headerSource('fuzz.gguf', bytes, header.dataBytes));
      checkTensorTable(model.tensors.values(), (t) => t.source.size);
      if (!tokenizer || !model.gguf!.metadata.has('tokenizer.ggml.model')) return 'opened';
      const tok = tokenizerFromGguf(model.gguf!.metadata, 'fuzz.gguf');
      tok.decode(tok.encode('Hello <t300> world'));
      return 'opened+tokenizer';
    },
    typed: (e) => e instanceof IntabModelError,
    show: ({ header }) => JSON.stringify({ ...header, kvs: header.kvs.map((kv) => [kv.key, JSON.stringify(kv.v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x)).slice(0, 80)]) }, (_, x) => (typeof x === 'bigint' ? `${x}n` : x)),
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.opened ?? 0).toBeGreaterThan(report.cases / 20);
}, fuzzTestTimeout());
