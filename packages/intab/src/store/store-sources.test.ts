// Which files a folder URL load asks for, and what a failed request is, against a real local HTTP server (the browser
// tier's hub server, with its fixture folders; connections refused by a closed port, not a mock of fetch). The worker's
// way (listModelFolder opening ByteSources through modelFetch) and the model store's (describeSource's listing,
// probing with one-byte ranges) must ask for the same files, get no 4xx/5xx answer in the usual layouts (each one is a
// red line in the browser's console), and fail with the same class, code and message in the same situation.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DownloadError, ModelSourceError } from '@intab/engine/errors';
import { listModelFolder, modelFetch } from '@intab/engine/model-fetch';
import { urlSource } from '@intab/model';
import { startTestHub, type TestHub } from '@intab/testing/test-hub';
import { describeSource } from './store-sources.ts';

let hub = '';
let unreachable = '';
let testHub: TestHub | undefined;

beforeAll(async () => {
  testHub = await startTestHub();
  hub = testHub.url;
  unreachable = testHub.unreachableUrl;
}, 60_000);

afterAll(async () => testHub?.close());

const failures = async (): Promise<string[]> => (await fetch(`${hub}/__failures`)).json();
const reset = () => fetch(`${hub}/__reset`);

/** The worker's listing (ByteSources opened while probing) and the store's, of one folder URL: the files each asks for. */
async function bothListings(folder: string) {
  await reset();
  const open = (u: string) => urlSource(u, { fetch: modelFetch() });
  const worker = await listModelFolder(folder, open);
  const workerFailures = await failures();
  await reset();
  const store = await describeSource({ kind: 'url', url: folder })!.list((i, init) => fetch(i, init));
  return { worker, workerFailures, store, storeFailures: await failures() };
}

const FULL = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'];

