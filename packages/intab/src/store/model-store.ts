// The model store: a model's files (a GGUF and its splits, or a Hugging Face folder's config, tokenizer and
// safetensors shards) kept in the origin's storage by source, so the next page load reads them from disk instead of
// the network. Every file's SHA-256 is computed as it streams in, checked against the hub's LFS hash where the source
// is the hub, else recorded and checked again on every later load; a mismatch downloads the file again once, then
// is an IntegrityError. Downloads resume from what is stored, run a few files at a time, report bytes, speed and ETA,
// and are refused before a byte is written when the model cannot fit (QuotaError). Two tabs that load the same
// model wait for each other (Web Locks) instead of downloading it twice. What a load gets is Blobs over the stored
// chunks: the loader slices them, so a model never sits whole in memory.

import { createSHA256, xxhash64 } from 'hash-wasm';
import type { LoadProgress, ModelSource } from '@intab/engine/contract';
import { ModelSourceError } from '@intab/engine/errors';
import { IntegrityError, QuotaError } from '../errors.ts';
import { defaultBackend, type StoreBackend } from './backend.ts';
import { downloadFile, type FileFormat, type FileState } from './download.ts';

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

/** Progress of ensure(): the download (bytes, speed, ETA), or the check of a stored model's hashes. */
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
  /** Whether every file's hash was checked against the stored bytes (and the hub's, where known). */
  verified: boolean;
  /** The answer to navigator.storage.persist(), asked before the first download (undefined: not asked). */
  persisted?: boolean;
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

/** The manifest of a stored model (JSON beside its chunks, which lie in `<model>/<file's dir>/<index>`). */
interface Manifest {
  version: 1;
  id: string;
  files: (StoredFile & { state: FileState; format: FileFormat; dir: string })[];
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
   * ModelSource of Blobs over the stored chunks. Sources other than URLs (local Files) are returned as they are.
   * @example
   * const { source, downloaded } = await modelStore.ensure({ kind: 'url', url: 'https://host/model.gguf' }, { onProgress });
   */
  async ensure(source: ModelSource, o: EnsureOptions = {}): Promise<EnsureResult> {
    const b = await this.backend();
    const wanted = describeSource(source);
    if (!b || !wanted) return { source, model: { id: '', files: [], bytes: 0, complete: true, createdAt: 0, lastUsed: 0 }, downloaded: 0, verified: false };
    const key = await keyOf(wanted.id);
    return withLock(key, () => this.ensureLocked(b, key, wanted, o));
  }

