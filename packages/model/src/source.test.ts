// ByteSources: memory, Blob, Node path, and URL against real local HTTP servers (node:http on 127.0.0.1):
// one that honours Range, one that ignores it, one that answers 404. A GGUF is parsed over HTTP to show
// that only ranges travel.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntabModelError, ModelFormatError, ModelSourceError, UnsupportedModelError } from './errors.ts';
import { parseGguf } from './formats/gguf.ts';
import { blobSource, bytesSource, pathSource, urlSource } from './source.ts';
import type { ByteSource } from './types.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const GGUF_PATH = `${SHARED}models/stories260K/stories260K.gguf`;

const data = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7 + 3) & 0xff);

async function expectPastEnd(src: ByteSource, offset: number, length: number): Promise<void> {
  const e = await src.read(offset, length).then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(ModelFormatError);
  expect((e as ModelFormatError).file).toBe(src.name);
  expect((e as Error).message).toContain('past the end');
}

async function checkSource(src: ByteSource): Promise<void> {
  expect(src.size).toBe(1000);
  expect([...(await src.read(0, 4))]).toEqual([...data.subarray(0, 4)]);
  expect([...(await src.read(990, 10))]).toEqual([...data.subarray(990)]);
  expect((await src.read(500, 0)).length).toBe(0);
  expect([...(await src.read(123, 300))]).toEqual([...data.subarray(123, 423)]);
  await expectPastEnd(src, 995, 6);
  await expectPastEnd(src, 1001, 0);
  await expect(src.read(-1, 2)).rejects.toBeInstanceOf(ModelFormatError);
  await expect(src.read(0.5, 2)).rejects.toBeInstanceOf(ModelFormatError);
}

describe('bytesSource / blobSource / pathSource', () => {
  it('bytesSource reads ranges and rejects reads past the end', async () => {
    await checkSource(bytesSource('mem.bin', data));
    await checkSource(bytesSource('mem.bin', data.slice().buffer));
  });

  it('blobSource reads slices of a Blob/File', async () => {
    await checkSource(blobSource(new Blob([data]), 'blob.bin'));
    const file = new File([data], 'picked.gguf');
    expect(blobSource(file).name).toBe('picked.gguf');
    await checkSource(blobSource(file));
  });

  it('blobSource serves small reads from shared aligned blocks (each Blob read is a round trip in a browser)', async () => {
    // 10 MiB of counted bytes: a Blob that counts the slices read from it.
    const big = Uint8Array.from({ length: 10 << 20 }, (_, i) => (i * 31 + i / 4093) & 0xff);
    const sliced: [number, number][] = [];
    class CountingBlob extends Blob {
      override slice(start?: number, end?: number): Blob {
        sliced.push([start ?? 0, end ?? this.size]);
        return super.slice(start, end);
      }
    }
    const src = blobSource(new CountingBlob([big]), 'big.bin');
    // 300 small tensors one after another, and one crossing a block boundary: two 4 MiB blocks read.
    for (let i = 0; i < 300; i++) expect(Buffer.from(await src.read(i * 1000, 1000)).equals(big.subarray(i * 1000, i * 1000 + 1000))).toBe(true);
    const across = (4 << 20) - 10;
    expect(Buffer.from(await src.read(across, 20)).equals(big.subarray(across, across + 20))).toBe(true);
    expect(sliced).toEqual([[0, 4 << 20], [4 << 20, 8 << 20]]);
    // A read of a block's size or more is one slice of its own.
    expect(Buffer.from(await src.read(1, 4 << 20)).equals(big.subarray(1, 1 + (4 << 20)))).toBe(true);
    expect(sliced.at(-1)).toEqual([1, 1 + (4 << 20)]);
    // The last (short) block ends at the end of the blob.
    expect(Buffer.from(await src.read((10 << 20) - 5, 5)).equals(big.subarray((10 << 20) - 5))).toBe(true);
    expect(sliced.at(-1)).toEqual([8 << 20, 10 << 20]);
  });

  it('pathSource reads a file on disk', async () => {
    const src = await pathSource(GGUF_PATH);
    const whole = await readFile(GGUF_PATH);
    expect(src.size).toBe(whole.length);
    expect(new TextDecoder().decode(await src.read(0, 4))).toBe('GGUF');
    expect(Buffer.from(await src.read(whole.length - 100, 100)).equals(whole.subarray(whole.length - 100))).toBe(true);
    await expectPastEnd(src, whole.length - 1, 2);
    await expect(pathSource(`${SHARED}no-such-model.gguf`)).rejects.toBeInstanceOf(ModelSourceError);
  });

  it('reads stop on an aborted signal', async () => {
    const ac = new AbortController();
    ac.abort(new Error('stopped'));
    await expect(bytesSource('m', data).read(0, 1, ac.signal)).rejects.toThrow('stopped');
    await expect(blobSource(new Blob([data])).read(0, 1, ac.signal)).rejects.toThrow('stopped');
  });
});