describe('the files a folder URL load asks for', () => {
  test('a hub folder is listed by the hub (one request, sizes and hashes): no 404 whatever its layout', async () => {
    for (const [folder, files] of [
      [`${hub}/test/stories-full/resolve/main/`, [...FULL, 'model.safetensors']],
      [`${hub}/test/stories-sharded/resolve/main/`, [...FULL, 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']],
      [`${hub}/test/stories-onnx/resolve/main/`, ['config.json', 'onnx/model.onnx', 'onnx/model.onnx_data']],
      [`${hub}/test/stories/resolve/main/hf/`, ['config.json', 'model.safetensors']],
    ] as const) {
      const r = await bothListings(folder);
      expect(r.worker.files.map((f) => f.name), folder).toEqual(files);
      expect(r.store.map((f) => f.name), folder).toEqual(files);
      expect(r.worker.probed.size, folder).toBe(0);
      expect(r.workerFailures, folder).toEqual([]);
      expect(r.storeFailures, folder).toEqual([]);
      const weights = r.store.find((f) => f.name === files.at(-1))!;
      expect(weights.size, folder).toBeGreaterThan(0);
      expect(weights.sha256, folder).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  test('a plain static host: only the files the answers imply; a complete folder costs no 404', async () => {
    const r = await bothListings(`${hub}/plain/test/stories-full/`);
    expect(r.worker.files.map((f) => f.name)).toEqual([...FULL, 'model.safetensors']);
    expect(r.store.map((f) => f.name)).toEqual([...FULL, 'model.safetensors']);
    expect([...r.worker.probed.keys()].sort()).toEqual([...FULL, 'model.safetensors'].sort());
    expect(r.workerFailures).toEqual([]);
    expect(r.storeFailures).toEqual([]);
    // The store's probes give each file's size (what its quota check needs).
    expect(r.store.find((f) => f.name === 'model.safetensors')!.size).toBe(r.worker.probed.get('model.safetensors')!.size);
  });

  test('a plain static host: each absent file of the usual layout costs exactly one 404, the same on both paths', async () => {
    const cases: [string, string[], string[]][] = [
      // No tokenizer: tokenizer_config.json and generation_config.json are not asked for (they are read beside it only).
      ['stories-hf', ['config.json', 'model.safetensors'], ['tokenizer.json']],
      // Sharded: the single file is asked for first (the usual case below the hub's 5 GB shard size).
      ['stories-sharded', [...FULL, 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'], ['model.safetensors']],
      // ONNX: asked for only when there is no safetensors checkpoint.
      ['stories-onnx', ['config.json', 'onnx/model.onnx', 'onnx/model.onnx_data'], ['tokenizer.json', 'model.safetensors', 'model.safetensors.index.json']],
    ];
    for (const [repo, files, missing] of cases) {
      const r = await bothListings(`${hub}/plain/test/${repo}/`);
      expect(r.worker.files.map((f) => f.name), repo).toEqual(files);
      expect(r.store.map((f) => f.name), repo).toEqual(files);
      const expected = missing.map((name) => `${404} GET /plain/test/${repo}/${name}`).sort();
      expect(r.workerFailures.sort(), repo).toEqual(expected);
      expect(r.storeFailures.sort(), repo).toEqual(expected);
    }
  });
});

/** The same failure through the worker's way and the store's: class, code, status and message. */
async function failBoth(folder: string) {
  const worker = await listModelFolder(folder, (u) => urlSource(u, { fetch: modelFetch() })).catch((e) => e);
  const store = await describeSource({ kind: 'url', url: folder })!.list((i, init) => fetch(i, init)).catch((e) => e);
  const shape = (e: ModelSourceError) => ({ name: e.name, code: e.code, status: e.status, message: e.message });
  expect(shape(store)).toEqual(shape(worker));
  return worker as ModelSourceError;
}

describe('one error per situation', () => {
  test('an unreachable server (connection refused) is a DownloadError that says the network is unreachable', async () => {
    const file = await urlSource(`${unreachable}/m.gguf`, { fetch: modelFetch() }).catch((e) => e);
    expect(file).toBeInstanceOf(DownloadError);
    expect(file).toMatchObject({ name: 'DownloadError', code: 'download_failed', source: `${unreachable}/m.gguf` });
    expect(file.message).toMatch(/the network request got no answer \(TypeError: fetch failed \(ECONNREFUSED\)\): the network is unreachable or the server is down/);
    const folder = await failBoth(`${unreachable}/models/smol/`);
    expect(folder.message).toBe(file.message.replace('/m.gguf', '/models/smol/config.json'));
  });

  test('a folder without config.json (a 404 for it) is a ModelSourceError, and nothing else is asked for', async () => {
    await reset();
    const err = await failBoth(`${hub}/plain/test/nope/`);
    expect(err).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 404 });
    expect(err.message).toContain(`the folder has no config.json (HTTP 404 for ${hub}/plain/test/nope/config.json)`);
    expect(await failures()).toEqual(['404 GET /plain/test/nope/config.json', '404 GET /plain/test/nope/config.json']);
  });

  test('a server error is a DownloadError (try again later), an HTML page a ModelSourceError (a wrong URL), for a file and a folder alike', async () => {
    const file503 = await urlSource(`${hub}/fail/503/m.gguf`, { fetch: modelFetch() }).catch((e) => e);
    expect(file503).toMatchObject({ name: 'DownloadError', code: 'download_failed', status: 503 });
    expect(file503.message).toBe(`Cannot open the model from ${hub}/fail/503/m.gguf: the server answered HTTP 503: the server failed or is busy: try again later.`);
    const folder503 = await failBoth(`${hub}/fail/503/models/`);
    expect(folder503.message).toBe(file503.message.replace('m.gguf', 'models/config.json'));
    const fileHtml = await urlSource(`${hub}/html/m.gguf`, { fetch: modelFetch() }).catch((e) => e);
    expect(fileHtml).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 200 });
    expect(fileHtml.message).toMatch(/the server answered an HTML page, not the file: the URL is probably wrong/);
    const folderHtml = await failBoth(`${hub}/html/models/`);
    expect(folderHtml.message).toBe(fileHtml.message.replace('m.gguf', 'models/config.json'));
  });
});
