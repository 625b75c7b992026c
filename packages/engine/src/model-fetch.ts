// Fetching a model's files over HTTP, one way for every path that does it: the worker's loader without the model
// store (open-model.ts), the model store's listings and downloads, and a Hugging Face id's listing on the page. A
// request that fails is one typed error per situation, whichever path asked (the README's "Errors"); the Hugging Face
// hub has one client here (its file URLs, its tree API, its errors); a folder URL is listed by asking only for the
// files its layout implies, so that a normal load gets no 404 (each one is a red line in the browser's console, a
// worker's included). Light on purpose: the page imports it ('@intab/engine/model-fetch').

import { DownloadError, ModelSourceError } from './errors.ts';

// ---- one error per situation ----

/** Errors that say "this file is not there" (404/410, or an HTML page in its place): optional files count as absent. */
const absent = new WeakSet<object>();

const crossOrigin = (url: string): boolean => {
  const here = (globalThis as { location?: { origin?: string } }).location?.origin;
  try {
    return here !== undefined && new URL(url).origin !== here;
  } catch {
    return false;
  }
};

/** What a failed fetch said, e.g. 'TypeError: Failed to fetch', with Node's cause (ECONNREFUSED) when there is one. */
function detail(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } } | undefined;
  const inner = e?.cause?.code ?? e?.cause?.message;
  return `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}${inner ? ` (${inner})` : ''}`;
}

/** No answer at all: offline, a server that is down or refuses the connection, or a cross-origin server without CORS. */
export function unreachableError(url: string, cause: unknown): DownloadError {
  return new DownloadError(
    url,
    `the network request got no answer (${detail(cause)}): the network is unreachable or the server is down` +
      `${crossOrigin(url) ? ", or the server does not allow this page's origin (CORS)" : ''}. Check the connection (offline?) and that the server is up, then load the model again`,
    { cause },
  );
}

/**
 * An HTTP error answer: 404/410 (the URL is wrong) and 401/403 (credentials) are the source's fault, a
 * ModelSourceError; any other status (5xx, 429, ...) is a DownloadError: the URL may be right, try again later.
 */
export function httpError(url: string, status: number): ModelSourceError {
  if (status === 404 || status === 410) {
    const err = new ModelSourceError(url, `the server answered HTTP ${status} (${status === 404 ? 'not found' : 'gone'}): check the URL (for a Hugging Face file: the model id, the revision and the file name)`, { status });
    absent.add(err);
    return err;
  }
  if (status === 401 || status === 403) {
    return new ModelSourceError(url, `the server answered HTTP ${status}: the file needs credentials this page does not send (a gated or private Hugging Face repository?): use a public copy, or serve the file yourself`, { status });
  }
  const advice = status >= 500 || status === 429 ? 'the server failed or is busy: try again later' : 'the server refused the request: check the URL, or try again later';
  return new DownloadError(url, `the server answered HTTP ${status}: ${advice}`, { status });
}

/** A web page where a model file should be: a mistyped path on a dev server (Vite's index.html), a login or error page. */
export function htmlError(url: string, status: number): ModelSourceError {
  const err = new ModelSourceError(
    url,
    'the server answered an HTML page, not the file: the URL is probably wrong (a dev server such as Vite answers a missing file with its index.html; ' +
      'a host may answer with a login or error page). Check the URL, and that the file is in the folder the server serves (Vite: public/)',
    { status },
  );
  absent.add(err);
  return err;
}

/** A folder URL without a config.json (the server answers 404 for it, or the hub lists none): not a model folder. */
export function noConfigError(folder: string, why: string, cause?: ModelSourceError): ModelSourceError {
  return new ModelSourceError(
    folder,
    `the folder has no config.json (${why}): a folder URL must be a Hugging Face model folder (config.json, model.safetensors, tokenizer.json) ` +
      "or an ONNX folder (config.json, onnx/model.onnx); for a GGUF model give the file's URL",
    { ...(cause?.status !== undefined ? { status: cause.status } : {}), ...(cause ? { cause } : {}) },
  );
}

