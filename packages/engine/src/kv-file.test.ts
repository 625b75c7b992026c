// The saved prefix cache's file format, on bytes: what is written reads back page for page; a truncated file, a
// flipped bit in the header, the data or the checksum, and a malformed tree are caught before anything is used; a
// key or layout that differs is a mismatch (ignored), never an error. And end to end on the CPU reference runner:
// pages written to a file and read into another runner's pool give the ids a fresh prefill gives.
import { describe, expect, test } from 'vitest';
import { fixtureWeights } from '@intab/testing/fixtures';
import { readKvFile, writeKvFile, type ByteSink, type ByteSourceRange, type KvFileHeader } from './kv-file.ts';
import { PrefixCache } from './prefix-cache.ts';
import { ReferenceRunner } from './reference/runner.ts';

/** A file in memory: the sink's chunks, readable by range once closed. */
function memoryFile(): { sink: ByteSink; bytes: () => Uint8Array; closed: () => boolean } {
  const chunks: Uint8Array[] = [];
  let closed = false;
  return {
    sink: { write: async (c) => void chunks.push(c.slice()), close: async () => void (closed = true), abort: async () => void (chunks.length = 0) },
    bytes: () => {
      const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
      let at = 0;
      for (const c of chunks) out.set(c, (at += c.byteLength) - c.byteLength);
      return out;
    },
    closed: () => closed,
  };
}

const source = (bytes: Uint8Array): ByteSourceRange => ({ size: bytes.byteLength, read: async (o, n) => bytes.slice(o, o + n) });

const header: KvFileHeader = {
  key: '{"weights":"xxh128:00"}',
  pageSize: 4,
  pageBytes: 8,
  nodes: [
    { parent: -1, tokens: [1, 2, 3, 4] },
    { parent: 0, tokens: [5, 6] },
    { parent: -1, tokens: [9] },
  ],
};
const data = Uint8Array.from({ length: 24 }, (_, i) => i * 7);

async function written(chunkPages = 2): Promise<Uint8Array> {
  const f = memoryFile();
  const n = await writeKvFile(f.sink, header, async (first, count) => data.slice(first * 8, (first + count) * 8), chunkPages);
  expect(f.closed()).toBe(true);
  expect(n).toBe(f.bytes().byteLength);
  return f.bytes();
}

async function read(bytes: Uint8Array, expect_ = { key: header.key, pageSize: 4, pageBytes: 8 }, keep = (h: KvFileHeader) => h.nodes.map((_, i) => 100 + i)) {
  const got = new Map<number, number[]>();
  const problem = await readKvFile(source(bytes), expect_, keep, async (pages, b) => pages.forEach((p, i) => got.set(p, [...b.subarray(i * 8, (i + 1) * 8)])), 2);
  return { problem, got };
}

