// The model store: a model's files (a GGUF and its splits, or a Hugging Face folder's config, tokenizer and
// safetensors shards) kept in the origin's storage by source, so the next page load reads them from disk instead of
// the network. Every file's SHA-256 is computed as it streams in and checked against the hub's LFS hash where the
// source is the hub, else recorded; a mismatch downloads the file again once, then is an IntegrityError. Each chunk's
// stamp (size and write mark, backend.ts) is recorded as it is written: a later load compares the stamps, which reads
// no bytes, and hashes a file again only when one changed (verify(id) hashes everything on demand). Downloads resume
// from what is stored, run a few files at a time, report bytes, speed and ETA, and are refused before a byte is
// written when the model cannot fit (QuotaError). Two tabs that load the same model wait for each other (Web Locks)
// instead of downloading it twice. What a load gets is Blobs over the stored chunks: the loader slices them, so a
// model never sits whole in memory. Past 500 lines as one job: the store's operations (open, ensure, verify, list,
// delete) share its records, locks and stamps; listing sources and downloading are store-sources.ts and download.ts.

import { createSHA256, xxhash64 } from 'hash-wasm';
import type { LoadProgress, ModelSource } from '@intab/engine/contract';
import { IntegrityError, QuotaError } from '../errors.ts';
import { defaultBackend, type StoreBackend, type StoreStamp } from './backend.ts';
import { downloadFile, type FileFormat, type FileState } from './download.ts';
import { Progress } from './store-progress.ts';
import { describeSource, type WantedModel } from './store-sources.ts';

/** One stored file of a model. */
export interface StoredFile {
  name: string;
  url: string;
  /** Bytes stored (the whole file once complete). */
  bytes: number;
  /** Total bytes, when known. */
  size?: number;
  /** Hex SHA-256, once complete. */
  sha256?: string;
  /** The hub's SHA-256 (LFS), when the source is the hub. */
  expectedSha256?: string;
  complete: boolean;
}

/** One stored model, as list() reports it. */
export interface StoredModel {
  /** What delete() takes: `org/name@revision[/file]` for the hub, else the URL. */
  id: string;
  files: StoredFile[];
  /** Bytes stored. */
  bytes: number;
  /** All files downloaded and hashed. */
  complete: boolean;
  createdAt: number;
  lastUsed: number;
}

/** Progress of ensure(): the download (bytes, speed, ETA), or the hashing of stored files (verify). */
export interface StoreProgress extends LoadProgress {
  phase: 'download' | 'verify';
  /** The model's id in the store. */
  model: string;
  files: { name: string; loaded: number; total: number }[];
  /** Download only: bytes per second over the last seconds, and the seconds left at that speed. */
  bytesPerSecond?: number;
  etaSeconds?: number;
}

export interface EnsureOptions {
  onProgress?: (p: StoreProgress) => void;
  signal?: AbortSignal;
}

/** What ensure() did. */
export interface EnsureResult {
  /** The stored files, as the engine loads them. */
  source: ModelSource;
  model: StoredModel;
  /** Bytes downloaded now (0 when everything came from the store). */
  downloaded: number;
  /**
   * Whether every file is known to hash to what it must (the hub's SHA-256, or the one recorded at its download):
   * hashed as it was downloaded, or hashed again now, or stored with stamps unchanged since it was hashed.
   */
  verified: boolean;
  /** Bytes of stored files hashed again now: 0 when no stored chunk changed since it was written (see verify()). */
  rehashed: number;
  /** navigator.storage.persist()'s answer when it was asked now (before a first download), else persisted()'s. */
  persisted: boolean;
}

/** What verify() checked of one file, and what it found. */
export interface VerifiedFile {
  name: string;
  /** Bytes hashed (0 for a file not stored whole). */
  bytes: number;
  /** What the file must hash to: the hub's SHA-256, else the one recorded at its download. */
  expected?: string;
  /** What the stored bytes hash to now. */
  actual?: string;
  /** 'ok'; 'mismatch' (dropped from the store: the next load downloads it again); 'incomplete' (not stored whole yet). */
  status: 'ok' | 'mismatch' | 'incomplete';
}