/** A folder with a config.json and none of the weights intab reads. */
export function noWeightsError(folder: string): ModelSourceError {
  return new ModelSourceError(folder, 'the folder has a config.json but no weights (none of model.safetensors, model.safetensors.index.json and onnx/model.onnx): intab loads safetensors checkpoints, ONNX folders and GGUF files');
}

/** Whether `err` says the file is not there (HTTP 404/410, or an HTML page in its place). */
export function isAbsent(err: unknown): boolean {
  return typeof err === 'object' && err !== null && absent.has(err);
}

/**
 * A `fetch` whose failures are the situation's typed error: no answer is `unreachableError`, an HTTP error answer is
 * `httpError` (416 passes: an empty file's range), an HTML page `htmlError`. An aborted request rejects with the
 * signal's reason.
 * @example
 * const res = await modelFetch()(url, { headers: { Range: 'bytes=0-0' }, signal }); // ok, or a typed error
 */
export function modelFetch(fetchFn: typeof fetch = (input, init) => globalThis.fetch(input, init)): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    let res: Response;
    try {
      res = await fetchFn(input, init);
    } catch (err) {
      if (init?.signal?.aborted) throw init.signal.reason;
      throw unreachableError(url, err);
    }
    if (res.ok || res.status === 416) {
      if (!/^\s*text\/html/i.test(res.headers.get('content-type') ?? '')) return res;
      await res.body?.cancel().catch(() => {});
      throw htmlError(url, res.status);
    }
    await res.body?.cancel().catch(() => {});
    throw httpError(url, res.status);
  };
}

// ---- the Hugging Face hub: one client ----

/** The hub a Hugging Face id names by default. */
export const HUB_URL = 'https://huggingface.co';

/**
 * A relative path as URL path segments, each encoded.
 * @example
 * encodePath('sub dir/x.json'); // 'sub%20dir/x.json'
 */
export const encodePath = (p: string): string => p.split('/').map(encodeURIComponent).join('/');

/** A hub repository at a revision, its parts as they appear in URLs (encoded). */
export interface HubRepo {
  /** The hub: 'https://huggingface.co', or a mirror serving the same paths. */
  origin: string;
  /** 'org/name'. */
  repo: string;
  /** A branch, tag or commit. */
  revision: string;
}

/**
 * The repository a Hugging Face id names, at `revision` [main] on `hubUrl` [https://huggingface.co].
 * @example
 * hubRepo('HuggingFaceTB/SmolLM2-135M-Instruct'); // { origin: 'https://huggingface.co', repo: 'HuggingFaceTB/SmolLM2-135M-Instruct', revision: 'main' }
 */
export function hubRepo(id: string, o: { hubUrl?: string; revision?: string } = {}): HubRepo {
  return { origin: (o.hubUrl ?? HUB_URL).replace(/\/+$/, ''), repo: encodePath(id), revision: encodeURIComponent(o.revision ?? 'main') };
}

/**
 * The URL of a file of a hub repository, the one way they are written: `{hub}/{org}/{name}/resolve/{revision}/{path}`
 * (a path of '' gives the repository's folder URL, ending in '/').
 * @example
 * hubFileUrl(hubRepo('org/name', { revision: 'v1.0' }), 'sub dir/x.gguf'); // 'https://huggingface.co/org/name/resolve/v1.0/sub%20dir/x.gguf'
 */
export function hubFileUrl(r: HubRepo, path: string): string {
  return `${r.origin}/${r.repo}/resolve/${r.revision}/${encodePath(path)}`;
}

/** `https://host/org/name/resolve/rev/path`: a hub (or mirror) file or folder URL. */
const HF_RESOLVE = /^(https?:\/\/[^/]+)\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.*)$/;

/** The repository behind a hub `resolve/` URL (its parts as they appear in the URL, still encoded; `path` keeps a query), or undefined. */
export function hubRef(url: string): (HubRepo & { path: string }) | undefined {
  const m = HF_RESOLVE.exec(url);
  return m ? { origin: m[1], repo: m[2], revision: m[3], path: m[4] } : undefined;
}

/** One file of a hub listing: its path in the repository, size and (LFS files) SHA-256. */
export interface HubEntry {
  path: string;
  size?: number;
  sha256?: string;
}

/** Errors that say the hub answered, but with no listing (an HTTP error, or a body that is none): see hubAnswered. */
const answered = new WeakSet<object>();

