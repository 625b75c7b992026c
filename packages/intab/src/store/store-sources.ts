// What the model store keeps for a ModelSource: the model's id in the store, and the files to download with what the
// source says of them (sizes, and the hub's LFS SHA-256 where the files are a hub repository's). A folder URL is
// listed by the engine's listModelFolder, the same function the worker's loader uses, so both ask for the same files
// (and only for files that exist in the usual layouts); every request goes through modelFetch, so a failure is the
// same typed error with the store or without it.

import type { ModelSource } from '@intab/engine/contract';
import { ModelSourceError } from '@intab/engine/errors';
import { hubFileUrl, hubRef, listHubFiles, listModelFolder, modelFetch } from '@intab/engine/model-fetch';
import type { FileFormat } from './download.ts';

/** One file to store, with what the source says of it. */
export interface ListedFile {
  name: string;
  url: string;
  format: FileFormat;
  size?: number;
  sha256?: string;
}

/** A model to store: its id, and how to list its files (asked only when something is not stored yet). */
export interface WantedModel {
  id: string;
  list(fetchFn: typeof fetch, signal?: AbortSignal): Promise<ListedFile[]>;
}

const formatOf = (name: string): FileFormat => (/\.gguf$/i.test(name) ? 'gguf' : /\.safetensors$/i.test(name) ? 'safetensors' : /\.json$/i.test(name) ? 'json' : 'any');
const baseName = (url: string) => decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? 'model');

/** What to store for a source (undefined: nothing to store, e.g. local Files). */
export function describeSource(source: ModelSource): WantedModel | undefined {
  if (source.kind === 'files') return undefined;
  if (source.kind === 'hf-urls') {
    const entries = Object.entries(source.files).sort(([a], [b]) => a.localeCompare(b));
    const hubs = entries.map(([, u]) => hubRef(u));
    const first = hubs[0];
    const same = first && hubs.every((h) => h && h.origin === first.origin && h.repo === first.repo && h.revision === first.revision);
    const id = same ? `${first.repo}@${decodeURIComponent(first.revision)}` : entries.map(([, u]) => u).join(' ');
    return { id, list: (f, s) => withHubFacts(entries.map(([name, url]) => ({ name, url, format: formatOf(name) })), f, s) };
  }
  if (source.kind !== 'url') throw new ModelSourceError(JSON.stringify(source), "its kind is not 'url', 'hf-urls' or 'files'");
  const url = source.url;
  const hub = hubRef(url);
  const id = hub ? `${hub.repo}@${decodeURIComponent(hub.revision)}/${decodeURIComponent(hub.path)}` : url;
  if (url.endsWith('/')) return { id, list: (f, s) => listFolder(url, f, s) };
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

/** A folder's files as the worker's loader lists them; each file asked for is probed with a one-byte range (its size). */
async function listFolder(url: string, fetchFn: typeof fetch, signal?: AbortSignal): Promise<ListedFile[]> {
  const checked = modelFetch(fetchFn);
  const sizeOf = async (u: string): Promise<number | undefined> => {
    const res = await checked(u, { headers: { Range: 'bytes=0-0' }, signal });
    const total = /\/(\d+)\s*$/.exec(res.headers.get('content-range') ?? '')?.[1];
    const length = res.headers.get('content-encoding') ? null : res.headers.get('content-length');
    // Read to its end (one byte) rather than cancelled; a server that ignores ranges sends the whole file: cancel that.
    if (res.status === 206) await res.arrayBuffer().catch(() => {});
    else await res.body?.cancel().catch(() => {});
    return total !== undefined ? Number(total) : res.status === 200 && length !== null ? Number(length) : undefined;
  };
  const { files, probed } = await listModelFolder(url, sizeOf, { fetch: fetchFn, signal });
  return files.map((f) => {
    const size = f.size ?? probed.get(f.name);
    return { name: f.name, url: f.url, format: formatOf(f.name), ...(size !== undefined ? { size } : {}), ...(f.sha256 ? { sha256: f.sha256 } : {}) };
  });
}

/**
 * The hub's size and LFS SHA-256 of each file, when the files are one hub repository's (one listing request). Facts
 * are optional: a listing that fails leaves the files as they are (their download says what is wrong).
 */
async function withHubFacts(files: ListedFile[], fetchFn: typeof fetch, signal?: AbortSignal): Promise<ListedFile[]> {
  const hub = hubRef(files[0]?.url ?? '');
  if (!hub) return files;
  const root = hubFileUrl(hub, '');
  if (!files.every((f) => f.url.startsWith(root))) return files;
  const entries = await listHubFiles(hub, '', { fetch: fetchFn, signal }).catch((err) => {
    if (signal?.aborted) throw signal.reason;
    return undefined;
  });
  if (!entries) return files;
  const byPath = new Map(entries.map((e) => [e.path, e]));
  return files.map((f) => {
    const e = byPath.get(decodeURIComponent(f.url.slice(root.length).split(/[?#]/)[0]));
    if (!e) return f;
    return { ...f, size: e.size ?? f.size, ...(e.sha256 ? { sha256: e.sha256 } : {}) };
  });
}