/** What verify() did. */
export interface VerifyReport {
  id: string;
  /** Every file stored whole and hashing to what it must. */
  ok: boolean;
  /** Bytes hashed. */
  bytes: number;
  files: VerifiedFile[];
}

export interface ModelStoreOptions {
  /** Where files go [the OPFS, else the Cache API]. */
  backend?: StoreBackend | (() => Promise<StoreBackend | undefined>);
  /** Bytes per stored chunk: what a download keeps in memory and loses at most when it is cut [16 MiB]. */
  chunkBytes?: number;
  /** Files downloaded at once [3]. */
  concurrency?: number;
  fetch?: typeof fetch;
}

/** One file in a manifest: what list() shows, its download state (chunk stamps included) and where its chunks lie. */
type ManifestFile = StoredFile & { state: FileState; format: FileFormat; dir: string };

/** The manifest of a stored model (JSON beside its chunks, which lie in `<model>/<file's dir>/<index>`). */
interface Manifest {
  version: 1;
  id: string;
  files: ManifestFile[];
  createdAt: number;
  lastUsed: number;
}

const MANIFEST = 'manifest.json';

/**
 * Stored models of this origin.
 * @example
 * import { modelStore } from 'intab';
 * for (const m of await modelStore.list()) console.log(m.id, m.bytes, new Date(m.lastUsed));
 * await modelStore.delete('HuggingFaceTB/SmolLM2-135M-Instruct@main');
 */
