// Where the model store keeps its files: the Origin Private File System, or the Cache API where the OPFS is
// missing. Both are seen as a tree of small immutable files written whole (a manifest, and model files cut in
// chunks): a file is either entirely there or absent, so a tab closed mid-write never leaves a torn file, and a
// download resumes from its last whole chunk. Reads return Blobs, which the loader slices: nothing is read into
// memory whole. Every file has a stamp (its size, and a mark that changes whenever it is written: the OPFS File's
// lastModified, or a mark the Cache API backend writes beside the bytes), read without reading the bytes: the model
// store keeps the stamps of the chunks it verified, and hashes a file again only when a stamp changed.

/** What a stored file's record says of it, without reading its bytes: any rewrite changes `mark`. */
export interface StoreStamp {
  size: number;
  mark: string;
}

/** The store's files, by slash-separated path. */
export interface StoreBackend {
  readonly kind: 'opfs' | 'cache';
  /** The file at `path`, or undefined. */
  read(path: string): Promise<Blob | undefined>;
  /** Writes the file whole (replacing it once complete). */
  write(path: string, data: Uint8Array | string): Promise<void>;
  /**
   * The file's stamp, or undefined when it is missing. Optional: with a backend that has none, the model store hashes
   * every stored file again at each load.
   */
  stamp?(path: string): Promise<StoreStamp | undefined>;
  /** Removes a file, or a folder and everything under it. */
  remove(path: string): Promise<void>;
  /** The names directly under a folder ([] when it does not exist). */
  list(folder: string): Promise<string[]>;
}

const ROOT = ['intab', 'models'];

/** The OPFS backend, or undefined where the OPFS is missing. */
export async function opfsBackend(): Promise<StoreBackend | undefined> {
  const storage = (globalThis as { navigator?: Navigator }).navigator?.storage;
  if (typeof storage?.getDirectory !== 'function') return undefined;
  let root: FileSystemDirectoryHandle;
  try {
    root = await storage.getDirectory();
    for (const name of ROOT) root = await root.getDirectoryHandle(name, { create: true });
  } catch {
    return undefined;
  }
  const folder = async (parts: string[], create: boolean): Promise<FileSystemDirectoryHandle | undefined> => {
    let dir = root;
    try {
      for (const p of parts) dir = await dir.getDirectoryHandle(p, { create });
      return dir;
    } catch {
      return undefined;
    }
  };
  const split = (path: string) => {
    const parts = path.split('/').filter(Boolean);
    return { dir: parts.slice(0, -1), name: parts[parts.length - 1] };
  };
  const read = async (path: string): Promise<File | undefined> => {
    const { dir, name } = split(path);
    const d = await folder(dir, false);
    try {
      return d ? await (await d.getFileHandle(name)).getFile() : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    kind: 'opfs',
    read,
    async write(path, data) {
      const { dir, name } = split(path);
      const d = (await folder(dir, true))!;
      const w = await (await d.getFileHandle(name, { create: true })).createWritable();
      try {
        await w.write(data as Uint8Array<ArrayBuffer> | string);
        await w.close();
      } catch (err) {
        await w.abort().catch(() => {});
        throw err;
      }
    },
    async stamp(path) {
      // The file system's own record of the file's last write (getFile reads no bytes).
      const file = await read(path);
      return file && { size: file.size, mark: String(file.lastModified) };
    },
    async remove(path) {
      const { dir, name } = split(path);
      const d = await folder(dir, false);
      await d?.removeEntry(name, { recursive: true }).catch(() => {});
    },
    async list(path) {
      const d = await folder(path.split('/').filter(Boolean), false);
      if (!d) return [];
      const out: string[] = [];
      for await (const name of (d as unknown as { keys(): AsyncIterable<string> }).keys()) out.push(name);
      return out;
    },
  };
}

/** The Cache API backend (one cache; a file is one cached response), or undefined where caches are missing. */
export async function cacheBackend(name = 'intab-models'): Promise<StoreBackend | undefined> {
  const caches = (globalThis as { caches?: CacheStorage }).caches;
  if (!caches) return undefined;
  let cache: Cache;
  try {
    cache = await caches.open(name);
  } catch {
    return undefined;
  }
  // Synthetic same-scheme URLs (never fetched) that keep the paths apart from the app's own cached requests.
  const url = (path: string) => `https://intab.invalid/${path.split('/').filter(Boolean).map(encodeURIComponent).join('/')}`;
  const pathOf = (u: string) => decodeURIComponent(new URL(u).pathname.slice(1));
  // The Cache API keeps no modification time of its own: each write stores a fresh mark in a header of the response.
  const MARK = 'x-intab-mark';
  return {
    kind: 'cache',
    async read(path) {
      const r = await cache.match(url(path));
      return r ? r.blob() : undefined;
    },
    async write(path, data) {
      const size = typeof data === 'string' ? new TextEncoder().encode(data).byteLength : data.byteLength;
      await cache.put(url(path), new Response(data as BodyInit, { headers: { 'content-type': 'application/octet-stream', [MARK]: `${size}:${crypto.randomUUID()}` } }));
    },
    async stamp(path) {
      // The headers only: the body stays unread. An entry without a mark (written before marks) matches no record.
      const r = await cache.match(url(path));
      if (!r) return undefined;
      const mark = r.headers.get(MARK) ?? '';
      return { size: mark ? Number(mark.split(':')[0]) : NaN, mark };
    },
    async remove(path) {
      const prefix = `${path.split('/').filter(Boolean).join('/')}`;
      for (const req of await cache.keys()) {
        const p = pathOf(req.url);
        if (p === prefix || p.startsWith(`${prefix}/`)) await cache.delete(req);
      }
    },
    async list(path) {
      const prefix = path.split('/').filter(Boolean).join('/');
      const base = prefix ? `${prefix}/` : '';
      const names = new Set<string>();
      for (const req of await cache.keys()) {
        const p = pathOf(req.url);
        if (p.startsWith(base)) names.add(p.slice(base.length).split('/')[0]);
      }
      return [...names];
    },
  };
}

/** The store's backend: the OPFS, else the Cache API; undefined where neither exists (the model is then streamed). */
export async function defaultBackend(): Promise<StoreBackend | undefined> {
  return (await opfsBackend()) ?? (await cacheBackend());
}
