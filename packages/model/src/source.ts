// ByteSource implementations: random access to one model file held in memory, in a Blob/File, behind a URL
// (HTTP Range requests) or, in Node, at a path. Format readers pull only the ranges they need through these,
// so a multi-GB model is never held whole in JS memory. Every read is bounds-checked against the size and a
// read past the end is a ModelFormatError naming the file.

import { ModelFormatError, ModelSourceError, UnsupportedModelError } from './errors.ts';
import type { ByteSource } from './types.ts';

// ---- shared checks ----

function checkRange(name: string, size: number, offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0) {
    throw new ModelFormatError(name, `read(${offset}, ${length})`, 'the byte range is not a pair of non-negative integers');
  }
  if (offset + length > size) {
    throw new ModelFormatError(
      name,
      `bytes ${offset}..${offset + length}`,
      `the read runs past the end of the file (${size} bytes); the file is truncated or an offset in it is wrong`,
    );
  }
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
}

function anySignal(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  if (!a) return b;
  if (!b) return a;
  return AbortSignal.any([a, b]);
}

// ---- memory ----

/** The last component of a file name, path or URL path ('onnx/model.onnx' → 'model.onnx'), for matching files by name. */
export function fileBaseName(name: string): string {
  return name.split(/[\\/]/).pop() ?? name;
}

/**
 * A ByteSource over bytes already in memory. Reads return views, not copies.
 * @example
 * const src = bytesSource('model.gguf', new Uint8Array(await file.arrayBuffer()));
 */
export function bytesSource(name: string, data: Uint8Array | ArrayBuffer): ByteSource {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  return {
    name,
    size: bytes.byteLength,
    async read(offset, length, signal) {
      throwIfAborted(signal);
      checkRange(name, bytes.byteLength, offset, length);
      return bytes.subarray(offset, offset + length);
    },
  };
}

// ---- Blob / File ----

/**
 * Reads of a Blob below this size are served from aligned blocks of it, the last two kept: each Blob read is a round
 * trip to the browser's blob store (milliseconds in Chromium, measured ~3 ms), so the hundreds of small tensors of a
 * model read from the model store or a picked File share a few reads instead of paying one each.
 */
const BLOB_BLOCK_BYTES = 4 << 20;

/**
 * A ByteSource over a Blob or File (e.g. from `<input type=file>`, or the model store's chunks); reads slice the blob,
 * so only the requested range is loaded. Reads smaller than 4 MiB come from aligned 4 MiB blocks, the last two kept.
 * @example
 * const src = blobSource(input.files[0]);
 */
export function blobSource(blob: Blob, name?: string): ByteSource {
  const label = name ?? ((blob as Partial<File>).name || 'blob');
  const size = blob.size;
  const slice = async (offset: number, length: number, signal: AbortSignal | undefined): Promise<Uint8Array> => {
    const buf = await blob.slice(offset, offset + length).arrayBuffer();
    throwIfAborted(signal);
    if (buf.byteLength !== length) {
      throw new ModelFormatError(label, `bytes ${offset}..${offset + length}`, `the blob returned ${buf.byteLength} bytes; it changed while being read`);
    }
    return new Uint8Array(buf);
  };
  // Aligned blocks, the two most recently used kept; a block being read is shared by every read that needs it.
  const blocks = new Map<number, Promise<Uint8Array>>();
  const block = (index: number): Promise<Uint8Array> => {
    let p = blocks.get(index);
    if (p) blocks.delete(index);
    else {
      const start = index * BLOB_BLOCK_BYTES;
      p = slice(start, Math.min(BLOB_BLOCK_BYTES, size - start), undefined);
      p.catch(() => blocks.delete(index));
    }
    blocks.set(index, p);
    while (blocks.size > 2) blocks.delete(blocks.keys().next().value!);
    return p;
  };
  return {
    name: label,
    size,
    async read(offset, length, signal) {
      throwIfAborted(signal);
      checkRange(label, size, offset, length);
      if (length === 0) return new Uint8Array(0);
      if (length >= BLOB_BLOCK_BYTES) return slice(offset, length, signal);
      const first = Math.floor(offset / BLOB_BLOCK_BYTES);
      const last = Math.floor((offset + length - 1) / BLOB_BLOCK_BYTES);
      const parts = await raced(Promise.all(Array.from({ length: last - first + 1 }, (_, i) => block(first + i))), signal);
      const out = new Uint8Array(length);
      parts.forEach((bytes, i) => {
        const start = (first + i) * BLOB_BLOCK_BYTES;
        const from = Math.max(offset, start);
        const to = Math.min(offset + length, start + bytes.byteLength);
        out.set(bytes.subarray(from - start, to - start), from - offset);
      });
      return out;
    },
  };
}

