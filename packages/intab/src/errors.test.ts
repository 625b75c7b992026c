// Every error class `intab` exports is an IntabError with its own stable code: a program can catch `IntabError` for
// anything the library throws and switch on `err.code`. New classes are picked up by enumerating the entry's exports,
// so one added without a code of its own (it would share its parent's) fails here. The one list of classes
// (error-list.ts) is held to the sources: every class the packages declare (each with errorClass, the one way) is in
// it under its name and code, each entry exports its own, the worker rebuilds every class it can throw, and the
// README's table has one row per code.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { WORKER_ERRORS, deserializeError } from '@intab/engine/errors';
import * as intab from './index.ts';
import * as serviceWorkerEntry from './service-worker.ts';
import * as viteEntry from './vite.ts';
import { ERROR_CLASSES } from './error-list.ts';
import { errorResponse } from './openai-errors.ts';
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

// ---- the sources, the one list, the entries, the worker's registry and the README's table ----

// Classes thrown only inside their package and caught there (converted to a typed error before they escape).
const INTERNAL = new Set(['RegexError']);
const PACKAGES = ['errors', 'gpu', 'model', 'engine', 'grammar', 'onnx', 'intab'];
/** The packages below `intab`: what they throw can come from the worker. */
const WORKER_SIDE = new Set(['errors', 'gpu', 'model', 'engine', 'grammar', 'onnx']);
const root = fileURLToPath(new URL('../../', import.meta.url));
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : /\.ts$/.test(e.name) && !/\.test\.ts$/.test(e.name) ? [join(dir, e.name)] : [],
  );
const files = PACKAGES.flatMap((pkg) => sources(join(root, pkg, 'src')).map((file) => ({ pkg, file, text: readFileSync(file, 'utf8') })));

/** Every `export class X extends errorClass(Parent, 'Name', 'code')` in the packages' sources (at a line's start: not in a doc comment). */
const declared = files.flatMap(({ pkg, file, text }) =>
  [...text.matchAll(/^export\s+class\s+(\w+)\s+extends\s+errorClass\(\s*(\w+)\s*,\s*'([^']*)'\s*,\s*'([^']*)'\s*\)/gm)].map((m) => ({ cls: m[1], parent: m[2], name: m[3], code: m[4], pkg, where: file.slice(root.length) })),
);

type Listed = { name: string; entry: keyof typeof ERROR_CLASSES; cls: ErrorClass };
const listed: Listed[] = (Object.entries(ERROR_CLASSES) as [keyof typeof ERROR_CLASSES, Record<string, ErrorClass>][]).flatMap(([entry, classes]) =>
  Object.entries(classes).map(([name, cls]) => ({ name, entry, cls })),
);
const entries: Record<keyof typeof ERROR_CLASSES, Record<string, unknown>> = { intab, 'intab/service-worker': serviceWorkerEntry, 'intab/vite': viteEntry };

/** The README's table of codes: `| \`code\` | \`Class\` | words |` rows under its `| code | class |` header. */
function readmeRows(): { code: string; name: string }[] {
  const lines = readFileSync(join(root, '..', 'README.md'), 'utf8').split('\n');
  const header = lines.findIndex((l) => /^\|\s*code\s*\|\s*class\s*\|/.test(l));
  expect(header, "the README's table of codes (a '| code | class | ... |' header)").toBeGreaterThan(0);
  const rows: { code: string; name: string }[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const m = /^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|\s*\S/.exec(line);
    expect(m, `a README row of the form | \`code\` | \`Class\` | what |: ${line}`).not.toBeNull();
    rows.push({ code: m![1], name: m![2] });
  }
  return rows;
}

