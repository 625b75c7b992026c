// The model store in real Chromium against a local model hub (scripts/hub-server-setup.mjs: a real HTTP server with
// Range, CORS and LFS hashes; misbehaviour on request): a GGUF downloaded in chunks and checked against the hub's
// SHA-256 (and WebCrypto's), the next load reading the store only and hashing nothing (the chunks' stamps are
// unchanged); a rewritten stored chunk found by its stamp and the file downloaded again; rot that left the stamps
// alone found by verify(id) only, and the file downloaded again at the next load; a manifest from before stamps
// hashed once; a dropped connection and an aborted load resumed with Range; an HTML page, a wrong length and a wrong
// file refused with nothing stored; a hash mismatch downloaded once more, then IntegrityError; a model larger than
// the quota refused before its bytes are asked for; a storage that refuses writes (CDP quota) a QuotaError; a Hugging
// Face folder; two loads at once downloading once; list, delete, clear, usage; the Cache API backend.
import { beforeEach, describe, expect, inject, test } from 'vitest';
import { cdp } from 'vitest/browser';
import { fetchShared } from '@intab/testing/gpu';
import { ModelFormatError } from '@intab/model/errors';
import { DownloadError, IntegrityError, QuotaError } from '../errors.ts';
import { ModelSourceError } from '@intab/engine/errors';
import { cacheBackend, opfsBackend, type StoreBackend } from './backend.ts';
import { ModelStore, type StoreProgress } from './model-store.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    hubUrl: string;
  }
}

const hub = inject('hubUrl');
const CHUNK = 64 << 10; // stories260K's 1 MiB files span 16 chunks
const fileUrl = (repo: string, file: string, query = '') => `${hub}/${repo}/resolve/main/${file}${query}`;
const gguf = (query = '') => ({ kind: 'url' as const, url: fileUrl('test/stories', 'stories260K.gguf', query) });
const requests = async (): Promise<Record<string, number>> => (await fetch(`${hub}/__requests`)).json();
const gets = async (file = 'stories260K.gguf', repo = 'test/stories') => {
  const r = await requests();
  return { whole: r[`GET /${repo}/resolve/main/${file}`] ?? 0, ranges: r[`GET /${repo}/resolve/main/${file} range`] ?? 0 };
};
const hex = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource))].map((b) => b.toString(16).padStart(2, '0')).join('');
const bytesOf = async (b: Blob) => new Uint8Array(await b.arrayBuffer());

let original: Uint8Array;
let backend: StoreBackend;
const store = (o: { backend?: StoreBackend } = {}) => new ModelStore({ chunkBytes: CHUNK, backend: o.backend ?? backend });

/** The path of a stored chunk of the one stored model's one file. */
async function chunkPath(chunk: number): Promise<string> {
  const [key] = await backend.list('');
  const dir = (await backend.list(key)).find((n) => n.startsWith('f-'))!;
  return `${key}/${dir}/${chunk}`;
}

/** Edits the one stored model's manifest as JSON; `stampOf` (a chunk's path) fills a `null` in with its stamp now. */
async function editManifest(edit: (m: { files: { state: { stamps?: unknown[] } }[] }) => unknown, stampOf?: string): Promise<void> {
  const [key] = await backend.list('');
  const path = `${key}/manifest.json`;
  const m = JSON.parse(await (await backend.read(path))!.text());
  edit(m);
  if (stampOf) {
    const stamps = m.files[0].state.stamps as unknown[];
    stamps[stamps.indexOf(null)] = await backend.stamp!(stampOf);
  }
  await backend.write(path, JSON.stringify(m));
}

beforeEach(async () => {
  original ??= await fetchShared('models/stories260K/stories260K.gguf');
  backend ??= (await opfsBackend())!;
  await store().clear();
  await fetch(`${hub}/__reset`);
});