// ---- URL (HTTP Range) ----

export interface UrlSourceOptions {
  /** The fetch to use (default: globalThis.fetch); lets callers add headers or credentials. A ModelSourceError it throws passes as it is. */
  fetch?: typeof fetch;
  /** Aborts the size probe and every later read. */
  signal?: AbortSignal;
  /** What the first request reads (the whole file when it is smaller) [2 MiB]. */
  headBytes?: number;
  /** Reads smaller than this are served from aligned blocks of this size, two kept [8 MiB]. */
  blockBytes?: number;
}

/** Parses `Content-Range: bytes a-b/total` (total may be '*'). */
function parseContentRange(h: string | null): { start: number; end: number; total: number | undefined } | { unsatisfied: number } | undefined {
  if (!h) return undefined;
  const m = /^\s*bytes\s+(\d+)-(\d+)\/(\d+|\*)\s*$/i.exec(h);
  if (m) return { start: Number(m[1]), end: Number(m[2]), total: m[3] === '*' ? undefined : Number(m[3]) };
  const u = /^\s*bytes\s+\*\/(\d+)\s*$/i.exec(h);
  if (u) return { unsatisfied: Number(u[1]) };
  return undefined;
}

/** Whether a 200 answer is a web page (Content-Type text/html, or a body that starts like one) rather than a file. */
async function looksLikeHtml(res: Response): Promise<boolean> {
  if (/^\s*text\/html/i.test(res.headers.get('content-type') ?? '')) return true;
  const reader = res.body?.getReader();
  if (!reader) return false;
  try {
    const first = await reader.read();
    const head = new TextDecoder().decode(first.value?.subarray(0, 64) ?? new Uint8Array(0)).trimStart().toLowerCase();
    return head.startsWith('<!doctype html') || head.startsWith('<html');
  } catch {
    return false;
  } finally {
    reader.cancel().catch(() => {});
  }
}

function rangeIgnored(url: string, status: number): UnsupportedModelError {
  return new UnsupportedModelError(
    url,
    'HTTP Range',
    `ignored (status ${status} instead of 206 Partial Content)`,
    'intab reads model files in ranges and will not download a whole model into memory; serve the file from a host that honours Range requests (most static hosts, the Hugging Face hub and `npx serve` do), or load it as a File instead',
  );
}

async function doFetch(fetchFn: typeof fetch, url: string, range: string, signal: AbortSignal | undefined): Promise<Response> {
  try {
    return await fetchFn(url, { headers: { Range: range }, signal });
  } catch (e) {
    if (signal?.aborted) throw signal.reason ?? e;
    // A fetch that says what went wrong itself (the engine's modelFetch: one error per situation) is taken at its word.
    if (e instanceof ModelSourceError) throw e;
    throw new ModelSourceError(url, `the request for ${range} failed (${(e as Error)?.message ?? e}): check the URL and the network, and that the server allows cross-origin requests (CORS) with a Range header`, { cause: e });
  }
}

function httpError(url: string, range: string, res: Response): ModelSourceError {
  return new ModelSourceError(url, `HTTP ${res.status} ${res.statusText} for ${range}: check that the URL points at the model file and is reachable`, { status: res.status });
}

/** What the first request reads: the whole file when it is small, else the headers the format readers parse. */
const HEAD_BYTES = 2 << 20;
/** Reads below this size are served from aligned blocks of it (kept two at a time), so small tensors share requests. */
const BLOCK_BYTES = 8 << 20;

