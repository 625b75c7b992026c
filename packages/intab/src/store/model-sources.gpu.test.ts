// Model sources through createEngine in real Chromium (the real module Worker, the real OPFS store) against the local
// hub server (scripts/hub-server-setup.mjs) and a loopback port that refuses connections: the same situation gives the
// same class, code, status and message for a GGUF URL and a folder URL, with the model store and without it; a normal
// load of a GGUF, of a folder (on the hub, and on a plain static host) and of a stored model makes no request that
// answers 4xx/5xx (the browser's red console lines: the server's record of them, which covers the worker, and the
// page's own console through CDP); info.store always says whether the storage is persisted.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { cdp } from 'vitest/browser';
import { createEngine, modelStore, type IntabEngine } from '../index.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    hubUrl: string;
    unreachableUrl: string;
  }
}

const hub = inject('hubUrl');
const unreachable = inject('unreachableUrl');
const failures = async (): Promise<string[]> => (await fetch(`${hub}/__failures`)).json();
const requests = async (): Promise<Record<string, number>> => (await fetch(`${hub}/__requests`)).json();
const reset = () => fetch(`${hub}/__reset`);

/** The page's console lines of level 'error' (a resource that failed to load is one), through CDP. */
const consoleErrors: string[] = [];
const onEntry = (e: { entry: { level: string; text: string; url?: string } }) => {
  if (e.entry.level === 'error') consoleErrors.push(`${e.entry.text} ${e.entry.url ?? ''}`);
};

beforeAll(async () => {
  await cdp().send('Log.enable');
  cdp().on('Log.entryAdded', onEntry);
});

afterAll(async () => {
  cdp().off('Log.entryAdded', onEntry);
  await modelStore.clear();
});

/** What a failed createEngine threw, as a comparable shape (`url` written as <URL> in the message). */
async function failure(model: string, cache: boolean, url: string) {
  const err = await createEngine({ model, cache, kvBudgetBytes: 4 << 20 }).then(
    async (e) => {
      await e.destroy();
      throw new Error(`${model} loaded (cache: ${cache})`);
    },
    (e) => e,
  );
  return { name: err.name, code: err.code, status: err.status, message: String(err.message).replaceAll(url, '<URL>') };
}

describe('one class, code and message per situation, for a file and a folder, with the store and without', () => {
  const situations: { situation: string; file: string; folder: string; failed: (base: string) => string; name: string; code: string; status?: number; message: RegExp }[] = [
    {
      situation: 'the network is unreachable (connection refused)',
      file: `${unreachable}/models/m.gguf`,
      folder: `${unreachable}/models/smol/`,
      failed: (base) => `${base}config.json`,
      name: 'DownloadError',
      code: 'download_failed',
      message: /^Cannot open the model from <URL>: the network request got no answer \(TypeError: Failed to fetch\): the network is unreachable or the server is down, or the server does not allow this page's origin \(CORS\)\. Check the connection/,
    },
    {
      situation: 'HTTP 503',
      file: `${hub}/fail/503/m.gguf`,
      folder: `${hub}/fail/503/models/`,
      failed: (base) => `${base}config.json`,
      name: 'DownloadError',
      code: 'download_failed',
      status: 503,
      message: /^Cannot open the model from <URL>: the server answered HTTP 503: the server failed or is busy: try again later\.$/,
    },
    {
      situation: 'an HTML page instead of the file',
      file: `${hub}/html/m.gguf`,
      folder: `${hub}/html/models/`,
      failed: (base) => `${base}config.json`,
      name: 'ModelSourceError',
      code: 'model_source_unavailable',
      status: 200,
      message: /^Cannot open the model from <URL>: the server answered an HTML page, not the file: the URL is probably wrong/,
    },
  ];
  for (const s of situations) {
    test(s.situation, async () => {
      const file = await failure(s.file, false, s.file);
      expect(file).toMatchObject({ name: s.name, code: s.code, status: s.status });
      expect(file.message).toMatch(s.message);
      expect(await failure(s.file, true, s.file)).toEqual(file);
      expect(await failure(s.folder, false, s.failed(s.folder))).toEqual(file);
      expect(await failure(s.folder, true, s.failed(s.folder))).toEqual(file);
    });
  }

  test('HTTP 404: a file not found; a folder whose config.json is not found', async () => {
    const url = `${hub}/plain/test/stories/no-such-model.gguf`;
    const file = await failure(url, false, url);
    expect(file).toEqual({
      name: 'ModelSourceError',
      code: 'model_source_unavailable',
      status: 404,
      message: 'Cannot open the model from <URL>: the server answered HTTP 404 (not found): check the URL (for a Hugging Face file: the model id, the revision and the file name).',
    });
    expect(await failure(url, true, url)).toEqual(file);
    const folder = `${hub}/plain/test/no-such-folder/`;
    await reset();
    const noConfig = await failure(folder, false, folder);
    expect(noConfig).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 404 });
    expect(noConfig.message).toMatch(/^Cannot open the model from <URL>: the folder has no config\.json \(HTTP 404 for <URL>config\.json\): a folder URL must be a Hugging Face model folder/);
    expect(await failure(folder, true, folder)).toEqual(noConfig);
    // Nothing but config.json was asked for.
    expect(await failures()).toEqual(['404 GET /plain/test/no-such-folder/config.json', '404 GET /plain/test/no-such-folder/config.json']);
  });
});

describe('a normal load answers no 4xx/5xx (no red line in the console)', () => {
  const load = async (model: string, cache: boolean): Promise<IntabEngine> => createEngine({ model, cache, kvBudgetBytes: 4 << 20 });

  for (const [what, model] of [
    ['a GGUF file on the hub', `${hub}/test/stories/resolve/main/stories260K.gguf?tag=clean`],
    ['a Hugging Face folder on the hub', `${hub}/test/stories-full/resolve/main/`],
    ['a Hugging Face folder on a plain static host', `${hub}/plain/test/stories-full/`],
  ] as const) {
    test(`${what}: without the store, into the store, and from the store (no request at all)`, async () => {
      await modelStore.clear();
      consoleErrors.length = 0;
      await reset();
      for (const cache of [false, true]) {
        const engine = await load(model, cache);
        try {
          if (!model.includes('.gguf')) expect(engine.info.hasTokenizer).toBe(true);
          if (cache) expect(engine.info.store).toMatchObject({ downloaded: expect.any(Number), verified: true, persisted: expect.any(Boolean) });
        } finally {
          await engine.destroy();
        }
      }
      expect(await failures()).toEqual([]);
      await reset();
      const stored = await load(model, true);
      try {
        expect(stored.info.store).toMatchObject({ downloaded: 0, verified: true });
        // persisted is always there: navigator.storage.persisted()'s answer when nothing was asked now.
        expect(stored.info.store!.persisted).toBe(await navigator.storage.persisted());
      } finally {
        await stored.destroy();
      }
      expect(await requests()).toEqual({});
      expect(await failures()).toEqual([]);
      expect(consoleErrors).toEqual([]);
    });
  }

  test('the console check sees a failed resource (it is not blind)', async () => {
    consoleErrors.length = 0;
    await fetch(`${hub}/plain/test/stories/no-such-file.json`);
    await expect.poll(() => consoleErrors.length).toBeGreaterThan(0);
    expect(consoleErrors.join('\n')).toMatch(/404/);
  });
});
