// One file into the model store: streamed from the network into whole chunks (at most one chunk in memory), its
// SHA-256 computed as the bytes arrive (hash-wasm; the hash's state is saved with every chunk, so a download that
// resumes with an HTTP Range request goes on hashing where it stopped), each chunk's stamp recorded as it is written
// (what the store later compares instead of hashing again), and refused unless it is the file: an HTML page, a length
// other than the expected one, or the wrong magic bytes never reach the store. Requests go through modelFetch, so a
// failure is the same typed error as a load without the store. No answer, a server error or a dropped connection is
// tried again from the last whole chunk, a few times, before it is an error.

import { createSHA256, type IHasher } from 'hash-wasm';
import { IntabError } from '@intab/errors';
import { htmlError, modelFetch } from '@intab/engine/model-fetch';
import { ModelFormatError } from '@intab/model/errors';
import { DownloadError, QuotaError } from '../errors.ts';
import type { StoreBackend, StoreStamp } from './backend.ts';

/** What a file's first bytes must look like. */
export type FileFormat = 'gguf' | 'safetensors' | 'json' | 'any';

/** A file's download state, kept in the model's manifest between chunks (and page loads). */
export interface FileState {
  /** Total bytes, once a response said. */
  size?: number;
  /** Bytes stored: whole chunks (all of the file once complete). */
  bytes: number;
  chunks: number;
  /** The SHA-256 state after `bytes` (base64), to resume hashing. */
  hashState?: string;
  /** Hex SHA-256 of the whole file, once complete. */
  sha256?: string;
  complete: boolean;
  /** The stamp of each stored chunk as it was written, in order (absent in manifests older than stamps). */
  stamps?: StoreStamp[];
}

export interface DownloadTarget {
  url: string;
  /** The folder its chunks go into (`<dir>/<index>`). */
  dir: string;
  format: FileFormat;
  /** What the source says the file is (a hub's listing). */
  expectedSize?: number;
}

export interface DownloadOptions {
  chunkBytes: number;
  /** Called with the file's bytes so far (stored and in flight) as they arrive. */
  onBytes?: (loaded: number) => void;
  /** Called after each chunk is stored, with the state to persist. */
  commit: (state: FileState) => Promise<void>;
  /** Attempts after no answer, a server error or a dropped connection that made no progress [3]. */
  retries?: number;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** Errors that say the answer is not the file (a wrong length or range): what was stored of it goes. */
const refused = new WeakSet<object>();

/** Downloads (or resumes) a file into the store; resolves with its complete state (sha256 set). */
export async function downloadFile(backend: StoreBackend, target: DownloadTarget, start: FileState, o: DownloadOptions): Promise<FileState> {
  const fetchFn = modelFetch(o.fetch);
  if (start.complete) return start;
  // The download's state, advanced by attempt() with every stored chunk (also when it then fails).
  const cur = { state: start.bytes > 0 && !start.hashState ? { bytes: 0, chunks: 0, complete: false } : { ...start } };
  if (cur.state.bytes === 0) await backend.remove(target.dir);
  let failures = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    const before = cur.state.bytes;
    try {
      await attempt(fetchFn, backend, target, cur, await resumeHasher(cur.state), o);
      if (cur.state.complete) return cur.state;
      throw new Error('the connection closed before the end of the file');
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      if (err instanceof QuotaError) throw err;
      if (refused.has(err as object) || (err instanceof IntabError && !(err instanceof DownloadError))) {
        // Not the file (not found, an HTML page, the wrong format or length): nothing of it stays.
        await backend.remove(target.dir);
        cur.state = { bytes: 0, chunks: 0, complete: false };
        await o.commit(cur.state);
        throw err;
      }
      // No answer, a server error, a dropped connection: go on from the last stored chunk, with the hash as it was then.
      failures = cur.state.bytes > before ? 1 : failures + 1;
      if (failures > (o.retries ?? 3)) {
        // The request's own error (what a load without the store says), or the connection that kept dropping.
        if (err instanceof DownloadError) throw err;
        throw new DownloadError(target.url, `the connection dropped ${failures} times, the last at byte ${cur.state.bytes} (${(err as Error)?.message ?? err}): check the network and load the model again; what is stored so far is kept and the download resumes from there`, { cause: err });
      }
      o.onBytes?.(cur.state.bytes);
      await new Promise((r) => setTimeout(r, Math.min(4000, 100 * 2 ** failures)));
    }
  }
}