/** Resolves with `p`, or rejects with the signal's reason when it aborts first (`p` goes on for other readers). */
function raced<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  throwIfAborted(signal);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason ?? new DOMException('The operation was aborted.', 'AbortError'));
    signal.addEventListener('abort', stop, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}

/**
 * A ByteSource over a URL, read with HTTP Range requests in large coalesced pieces. The first request asks for the
 * first `headBytes` (the whole file when it is small: one request in all); its Content-Range gives the size, and
 * reads inside it are answered from memory. Later reads smaller than `blockBytes` come from aligned blocks of that
 * size, the last two kept, so neighbouring tensors share one request; larger reads are one request each. A server
 * that answers a range with the whole file (status 200) is an UnsupportedModelError saying so, never a silent full
 * download, and one that answers with an HTML page (a dev server's answer for a mistyped path) says that instead.
 * @example
 * const src = await urlSource('https://huggingface.co/x/y/resolve/main/model.gguf');
 */
export async function urlSource(url: string | URL, options: UrlSourceOptions = {}): Promise<ByteSource> {
  const href = String(url);
  const fetchFn = options.fetch ?? globalThis.fetch.bind(globalThis);
  const base = options.signal;
  const headBytes = options.headBytes ?? HEAD_BYTES;
  const blockBytes = options.blockBytes ?? BLOCK_BYTES;
  throwIfAborted(base);

  // The first request: the file's first bytes; its Content-Range says how big the file is.
  const probeRange = `bytes=0-${headBytes - 1}`;
  const probe = await doFetch(fetchFn, href, probeRange, base);
  let size: number;
  let head = new Uint8Array(0);
  if (probe.status === 206) {
    const cr = parseContentRange(probe.headers.get('content-range'));
    if (!cr || 'unsatisfied' in cr || cr.total === undefined || cr.start !== 0) {
      await probe.body?.cancel().catch(() => {});
      throw new ModelSourceError(href, `the server answered a range request without a usable Content-Range header (got ${JSON.stringify(probe.headers.get('content-range'))}); intab needs the total size: serve the file from a host that sends "Content-Range: bytes 0-N/<size>" (and exposes it through CORS: Access-Control-Expose-Headers: Content-Range)`, { status: probe.status });
    }
    size = cr.total;
    // Read to its end (never cancelled: a cancelled body shows as ERR_ABORTED in devtools).
    head = new Uint8Array(await probe.arrayBuffer());
    throwIfAborted(base);
    const want = Math.min(headBytes, size);
    if (head.byteLength !== want || cr.end !== want - 1) {
      throw new ModelFormatError(href, probeRange, `the server sent ${head.byteLength} bytes (Content-Range ${JSON.stringify(probe.headers.get('content-range'))}) instead of ${want}; the download was cut short or the body is encoded: retry`);
    }
  } else if (probe.status === 416) {
    // Range not satisfiable: an empty file, if the server says so.
    const cr = parseContentRange(probe.headers.get('content-range'));
    await probe.arrayBuffer().catch(() => {});
    if (cr && 'unsatisfied' in cr && cr.unsatisfied === 0) size = 0;
    else throw httpError(href, probeRange, probe);
  } else if (probe.status === 200) {
    const html = await looksLikeHtml(probe);
    await probe.body?.cancel().catch(() => {});
    if (html) {
      throw new ModelSourceError(
        href,
        "the server answered with an HTML page, not a model file: the path is probably wrong (a dev server such as Vite answers a missing file with its index.html). Check the model's URL, and that the file is in the folder the server serves (Vite: public/ or an allowed path).",
        { status: probe.status },
      );
    }
    throw rangeIgnored(href, probe.status);
  } else {
    await probe.body?.cancel().catch(() => {});
    throw httpError(href, probeRange, probe);
  }

  /** Exactly [offset, offset + length), one request. */
  const fetchRange = async (offset: number, length: number, sig: AbortSignal | undefined): Promise<Uint8Array> => {
    const range = `bytes=${offset}-${offset + length - 1}`;
    const res = await doFetch(fetchFn, href, range, sig);
    if (res.status === 200) {
      await res.body?.cancel().catch(() => {});
      throw rangeIgnored(href, 200);
    }
    if (res.status !== 206) {
      await res.body?.cancel().catch(() => {});
      throw httpError(href, range, res);
    }
    const cr = parseContentRange(res.headers.get('content-range'));
    if (!cr || 'unsatisfied' in cr || cr.start !== offset || cr.end !== offset + length - 1 || (cr.total !== undefined && cr.total !== size)) {
      await res.body?.cancel().catch(() => {});
      throw new ModelSourceError(href, `asked for ${range} of ${size} bytes, the server answered Content-Range ${JSON.stringify(res.headers.get('content-range'))}; the file changed on the server or the server mishandles ranges: reload the model`, { status: res.status });
    }
    const buf = new Uint8Array(await res.arrayBuffer());
    throwIfAborted(sig);
    if (buf.byteLength !== length) {
      throw new ModelFormatError(href, range, `the server sent ${buf.byteLength} bytes instead of ${length}; the download was cut short or the body is encoded: retry`);
    }
    return buf;
  };

  // Aligned blocks, the two most recently used kept; a block in flight is shared by every read that needs it.
  const blocks = new Map<number, Promise<Uint8Array>>();
  const block = (index: number): Promise<Uint8Array> => {
    let p = blocks.get(index);
    if (p) blocks.delete(index);
    else {
      const start = index * blockBytes;
      p = fetchRange(start, Math.min(blockBytes, size - start), base);
      p.catch(() => blocks.delete(index));
    }
    blocks.set(index, p);
    while (blocks.size > 2) blocks.delete(blocks.keys().next().value!);
    return p;
  };

  return {
    name: href,
    size,
    async read(offset, length, signal) {
      const sig = anySignal(base, signal);
      throwIfAborted(sig);
      checkRange(href, size, offset, length);
      if (length === 0) return new Uint8Array(0);
      if (offset + length <= head.byteLength) return head.slice(offset, offset + length);
      if (length >= blockBytes) return fetchRange(offset, length, sig);
      const out = new Uint8Array(length);
      const first = Math.floor(offset / blockBytes);
      const last = Math.floor((offset + length - 1) / blockBytes);
      const parts = await raced(Promise.all(Array.from({ length: last - first + 1 }, (_, i) => block(first + i))), sig);
      parts.forEach((bytes, i) => {
        const start = (first + i) * blockBytes;
        const from = Math.max(offset, start);
        const to = Math.min(offset + length, start + bytes.byteLength);
        out.set(bytes.subarray(from - start, to - start), from - offset);
      });
      return out;
    },
  };
}

