// Seeded fuzzing of the format readers: thousands of byte flips (random and inside headers), truncations at
// every region boundary and at random lengths, and absurd length fields written over header bytes, applied
// to GGUF (v2, v3, stories260K) and safetensors fixtures. Each mutation must end in a correct parse or a
// typed IntabModelError: never another exception, never a hang (every loop is bounded by the file size).

import { fileURLToPath } from 'node:url';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { IntabModelError } from '../errors.ts';
import { bytesSource } from '../source.ts';
import type { ByteSource, TensorInfo } from '../types.ts';
import { parseGguf } from './gguf.ts';
import { ggufTyped, writeGguf } from './gguf-writer.ts';
import { readHfFolder } from './hf-folder.ts';
import { parseSafetensors, writeSafetensors } from './safetensors.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));

// ---- mutations ----

interface Mutation {
  label: string;
  /** The mutated file's length (≤ the fixture's for truncations). */
  size: number;
  /** [offset, byte] overwrites. */
  patches: [number, number][];
}

/** The fixture with `m` applied; reads copy only the requested range, so big fixtures are cheap to mutate. */
function mutatedSource(name: string, base: Uint8Array, m: Mutation): ByteSource {
  const inner = bytesSource(name, base.subarray(0, m.size));
  return {
    name,
    size: m.size,
    async read(offset, length, signal) {
      const out = (await inner.read(offset, length, signal)).slice();
      for (const [p, v] of m.patches) if (p >= offset && p < offset + length) out[p - offset] = v;
      return out;
    },
  };
}

function u64Patches(at: number, v: bigint): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < 8; i++) out.push([at + i, Number((v >> BigInt(8 * i)) & 0xffn)]);
  return out;
}

/**
 * The mutation set of one fixture. `header` is where the header ends; `boundaries` are region edges (tensor
 * starts and ends, field edges); `exhaustive` truncates at every length of the header and writes absurd u64s
 * at every header byte (small fixtures only).
 */
function mutations(seed: number, bytes: Uint8Array, header: number, boundaries: number[], exhaustive: boolean, random: number): Mutation[] {
  const rng = mulberry32(seed);
  const int = (n: number) => Math.floor(rng() * n);
  const size = bytes.length;
  const out: Mutation[] = [];
  const absurd = [2n ** 64n - 1n, 2n ** 63n, 2n ** 53n + 1n, BigInt(size), BigInt(size + 1), 0xffffffffn, 0n];

  // Truncations: at every boundary (±1), every header length (small fixtures), and random lengths.
  const cuts = new Set<number>();
  for (const b of boundaries) for (const d of [-1, 0, 1]) if (b + d >= 0 && b + d < size) cuts.add(b + d);
  if (exhaustive) for (let n = 0; n <= header; n++) cuts.add(n);
  for (let i = 0; i < random / 4; i++) cuts.add(int(size));
  for (const n of cuts) out.push({ label: `truncate to ${n}`, size: n, patches: [] });

  // Byte flips: random anywhere, and inside the header.
  for (let i = 0; i < random; i++) {
    const patches: [number, number][] = [];
    const k = 1 + int(3);
    const inHeader = i % 2 === 0;
    for (let j = 0; j < k; j++) {
      const at = inHeader ? int(header) : int(size);
      patches.push([at, bytes[at] ^ (1 << int(8))]);
    }
    out.push({ label: `flip ${patches.map(([p]) => p).join(',')}`, size, patches });
  }
  // Random bytes (not just bit flips) in the header.
  for (let i = 0; i < random / 2; i++) {
    const at = int(header);
    out.push({ label: `byte ${at}=random`, size, patches: [[at, int(256)]] });
  }

  // Absurd length fields: every header byte (small fixtures) or random header positions.
  const positions = exhaustive ? Array.from({ length: Math.max(0, header - 7) }, (_, i) => i) : Array.from({ length: random / 2 }, () => int(Math.max(1, header - 7)));
  for (const at of positions) {
    const v = absurd[int(absurd.length)];
    out.push({ label: `u64 ${v} at ${at}`, size, patches: u64Patches(at, v) });
  }
  return out;
}

// ---- the check ----

interface Tally {
  ok: number;
  errors: Map<string, number>;
}