/** One request: from the stored bytes to the end, or until the connection drops (the stored chunks stay). */
async function attempt(fetchFn: typeof fetch, backend: StoreBackend, t: DownloadTarget, cur: { state: FileState }, hasher: IHasher, o: DownloadOptions): Promise<void> {
  let state = cur.state;
  let offset = state.bytes;
  // A backend without stamps records none: its files are hashed again at every load.
  const written = (stamp: StoreStamp | undefined) => (stamp && (state.stamps?.length ?? 0) === state.chunks ? [...(state.stamps ?? []), stamp] : undefined);
  // modelFetch has refused what is no answer, an HTTP error or an HTML page (its typed errors).
  const res = await fetchFn(t.url, { headers: offset > 0 ? { Range: `bytes=${offset}-` } : {}, signal: o.signal, cache: 'no-store' });
  const refuse = (problem: string | Error): never => {
    void res.body?.cancel().catch(() => {});
    const err = typeof problem === 'string' ? new DownloadError(t.url, problem, { status: res.status }) : problem;
    refused.add(err);
    throw err;
  };
  if (res.status === 416) refuse(`the server has no byte ${offset} of the file (HTTP 416): it changed on the server since the stored part was downloaded; load the model again to download it anew`);
  if (res.status !== 200 && res.status !== 206) refuse(`the server answered HTTP ${res.status} to a download, not the file: try again later`);
  let total: number | undefined;
  if (res.status === 206) {
    const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
    if (!m || Number(m[1]) !== offset) refuse(`the server answered a range other than the one asked for (${res.headers.get('content-range')}, asked from byte ${offset})`);
    total = m![3] === '*' ? undefined : Number(m![3]);
  } else {
    const length = res.headers.get('content-length');
    total = length === null || res.headers.get('content-encoding') ? undefined : Number(length);
    if (offset > 0) {
      // The server ignores ranges: start over.
      offset = 0;
      state = cur.state = { bytes: 0, chunks: 0, complete: false };
      hasher.init();
      await backend.remove(t.dir);
    }
  }
  const expected = t.expectedSize ?? state.size;
  if (total !== undefined && expected !== undefined && total !== expected) {
    if (t.expectedSize !== undefined) refuse(`the server sends ${total} bytes where the source lists ${t.expectedSize}: a wrong or changed file; nothing was stored`);
    // The file changed on the server since the stored part was downloaded: start over.
    void res.body?.cancel().catch(() => {});
    await backend.remove(t.dir);
    cur.state = { bytes: 0, chunks: 0, complete: false };
    throw new Error(`the file changed on the server (${total} bytes, ${state.size} before)`);
  }
  const size = total ?? expected;
  if (!res.body) refuse('the response has no body');
  const reader = res.body!.getReader();
  const chunk = new Uint8Array(o.chunkBytes);
  let filled = 0;
  let checked = offset > 0;
  const store = async (bytes: Uint8Array) => {
    const path = `${t.dir}/${state.chunks}`;
    let stamp: StoreStamp | undefined;
    try {
      await backend.write(path, bytes);
      stamp = await backend.stamp?.(path);
    } catch (err) {
      if ((err as DOMException)?.name === 'QuotaExceededError') throw new QuotaError((size ?? state.bytes + bytes.byteLength) - state.bytes, 0, t.url);
      throw err;
    }
    state = cur.state = { ...state, size, bytes: state.bytes + bytes.byteLength, chunks: state.chunks + 1, hashState: base64(hasher.save()), stamps: written(stamp) };
    await o.commit(state);
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (let at = 0; at < value.byteLength; ) {
      const n = Math.min(value.byteLength - at, chunk.byteLength - filled);
      chunk.set(value.subarray(at, at + n), filled);
      hasher.update(value.subarray(at, at + n));
      filled += n;
      at += n;
      if (!checked && filled >= Math.min(16, size ?? 16)) {
        checkMagic(t, chunk.subarray(0, filled), refuse);
        checked = true;
      }
      if (filled === chunk.byteLength) {
        await store(chunk.slice());
        filled = 0;
      }
      if (size !== undefined && state.bytes + filled > size) refuse(`the server sends more than the ${size} bytes it announced`);
    }
    o.onBytes?.(state.bytes + filled);
  }
  const end = state.bytes + filled;
  // Ended early: what is whole stays; the caller resumes from there.
  if (size !== undefined && end < size) return;
  if (!checked) checkMagic(t, chunk.subarray(0, filled), refuse);
  if (filled > 0 || state.chunks === 0) await store(chunk.slice(0, filled));
  cur.state = { ...cur.state, size: end, sha256: hasher.digest('hex'), complete: true };
  await o.commit(cur.state);
}

/** Refuses bytes that cannot be the file: HTML, and the format's magic (the errors a load without the store gives). */
function checkMagic(t: DownloadTarget, head: Uint8Array, refuse: (problem: Error) => never): void {
  const text = new TextDecoder().decode(head.subarray(0, 16)).trimStart().toLowerCase();
  if (t.format !== 'json' && (text.startsWith('<!doctype') || text.startsWith('<html'))) refuse(htmlError(t.url, 200));
  if (t.format === 'gguf' && text.slice(0, 4) !== 'gguf') {
    const hex = [...head.subarray(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    refuse(new ModelFormatError(t.url, 'header.magic', `expected "GGUF", found bytes ${hex}; this is not a GGUF file`));
  }
  if (t.format === 'safetensors' && (head.byteLength < 9 || head[8] !== 0x7b)) refuse(new ModelFormatError(t.url, 'header', 'it does not start with a safetensors header (a length, then JSON); this is not a safetensors file'));
  if (t.format === 'json' && !(text.startsWith('{') || text.startsWith('['))) refuse(new ModelFormatError(t.url, 'JSON', `it is not JSON (it starts with ${JSON.stringify(text.slice(0, 12))})`));
}

/** A SHA-256 at `state`: fresh, or where the stored chunks left it. */
async function resumeHasher(state: FileState): Promise<IHasher> {
  const h = await createSHA256();
  if (state.bytes > 0 && state.hashState) h.load(unbase64(state.hashState));
  else h.init();
  return h;
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function unbase64(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}
