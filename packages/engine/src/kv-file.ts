// The file a saved prefix cache lives in, and where it lives (the Origin Private File System). Layout, little-endian:
//
//   magic "INTABKV\0" (8) | version u32 | header bytes u32 | header (UTF-8 JSON) | page data | xxh128 (16)
//
// The header holds the key (what the pages' bytes depend on), the page size and bytes, and the tree: one entry per
// page, parents before children ({ parent index or -1, tokens }). The page data follows in the same order, each page
// in PageIO's layout. The checksum covers everything before it, so a truncated or damaged file is caught; it is
// checked as the data streams past, so nothing is used before the whole file has been read and verified. Files are
// named by a hash of their key, so a load only ever opens the file its own weights and layout could have written.

import { createXXHash128, xxhash128 } from 'hash-wasm';

export const KV_FILE_VERSION = 1;
const MAGIC = new TextEncoder().encode('INTABKV\0');
const PREFIX_BYTES = 16;
const CHECKSUM_BYTES = 16;

/** One saved page: its parent's index in the file (-1 for the root) and the tokens it holds. */
export interface KvFileNode {
  parent: number;
  tokens: number[];
}

export interface KvFileHeader {
  /** JSON of what the bytes depend on (KvKey with the format version). */
  key: string;
  pageSize: number;
  pageBytes: number;
  nodes: KvFileNode[];
}

/** Where a file's bytes go (an OPFS writable stream; chunks are written in order, then closed or aborted). */
export interface ByteSink {
  write(chunk: Uint8Array): Promise<void>;
  close(): Promise<void>;
  abort(): Promise<void>;
}

/** A file's bytes, read by range. */
export interface ByteSourceRange {
  readonly size: number;
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** The file name of a key: a hash of the key and the format version. */
export async function kvFileName(key: string): Promise<string> {
  return `${await xxhash128(`${KV_FILE_VERSION}|${key}`)}.kvcache`;
}

/**
 * Writes a file: the header, then each node's page bytes from `pages(first, count)` (node order, a chunk at a time),
 * then the checksum. Returns the bytes written.
 */
export async function writeKvFile(sink: ByteSink, header: KvFileHeader, pages: (first: number, count: number) => Promise<Uint8Array>, chunkPages = 64): Promise<number> {
  const hash = await createXXHash128();
  hash.init();
  let bytes = 0;
  const put = async (chunk: Uint8Array) => {
    hash.update(chunk);
    bytes += chunk.byteLength;
    await sink.write(chunk);
  };
  try {
    const json = new TextEncoder().encode(JSON.stringify(header));
    const prefix = new Uint8Array(PREFIX_BYTES);
    prefix.set(MAGIC);
    const view = new DataView(prefix.buffer);
    view.setUint32(8, KV_FILE_VERSION, true);
    view.setUint32(12, json.byteLength, true);
    await put(prefix);
    await put(json);
    for (let first = 0; first < header.nodes.length; first += chunkPages) {
      const count = Math.min(chunkPages, header.nodes.length - first);
      const data = await pages(first, count);
      if (data.byteLength !== count * header.pageBytes) throw new Error(`page data of ${data.byteLength} bytes for ${count} pages of ${header.pageBytes}`);
      await put(data);
    }
    const sum = hexBytes(hash.digest('hex'));
    await sink.write(sum);
    await sink.close();
    return bytes + sum.byteLength;
  } catch (err) {
    await sink.abort().catch(() => {});
    throw err;
  }
}

/** Why a file was not used. */
export type KvFileProblem = { kind: 'mismatch'; reason: string } | { kind: 'corrupt'; reason: string };

/**
 * Reads and verifies a file. `begin(header)` sees the header once it is known to match `expect` (same key, page
 * size and page bytes) and says which pages of this load receive each node (-1: skip it); `write(pages, bytes)`
 * receives the data of the nodes it kept, a chunk at a time, as it streams past. Resolves with undefined when the
 * whole file was read and its checksum holds, else with the problem (nothing must be used then).
 */
export async function readKvFile(
  source: ByteSourceRange,
  expect: { key: string; pageSize: number; pageBytes: number },
  begin: (header: KvFileHeader) => number[],
  write: (pages: number[], bytes: Uint8Array) => Promise<void>,
  chunkPages = 64,
): Promise<KvFileProblem | undefined> {
  const corrupt = (reason: string): KvFileProblem => ({ kind: 'corrupt', reason });
  if (source.size < PREFIX_BYTES + CHECKSUM_BYTES) return corrupt(`it holds ${source.size} bytes, fewer than a header`);
  const hash = await createXXHash128();
  hash.init();
  const prefix = await source.read(0, PREFIX_BYTES);
  if (!MAGIC.every((b, i) => prefix[i] === b)) return corrupt('it does not start with INTABKV');
  const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const version = view.getUint32(8, true);
  if (version !== KV_FILE_VERSION) return { kind: 'mismatch', reason: `format version ${version}, not ${KV_FILE_VERSION}` };
  const headerBytes = view.getUint32(12, true);
  if (PREFIX_BYTES + headerBytes + CHECKSUM_BYTES > source.size) return corrupt(`its header of ${headerBytes} bytes runs past its end (${source.size} bytes)`);
  const json = await source.read(PREFIX_BYTES, headerBytes);
  hash.update(prefix);
  hash.update(json);
  let header: KvFileHeader;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json)) as KvFileHeader;
    if (typeof header.key !== 'string' || !Array.isArray(header.nodes)) throw new Error('fields');
  } catch {
    return corrupt('its header is not the JSON this version writes');
  }
  if (header.key !== expect.key) return { kind: 'mismatch', reason: 'it was saved for other weights, quantization, KV layout or architecture' };
  if (header.pageSize !== expect.pageSize || header.pageBytes !== expect.pageBytes) return { kind: 'mismatch', reason: `its pages are ${header.pageSize} tokens of ${header.pageBytes} bytes` };
  const dataBytes = header.nodes.length * header.pageBytes;
  const expected = PREFIX_BYTES + headerBytes + dataBytes + CHECKSUM_BYTES;
  if (source.size !== expected) return corrupt(`it holds ${source.size} bytes where its header announces ${expected} (truncated?)`);
  for (const [i, n] of header.nodes.entries()) {
    const tokens = n?.tokens;
    if (!Number.isInteger(n?.parent) || n.parent < -1 || n.parent >= i || !Array.isArray(tokens) || tokens.length < 1 || tokens.length > header.pageSize || !tokens.every((t) => Number.isInteger(t) && t >= 0)) {
      return corrupt(`its page ${i} is not a valid tree entry`);
    }
    // Only a full page has children (a partial one is the end of its prefix).
    if (n.parent >= 0 && header.nodes[n.parent].tokens.length !== header.pageSize) return corrupt(`its page ${i} follows a partial page`);
  }
  const targets = begin(header);
  const start = PREFIX_BYTES + headerBytes;
  for (let first = 0; first < header.nodes.length; first += chunkPages) {
    const count = Math.min(chunkPages, header.nodes.length - first);
    const data = await source.read(start + first * header.pageBytes, count * header.pageBytes);
    hash.update(data);
    const pages: number[] = [];
    const kept: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      if (targets[first + i] < 0) continue;
      pages.push(targets[first + i]);
      kept.push(data.subarray(i * header.pageBytes, (i + 1) * header.pageBytes));
    }
    if (pages.length) await write(pages, kept.length === count ? data : concat(kept));
  }
  const stored = await source.read(start + dataBytes, CHECKSUM_BYTES);
  const actual = hexBytes(hash.digest('hex'));
  if (!actual.every((b, i) => stored[i] === b)) return corrupt('its checksum does not match its contents');
  return undefined;
}