function checkTensors(tensors: readonly TensorInfo[], size: number, label: string): void {
  for (const t of tensors) {
    const bad = !(Number.isSafeInteger(t.offset) && t.offset >= 0 && Number.isSafeInteger(t.byteLength) && t.byteLength >= 0 && t.offset + t.byteLength <= size);
    if (bad) throw new Error(`${label}: parsed tensor ${t.name} has bytes ${t.offset}+${t.byteLength} outside the ${size}-byte file`);
    if (t.shape.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new Error(`${label}: tensor ${t.name} has shape [${t.shape}]`);
  }
  const sorted = [...tensors].filter((t) => t.byteLength > 0).sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i].offset < sorted[i - 1].offset + sorted[i - 1].byteLength) throw new Error(`${label}: tensors ${sorted[i - 1].name} and ${sorted[i].name} overlap`);
  }
}

async function run(
  base: Uint8Array,
  name: string,
  muts: Mutation[],
  parse: (src: ByteSource) => Promise<readonly TensorInfo[]>,
  /** Mutations that touch only these bytes must parse to the original result. */
  dataStart: number,
  original: readonly TensorInfo[],
): Promise<Tally> {
  const tally: Tally = { ok: 0, errors: new Map() };
  for (const m of muts) {
    const src = mutatedSource(name, base, m);
    let tensors: readonly TensorInfo[];
    try {
      tensors = await parse(src);
    } catch (e) {
      if (!(e instanceof IntabModelError)) {
        throw new Error(`${name}, ${m.label}: threw ${(e as Error)?.name}: ${(e as Error)?.message} instead of a typed IntabModelError`, { cause: e });
      }
      tally.errors.set(e.name, (tally.errors.get(e.name) ?? 0) + 1);
      continue;
    }
    checkTensors(tensors, m.size, `${name}, ${m.label}`);
    if (m.size === base.length && m.patches.every(([p]) => p >= dataStart)) {
      const summary = (ts: readonly TensorInfo[]) => ts.map((t) => `${t.name}:${t.dtype}:${t.shape}:${t.offset}:${t.byteLength}`).join('|');
      expect(summary(tensors), `${name}, ${m.label}`).toBe(summary(original));
    }
    tally.ok++;
  }
  return tally;
}

// ---- fixtures ----

function someBytes(n: number, seed: number): Uint8Array {
  const rng = mulberry32(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(rng() * 256));
}

function ggufFixture(version: 2 | 3): Uint8Array {
  return writeGguf({
    version,
    metadata: [
      ['general.architecture', 'llama'],
      ['general.alignment', ggufTyped('u32', version === 3 ? 64 : 32)],
      ['llama.block_count', 2],
      ['llama.rope.freq_base', 10000.5],
      ['t.u64', ggufTyped('u64', 2n ** 40n)],
      ['t.i8', ggufTyped('i8', -3)],
      ['t.bool', true],
      ['tokenizer.ggml.tokens', ['<unk>', '<s>', '</s>', 'héllo', '🦙']],
      ['tokenizer.ggml.scores', ggufTyped('array', [0, -1, -2, -3, -4].map((x) => ggufTyped('f32', x)))],
      ['t.nested', [['a'], ['b', 'c']]],
    ],
    tensors: [
      { name: 'token_embd.weight', type: 'f32', shape: [5, 8], data: someBytes(160, 1) },
      { name: 'blk.0.attn_q.weight', type: 'q8_0', shape: [2, 32], data: someBytes(68, 2) },
      { name: 'blk.0.ffn_down.weight', type: 'q4_K', shape: [1, 256], data: someBytes(144, 3) },
      { name: 'blk.0.ffn_up.weight', type: 13, shape: [1, 256], data: someBytes(176, 4) },
      { name: 'output_norm.weight', type: 'f16', shape: [8], data: someBytes(16, 5) },
    ],
  });
}

async function ggufCase(name: string, bytes: Uint8Array, seed: number, exhaustive: boolean, random: number) {
  const g = await parseGguf(bytesSource(name, bytes));
  const boundaries = [0, 4, 8, 16, 24, g.dataOffset, ...g.tensors.flatMap((t) => [t.offset, t.offset + t.byteLength]), bytes.length];
  const muts = mutations(seed, bytes, g.dataOffset, boundaries, exhaustive, random);
  const tally = await run(bytes, name, muts, async (src) => (await parseGguf(src)).tensors, g.dataOffset, g.tensors);
  return { count: muts.length, tally };
}

async function safetensorsCase(name: string, bytes: Uint8Array, seed: number, exhaustive: boolean, random: number) {
  const st = await parseSafetensors(bytesSource(name, bytes));
  const boundaries = [0, 8, st.dataOffset, ...st.tensors.flatMap((t) => [t.offset, t.offset + t.byteLength]), bytes.length];
  const muts = mutations(seed, bytes, st.dataOffset, boundaries, exhaustive, random);
  const tally = await run(bytes, name, muts, async (src) => (await parseSafetensors(src)).tensors, st.dataOffset, st.tensors);
  return { count: muts.length, tally };
}

