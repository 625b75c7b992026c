// One file into the model store: streamed from the network into whole chunks (at most one chunk in memory), its
// SHA-256 computed as the bytes arrive (hash-wasm; the hash's state is saved with every chunk, so a download that
// resumes with an HTTP Range request goes on hashing where it stopped), and refused unless it is the file: an HTML
// page, a length other than the expected one, or the wrong magic bytes never reach the store. A dropped
// connection resumes from the last whole chunk, a few times, before it is an error.

import { createSHA256, type IHasher } from 'hash-wasm';
import { DownloadError, QuotaError } from '../errors.ts';
import type { StoreBackend } from './backend.ts';

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
  /** Attempts after a dropped connection that made no progress [3]. */
  retries?: number;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

/** Downloads (or resumes) a file into the store; resolves with its complete state (sha256 set). */
export async function downloadFile(backend: StoreBackend, target: DownloadTarget, start: FileState, o: DownloadOptions): Promise<FileState> {
  const fetchFn = o.fetch ?? globalThis.fetch.bind(globalThis);
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
      if (err instanceof DownloadError) {
        // Not the file: nothing of it stays.
        await backend.remove(target.dir);
        cur.state = { bytes: 0, chunks: 0, complete: false };
        await o.commit(cur.state);
        throw err;
      }
      if (err instanceof QuotaError) throw err;
      // A dropped connection: go on from the last stored chunk, with the hash as it was then.
      failures = cur.state.bytes > before ? 1 : failures + 1;
      if (failures > (o.retries ?? 3)) {
        throw new DownloadError(target.url, `the download failed ${failures} times at byte ${cur.state.bytes} (${(err as Error)?.message ?? err}): check the network and load the model again; what is stored so far is kept and the download resumes from there`, { cause: err });
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
  const res = await fetchFn(t.url, { headers: offset > 0 ? { Range: `bytes=${offset}-` } : {}, signal: o.signal, cache: 'no-store' });
  const refuse = (problem: string): never => {
    void res.body?.cancel().catch(() => {});
    throw new DownloadError(t.url, problem, { status: res.status });
  };
  if (res.status !== 200 && res.status !== 206) {
    refuse(`the server answered HTTP ${res.status}${res.status === 404 ? ': check the URL (or the model id, revision and file)' : res.status === 401 || res.status === 403 ? ': the file needs credentials this page does not have' : ': try again later'}`);
  }
  if (/text\/html/i.test(res.headers.get('content-type') ?? '')) refuse('the server answered an HTML page, not the file (an error or login page?): check the URL; nothing was stored');
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
    try {
      await backend.write(`${t.dir}/${state.chunks}`, bytes);
    } catch (err) {
      if ((err as DOMException)?.name === 'QuotaExceededError') throw new QuotaError((size ?? state.bytes + bytes.byteLength) - state.bytes, 0, t.url);
      throw err;
    }
    state = cur.state = { ...state, size, bytes: state.bytes + bytes.byteLength, chunks: state.chunks + 1, hashState: base64(hasher.save()) };
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

/** Refuses bytes that cannot be the file: HTML, and the format's magic. */
function checkMagic(t: DownloadTarget, head: Uint8Array, refuse: (problem: string) => never): void {
  const text = new TextDecoder().decode(head.subarray(0, 16)).trimStart().toLowerCase();
  if (t.format !== 'json' && (text.startsWith('<!doctype') || text.startsWith('<html'))) refuse('the server answered an HTML page, not the file: check the URL; nothing was stored');
  if (t.format === 'gguf' && text.slice(0, 4) !== 'gguf') refuse('it does not start with GGUF: not a GGUF file (a wrong URL?); nothing was stored');
  if (t.format === 'safetensors' && (head.byteLength < 9 || head[8] !== 0x7b)) refuse('it does not start with a safetensors header: not a safetensors file; nothing was stored');
  if (t.format === 'json' && !(text.startsWith('{') || text.startsWith('['))) refuse(`it is not JSON (it starts with ${JSON.stringify(text.slice(0, 12))}): check the URL; nothing was stored`);
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