/**
 * A hub API request answered with an HTTP error: 401/403/404 are the repository's (a wrong id or revision, a gated or
 * private repository), a ModelSourceError naming it; any other status is httpError's (5xx and 429: try again later).
 */
function hubError(r: HubRepo, api: string, status: number): ModelSourceError {
  const err =
    status === 401 || status === 403 || status === 404
      ? new ModelSourceError(decodeURIComponent(r.repo), `the hub answered HTTP ${status} for ${api}: check the id and revision (gated and private repositories cannot be loaded without credentials)`, { status })
      : httpError(api, status);
  answered.add(err);
  return err;
}

/** The hub answered with something that is no file listing: a page, or JSON of another shape. */
function notListingError(r: HubRepo, api: string, what: string): ModelSourceError {
  const err = new ModelSourceError(decodeURIComponent(r.repo), `the hub's answer to ${api} is not a file listing (${what}): check hubUrl (a Hugging Face hub, or a mirror that serves its API)`);
  answered.add(err);
  return err;
}

/** Whether `err` came from a hub that answered without a listing (listHubFiles), as opposed to no answer or an abort. */
export function hubAnswered(err: unknown): boolean {
  return typeof err === 'object' && err !== null && answered.has(err);
}

/** Pages of a listing followed at most (the hub pages a recursive listing by 1,000 entries). */
const MAX_LISTING_PAGES = 100;

/**
 * Every file of a hub repository under `path` (every level), from the hub's tree API, its pages followed (`Link:
 * rel="next"`): the one way the repository is listed, for a Hugging Face id, a folder URL and the model store's hashes.
 * An HTTP error is hubError's typed error, an answer that is no listing a ModelSourceError (both: hubAnswered), no
 * answer at all unreachableError; an abort rejects with the signal's reason.
 * @example
 * const files = await listHubFiles(hubRepo('HuggingFaceTB/SmolLM2-135M-Instruct'), ''); // [{ path: 'config.json', size: 861 }, ...]
 */
export async function listHubFiles(r: HubRepo, path: string, o: { fetch?: typeof fetch; signal?: AbortSignal } = {}): Promise<HubEntry[]> {
  const fetchFn = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const dir = path.replace(/\/+$/, '');
  let api: string | undefined = `${r.origin}/api/models/${r.repo}/tree/${r.revision}${dir ? `/${encodePath(dir)}` : ''}?recursive=true`;
  const out: HubEntry[] = [];
  for (let page = 0; api && page < MAX_LISTING_PAGES; page++) {
    let res: Response;
    try {
      res = await fetchFn(api, { signal: o.signal });
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason;
      throw unreachableError(api, err);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw hubError(r, api, res.status);
    }
    const entries = (await res.json().catch(() => undefined)) as { type?: string; path?: string; size?: number; lfs?: { oid?: string; sha256?: string; size?: number } }[] | undefined;
    if (!Array.isArray(entries)) throw notListingError(r, api, `${res.headers.get('content-type') ?? 'no content type'}, not a JSON array`);
    for (const e of entries) {
      if (typeof e?.path !== 'string' || e.type === 'directory') continue;
      const sha = e.lfs?.oid ?? e.lfs?.sha256;
      out.push({ path: e.path, size: e.lfs?.size ?? e.size, ...(sha && /^[0-9a-f]{64}$/.test(sha) ? { sha256: sha } : {}) });
    }
    const next = /<([^>]+)>\s*;\s*rel="?next"?/.exec(res.headers.get('link') ?? '')?.[1];
    api = next ? new URL(next, api).href : undefined;
  }
  return out;
}

// ---- which files of a folder a load reads ----

/** The configuration files of a Hugging Face folder that a load reads, when present (tokenizer_config.json and
 * generation_config.json only beside a tokenizer.json: nothing else reads them). */
export const FOLDER_CONFIG_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'] as const;

/** A folder's files to load: a safetensors checkpoint (one file, or an index and its shards) or an ONNX graph. */
export interface PickedFolder {
  kind: 'safetensors' | 'onnx';
  /** Paths relative to the folder: config.json, the tokenizer's files, then the weights. */
  files: string[];
}

