// Model inputs to ModelSource: URLs, hub ids (GGUF file, safetensors and ONNX folders, listed through a stubbed hub tree
// API, the one the engine's hub client asks, so only existing files are fetched), Files and folders, and the typed errors
// with their advice.
import { describe, expect, test } from 'vitest';
import { DownloadError, ModelSourceError } from '@intab/engine/errors';
import { isHfId, resolveModelSource } from './model-source.ts';

/** A hub whose tree API lists `files` (in pages of `pageSize`, linked as huggingface.co links them), or answers `status`. */
function hub(files: string[], status = 200, pageSize = Infinity): { fetch: typeof fetch; asked: string[] } {
  const asked: string[] = [];
  const fn = (async (url: string | URL | Request) => {
    const u = new URL(String(url));
    asked.push(u.href);
    if (status !== 200) return new Response('{"error":"Repository not found"}', { status, headers: { 'content-type': 'application/json' } });
    const from = Number(u.searchParams.get('cursor') ?? 0);
    const page = files.slice(from, from + pageSize).map((path) => ({ type: 'file', path, size: path.length }));
    const next = from + pageSize < files.length ? `${u.origin}${u.pathname}?recursive=true&cursor=${from + pageSize}` : undefined;
    return new Response(JSON.stringify([{ type: 'directory', path: 'onnx' }, ...page]), { headers: { 'content-type': 'application/json', ...(next ? { link: `<${next}>; rel="next"` } : {}) } });
  }) as typeof fetch;
  return { fetch: fn, asked };
}

