// Every error class `intab` exports is an IntabError with its own stable code: a program can catch `IntabError` for
// anything the library throws and switch on `err.code`. New classes are picked up by enumerating the entry's exports,
// so one added without a code of its own (it would share its parent's) fails here.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import * as intab from './index.ts';
import { errorResponse } from './openai-server.ts';
import { ChatTemplateError, ContextLengthExceededError, DeviceLostError, DownloadError, IntabError, ModelSourceError, RemoteHttpError, TokenizerRequiredError } from './index.ts';

type ErrorClass = (abstract new (...args: never[]) => Error) & { code?: unknown };

const errorClasses = (Object.entries(intab) as [string, unknown][]).filter((e): e is [string, ErrorClass] => typeof e[1] === 'function' && (e[1] === IntabError || e[1].prototype instanceof Error));

describe("intab's exported errors", () => {
  test('every exported error class is an IntabError with a distinct snake_case code', () => {
    // Catches an enumeration that silently finds nothing (a changed export style).
    expect(errorClasses.length).toBeGreaterThanOrEqual(45);
    const byCode = new Map<string, string>();
    for (const [name, cls] of errorClasses) {
      expect(cls === IntabError || cls.prototype instanceof IntabError, `${name} extends IntabError`).toBe(true);
      expect(cls.code, `${name}.code`).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      const code = cls.code as string;
      expect(byCode.get(code), `${name} has its own code, not ${byCode.get(code)}'s`).toBeUndefined();
      byCode.set(code, name);
    }
    // The codes the README documents and the OpenAI surface shares.
    expect(Object.fromEntries([...byCode].map(([c, n]) => [n, c]))).toMatchObject({
      IntabError: 'intab_error',
      ContextLengthExceededError: 'context_length_exceeded',
      InvalidRequestError: 'invalid_request',
      DeviceLostError: 'device_lost',
      ModelSourceError: 'model_source_unavailable',
      ChatTemplateError: 'chat_template_error',
      TokenizerRequiredError: 'tokenizer_required',
    });
  });

  test('an instance carries its class\'s code as an own property (what crosses structured cloning)', () => {
    const cases: [IntabError, string][] = [
      [new ContextLengthExceededError({ promptTokens: 600, maxTokens: 10, limit: 512, limitedBy: 'context', reason: 'prompt' }), 'context_length_exceeded'],
      [new DeviceLostError('unknown', 'driver reset'), 'device_lost'],
      [new DownloadError('https://x/m.gguf', 'the server answered HTTP 404', { status: 404 }), 'download_failed'],
      [new RemoteHttpError('https://x/v1', 429, { code: 'rate_limit_exceeded' }, 1), 'remote_http_error'],
      [ChatTemplateError.missing('m.gguf'), 'chat_template_error'],
      [new TokenizerRequiredError(), 'tokenizer_required'],
    ];
    for (const [err, code] of cases) {
      expect(err).toBeInstanceOf(IntabError);
      expect(Object.getOwnPropertyDescriptor(err, 'code')?.value, err.name).toBe(code);
      expect(structuredClone({ ...err }).code).toBe(code);
    }
    // The server's own code has its own field.
    expect(cases[3][0]).toMatchObject({ code: 'remote_http_error', serverCode: 'rate_limit_exceeded', status: 429 });
  });

  test('one name per situation: a model that cannot be fetched, a missing chat template', () => {
    const download = new DownloadError('https://x/m.gguf', 'the server answered an HTML page, not the file', { status: 200 });
    expect(download).toBeInstanceOf(ModelSourceError);
    expect(download).toMatchObject({ name: 'DownloadError', url: 'https://x/m.gguf', source: 'https://x/m.gguf', status: 200 });
    const missing = ChatTemplateError.missing('base.gguf');
    expect(missing).toMatchObject({ name: 'ChatTemplateError', reason: 'missing', file: 'base.gguf' });
    expect(missing.message).toMatch(/plain text instead of messages/);
    // Over the OpenAI API, as the missing template was before it had this name: the request is at fault.
    expect(errorResponse(missing)).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error' } } });
    expect(errorResponse(new TokenizerRequiredError())).toMatchObject({ status: 400 });
    expect(new TokenizerRequiredError().needs).toBe('tokenizer');
  });
});

describe('no exported error class of the library packages bypasses IntabError', () => {
  // Classes thrown only inside their package and caught there (converted to a typed error before they escape).
  const INTERNAL = new Set(['RegexError']);
  const PACKAGES = ['errors', 'gpu', 'model', 'engine', 'grammar', 'onnx', 'intab'];
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? sources(join(dir, e.name)) : /\.ts$/.test(e.name) && !/\.test\.ts$/.test(e.name) ? [join(dir, e.name)] : [],
    );

  test('`export class X extends Error` appears only for IntabError itself (and the internal ones)', () => {
    const direct: string[] = [];
    for (const pkg of PACKAGES) {
      for (const file of sources(join(root, pkg, 'src'))) {
        for (const m of readFileSync(file, 'utf8').matchAll(/export\s+(?:abstract\s+)?class\s+(\w+)\s+extends\s+(?:Error|TypeError|RangeError|DOMException)\b/g)) {
          if (m[1] !== 'IntabError' && !INTERNAL.has(m[1])) direct.push(`${m[1]} (${file.slice(root.length)})`);
        }
      }
    }
    expect(direct).toEqual([]);
  });
});
