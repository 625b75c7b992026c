// errorClass(): a class declared in one place (parent, name, code, fields) behaves as the hand-written classes did:
// instanceof for the class and each parent, `name`, `code` and the fields as own properties (what structured cloning
// keeps), `Class.code`, the parent's constructor arguments after the fields, optional fields left out when not given,
// and a subclass declared by hand (as the CLI's are) sharing its parent's code.
import { describe, expect, test } from 'vitest';
import { IntabError, errorClass } from './index.ts';

class BaseError extends errorClass(IntabError, 'BaseError', 'base_problem') {
  constructor(message: string, options?: { cause?: unknown }) {
    super({}, message, options);
  }
}

/** A parent with fields and a constructor of its own shape (as ModelSourceError and RemoteError are). */
class SourceError extends errorClass(BaseError, 'SourceError', 'source_problem')<{
  readonly source: string;
  readonly status?: number;
}> {
  constructor(source: string, problem: string, options?: { status?: number; cause?: unknown }) {
    super({ source, status: options?.status }, `${source}: ${problem}. Check the source.`, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

class FetchError extends errorClass(SourceError, 'FetchError', 'fetch_problem')<{ readonly url: string; readonly attempts: number }> {
  constructor(url: string, attempts: number, options?: { status?: number; cause?: unknown }) {
    super({ url, attempts }, url, `no answer after ${attempts} attempts`, options);
  }
}

/** Declared by hand, without a code of its own. */
class HandWrittenError extends BaseError {
  readonly detail: string;
  constructor(detail: string) {
    super(`hand: ${detail}`);
    this.name = 'HandWrittenError';
    this.detail = detail;
  }
}

describe('errorClass', () => {
  test('name, code and fields are own properties; instanceof holds for the class and every parent', () => {
    const cause = new Error('ECONNREFUSED');
    const e = new FetchError('https://x/m.gguf', 3, { status: 503, cause });
    for (const cls of [FetchError, SourceError, BaseError, IntabError, Error]) expect(e).toBeInstanceOf(cls);
    expect(e).toMatchObject({ name: 'FetchError', code: 'fetch_problem', url: 'https://x/m.gguf', attempts: 3, source: 'https://x/m.gguf', status: 503 });
    expect(e.message).toBe('https://x/m.gguf: no answer after 3 attempts. Check the source.');
    expect(e.cause).toBe(cause);
    expect(Object.keys(e).sort()).toEqual(['attempts', 'code', 'name', 'source', 'status', 'url']);
    // What postMessage would carry of it: every field, the code and the name.
    expect(structuredClone({ ...e })).toEqual({ name: 'FetchError', code: 'fetch_problem', url: 'https://x/m.gguf', attempts: 3, source: 'https://x/m.gguf', status: 503 });
    expect(String(e)).toBe('FetchError: https://x/m.gguf: no answer after 3 attempts. Check the source.');
  });

  test('each class has its own static code and prototype name; the parent keeps its own', () => {
    expect([FetchError.code, SourceError.code, BaseError.code, IntabError.code]).toEqual(['fetch_problem', 'source_problem', 'base_problem', 'intab_error']);
    expect([FetchError.prototype.name, SourceError.prototype.name, BaseError.prototype.name]).toEqual(['FetchError', 'SourceError', 'BaseError']);
    const base = new SourceError('org/name', 'the hub answered HTTP 404', { status: 404 });
    expect(base).not.toBeInstanceOf(FetchError);
    expect(base).toMatchObject({ name: 'SourceError', code: 'source_problem', status: 404 });
  });

  test('an optional field not given is not set at all, as a hand-written `if (x !== undefined) this.x = x` did', () => {
    const e = new SourceError('./model.gguf', 'not a GGUF file');
    expect('status' in e).toBe(false);
    expect(Object.keys(e).sort()).toEqual(['code', 'name', 'source']);
    expect('cause' in e).toBe(false);
  });

  test('a subclass declared by hand shares its parent code and sets its own name', () => {
    const e = new HandWrittenError('x');
    expect(e).toBeInstanceOf(BaseError);
    expect(e).toMatchObject({ name: 'HandWrittenError', code: 'base_problem', detail: 'x', message: 'hand: x' });
  });
});
