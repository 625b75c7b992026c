// The one hub client (model-fetch.ts) on a stubbed hub: the URLs it writes read back as the same repository, its
// listing keeps files (sizes, LFS hashes) and drops folders, and a folder URL on a hub that answers without a listing
// (a gated repository) is listed file by file instead, while a hub that does not answer at all fails the load.
import { describe, expect, test } from 'vitest';
import { DownloadError, ModelSourceError } from './errors.ts';
import { httpError, hubAnswered, hubFileUrl, hubRef, hubRepo, listHubFiles, listModelFolder } from './model-fetch.ts';

const SHA = 'a'.repeat(64);

describe('the hub client', () => {
  test("a file URL it writes is read back as the same repository, revision and path", () => {
    const repo = hubRepo('org/name', { revision: 'refs/pr/1', hubUrl: 'http://127.0.0.1:9/' });
    const url = hubFileUrl(repo, 'onnx/model q4.onnx');
    expect(url).toBe('http://127.0.0.1:9/org/name/resolve/refs%2Fpr%2F1/onnx/model%20q4.onnx');
    expect(hubRef(url)).toEqual({ ...repo, path: 'onnx/model%20q4.onnx' });
    expect(hubFileUrl(repo, '')).toBe('http://127.0.0.1:9/org/name/resolve/refs%2Fpr%2F1/');
    expect(hubRef('https://example.com/models/x.gguf')).toBeUndefined();
  });

  test('a listing keeps files with their sizes and LFS SHA-256, under the asked folder, and drops folders', async () => {
    const asked: string[] = [];
    const fetchFn = (async (url: string | URL | Request) => {
      asked.push(String(url));
      return Response.json([
        { type: 'directory', path: 'sub' },
        { type: 'file', path: 'sub/config.json', size: 12, oid: 'b'.repeat(40) },
        { type: 'file', path: 'sub/model.safetensors', size: 100, lfs: { oid: SHA, size: 4096 } },
      ]);
    }) as typeof fetch;
    const files = await listHubFiles(hubRepo('org/name'), 'sub/', { fetch: fetchFn });
    expect(asked).toEqual(['https://huggingface.co/api/models/org/name/tree/main/sub?recursive=true']);
    expect(files).toEqual([{ path: 'sub/config.json', size: 12 }, { path: 'sub/model.safetensors', size: 4096, sha256: SHA }]);
  });

  test('an HTTP error answer is the typed error of its situation, marked as answered; no answer is not', async () => {
    const status = (code: number) => (async () => new Response('no', { status: code })) as typeof fetch;
    const gated = await listHubFiles(hubRepo('org/gated'), '', { fetch: status(401) }).catch((e) => e);
    expect(gated).toBeInstanceOf(ModelSourceError);
    expect(gated).toMatchObject({ source: 'org/gated', status: 401 });
    expect(hubAnswered(gated)).toBe(true);
    const busy = await listHubFiles(hubRepo('org/busy'), '', { fetch: status(429) }).catch((e) => e);
    expect(busy).toBeInstanceOf(DownloadError);
    expect(hubAnswered(busy)).toBe(true);
    const down = await listHubFiles(hubRepo('org/down'), '', { fetch: (async () => Promise.reject(new TypeError('fetch failed'))) as typeof fetch }).catch((e) => e);
    expect(down).toBeInstanceOf(DownloadError);
    expect(hubAnswered(down)).toBe(false);
  });

  test('a hub folder URL whose listing is refused is listed file by file; one whose hub does not answer fails', async () => {
    const folder = 'https://huggingface.co/org/gated/resolve/main/';
    const asked: string[] = [];
    const fetchFn = (async (url: string | URL | Request) => {
      asked.push(String(url));
      return new Response('{"error":"gated"}', { status: 403 });
    }) as typeof fetch;
    // The probe opens a file as the worker does: a 404 answer is modelFetch's httpError, which marks the file absent.
    const present = new Set(['config.json', 'model.safetensors']);
    const probe = async (url: string) => {
      const name = url.slice(folder.length);
      if (present.has(name)) return name;
      throw httpError(url, 404);
    };
    const listing = await listModelFolder(folder, probe, { fetch: fetchFn });
    expect(asked).toEqual(['https://huggingface.co/api/models/org/gated/tree/main?recursive=true']);
    expect(listing.kind).toBe('safetensors');
    expect(listing.files.map((f) => f.name)).toEqual(['config.json', 'model.safetensors']);
    expect([...listing.probed.keys()].sort()).toEqual(['config.json', 'model.safetensors']);

    const unreachable = (async () => Promise.reject(new TypeError('fetch failed'))) as typeof fetch;
    await expect(listModelFolder(folder, probe, { fetch: unreachable })).rejects.toBeInstanceOf(DownloadError);
  });
});