// ---- the Origin Private File System ----

/** The folder saved caches live in, or undefined where the OPFS is missing (Node, old browsers, some private modes). */
export async function opfsFolder(): Promise<FileSystemDirectoryHandle | undefined> {
  const storage = (globalThis as { navigator?: Navigator }).navigator?.storage;
  if (typeof storage?.getDirectory !== 'function') return undefined;
  try {
    const root = await storage.getDirectory();
    const intab = await root.getDirectoryHandle('intab', { create: true });
    return await intab.getDirectoryHandle('kv-cache', { create: true });
  } catch {
    return undefined;
  }
}

/** A writable file in `folder` (replaced atomically when closed: the old one stays until then). */
export async function opfsSink(folder: FileSystemDirectoryHandle, name: string): Promise<ByteSink> {
  const file = await folder.getFileHandle(name, { create: true });
  const writable = await file.createWritable();
  return {
    write: (chunk) => writable.write(chunk as Uint8Array<ArrayBuffer>),
    close: () => writable.close(),
    abort: () => writable.abort(),
  };
}

/** A file of `folder` read by range, or undefined when it does not exist. */
export async function opfsSource(folder: FileSystemDirectoryHandle, name: string): Promise<ByteSourceRange | undefined> {
  let file: File;
  try {
    file = await (await folder.getFileHandle(name)).getFile();
  } catch {
    return undefined;
  }
  return { size: file.size, read: async (offset, length) => new Uint8Array(await file.slice(offset, offset + length).arrayBuffer()) };
}

export async function opfsDelete(folder: FileSystemDirectoryHandle, name: string): Promise<void> {
  await folder.removeEntry(name).catch(() => {});
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from({ length: hex.length / 2 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