// ---- Node path ----

/**
 * A ByteSource over a file on disk (Node only). `node:fs/promises` is imported on first use, so this module
 * still bundles for browsers. Each read opens, reads and closes the file: nothing stays open.
 * @example
 * const src = await pathSource('/models/stories260K.gguf');
 */
export async function pathSource(path: string): Promise<ByteSource> {
  const specifier = 'node:fs/promises';
  const fs = (await import(/* @vite-ignore */ specifier)) as typeof import('node:fs/promises');
  let size: number;
  try {
    const st = await fs.stat(path);
    if (!st.isFile()) throw new Error('not a regular file');
    size = st.size;
  } catch (e) {
    throw new ModelSourceError(path, `${(e as Error).message}: check the path`, { cause: e });
  }
  return {
    name: path,
    size,
    async read(offset, length, signal) {
      throwIfAborted(signal);
      checkRange(path, size, offset, length);
      const out = new Uint8Array(length);
      const fh = await fs.open(path, 'r');
      try {
        let done = 0;
        while (done < length) {
          const { bytesRead } = await fh.read(out, done, length - done, offset + done);
          if (bytesRead === 0) {
            throw new ModelFormatError(path, `bytes ${offset}..${offset + length}`, `the file ended after ${offset + done} bytes; it shrank while being read`);
          }
          done += bytesRead;
        }
      } finally {
        await fh.close();
      }
      throwIfAborted(signal);
      return out;
    },
  };
}
