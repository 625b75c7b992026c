// The model store in real Chromium against a local model hub (scripts/hub-server-setup.mjs: a real HTTP server with
// Range, CORS and LFS hashes; misbehaviour on request): a GGUF downloaded in chunks and checked against the hub's
// SHA-256 (and WebCrypto's), the next load reading the store only; a corrupted stored byte found and the file
// downloaded again; a dropped connection and an aborted load resumed with Range; an HTML page, a wrong length and
// a wrong file refused with nothing stored; a hash mismatch downloaded once more, then IntegrityError; a model larger
// than the quota refused before its bytes are asked for; a storage that refuses writes (CDP quota) a QuotaError; a
// Hugging Face folder; two loads at once downloading once; list, delete, clear, usage; the Cache API backend.
import { beforeEach, describe, expect, inject, test } from 'vitest';
import { cdp } from 'vitest/browser';
import { fetchShared } from '@intab/gpu/testing';
import { DownloadError, IntegrityError, QuotaError } from '../errors.ts';
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

    // Another page load (a new store over the same storage): verified from disk, not one request for the file.
    const verifying: StoreProgress[] = [];
    const again = await store().ensure(gguf(), { onProgress: (p) => verifying.push(p) });
    expect(again.downloaded).toBe(0);
    expect(verifying.every((p) => p.phase === 'verify')).toBe(true);
    expect(verifying.at(-1)).toMatchObject({ loaded: original.length, total: original.length });
    expect(await bytesOf((again.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    expect(await gets()).toEqual({ whole: 1, ranges: 0 });
    const [m] = await store().list();
    expect(m).toMatchObject({ id: 'test/stories@main/stories260K.gguf', bytes: original.length, complete: true });
    expect(m.lastUsed).toBeGreaterThanOrEqual(m.createdAt);
  });

  test('a corrupted stored byte is found at the next load, and the file is downloaded again', async () => {
    await store().ensure(gguf());
    // Flip a byte inside one stored chunk, as a disk or an extension might.
    const dirs = await backend.list('');
    const fileDir = (await backend.list(dirs[0])).find((n) => n.startsWith('f-'))!;
    const path = `${dirs[0]}/${fileDir}/3`;
    const chunk = await bytesOf((await backend.read(path))!);
    chunk[100] ^= 0x01;
    await backend.write(path, chunk);
    const r = await store().ensure(gguf());
    expect(r.downloaded).toBe(original.length);
    expect(await bytesOf((r.source as { files: { blob: Blob }[] }).files[0].blob)).toEqual(original);
    expect((await gets()).whole).toBe(2);
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
    const cases: [string, RegExp][] = [
      ['?html=1', /HTML page/],
      ['?pad=7', /sends 1043431 bytes where the source lists 1043424/],
    ];
    for (const [query, message] of cases) {
      const err = await store().ensure(gguf(query)).catch((e) => e);
      expect(err, query).toBeInstanceOf(DownloadError);
      expect(err.message, query).toMatch(message);
    }
    // Not the hub (no listing to check against): the bytes themselves must be GGUF.
    const wrong = await store().ensure({ kind: 'url', url: `${fileUrl('test/stories', 'golden.json')}`.replace('/resolve/', '/resolve/').replace('golden.json', 'not-a-model.gguf?as=README.md') }).catch((e) => e);
    expect(wrong).toBeInstanceOf(DownloadError);
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
    expect(again.downloaded).toBe(0);
    expect((await gets()).ranges).toBe(1);
    expect(await s().usage()).toMatchObject({ backend: 'cache', models: 1 });
    await s().clear();
  });
});