const SHARD = /^model-\d+-of-\d+\.safetensors$/;

/**
 * From a folder's complete listing (paths relative to it), the files a load reads: config.json; tokenizer.json and,
 * beside it, tokenizer_config.json and generation_config.json; then model.safetensors, else the index and its shards,
 * else an ONNX graph (onnx/model.onnx, or `onnxFile`) with its external data. Undefined without config.json or weights.
 * @example
 * pickFolderFiles(['config.json', 'model.safetensors', 'README.md']); // { kind: 'safetensors', files: ['config.json', 'model.safetensors'] }
 */
export function pickFolderFiles(names: Iterable<string>, onnxFile?: string): PickedFolder | undefined {
  const set = new Set(names);
  if (!set.has('config.json')) return undefined;
  const head = ['config.json', ...(set.has('tokenizer.json') ? ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json'].filter((n) => set.has(n)) : [])];
  const graph = onnxGraph(set, onnxFile);
  const onnx = (g: string): PickedFolder => {
    // External data lies beside the graph and shares its name (model.onnx_data, model.onnx_data_1, ...).
    const dir = g.slice(0, g.lastIndexOf('/') + 1);
    const stem = g.slice(dir.length);
    const data = [...set].filter((n) => n !== g && n.startsWith(dir) && !n.slice(dir.length).includes('/') && n.slice(dir.length).startsWith(stem)).sort();
    return { kind: 'onnx', files: [...head, g, ...data] };
  };
  if (onnxFile) return graph ? onnx(graph) : undefined;
  if (set.has('model.safetensors')) return { kind: 'safetensors', files: [...head, 'model.safetensors'] };
  const shards = [...set].filter((n) => SHARD.test(n)).sort();
  if (set.has('model.safetensors.index.json') && shards.length) return { kind: 'safetensors', files: [...head, 'model.safetensors.index.json', ...shards] };
  return graph ? onnx(graph) : undefined;
}

/** The .onnx graph to load: `file`, else onnx/model.onnx (f32 runs everywhere), else the first under onnx/, else any. */
function onnxGraph(names: ReadonlySet<string>, file?: string): string | undefined {
  if (file) return names.has(file) ? file : undefined;
  const graphs = [...names].filter((n) => /\.onnx$/i.test(n)).sort();
  return graphs.find((n) => n === 'onnx/model.onnx') ?? graphs.find((n) => n.startsWith('onnx/')) ?? graphs[0];
}

// ---- listing a folder URL ----

/** One file of a listed folder. */
export interface FolderFile {
  /** Relative to the folder: 'config.json', 'onnx/model.onnx'. */
  name: string;
  url: string;
  /** Size and SHA-256, when the hub's listing gives them. */
  size?: number;
  sha256?: string;
}

export interface FolderListing<T> {
  kind: 'safetensors' | 'onnx';
  files: FolderFile[];
  /** What `probe` opened while listing, by name; the other files are still to be opened. */
  probed: Map<string, T>;
}

/**
 * The files of a model folder URL that a load reads, asking only for what exists in the usual layouts. A hub
 * `resolve/` URL is listed by the hub (one request; sizes and hashes too). Any other server is asked file by file,
 * each request implied by the answers before it: config.json (a 404 is noConfigError), then tokenizer.json (and
 * beside it tokenizer_config.json and generation_config.json), and model.safetensors, else the sharded index, else
 * onnx/model.onnx (and its onnx/model.onnx_data); a 404 or an HTML page makes a file absent. `probe` opens one file
 * (a ByteSource in the worker, a size on the page) and throws modelFetch's errors.
 * @example
 * const { kind, files, probed } = await listModelFolder('https://host/models/smol/', (u) => urlSource(u, { fetch: modelFetch() }));
 */
export async function listModelFolder<T>(folder: string, probe: (url: string) => Promise<T>, o: { fetch?: typeof fetch; signal?: AbortSignal } = {}): Promise<FolderListing<T>> {
  const base = folder.endsWith('/') ? folder : `${folder}/`;
  const urlOf = (name: string) => new URL(encodePath(name), base).href;
  const hub = hubRef(base);
  if (hub) {
    // A host that only looks like the hub, or a gated repository, answers without a listing: then ask file by file.
    const entries = await listHubFiles(hub, decodeURIComponent(hub.path), o).catch((err) => {
      if (hubAnswered(err)) return undefined;
      throw err;
    });
    if (entries) {
      const prefix = decodeURIComponent(hub.path);
      const byName = new Map(entries.filter((e) => e.path.startsWith(prefix)).map((e) => [e.path.slice(prefix.length), e]));
      const picked = pickFolderFiles(byName.keys());
      if (!picked) throw byName.has('config.json') ? noWeightsError(base) : noConfigError(base, `the hub lists no ${prefix}config.json in ${decodeURIComponent(hub.repo)} at ${decodeURIComponent(hub.revision)}`);
      const files = picked.files.map((name) => ({ name, url: urlOf(name), ...pick(byName.get(name)) }));
      return { kind: picked.kind, files, probed: new Map() };
    }
  }
  // A server that lists nothing: ask for each file in the order the answers imply.
  const fetchFn = modelFetch(o.fetch);
  const probed = new Map<string, T>();
  const open = async (name: string): Promise<boolean> => {
    try {
      probed.set(name, await probe(urlOf(name)));
      return true;
    } catch (err) {
      if (isAbsent(err)) return false;
      throw err;
    }
  };
  // config.json first: without it this is no model folder, and nothing else is asked for.
  try {
    probed.set('config.json', await probe(urlOf('config.json')));
  } catch (err) {
    if (isAbsent(err) && err instanceof ModelSourceError && err.status !== undefined && err.status >= 400) throw noConfigError(base, `HTTP ${err.status} for ${urlOf('config.json')}`, err);
    throw err;
  }
  const tokenizer = async (): Promise<string[]> => {
    if (!(await open('tokenizer.json'))) return [];
    const found = await Promise.all(['tokenizer_config.json', 'generation_config.json'].map(async (n) => ((await open(n)) ? [n] : [])));
    return ['tokenizer.json', ...found.flat()];
  };
  const weights = async (): Promise<PickedFolder> => {
    if (await open('model.safetensors')) return { kind: 'safetensors', files: ['model.safetensors'] };
    const shards = await indexShards(urlOf('model.safetensors.index.json'), fetchFn, o.signal);
    if (shards) return { kind: 'safetensors', files: ['model.safetensors.index.json', ...shards] };
    if (await open('onnx/model.onnx')) return { kind: 'onnx', files: ['onnx/model.onnx', ...((await open('onnx/model.onnx_data')) ? ['onnx/model.onnx_data'] : [])] };
    throw noWeightsError(base);
  };
  const [tok, w] = await Promise.all([tokenizer(), weights()]);
  return { kind: w.kind, files: ['config.json', ...tok, ...w.files].map((name) => ({ name, url: urlOf(name) })), probed };
}

const pick = (e: HubEntry | undefined) => ({ ...(e?.size !== undefined ? { size: e.size } : {}), ...(e?.sha256 ? { sha256: e.sha256 } : {}) });

/** The shards a model.safetensors.index.json names, or undefined when the folder has no index. */
async function indexShards(url: string, fetchFn: typeof fetch, signal?: AbortSignal): Promise<string[] | undefined> {
  let res: Response;
  try {
    res = await fetchFn(url, { signal });
  } catch (err) {
    if (isAbsent(err)) return undefined;
    throw err;
  }
  let index: { weight_map?: Record<string, unknown> };
  try {
    index = await res.json();
  } catch (err) {
    throw new ModelSourceError(url, `the safetensors index is not JSON (${(err as Error)?.message ?? err}): check the file`, { status: res.status, cause: err });
  }
  const shards = [...new Set(Object.values(index?.weight_map ?? {}))].filter((s): s is string => typeof s === 'string');
  if (!shards.length) throw new ModelSourceError(url, 'the safetensors index names no shard in its weight_map: check the file');
  const outside = shards.find((s) => s.includes('/') || s.includes('\\') || s.startsWith('.'));
  if (outside) throw new ModelSourceError(url, `the safetensors index names a shard outside its folder (${JSON.stringify(outside)}): check the file`);
  return shards.sort();
}