  /**
   * A stored, complete model by its id (its hashes checked, as ensure() does), without touching the network: how a
   * Hugging Face id loads offline (its listing needs the hub). Undefined when it is not stored whole.
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

  // ---- internals ----

  private backend(): Promise<StoreBackend | undefined> {
    const b = this.options.backend;
    return (this.backendPromise ??= typeof b === 'function' ? b() : b ? Promise.resolve(b) : defaultBackend());
  }

  private async ensureLocked(b: StoreBackend, key: string, wanted: WantedModel, o: EnsureOptions): Promise<EnsureResult> {
    const now = Date.now();
    let m = await this.readManifest(b, key);
    let files = m?.files ?? [];
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
    await this.writeManifest(b, key, m);
    let downloaded = 0;
    let persisted: boolean | undefined;
    // Files stored by an earlier load are checked against their bytes now; those downloaded now were hashed as they came.
    const stored = new Set(files.filter((f) => f.complete));
    if (stored.size < files.length) {
      await this.checkQuota(files, wanted.id, o.signal);
      persisted = await (globalThis as { navigator?: Navigator }).navigator?.storage?.persist?.().catch(() => false);
      downloaded = await this.download(b, key, m, o);
    }
    downloaded += await this.verify(b, key, m, stored, o);
    m.lastUsed = Date.now();
    await this.writeManifest(b, key, m);
    const blobs = await Promise.all(m.files.map(async (f) => ({ name: f.name, blob: await this.blobOf(b, key, f) })));
    return { source: { kind: 'files', files: blobs }, model: publicModel(m), downloaded, verified: true, ...(persisted !== undefined ? { persisted } : {}) };
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
   * Checks the SHA-256 of the `stored` files against their bytes on disk (and the hub's); a bad file is downloaded
   * again once. Returns the bytes downloaded again.
   */
  private async verify(b: StoreBackend, key: string, m: Manifest, stored: Set<Manifest['files'][number]>, o: EnsureOptions): Promise<number> {
    const progress = new Progress(m, 'verify', o.onProgress);
    let again = 0;
    for (let i = 0; i < m.files.length; i++) {
      const f = m.files[i];
      if (!stored.has(f)) continue;
      const blob = await this.blobOf(b, key, f);
      const actual = await sha256(blob, (loaded) => progress.file(i, loaded, blob.size), o.signal);
      if (actual === f.sha256 && blob.size === f.state.bytes) continue;
      again += await this.checkHash(b, key, m, i, true, o, blob.size === f.state.bytes ? actual : 'missing');
    }
    return again;
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
    Object.assign(f, { state: { bytes: 0, chunks: 0, complete: false }, bytes: 0, complete: false, sha256: undefined });
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
      Object.assign(f, { state: { bytes: 0, chunks: 0, complete: false }, bytes: 0, complete: false, sha256: undefined });
      await this.writeManifest(b, key, m);
      throw new IntegrityError(f.url, expected, state.sha256!, recorded);
    }
    return state.bytes;
  }

  /** Refuses a download that cannot fit before any byte is written (sizes from the source, else HEAD requests). */
  private async checkQuota(files: Manifest['files'], id: string, signal?: AbortSignal): Promise<void> {
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
        const length = Number(res?.headers.get('content-length') ?? NaN);
        if (res?.ok && !res.headers.get('content-encoding') && Number.isFinite(length)) size = length;
      }
      needed += Math.max(0, (size ?? 0) - f.state.bytes);
    }
    const available = estimate.quota - (estimate.usage ?? 0);
    if (needed > available) throw new QuotaError(needed, available, id);
  }

  /** A stored file as one Blob over its chunks (slices read from disk, never the whole file). */
  private async blobOf(b: StoreBackend, key: string, f: Manifest['files'][number]): Promise<Blob> {
    const parts: Blob[] = [];
    for (let c = 0; c < f.state.chunks; c++) {
      const part = await b.read(`${key}/${f.dir}/${c}`);
      if (!part) return new Blob(parts);
      parts.push(part);
    }
    return new Blob(parts);
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

// ---- sources ----

interface ListedFile {
  name: string;
  url: string;
  format: FileFormat;
  size?: number;
  sha256?: string;
}

interface WantedModel {
  id: string;
  /** The files to store, with what the source says of them. */
  list(fetchFn: typeof fetch, signal?: AbortSignal): Promise<ListedFile[]>;
}

const HF_RESOLVE = /^(https?:\/\/[^/]+)\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/;
const FOLDER_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors.index.json', 'model.safetensors'];

const formatOf = (name: string): FileFormat => (/\.gguf$/i.test(name) ? 'gguf' : /\.safetensors$/i.test(name) ? 'safetensors' : /\.json$/i.test(name) ? 'json' : 'any');
const baseName = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'model');

/** What to store for a source (undefined: nothing to store, e.g. local Files). */
function describeSource(source: ModelSource): WantedModel | undefined {
  if (source.kind === 'files') return undefined;
  if (source.kind === 'hf-urls') {
    const entries = Object.entries(source.files).sort(([a], [b]) => a.localeCompare(b));
    const hubs = entries.map(([, u]) => HF_RESOLVE.exec(u));
    const same = hubs.every((h) => h && h[1] === hubs[0]![1] && h[2] === hubs[0]![2] && h[3] === hubs[0]![3]);
    const id = same && hubs[0] ? `${hubs[0][2]}@${decodeURIComponent(hubs[0][3])}` : entries.map(([, u]) => u).join(' ');
    return { id, list: (f, s) => withHubFacts(entries.map(([name, url]) => ({ name, url, format: formatOf(name) })), f, s) };
  }
  if (source.kind !== 'url') throw new ModelSourceError(JSON.stringify(source), "its kind is not 'url', 'hf-urls' or 'files'");
  const url = source.url;
  const hub = HF_RESOLVE.exec(url);
  const id = hub ? `${hub[2]}@${decodeURIComponent(hub[3])}/${decodeURIComponent(hub[4])}` : url;
  if (url.endsWith('/')) {
    // A folder: the files of a Hugging Face folder that exist there (and the shards its index names).
    return {
      id,
      async list(fetchFn, signal) {
        const found: ListedFile[] = [];
        for (const name of FOLDER_FILES) {
          const u = new URL(name, url).href;
          const res = await fetchFn(u, { method: 'HEAD', signal }).catch(() => undefined);
          if (res?.ok) found.push({ name, url: u, format: formatOf(name) });
        }
        const index = found.find((f) => f.name === 'model.safetensors.index.json');
        if (index) {
          const json = (await (await fetchFn(index.url, { signal })).json()) as { weight_map?: Record<string, string> };
          for (const shard of new Set(Object.values(json.weight_map ?? {}))) found.push({ name: shard, url: new URL(shard, url).href, format: 'safetensors' });
        }
        if (!found.some((f) => f.name === 'config.json')) throw new ModelSourceError(url, 'the folder has no config.json: give a GGUF file URL or a Hugging Face folder');
        return withHubFacts(found, fetchFn, signal);
      },
    };
  }
  // One GGUF, or the first of its splits (model-00001-of-00003.gguf): all of them (the same query on each).
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(baseName(url));
  const names = m ? Array.from({ length: Number(m[3]) }, (_, i) => `${m[1]}-${String(i + 1).padStart(5, '0')}-of-${m[3]}.gguf`) : [baseName(url)];
  const urlOf = (name: string) => {
    if (!m) return url;
    const u = new URL(encodeURIComponent(name), url);
    u.search = new URL(url).search;
    return u.href;
  };
  return { id, list: (f, s) => withHubFacts(names.map((name) => ({ name, url: urlOf(name), format: formatOf(name) })), f, s) };
}