describe('kv file', () => {
  test('round trip: every page arrives at its target; skipped nodes are read (checksummed) but not written', async () => {
    const bytes = await written();
    const all = await read(bytes);
    expect(all.problem).toBeUndefined();
    expect([...all.got.keys()]).toEqual([100, 101, 102]);
    expect(all.got.get(101)).toEqual([...data.slice(8, 16)]);
    const some = await read(bytes, undefined, () => [7, -1, 8]);
    expect(some.problem).toBeUndefined();
    expect([...some.got.entries()]).toEqual([
      [7, [...data.slice(0, 8)]],
      [8, [...data.slice(16, 24)]],
    ]);
  });

  test('damage is caught: truncation, flipped bits anywhere, a malformed tree, a foreign file', async () => {
    const bytes = await written();
    expect((await read(bytes.slice(0, bytes.length - 5))).problem).toMatchObject({ kind: 'corrupt', reason: /truncated/ });
    expect((await read(bytes.slice(0, 10))).problem).toMatchObject({ kind: 'corrupt' });
    for (const at of [20, bytes.length - 30, bytes.length - 1]) {
      const bad = bytes.slice();
      bad[at] ^= 0x10;
      const r = await read(bad);
      expect(r.problem, `byte ${at}`).toMatchObject({ kind: 'corrupt' });
    }
    const foreign = bytes.slice();
    foreign[0] = 0x50;
    expect((await read(foreign)).problem).toMatchObject({ kind: 'corrupt', reason: /INTABKV/ });
    const f = memoryFile();
    await writeKvFile(f.sink, { ...header, nodes: [{ parent: 1, tokens: [1] }, { parent: -1, tokens: [2] }, { parent: -1, tokens: [] }] }, async (_a, n) => new Uint8Array(n * 8));
    expect((await read(f.bytes())).problem).toMatchObject({ kind: 'corrupt', reason: /page 0/ });
    const g = memoryFile();
    await writeKvFile(g.sink, { ...header, nodes: [{ parent: -1, tokens: [1, 2] }, { parent: 0, tokens: [3] }] }, async (_a, n) => new Uint8Array(n * 8));
    expect((await read(g.bytes())).problem).toMatchObject({ kind: 'corrupt', reason: /follows a partial page/ });
  });

  test('another key, page size or page layout is a mismatch, not damage', async () => {
    const bytes = await written();
    expect((await read(bytes, { key: '{"weights":"xxh128:01"}', pageSize: 4, pageBytes: 8 })).problem).toMatchObject({ kind: 'mismatch' });
    expect((await read(bytes, { key: header.key, pageSize: 16, pageBytes: 8 })).problem).toMatchObject({ kind: 'mismatch' });
    const v2 = bytes.slice();
    v2[8] = 2;
    expect((await read(v2)).problem).toMatchObject({ kind: 'mismatch', reason: /version 2/ });
  });

  test('a failed write aborts the file', async () => {
    const f = memoryFile();
    await expect(writeKvFile(f.sink, header, async () => new Uint8Array(3))).rejects.toThrow(/page data/);
    expect(f.closed()).toBe(false);
    expect(f.bytes().byteLength).toBe(0);
  });

  test('pages saved from one reference runner and restored into another give the ids of a fresh prefill', async () => {
    const { config, tensors } = fixtureWeights('llama');
    const make = () => {
      const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 16, pageSize: 4, yieldEachStep: false });
      return { runner, cache: new PrefixCache(runner) };
    };
    const prompt = Array.from({ length: 22 }, (_, i) => 3 + ((i * 37) % 120));
    const greedy = async (runner: ReferenceRunner, seq: number, start: number, n: number) => {
      const ids: number[] = [];
      let r = await runner.step([{ seq, tokens: prompt.slice(start) }]);
      for (let i = 0; i < n; i++) {
        ids.push(r[0].id);
        r = await runner.step([{ seq, tokens: [r[0].id] }]);
      }
      return ids;
    };
    const a = make();
    a.runner.alloc(0);
    const expected = await greedy(a.runner, 0, 0, 8);
    a.cache.insert(0, prompt, 'finished');
    a.runner.free(0);
    const nodes = a.cache.ordered();
    const io = a.runner.pageIO;
    const file = memoryFile();
    const index = new Map(nodes.map((n, i) => [n, i]));
    await writeKvFile(file.sink, { key: JSON.stringify(await io.key()), pageSize: 4, pageBytes: io.pageBytes, nodes: nodes.map((n) => ({ parent: n.parent && index.has(n.parent) ? index.get(n.parent)! : -1, tokens: [...n.tokens] })) }, (first, count) =>
      io.read(nodes.slice(first, first + count).map((n) => n.page)),
    );
    const b = make();
    const key = JSON.stringify(await b.runner.pageIO.key());
    expect(key).toBe(JSON.stringify(await io.key())); // same weights, same layout
    let targets: number[] = [];
    const problem = await readKvFile(source(file.bytes()), { key, pageSize: 4, pageBytes: b.runner.pageIO.pageBytes }, (h) => (targets = h.nodes.map(() => b.runner.kv.acquire())), (pages, bytes) => b.runner.pageIO.write(pages, bytes));
    expect(problem).toBeUndefined();
    const restored: ReturnType<typeof b.cache.adoptPage>[] = [];
    nodes.forEach((n, i) => (restored[i] = b.cache.adoptPage(n.parent && index.has(n.parent) ? restored[index.get(n.parent)!] : undefined, n.tokens, targets[i])));
    const match = b.cache.lookup(prompt, prompt.length - 1);
    expect(match.tokens).toBe(21);
    b.cache.attach(1, match, prompt.length);
    expect(await greedy(b.runner, 1, 21, 8)).toEqual(expected);
    b.runner.free(1);
    b.runner.kv.audit(b.cache.heldPages());
    // Other weights: another key.
    const other = fixtureWeights('llama', 99);
    const c = new ReferenceRunner(other.config, (n) => other.tensors.get(n), { pages: 16, pageSize: 4 });
    expect(JSON.stringify(await c.pageIO.key())).not.toBe(key);
  });
});