// ---- HTTP ----

interface Served {
  server: Server;
  base: string;
  requests: { url: string; range: string | undefined }[];
}

/** A static server for `files`; `mode` picks how it treats Range headers. */
async function serve(files: Record<string, Uint8Array>, mode: 'range' | 'ignore-range'): Promise<Served> {
  const requests: Served['requests'] = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', range: req.headers.range });
    const body = files[(req.url ?? '').slice(1)];
    if (!body) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const m = /^bytes=(\d+)-(\d+)?$/.exec(req.headers.range ?? '');
    if (mode === 'ignore-range' || !m) {
      res.writeHead(200, { 'content-length': body.length }).end(body);
      return;
    }
    const start = Number(m[1]);
    const end = Math.min(m[2] === undefined ? body.length - 1 : Number(m[2]), body.length - 1);
    if (start >= body.length) {
      res.writeHead(416, { 'content-range': `bytes */${body.length}` }).end();
      return;
    }
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    res.end(body.subarray(start, end + 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}/`, requests };
}

describe('urlSource', () => {
  let ranged: Served;
  let ignoring: Served;
  let gguf: Uint8Array;

  beforeAll(async () => {
    gguf = new Uint8Array(await readFile(GGUF_PATH));
    const files = { 'data.bin': data, 'model.gguf': gguf, 'empty.bin': new Uint8Array(0) };
    ranged = await serve(files, 'range');
    ignoring = await serve(files, 'ignore-range');
  });
  afterAll(async () => {
    await Promise.all([ranged, ignoring].map((s) => new Promise((r) => s.server.close(r))));
  });

  it('reads a small file in one request', async () => {
    ranged.requests.length = 0;
    const src = await urlSource(`${ranged.base}data.bin`);
    expect(src.name).toBe(`${ranged.base}data.bin`);
    await checkSource(src);
    expect(ranged.requests.map((r) => r.range)).toEqual(['bytes=0-2097151']);
  });

  it('reads past the first bytes in aligned blocks (two kept), and large reads as they are', async () => {
    ranged.requests.length = 0;
    const src = await urlSource(`${ranged.base}data.bin`, { headBytes: 16, blockBytes: 64 });
    await checkSource(src);
    expect([...(await src.read(60, 10))]).toEqual([...data.subarray(60, 70)]); // across blocks 0 and 1
    expect([...(await src.read(100, 200))]).toEqual([...data.subarray(100, 300)]); // larger than a block: one request
    const ranges = ranged.requests.map((r) => r.range);
    expect(ranges[0]).toBe('bytes=0-15');
    expect(ranges).toContain('bytes=960-999'); // the last block is short
    expect(ranges).toContain('bytes=100-299');
    expect(ranges.every((r) => r !== undefined)).toBe(true);
    // Sequential small reads share their block's one request.
    ranged.requests.length = 0;
    const seq = await urlSource(`${ranged.base}data.bin`, { headBytes: 16, blockBytes: 256 });
    for (let o = 16; o + 8 <= 512; o += 8) expect([...(await seq.read(o, 8))]).toEqual([...data.subarray(o, o + 8)]);
    expect(ranged.requests.map((r) => r.range)).toEqual(['bytes=0-15', 'bytes=0-255', 'bytes=256-511']);
  });

  it('parses a GGUF over HTTP reading only ranges', async () => {
    ranged.requests.length = 0;
    const g = await parseGguf(await urlSource(`${ranged.base}model.gguf`));
    expect(g.metadata.get('general.architecture')).toBe('llama');
    const emb = g.tensors.find((t) => t.name === 'token_embd.weight')!;
    const bytes = await emb.source.read(emb.offset, emb.byteLength);
    expect(Buffer.from(bytes).equals(Buffer.from(gguf.subarray(emb.offset, emb.offset + emb.byteLength)))).toBe(true);
    expect(ranged.requests.every((r) => r.range !== undefined)).toBe(true);
    expect(ranged.requests).toHaveLength(1); // a 1 MB model: the first request holds all of it
  });

  it('an empty file has size 0', async () => {
    const src = await urlSource(`${ranged.base}empty.bin`);
    expect(src.size).toBe(0);
  });

  it('a server that ignores Range is an error that says so', async () => {
    const e = await urlSource(`${ignoring.base}data.bin`).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(UnsupportedModelError);
    expect((e as UnsupportedModelError).field).toBe('HTTP Range');
    expect((e as Error).message).toMatch(/Range/);
    expect((e as Error).message).toContain('200');
  });

  it('a dev server answering a mistyped path with its HTML page (200, Range ignored) is said to be that, not a Range problem', async () => {
    const page = new TextEncoder().encode('<!doctype html><html><head><title>app</title></head><body></body></html>');
    for (const typed of [true, false]) {
      const html = createServer((_req, res) => void res.writeHead(200, typed ? { 'content-type': 'text/html' } : {}).end(page));
      await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
      const e = await urlSource(`http://127.0.0.1:${(html.address() as AddressInfo).port}/modles/x.gguf`).then(() => undefined, (x: unknown) => x);
      await new Promise((r) => html.close(r));
      expect(e).toBeInstanceOf(ModelSourceError);
      expect(e).toMatchObject({ code: 'model_source_unavailable', status: 200 });
      expect((e as Error).message).toMatch(/answered with an HTML page, not a model file/);
      expect((e as Error).message).not.toMatch(/Range/);
    }
  });

  it('a server that stops honouring Range mid-way is caught on the read', async () => {
    // Size learned from the ranged server, reads sent to the ignoring one (same file, same size).
    const real = await urlSource(`${ranged.base}data.bin`);
    let calls = 0;
    const src = await urlSource(`${ranged.base}data.bin`, {
      headBytes: 8,
      fetch: (input, init) => fetch(calls++ === 0 ? input : String(input).replace(ranged.base, ignoring.base), init),
    });
    expect(src.size).toBe(real.size);
    await expect(src.read(10, 20)).rejects.toBeInstanceOf(UnsupportedModelError);
  });

  it('HTTP errors and network failures are typed', async () => {
    const e = await urlSource(`${ranged.base}missing.gguf`).then(() => undefined, (x: unknown) => x);
    // A ModelSourceError, still an IntabModelError (what a 404 was before it had its own name).
    expect(e).toBeInstanceOf(ModelSourceError);
    expect(e).toBeInstanceOf(IntabModelError);
    expect(e).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 404, source: `${ranged.base}missing.gguf` });
    expect((e as Error).message).toContain('404');
    const closed = await serve({}, 'range');
    const deadUrl = `${closed.base}x`;
    await new Promise((r) => closed.server.close(r));
    await expect(urlSource(deadUrl)).rejects.toBeInstanceOf(ModelSourceError);
  });

  it('aborts', async () => {
    const ac = new AbortController();
    const src = await urlSource(`${ranged.base}data.bin`, { signal: ac.signal });
    ac.abort(new Error('user stopped'));
    await expect(src.read(0, 10)).rejects.toThrow('user stopped');
  });
});