describe('the one list of error classes', () => {
  test('every class the packages declare is in it, under its own name, with the code it declares', () => {
    expect(declared.length, 'the scan found the declarations').toBeGreaterThanOrEqual(50);
    const byName = new Map(listed.map((l) => [l.name, l]));
    for (const d of declared) {
      expect(d.name, `${d.where}: ${d.cls} declares its own name`).toBe(d.cls);
      const l = byName.get(d.cls);
      expect(l, `${d.cls} (${d.where}) is in error-list.ts (its package's list: GPU_ERRORS, MODEL_ERRORS, ENGINE_ERRORS, PAGE_ERRORS...)`).toBeDefined();
      expect(l!.cls.code, `${d.cls}.code`).toBe(d.code);
      expect(l!.cls.prototype.name, `${d.cls}.prototype.name`).toBe(d.cls);
    }
    // Nothing else: the declared classes and IntabError, each once.
    expect(listed.map((l) => l.name).sort()).toEqual(['IntabError', ...declared.map((d) => d.cls)].sort());
  });

  test('each class is declared one way, with errorClass (IntabError itself and package-internal classes aside)', () => {
    const byHand: string[] = [];
    for (const { file, text } of files) {
      for (const m of text.matchAll(/^export\s+(?:abstract\s+)?class\s+(\w+)\s+extends\s+(?!errorClass\()([\w.]+)/gm)) {
        const parent = m[2];
        if (!/Error$|^DOMException$/.test(parent) || m[1] === 'IntabError' || INTERNAL.has(m[1])) continue;
        byHand.push(`${m[1]} extends ${parent} (${file.slice(root.length)})`);
      }
    }
    expect(byHand).toEqual([]);
  });

  test('each entry exports its classes, and no error class that is not in the list', () => {
    for (const [entry, mod] of Object.entries(entries) as [keyof typeof ERROR_CLASSES, Record<string, unknown>][]) {
      for (const l of listed.filter((x) => x.entry === entry)) expect(mod[l.name], `'${entry}' exports ${l.name}`).toBe(l.cls);
      const exported = Object.entries(mod).filter(([, v]) => typeof v === 'function' && (v === IntabError || v.prototype instanceof Error)).map(([n]) => n);
      expect(exported.sort(), `the error classes '${entry}' exports`).toEqual(listed.filter((x) => x.entry === entry).map((x) => x.name).sort());
    }
  });

  test('the worker rebuilds every class the packages below intab declare, as itself, with its code', () => {
    const belowIntab = declared.filter((d) => WORKER_SIDE.has(d.pkg)).map((d) => d.cls);
    expect(Object.keys(WORKER_ERRORS).sort()).toEqual(['IntabError', ...belowIntab].sort());
    for (const [name, cls] of Object.entries(WORKER_ERRORS) as [string, ErrorClass][]) {
      // What the transfer handler sends for one of them (serializeError's data, through structured cloning).
      const back = deserializeError(structuredClone({ __intabError: 1, name, message: `a ${name}`, fields: { code: cls.code }, intab: 1 } as const));
      expect(back, name).toBeInstanceOf(cls);
      expect(back).toMatchObject({ name, code: cls.code, message: `a ${name}` });
    }
  });

  test("the README's table has one row per class: its code and its name", () => {
    const rows = readmeRows();
    const codes = rows.map((r) => r.code);
    expect(new Set(codes).size, 'each code once').toBe(codes.length);
    const want = listed.map((l) => ({ code: l.cls.code as string, name: l.name }));
    const key = (r: { code: string; name: string }) => `${r.code} ${r.name}`;
    expect(rows.map(key).sort()).toEqual(want.map(key).sort());
  });
});

describe('no exported error class of the library packages bypasses IntabError', () => {
  test('`export class X extends Error` appears only for IntabError itself (and the internal ones)', () => {
    const direct: string[] = [];
    for (const { file, text } of files) {
      for (const m of text.matchAll(/export\s+(?:abstract\s+)?class\s+(\w+)\s+extends\s+(?:Error|TypeError|RangeError|DOMException)\b/g)) {
        if (m[1] !== 'IntabError' && !INTERNAL.has(m[1])) direct.push(`${m[1]} (${file.slice(root.length)})`);
      }
    }
    expect(direct).toEqual([]);
  });
});