describe('model store', () => {
  test('a hub GGUF: downloaded in chunks, checked against the LFS SHA-256; the next load reads only the store', async () => {
    const progress: StoreProgress[] = [];
    const first = await store().ensure(gguf(), { onProgress: (p) => progress.push(p) });
    expect(first.downloaded).toBe(original.length);
    expect(first.verified).toBe(true);
    expect(typeof first.persisted).toBe('boolean');
    const file = first.model.files[0];
    expect(file).toMatchObject({ name: 'stories260K.gguf', bytes: original.length, size: original.length, complete: true });
    expect(file.sha256).toBe(await hex(original));
    expect(file.expectedSha256).toBe(file.sha256);
    expect(first.source.kind).toBe('files');
    const blob = (first.source as { files: { name: string; blob: Blob }[] }).files[0].blob;
    expect(await bytesOf(blob)).toEqual(original);
    const downloads = progress.filter((p) => p.phase === 'download');
    expect(downloads.at(-1)).toMatchObject({ loaded: original.length, total: original.length, model: 'test/stories@main/stories260K.gguf' });
    expect(downloads.at(-1)!.files).toEqual([{ name: 'stories260K.gguf', loaded: original.length, total: original.length }]);
    expect(await gets()).toEqual({ whole: 1, ranges: 0 });

    expect(first.rehashed).toBe(0);

    // Another page load (a new store over the same storage): from disk, not one request for the file, and no byte
    // hashed again (every chunk's stamp is the one recorded when it was written).
    const verifying: StoreProgress[] = [];
    const again = await store().ensure(gguf(), { onProgress: (p) => verifying.push(p) });
    expect(again).toMatchObject({ downloaded: 0, rehashed: 0, verified: true });
    expect(typeof again.persisted).toBe('boolean');
    expect(verifying).toEqual([]);
    expect(await bytesOf((again.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    expect(await gets()).toEqual({ whole: 1, ranges: 0 });
    const [m] = await store().list();
    expect(m).toMatchObject({ id: 'test/stories@main/stories260K.gguf', bytes: original.length, complete: true });
    expect(m.lastUsed).toBeGreaterThanOrEqual(m.createdAt);
  });

  test('a stored chunk written again (its stamp changed) is found at the next load, and the file is downloaded again', async () => {
    await store().ensure(gguf());
    // Flip a byte inside one stored chunk, as an extension or another script writing the origin's files might.
    const path = await chunkPath(3);
    const chunk = await bytesOf((await backend.read(path))!);
    chunk[100] ^= 0x01;
    await backend.write(path, chunk);
    const progress: StoreProgress[] = [];
    const r = await store().ensure(gguf(), { onProgress: (p) => progress.push(p) });
    expect(r.rehashed).toBe(original.length);
    expect(progress.some((p) => p.phase === 'verify')).toBe(true);
    expect(r.downloaded).toBe(original.length);
    expect(await bytesOf((r.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    expect((await gets()).whole).toBe(2);
    // Downloaded again, its chunks have new stamps: the load after that hashes nothing.
    expect((await store().ensure(gguf())).rehashed).toBe(0);
  });

  test('verify(id) hashes every stored file whatever its stamps say; a file that rotted is dropped and downloaded at the next load', async () => {
    const id = 'test/stories@main/stories260K.gguf';
    await store().ensure(gguf());
    const intact = await store().verify(id);
    expect(intact).toEqual({ id, ok: true, bytes: original.length, files: [{ name: 'stories260K.gguf', bytes: original.length, expected: await hex(original), actual: await hex(original), status: 'ok' }] });
    // Rot that leaves the file system's record alone (a bit flipped on disk): the stamps in the manifest say nothing changed.
    const path = await chunkPath(2);
    const chunk = await bytesOf((await backend.read(path))!);
    chunk[7] ^= 0x80;
    await backend.write(path, chunk);
    await editManifest((m) => (m.files[0].state.stamps![2] = null), path);
    const trusted = await store().ensure(gguf());
    expect(trusted.rehashed).toBe(0);
    const report = (await store().verify(id))!;
    expect(report.ok).toBe(false);
    expect(report.files[0]).toMatchObject({ name: 'stories260K.gguf', bytes: original.length, expected: await hex(original), status: 'mismatch' });
    expect(report.files[0].actual).not.toBe(await hex(original));
    const [dropped] = await store().list();
    expect(dropped).toMatchObject({ id, complete: false, bytes: 0 });
    const r = await store().ensure(gguf());
    expect(r.downloaded).toBe(original.length);
    expect(await bytesOf((r.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    expect(await store().verify('test/stories@main/not-stored.gguf')).toBeUndefined();
  });

  test('a model stored before chunk stamps were recorded is hashed once, then trusted by its stamps', async () => {
    await store().ensure(gguf());
    await editManifest((m) => delete m.files[0].state.stamps);
    expect((await store().ensure(gguf())).rehashed).toBe(original.length);
    expect((await store().ensure(gguf())).rehashed).toBe(0);
    expect(await gets()).toEqual({ whole: 1, ranges: 0 });
  });

  test('a connection dropped mid-file resumes with a Range request, and the hash still matches the hub\'s', async () => {
    const r = await store().ensure(gguf('?cut=300000&tag=drop'));
    expect(r.model.files[0].sha256).toBe(await hex(original));
    expect(await bytesOf((r.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    const g = await gets();
    expect(g).toEqual({ whole: 1, ranges: 1 });
  });

  test('a load aborted mid-download (a closed tab) resumes from the stored chunks at the next load', async () => {
    const controller = new AbortController();
    const first = store().ensure(gguf('?tag=abort&slow=32768'), {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.loaded > 400_000) controller.abort(new Error('tab closed'));
      },
    });
    await expect(first).rejects.toThrow('tab closed');
    const [partial] = await store().list();
    expect(partial.complete).toBe(false);
    expect(partial.bytes % CHUNK).toBe(0);
    expect(partial.bytes).toBeGreaterThan(0);
    const r = await store().ensure(gguf('?tag=abort&slow=32768'));
    expect(r.downloaded).toBe(original.length - partial.bytes);
    expect(r.model.files[0].sha256).toBe(await hex(original));
    expect((await gets()).ranges).toBe(1);
  });

  test('an HTML page, a length other than the listed one and a file that is not GGUF are refused; nothing is stored', async () => {
    // An HTML page is a wrong URL (model_source_unavailable); a length other than the hub lists, a failed download.
    const html = await store().ensure(gguf('?html=1')).catch((e) => e);
    expect(html).toBeInstanceOf(ModelSourceError);
    expect(html).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 200 });
    expect(html.message).toMatch(/the server answered an HTML page, not the file/);
    const padded = await store().ensure(gguf('?pad=7')).catch((e) => e);
    expect(padded).toBeInstanceOf(DownloadError);
    expect(padded.message).toMatch(/sends 1043431 bytes where the source lists 1043424/);
    // Not the hub (no listing to check against): the bytes themselves must be GGUF, as the loader without the store says.
    const wrong = await store().ensure({ kind: 'url', url: fileUrl('test/stories', 'not-a-model.gguf?as=README.md') }).catch((e) => e);
    expect(wrong).toBeInstanceOf(ModelFormatError);
    expect(wrong).toMatchObject({ field: 'header.magic', code: 'malformed_model' });
    expect(wrong.message).toMatch(/expected "GGUF", found bytes .*; this is not a GGUF file/);
    for (const m of await store().list()) expect(m.bytes, m.id).toBe(0);
  });

  test('a file whose bytes differ from the hub\'s SHA-256 is downloaded once more, then an IntegrityError; nothing stays', async () => {
    const err = await store().ensure(gguf('?corrupt=1')).catch((e) => e);
    expect(err).toBeInstanceOf(IntegrityError);
    expect(err).toMatchObject({ expected: await hex(original) });
    expect(err.message).toMatch(/proxy, mirror/);
    expect((await gets()).whole).toBe(2);
    const [m] = await store().list();
    expect(m.bytes).toBe(0);
  });

  test('a model larger than the origin\'s quota is a QuotaError before any of its bytes is asked for', async () => {
    const err = await store().ensure({ kind: 'url', url: fileUrl('test/huge', 'huge-model.gguf') }).catch((e) => e);
    expect(err).toBeInstanceOf(QuotaError);
    expect(err.needed).toBe(64 * 2 ** 30);
    expect(err.available).toBeLessThan(err.needed);
    expect(err.message).toMatch(/modelStore.list\(\) \/ delete\(id\)/);
    expect((await requests())['GET /test/huge/resolve/main/huge-model.gguf']).toBeUndefined();
  });

  test('a storage that refuses writes (a CDP quota override) ends the download with a QuotaError', async () => {
    const session = cdp();
    const { usage = 0 } = await navigator.storage.estimate();
    await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin, quotaSize: usage + 200_000 });
    try {
      const err = await store().ensure(gguf('?tag=quota')).catch((e) => e);
      expect(err).toBeInstanceOf(QuotaError);
    } finally {
      await session.send('Storage.overrideQuotaForOrigin', { origin: location.origin });
    }
    // With room again, the download resumes and completes.
    const r = await store().ensure(gguf('?tag=quota'));
    expect(r.model.files[0].sha256).toBe(await hex(original));
  });

  test('a Hugging Face folder: config.json (not LFS: its hash is recorded) and the safetensors (LFS) stored as files', async () => {
    const url = (f: string) => fileUrl('test/stories-hf', f);
    const r = await store().ensure({ kind: 'hf-urls', files: { 'config.json': url('config.json'), 'model.safetensors': url('model.safetensors') } });
    expect(r.model.id).toBe('test/stories-hf@main');
    const byName = Object.fromEntries(r.model.files.map((f) => [f.name, f]));
    expect(byName['config.json'].expectedSha256).toBeUndefined();
    expect(byName['config.json'].sha256).toMatch(/^[0-9a-f]{64}$/);
    const weights = await fetchShared('models/stories260K/hf/model.safetensors');
    expect(byName['model.safetensors'].expectedSha256).toBe(await hex(weights));
    const files = (r.source as { files: { name: string; blob: Blob }[] }).files;
    expect(files.map((f) => f.name).sort()).toEqual(['config.json', 'model.safetensors']);
    expect(JSON.parse(await files.find((f) => f.name === 'config.json')!.blob.text()).architectures).toEqual(['LlamaForCausalLM']);
    // By its id, as createEngine opens a Hugging Face id offline: no listing, no download, the hashes checked.
    const before = await requests();
    const opened = await store().open('test/stories-hf@main');
    expect(opened).toMatchObject({ downloaded: 0, verified: true, model: { id: 'test/stories-hf@main', complete: true } });
    expect(await requests()).toEqual(before);
    expect(await store().open('test/stories-hf@other-revision')).toBeUndefined();
  });

  test('two loads of one model at once download it once (Web Locks)', async () => {
    const [a, b] = await Promise.all([store().ensure(gguf('?tag=twice')), store().ensure(gguf('?tag=twice'))]);
    expect(a.downloaded + b.downloaded).toBe(original.length);
    expect((await gets()).whole).toBe(1);
    expect(await bytesOf((b.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
  });

  test('list, delete, clear and usage', async () => {
    await store().ensure(gguf());
    await store().ensure({ kind: 'url', url: fileUrl('test/stories', 'stories260K-vocab-ud.gguf') });
    const list = await store().list();
    expect(list.map((m) => m.id).sort()).toEqual(['test/stories@main/stories260K-vocab-ud.gguf', 'test/stories@main/stories260K.gguf']);
    const usage = await store().usage();
    expect(usage).toMatchObject({ models: 2, backend: 'opfs', bytes: list.reduce((n, m) => n + m.bytes, 0) });
    expect(usage.quota).toBeGreaterThan(0);
    expect(await store().delete('test/stories@main/stories260K.gguf')).toBe(true);
    expect(await store().delete('test/stories@main/stories260K.gguf')).toBe(false);
    expect((await store().list()).map((m) => m.id)).toEqual(['test/stories@main/stories260K-vocab-ud.gguf']);
    await store().clear();
    expect(await store().list()).toEqual([]);
    expect((await store().usage()).bytes).toBe(0);
  });

  test('the Cache API backend (where the OPFS is missing) stores, verifies and resumes the same way', async () => {
    const cache = (await cacheBackend('intab-models-test'))!;
    const s = () => store({ backend: cache });
    await s().clear();
    const r = await s().ensure(gguf('?cut=500000&tag=cache'));
    expect(r.model.files[0].sha256).toBe(await hex(original));
    expect(await bytesOf((r.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    const again = await s().ensure(gguf('?cut=500000&tag=cache'));
    expect(again).toMatchObject({ downloaded: 0, rehashed: 0 });
    // A chunk written again gets a new mark: the next load hashes the file (it is intact, so nothing is downloaded).
    const key = (await cache.list(''))[0];
    const dir = (await cache.list(key)).find((n) => n.startsWith('f-'))!;
    await cache.write(`${key}/${dir}/1`, await bytesOf((await cache.read(`${key}/${dir}/1`))!));
    expect(await s().ensure(gguf('?cut=500000&tag=cache'))).toMatchObject({ downloaded: 0, rehashed: original.length });
    expect((await gets()).ranges).toBe(1);
    expect(await s().usage()).toMatchObject({ backend: 'cache', models: 1 });
    await s().clear();
  });
});