function report(label: string, r: { count: number; tally: Tally }): void {
  if (process.env.FUZZ_STATS) console.log(label, r.count, r.tally.ok, [...r.tally.errors]);
  // Both outcomes must occur: a fuzzer that only ever errors (or only ever parses) is not exploring.
  expect(r.tally.ok, `${label}: no mutation parsed`).toBeGreaterThan(0);
  expect(r.tally.errors.size, `${label}: no mutation failed`).toBeGreaterThan(0);
  expect(r.tally.ok + [...r.tally.errors.values()].reduce((a, b) => a + b, 0)).toBe(r.count);
}

describe('fuzz: every mutation ends in a correct parse or a typed error', () => {
  it('GGUF v3 and v2 fixtures (exhaustive over the header)', async () => {
    const v3 = await ggufCase('fuzz-v3.gguf', ggufFixture(3), 1, true, 600);
    const v2 = await ggufCase('fuzz-v2.gguf', ggufFixture(2), 2, true, 300);
    report('v3', v3);
    report('v2', v2);
    expect(v3.count + v2.count).toBeGreaterThanOrEqual(1000);
    expect(v3.tally.errors.has('ModelFormatError')).toBe(true);
  });

  it('stories260K.gguf (header and tensor boundaries)', async () => {
    const bytes = new Uint8Array(await readFile(`${SHARED}models/stories260K/stories260K.gguf`));
    const r = await ggufCase('stories260K.gguf', bytes, 3, false, 600);
    report('stories260K.gguf', r);
    expect(r.count).toBeGreaterThanOrEqual(1000);
  });

  it('safetensors fixtures', async () => {
    const fixture = writeSafetensors(
      [
        { name: 'model.embed_tokens.weight', dtype: 'F32', shape: [4, 8], data: someBytes(128, 6) },
        { name: 'model.norm.weight', dtype: 'BF16', shape: [8], data: someBytes(16, 7) },
        { name: 'model.layers.0.mlp.down_proj.weight', dtype: 'F16', shape: [8, 4], data: someBytes(64, 8) },
        { name: 'lm_head.scale', dtype: 'I8', shape: [3], data: someBytes(3, 9) },
      ],
      { format: 'pt' },
    );
    const small = await safetensorsCase('fuzz.safetensors', fixture, 4, true, 600);
    report('fuzz.safetensors', small);
    const hf = new Uint8Array(await readFile(`${SHARED}models/stories260K/hf/model.safetensors`));
    const stories = await safetensorsCase('model.safetensors', hf, 5, false, 600);
    report('stories260K model.safetensors', stories);
    expect(small.count).toBeGreaterThanOrEqual(1000);
    expect(stories.count).toBeGreaterThanOrEqual(1000);
  });

  it('HF folder JSON files', async () => {
    const config = new TextEncoder().encode(JSON.stringify({ model_type: 'llama', hidden_size: 64, rope_scaling: { type: 'llama3', factor: 8 } }));
    const tokenizer = new TextEncoder().encode(JSON.stringify({ model: { type: 'BPE', vocab: { a: 0, b: 1 }, merges: ['a b'] }, added_tokens: [] }));
    const weights = bytesSource('model.safetensors', writeSafetensors([{ name: 'w', dtype: 'F32', shape: [1], data: new Uint8Array(4) }]));
    let ok = 0;
    let typed = 0;
    let count = 0;
    for (const [file, base] of [['config.json', config], ['tokenizer.json', tokenizer]] as const) {
      const muts = mutations(6, base, base.length, [0, base.length], true, 200);
      for (const m of muts) {
        count++;
        const files = new Map<string, ByteSource>([
          ['config.json', bytesSource('config.json', config)],
          ['tokenizer.json', bytesSource('tokenizer.json', tokenizer)],
          ['model.safetensors', weights],
        ]);
        files.set(file, mutatedSource(file, base, m));
        try {
          await readHfFolder(files);
          ok++;
        } catch (e) {
          if (!(e instanceof IntabModelError)) throw new Error(`${file}, ${m.label}: threw ${(e as Error)?.name} instead of a typed error`, { cause: e });
          expect((e as IntabModelError).message).toContain(file);
          typed++;
        }
      }
    }
    expect(ok).toBeGreaterThan(0);
    expect(typed).toBeGreaterThan(0);
    expect(ok + typed).toBe(count);
  });
});