describe('resolveModelSource', () => {
  test('absolute URLs stay as they are', async () => {
    expect(await resolveModelSource('https://example.com/m/model.gguf')).toEqual({ kind: 'url', url: 'https://example.com/m/model.gguf' });
    expect(await resolveModelSource(new URL('https://example.com/a b.gguf'))).toEqual({ kind: 'url', url: 'https://example.com/a%20b.gguf' });
  });

  test('hub id with a GGUF file: its resolve URL, no listing', async () => {
    const h = hub([]);
    const src = await resolveModelSource('Qwen/Qwen2.5-0.5B-Instruct-GGUF', { file: 'qwen2.5-0.5b-instruct-q4_0.gguf', fetch: h.fetch });
    expect(src).toEqual({ kind: 'url', url: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_0.gguf' });
    expect(h.asked).toEqual([]);
    const rev = await resolveModelSource('org/name', { file: 'sub dir/x.gguf', revision: 'v1.0', hubUrl: 'https://mirror.example/' });
    expect(rev).toEqual({ kind: 'url', url: 'https://mirror.example/org/name/resolve/v1.0/sub%20dir/x.gguf' });
  });

  test('{ id, file, revision } is the same as the options', async () => {
    expect(await resolveModelSource({ id: 'org/name', file: 'm.gguf', revision: 'dev' })).toEqual({ kind: 'url', url: 'https://huggingface.co/org/name/resolve/dev/m.gguf' });
    await expect(resolveModelSource({ id: 'not an id' })).rejects.toBeInstanceOf(ModelSourceError);
  });

  test('hub folder: the standard files that exist, and the weights (single file or shards)', async () => {
    const h = hub(['config.json', 'tokenizer.json', 'model.safetensors', 'README.md', 'onnx/model.onnx']);
    const src = await resolveModelSource('HuggingFaceTB/SmolLM2-135M-Instruct', { fetch: h.fetch });
    const base = 'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/';
    expect(h.asked).toEqual(['https://huggingface.co/api/models/HuggingFaceTB/SmolLM2-135M-Instruct/tree/main?recursive=true']);
    expect(src).toEqual({
      kind: 'hf-urls',
      files: { 'config.json': base + 'config.json', 'tokenizer.json': base + 'tokenizer.json', 'model.safetensors': base + 'model.safetensors' },
    });

    const shards = ['model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
    const sharded = hub(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', ...shards]);
    const s = await resolveModelSource('org/big', { fetch: sharded.fetch });
    expect(s.kind).toBe('hf-urls');
    expect(Object.keys((s as { files: Record<string, string> }).files)).toEqual(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json', ...shards]);
    // tokenizer_config.json and generation_config.json are read only beside a tokenizer.json: without one, not fetched.
    const bare = await resolveModelSource('org/bare', { fetch: hub(['config.json', 'generation_config.json', 'tokenizer_config.json', ...shards]).fetch });
    expect(Object.keys((bare as { files: Record<string, string> }).files)).toEqual(['config.json', ...shards]);
  });

  test('an onnx-community repository: config, tokenizer, onnx/model.onnx and its external data; `file` picks another graph', async () => {
    const names = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model_q4.onnx', 'onnx/model_q4.onnx_data', 'onnx/model_fp16.onnx', 'README.md'];
    const base = 'https://huggingface.co/onnx-community/Tiny-ONNX/resolve/main/';
    const src = await resolveModelSource('onnx-community/Tiny-ONNX', { fetch: hub(names).fetch });
    expect(src).toEqual({
      kind: 'hf-urls',
      files: Object.fromEntries(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model.onnx_data'].map((n) => [n, base + n])),
    });
    const q4 = await resolveModelSource('onnx-community/Tiny-ONNX', { file: 'onnx/model_q4.onnx', fetch: hub(names).fetch });
    expect(Object.keys((q4 as { files: Record<string, string> }).files).sort()).toEqual(['config.json', 'onnx/model_q4.onnx', 'onnx/model_q4.onnx_data', 'tokenizer.json', 'tokenizer_config.json']);
    // A repository with safetensors and an onnx/ folder (as SmolLM2's): the safetensors unless an .onnx is named.
    const both = await resolveModelSource('org/both', { fetch: hub(['config.json', 'model.safetensors', 'onnx/model.onnx']).fetch });
    expect(Object.keys((both as { files: Record<string, string> }).files)).toEqual(['config.json', 'model.safetensors']);
    const err = await resolveModelSource('onnx-community/Tiny-ONNX', { file: 'onnx/model_int3.onnx', fetch: hub(names).fetch }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSourceError);
    expect(err.message).toContain("'onnx/model_int3.onnx' is not in the repository: pick one of onnx/model.onnx, onnx/model_q4.onnx, onnx/model_fp16.onnx");
  });

  test('a GGUF-only repository without `file` says which files to pick', async () => {
    const err = await resolveModelSource('org/gguf-repo', { fetch: hub(['a-q4_0.gguf', 'a-q8_0.gguf', 'README.md']).fetch }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSourceError);
    expect(err.source).toBe('org/gguf-repo');
    expect(err.message).toContain('pass one of them as `file` (a-q4_0.gguf, a-q8_0.gguf)');
  });

  test('a listing in pages is read whole; a revision and a mirror are asked for as given', async () => {
    const h = hub(['README.md', 'config.json', 'tokenizer.json', 'x.txt', 'model.safetensors'], 200, 2);
    const src = await resolveModelSource('org/paged', { revision: 'refs/pr/1', hubUrl: 'https://mirror.example/', fetch: h.fetch });
    const base = 'https://mirror.example/org/paged/resolve/refs%2Fpr%2F1/';
    expect(src).toEqual({ kind: 'hf-urls', files: { 'config.json': base + 'config.json', 'tokenizer.json': base + 'tokenizer.json', 'model.safetensors': base + 'model.safetensors' } });
    expect(h.asked).toEqual([
      'https://mirror.example/api/models/org/paged/tree/refs%2Fpr%2F1?recursive=true',
      'https://mirror.example/api/models/org/paged/tree/refs%2Fpr%2F1?recursive=true&cursor=2',
      'https://mirror.example/api/models/org/paged/tree/refs%2Fpr%2F1?recursive=true&cursor=4',
    ]);
  });

  test('a missing, gated or private repository is a ModelSourceError naming the id and the status', async () => {
    for (const status of [404, 401, 403]) {
      const err = await resolveModelSource('org/nope', { fetch: hub([], status).fetch }).catch((e) => e);
      expect(err).toBeInstanceOf(ModelSourceError);
      expect(err).not.toBeInstanceOf(DownloadError);
      expect(err).toMatchObject({ source: 'org/nope', status });
      expect(err.message).toContain(`HTTP ${status} for https://huggingface.co/api/models/org/nope/tree/main?recursive=true`);
      expect(err.message).toContain('check the id and revision');
    }
  });

  test('a hub that fails, does not answer, or answers no listing: the situation\'s typed error', async () => {
    const busy = await resolveModelSource('org/busy', { fetch: hub([], 503).fetch }).catch((e) => e);
    expect(busy).toBeInstanceOf(DownloadError);
    expect(busy).toMatchObject({ status: 503 });
    expect(busy.message).toContain('try again later');

    const down = (async () => {
      throw new TypeError('fetch failed');
    }) as typeof fetch;
    const offline = await resolveModelSource('org/offline', { fetch: down }).catch((e) => e);
    expect(offline).toBeInstanceOf(DownloadError);
    expect(offline.status).toBeUndefined();
    expect(offline.message).toContain('the network request got no answer (TypeError: fetch failed)');

    const page = (async () => new Response('<!doctype html><p>Sign in</p>', { headers: { 'content-type': 'text/html' } })) as typeof fetch;
    const html = await resolveModelSource('org/page', { fetch: page }).catch((e) => e);
    expect(html).toBeInstanceOf(ModelSourceError);
    expect(html).toMatchObject({ source: 'org/page' });
    expect(html.message).toContain('is not a file listing (text/html, not a JSON array): check hubUrl');
  });

  test('an aborted listing rejects with the signal\'s reason', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const slow = ((_: unknown, init?: RequestInit) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))))) as typeof fetch;
    const pending = resolveModelSource('org/slow', { fetch: slow, signal: controller.signal });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  test('a File is a one-file source; a folder keeps each file\'s own name', async () => {
    const gguf = new File([new Uint8Array([1, 2, 3])], 'model.gguf');
    expect(await resolveModelSource(gguf)).toEqual({ kind: 'files', files: [{ name: 'model.gguf', blob: gguf }] });
    const cfg = new File(['{}'], 'config.json');
    const st = new File([new Uint8Array(8)], 'model.safetensors');
    expect(await resolveModelSource([cfg, st])).toEqual({ kind: 'files', files: [{ name: 'config.json', blob: cfg }, { name: 'model.safetensors', blob: st }] });
  });

  test('a ModelSource passes through', async () => {
    const src = { kind: 'hf-urls' as const, files: { 'config.json': 'https://x/config.json' } };
    expect(await resolveModelSource(src)).toBe(src);
  });

  test('empty inputs and relative URLs without a page are ModelSourceErrors', async () => {
    await expect(resolveModelSource('')).rejects.toBeInstanceOf(ModelSourceError);
    await expect(resolveModelSource([])).rejects.toBeInstanceOf(ModelSourceError);
    // In Node there is no page to resolve './x.gguf' against.
    await expect(resolveModelSource('./x.gguf')).rejects.toThrow(/absolute URL/);
  });

  test('isHfId tells ids from paths', () => {
    expect(isHfId('HuggingFaceTB/SmolLM2-135M-Instruct')).toBe(true);
    expect(isHfId('Qwen/Qwen2.5-0.5B-Instruct')).toBe(true);
    expect(isHfId('models/x.gguf')).toBe(false);
    expect(isHfId('/models/x')).toBe(false);
    expect(isHfId('./a/b')).toBe(false);
    expect(isHfId('a/b/c')).toBe(false);
    expect(isHfId('https://x.org/a')).toBe(false);
  });
});