export class ModelStore {
  private backendPromise?: Promise<StoreBackend | undefined>;
  private readonly chunkBytes: number;
  private readonly concurrency: number;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: ModelStoreOptions = {}) {
    this.chunkBytes = options.chunkBytes ?? 16 << 20;
    this.concurrency = Math.max(1, options.concurrency ?? 3);
    this.fetchFn = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** Whether this context can keep models (the OPFS or the Cache API exists). */
  async available(): Promise<boolean> {
    return (await this.backend()) !== undefined;
  }

  /** The stored models, most recently used first. */
  async list(): Promise<StoredModel[]> {
    const b = await this.backend();
    if (!b) return [];
    const out: StoredModel[] = [];
    for (const key of await b.list('')) {
      const m = await this.readManifest(b, key);
      if (m) out.push(publicModel(m));
    }
    return out.sort((a, z) => z.lastUsed - a.lastUsed);
  }

  /** Deletes a stored model (by its id in list(), or the source it was loaded from); resolves with whether one was. */
  async delete(id: string): Promise<boolean> {
    const b = await this.backend();
    if (!b) return false;
    const key = await keyOf(id);
    const found = (await this.readManifest(b, key)) !== undefined;
    await withLock(key, () => b.remove(key));
    return found;
  }

  /** Deletes every stored model. */
  async clear(): Promise<void> {
    const b = await this.backend();
    if (!b) return;
    for (const key of await b.list('')) await withLock(key, () => b.remove(key));
  }

  /** Bytes the stored models take, and what the browser says of this origin's storage. */
  async usage(): Promise<{ bytes: number; models: number; backend: 'opfs' | 'cache' | null; quota?: number; usage?: number; persisted?: boolean }> {
    const b = await this.backend();
    const models = await this.list();
    const storage = (globalThis as { navigator?: Navigator }).navigator?.storage;
    const estimate = await storage?.estimate?.().catch(() => undefined);
    const persisted = await storage?.persisted?.().catch(() => undefined);
    return { bytes: models.reduce((n, m) => n + m.bytes, 0), models: models.length, backend: b?.kind ?? null, quota: estimate?.quota, usage: estimate?.usage, persisted };
  }

  /**
   * Makes sure a model's files are stored and intact, downloading what is missing, and returns them as a
   * ModelSource of Blobs over the stored chunks. A stored file is hashed again only when one of its chunks changed
   * since it was written (its stamp); verify(id) hashes everything. Sources other than URLs (local Files) are
   * returned as they are.
   * @example
   * const { source, downloaded, rehashed } = await modelStore.ensure({ kind: 'url', url: 'https://host/model.gguf' }, { onProgress });
   */
  async ensure(source: ModelSource, o: EnsureOptions = {}): Promise<EnsureResult> {
    const b = await this.backend();
    const wanted = describeSource(source);
    if (!b || !wanted) return { source, model: { id: '', files: [], bytes: 0, complete: true, createdAt: 0, lastUsed: 0 }, downloaded: 0, verified: false, rehashed: 0, persisted: await persistedNow() };
    const key = await keyOf(wanted.id);
    return withLock(key, () => this.ensureLocked(b, key, wanted, o));
  }

  /**
   * A stored, complete model by its id (checked as ensure() checks it), without touching the network: how a Hugging
   * Face id loads offline (its listing needs the hub). Undefined when it is not stored whole.
   * @example
   * const r = await modelStore.open('HuggingFaceTB/SmolLM2-135M-Instruct@main');
   */
  async open(id: string, o: EnsureOptions = {}): Promise<EnsureResult | undefined> {
    const b = await this.backend();
    if (!b) return undefined;
    const key = await keyOf(id);
    const m = await this.readManifest(b, key);
    if (!m?.files.length || !m.files.every((f) => f.complete)) return undefined;
    return withLock(key, () => this.ensureLocked(b, key, { id, list: async () => m.files }, o));
  }

  /**
   * Hashes every stored file of a model again, whatever its stamps say (a disk can rot without a write), and reports
   * what it checked and what it found. A file that no longer hashes to what it must is dropped from the store, so the
   * next load downloads it again. Undefined when no model of that id (or source URL) is stored.
   * @example
   * const report = await modelStore.verify('HuggingFaceTB/SmolLM2-135M-Instruct@main');
   * if (report && !report.ok) console.warn(report.files.filter((f) => f.status !== 'ok'));
   */
  async verify(id: string, o: EnsureOptions = {}): Promise<VerifyReport | undefined> {
    const b = await this.backend();
    if (!b) return undefined;
    const key = await keyOf(id);
    return withLock(key, async () => {
      const m = await this.readManifest(b, key);
      if (!m) return undefined;
      const progress = new Progress(m, 'verify', o.onProgress);
      const files: VerifiedFile[] = [];
      let dropped = false;
      for (const [i, f] of m.files.entries()) {
        const expected = f.expectedSha256 ?? f.sha256;
        if (!f.complete) {
          files.push({ name: f.name, bytes: 0, ...(expected ? { expected } : {}), status: 'incomplete' });
          continue;
        }
        const { blob, stamps } = await this.readChunks(b, key, f);
        const actual = blob.size === f.state.bytes ? await sha256(blob, (n) => progress.file(i, n, blob.size), o.signal) : undefined;
        const ok = actual !== undefined && actual === expected;
        files.push({ name: f.name, bytes: blob.size, ...(expected ? { expected } : {}), ...(actual ? { actual } : {}), status: ok ? 'ok' : 'mismatch' });
        if (ok) f.state = { ...f.state, ...(stamps ? { stamps } : {}) };
        else {
          await b.remove(`${key}/${f.dir}`);
          resetFile(f);
          dropped = true;
        }
      }
      if (dropped || files.some((f) => f.status === 'ok')) await this.writeManifest(b, key, m);
      return { id: m.id, ok: files.every((f) => f.status === 'ok'), bytes: files.reduce((n, f) => n + f.bytes, 0), files };
    });
  }

  // ---- internals ----

  private backend(): Promise<StoreBackend | undefined> {
    const b = this.options.backend;
    return (this.backendPromise ??= typeof b === 'function' ? b() : b ? Promise.resolve(b) : defaultBackend());
  }

  private async ensureLocked(b: StoreBackend, key: string, wanted: WantedModel, o: EnsureOptions): Promise<EnsureResult> {
    const now = Date.now();
    let m = await this.readManifest(b, key);
    let files = m?.files ?? [];
    let downloaded = 0;
    let persisted: boolean | undefined;
    if (!m || !m.files.every((f) => f.complete)) {
      // What the source lists (the hub: sizes and LFS hashes; a folder URL: which files exist).
      const listed = await wanted.list(this.fetchFn, o.signal);
      files = await Promise.all(
        listed.map(async (f) => {
          const old = m?.files.find((x) => x.name === f.name && x.url === f.url);
          return old ?? { name: f.name, url: f.url, format: f.format, bytes: 0, size: f.size, expectedSha256: f.sha256, complete: false, state: { bytes: 0, chunks: 0, complete: false }, dir: `f-${await xxhash64(f.name)}` };
        }),
      );
    }
    m = { version: 1, id: wanted.id, files, createdAt: m?.createdAt ?? now, lastUsed: now };
    // Files stored by an earlier load are checked now (their stamps); those downloaded now were hashed as they came.
    const stored = new Set(files.filter((f) => f.complete));
    if (stored.size < files.length) {
      await this.writeManifest(b, key, m);
      await this.checkQuota(files, wanted.id, o.signal);
      persisted = await (globalThis as { navigator?: Navigator }).navigator?.storage?.persist?.().catch(() => false);
      downloaded = await this.download(b, key, m, o);
    }
    const checked = await this.check(b, key, m, stored, o);
    downloaded += checked.downloaded;
    m.lastUsed = Date.now();
    await this.writeManifest(b, key, m);
    return { source: { kind: 'files', files: checked.blobs }, model: publicModel(m), downloaded, verified: true, rehashed: checked.rehashed, persisted: persisted ?? (await persistedNow()) };
  }

  /** Downloads the files that are not complete, `concurrency` at a time; returns the bytes fetched. */
  private async download(b: StoreBackend, key: string, m: Manifest, o: EnsureOptions): Promise<number> {
    const progress = new Progress(m, 'download', o.onProgress);
    const start = m.files.reduce((n, f) => n + f.state.bytes, 0);
    let again = 0;
    let next = 0;
    let writing = Promise.resolve();
    const commit = (i: number) => (state: FileState) => {
      const f = m.files[i];
      Object.assign(f, { state, bytes: state.bytes, size: state.size ?? f.size, complete: state.complete, sha256: state.sha256 });
      // One manifest write at a time, in order.
      writing = writing.then(() => this.writeManifest(b, key, m));
      return writing;
    };
    const worker = async () => {
      for (let i = next++; i < m.files.length; i = next++) {
        const f = m.files[i];
        if (f.complete) continue;
        await downloadFile(b, { url: f.url, dir: `${key}/${f.dir}`, format: f.format, expectedSize: f.size }, f.state, {
          chunkBytes: this.chunkBytes,
          fetch: this.fetchFn,
          signal: o.signal,
          commit: commit(i),
          onBytes: (loaded) => progress.file(i, loaded, f.size ?? f.state.size),
        });
        await writing;
        again += await this.checkHash(b, key, m, i, false, o);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, m.files.length) }, worker));
    await writing;
    return m.files.reduce((n, f) => n + f.state.bytes, 0) - start + again;
  }

  /**
   * Every file as one Blob over its stored chunks. A file stored by an earlier load (`stored`) whose chunk stamps all
   * equal those recorded when they were written (or last checked) is taken as it is; another one is hashed (against
   * the hub's SHA-256, or the recorded one) and its stamps recorded again, or, when it does not match, downloaded
   * again once (checkHash). Returns the blobs, the bytes hashed and the bytes downloaded again.
   */
  private async check(b: StoreBackend, key: string, m: Manifest, stored: Set<ManifestFile>, o: EnsureOptions): Promise<{ blobs: { name: string; blob: Blob }[]; rehashed: number; downloaded: number }> {
    const progress = new Progress(m, 'verify', o.onProgress);
    let rehashed = 0;
    let downloaded = 0;
    const blobs: { name: string; blob: Blob }[] = [];
    for (const [i, f] of m.files.entries()) {
      const chunks = await this.readChunks(b, key, f);
      const { stamps } = chunks;
      let { blob } = chunks;
      const unchanged = stamps !== undefined && sameStamps(stamps, f.state.stamps) && blob.size === f.state.bytes;
      if (!stored.has(f) || unchanged) progress.skip(i);
      else {
        const whole = blob.size === f.state.bytes;
        const actual = whole ? await sha256(blob, (n) => progress.file(i, n, blob.size), o.signal) : 'missing';
        if (whole) rehashed += blob.size;
        if (actual === (f.expectedSha256 ?? f.sha256)) f.state = { ...f.state, ...(stamps ? { stamps } : {}) };
        else {
          downloaded += await this.checkHash(b, key, m, i, true, o, actual);
          ({ blob } = await this.readChunks(b, key, f));
        }
      }
      blobs.push({ name: f.name, blob });
    }
    return { blobs, rehashed, downloaded };
  }

  /**
   * After a download (or a failed check of stored bytes): the file must hash to the hub's SHA-256, or to what was
   * recorded. Else it is deleted and downloaded again, once; a second mismatch is an IntegrityError.
   */
  private async checkHash(b: StoreBackend, key: string, m: Manifest, i: number, stored: boolean, o: EnsureOptions, actual?: string): Promise<number> {
    const f = m.files[i];
    const expected = f.expectedSha256 ?? (stored ? f.sha256 : undefined);
    const got = actual ?? f.sha256;
    if (expected === undefined || got === expected) return 0;
    // Once more from the network.
    const recorded = f.expectedSha256 === undefined;
    resetFile(f);
    await b.remove(`${key}/${f.dir}`);
    await this.writeManifest(b, key, m);
    const progress = new Progress(m, 'download', o.onProgress);
    const state = await downloadFile(b, { url: f.url, dir: `${key}/${f.dir}`, format: f.format, expectedSize: f.size }, f.state, {
      chunkBytes: this.chunkBytes,
      fetch: this.fetchFn,
      signal: o.signal,
      commit: async (s) => {
        Object.assign(f, { state: s, bytes: s.bytes, size: s.size ?? f.size, complete: s.complete, sha256: s.sha256 });
        await this.writeManifest(b, key, m);
      },
      onBytes: (loaded) => progress.file(i, loaded, f.size ?? f.state.size),
    });
    if (state.sha256 !== expected) {
      await b.remove(`${key}/${f.dir}`);
      resetFile(f);
      await this.writeManifest(b, key, m);
      throw new IntegrityError(f.url, expected, state.sha256!, recorded);
    }
    return state.bytes;
  }

  /** Refuses a download that cannot fit before any byte is written (sizes from the source, else HEAD requests). */
  private async checkQuota(files: ManifestFile[], id: string, signal?: AbortSignal): Promise<void> {
    const storage = (globalThis as { navigator?: Navigator }).navigator?.storage;
    const estimate = await storage?.estimate?.().catch(() => undefined);
    if (!estimate?.quota) return;
    let needed = 0;
    for (const f of files) {
      if (f.complete) continue;
      let size = f.size ?? f.state.size;
      if (size === undefined) {
        // Only for this estimate: a HEAD's length is not what the download must match (encodings differ).
        const res = await this.fetchFn(f.url, { method: 'HEAD', signal }).catch(() => undefined);
        // Its (empty) body read to the end: left unread, Chromium ends the request as aborted.
        await res?.arrayBuffer().catch(() => {});
        const length = Number(res?.headers.get('content-length') ?? NaN);
        if (res?.ok && !res.headers.get('content-encoding') && Number.isFinite(length)) size = length;
      }
      needed += Math.max(0, (size ?? 0) - f.state.bytes);
    }
    const available = estimate.quota - (estimate.usage ?? 0);
    if (needed > available) throw new QuotaError(needed, available, id);
  }

  /**
   * A stored file as one Blob over its chunks (slices read from disk, never the whole file), with the chunks' stamps
   * (undefined when the backend keeps none, or a chunk is missing).
   */
  private async readChunks(b: StoreBackend, key: string, f: ManifestFile): Promise<{ blob: Blob; stamps?: StoreStamp[] }> {
    const paths = Array.from({ length: f.state.chunks }, (_, c) => `${key}/${f.dir}/${c}`);
    // The stamp after the read: a chunk rewritten in between shows a new stamp, and is hashed.
    const parts = await Promise.all(paths.map(async (p) => ({ blob: await b.read(p), stamp: b.stamp ? await b.stamp(p) : undefined })));
    const whole = parts.findIndex((p) => !p.blob);
    const blob = new Blob(parts.slice(0, whole < 0 ? parts.length : whole).map((p) => p.blob!));
    const stamps = whole < 0 && parts.every((p) => p.stamp) ? parts.map((p) => p.stamp!) : undefined;
    return { blob, ...(stamps ? { stamps } : {}) };
  }

  private async readManifest(b: StoreBackend, key: string): Promise<Manifest | undefined> {
    const blob = await b.read(`${key}/${MANIFEST}`);
    if (!blob) return undefined;
    try {
      const m = JSON.parse(await blob.text()) as Manifest;
      return m.version === 1 && Array.isArray(m.files) ? m : undefined;
    } catch {
      return undefined;
    }
  }

  private writeManifest(b: StoreBackend, key: string, m: Manifest): Promise<void> {
    return b.write(`${key}/${MANIFEST}`, JSON.stringify(m));
  }
}