/** The hub's size and LFS SHA-256 of each file, when the files are a hub repository's (one listing request). */
async function withHubFacts(files: ListedFile[], fetchFn: typeof fetch, signal?: AbortSignal): Promise<ListedFile[]> {
  const hub = HF_RESOLVE.exec(files[0]?.url ?? '');
  if (!hub || !files.every((f) => f.url.startsWith(`${hub[1]}/${hub[2]}/resolve/${hub[3]}/`))) return files;
  const [, origin, repo, revision] = hub;
  let entries: { path: string; size?: number; lfs?: { oid?: string; sha256?: string; size?: number } }[] = [];
  try {
    const res = await fetchFn(`${origin}/api/models/${repo}/tree/${revision}`, { signal });
    if (res.ok) entries = await res.json();
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
  }
  const base = new URL(`${origin}/${repo}/resolve/${revision}/`).pathname;
  return files.map((f) => {
    const path = decodeURIComponent(new URL(f.url).pathname.slice(base.length));
    const e = Array.isArray(entries) ? entries.find((x) => x.path === path) : undefined;
    if (!e) return f;
    const sha = e.lfs?.oid ?? e.lfs?.sha256;
    return { ...f, size: e.lfs?.size ?? e.size ?? f.size, ...(sha && /^[0-9a-f]{64}$/.test(sha) ? { sha256: sha } : {}) };
  });
}

// ---- helpers ----

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

/** Progress over a model's files: totals, and for downloads a speed over the last seconds and an ETA. */
class Progress {
  private readonly loaded: number[];
  private readonly totals: number[];
  private readonly samples: { t: number; bytes: number }[] = [];
  private last = 0;

  constructor(
    private readonly m: Manifest,
    private readonly phase: 'download' | 'verify',
    private readonly report?: (p: StoreProgress) => void,
  ) {
    this.loaded = m.files.map((f) => (phase === 'download' ? f.state.bytes : 0));
    this.totals = m.files.map((f) => f.size ?? f.state.size ?? f.state.bytes);
  }

  file(i: number, loaded: number, total: number | undefined): void {
    this.loaded[i] = loaded;
    if (total !== undefined) this.totals[i] = total;
    if (!this.report) return;
    const now = performance.now();
    const sum = this.loaded.reduce((a, b) => a + b, 0);
    const total_ = this.totals.reduce((a, b, j) => a + Math.max(b, this.loaded[j]), 0);
    if (now - this.last < 100 && sum < total_) return; // at most ten reports a second
    this.last = now;
    const p: StoreProgress = {
      phase: this.phase,
      model: this.m.id,
      loaded: sum,
      total: total_,
      files: this.m.files.map((f, j) => ({ name: f.name, loaded: this.loaded[j], total: Math.max(this.totals[j], this.loaded[j]) })),
    };
    if (this.phase === 'download') {
      this.samples.push({ t: now, bytes: sum });
      while (this.samples.length > 2 && now - this.samples[0].t > 3000) this.samples.shift();
      const first = this.samples[0];
      const dt = (now - first.t) / 1000;
      if (dt > 0.2) {
        p.bytesPerSecond = (sum - first.bytes) / dt;
        if (p.bytesPerSecond > 0) p.etaSeconds = (total_ - sum) / p.bytesPerSecond;
      }
    }
    this.report(p);
  }
}