/** This origin's model store. */
export const modelStore = new ModelStore();

// ---- helpers ----

/** Whether the chunks' stamps now are the ones recorded (same count, sizes and marks). */
function sameStamps(now: StoreStamp[], recorded: StoreStamp[] | undefined): boolean {
  return recorded !== undefined && now.length === recorded.length && now.every((s, i) => s.size === recorded[i].size && s.mark === recorded[i].mark);
}

/** Forgets a file's stored bytes (its chunks are removed apart): the next load downloads it again. */
function resetFile(f: ManifestFile): void {
  Object.assign(f, { state: { bytes: 0, chunks: 0, complete: false }, bytes: 0, complete: false, sha256: undefined });
}

/** navigator.storage.persisted(): whether this origin's storage is kept under storage pressure (false where unknown). */
async function persistedNow(): Promise<boolean> {
  return (await (globalThis as { navigator?: Navigator }).navigator?.storage?.persisted?.().catch(() => false)) ?? false;
}

/** A safe folder name for a model id. */
async function keyOf(id: string): Promise<string> {
  return `m-${await xxhash64(id)}`;
}

/** Runs `f` under this origin's lock for `key` (Web Locks), so two tabs never write the same model at once. */
async function withLock<T>(key: string, f: () => Promise<T>): Promise<T> {
  const locks = (globalThis as { navigator?: Navigator }).navigator?.locks;
  return locks ? (locks.request(`intab-model-store:${key}`, f) as Promise<T>) : f();
}

/** SHA-256 of a Blob, read a slice at a time. */
async function sha256(blob: Blob, onBytes: (n: number) => void, signal?: AbortSignal): Promise<string> {
  const h = await createSHA256();
  h.init();
  const step = 8 << 20;
  for (let at = 0; at < blob.size; at += step) {
    signal?.throwIfAborted();
    h.update(new Uint8Array(await blob.slice(at, at + step).arrayBuffer()));
    onBytes(Math.min(blob.size, at + step));
  }
  return h.digest('hex');
}

function publicModel(m: Manifest): StoredModel {
  return {
    id: m.id,
    files: m.files.map(({ name, url, bytes, size, sha256, expectedSha256, complete }) => ({ name, url, bytes, ...(size !== undefined ? { size } : {}), ...(sha256 ? { sha256 } : {}), ...(expectedSha256 ? { expectedSha256 } : {}), complete })),
    bytes: m.files.reduce((n, f) => n + f.state.bytes, 0),
    complete: m.files.every((f) => f.complete),
    createdAt: m.createdAt,
    lastUsed: m.lastUsed,
  };
}
