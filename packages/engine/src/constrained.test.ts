// Constrained decoding through the engine, over the CPU reference runner: a generated model with Qwen3's real
// vocabulary (151k byte-level BPE tokens) and random weights, so only the grammar stands between it and garbage.
// JSON Schema, any-JSON, GBNF and regex outputs always match (ajv is the oracle for schemas), partial-JSON events
// rebuild the document (value types the schema fixes are announced first), forced text costs no steps, it works
// batched, with speculative decoding and aborts, and bad formats fail typed before any step.
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, test } from 'vitest';
import { advance, anyJson, assembleJson, completeDocument, GrammarSyntaxError, UnsupportedSchemaError } from '@intab/grammar';
import type { LlamaConfig, Tokenizer } from '@intab/model';
import type { GenerateRequest, JsonEvent } from './contract.ts';
import { Engine } from './engine.ts';
import { InvalidRequestError, TokenizerRequiredError } from './errors.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { qwen3VocabModel } from './test-models.ts';
import { collect } from './test-streams.ts';

let tokenizer: Tokenizer;
let config: LlamaConfig;
let tensors: Map<string, Float32Array>;

beforeAll(() => {
  ({ tokenizer, config, tensors } = qwen3VocabModel());
});

function setup(o: { tokenizer?: boolean; maxBatch?: number } = {}) {
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 64, pageSize: 16, maxBatch: 8, yieldEachStep: false });
  const engine = new Engine({ runner, tokenizer: o.tokenizer === false ? undefined : tokenizer, options: { seed: 5, maxBatch: o.maxBatch ?? 8 } });
  return { runner, engine };
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
    kind: { const: 'person' },
  },
  required: ['name', 'age', 'kind'],
  additionalProperties: false,
};

const base = { prompt: 'Give me a JSON object:', maxTokens: 120, temperature: 1, seed: 1 } satisfies GenerateRequest;

describe('constrained decoding with a 151k vocabulary', () => {
  test('json_schema: every output parses and validates; events rebuild it; forced text costs no steps', { timeout: 120_000 }, async () => {
    const { engine, runner } = setup();
    const validate = ajv.compile(PERSON);
    for (const seed of [1, 2, 3]) {
      const stepsBefore = runner.log.length;
      const r = await collect(engine, await engine.start({ ...base, seed, responseFormat: { type: 'json_schema', schema: PERSON } }));
      expect(r.last.finishReason, r.text).toBe('stop');
      const value = JSON.parse(r.text);
      expect(validate(value), `${r.text}: ${JSON.stringify(validate.errors)}`).toBe(true);
      // the events, replayed, give the document; the last chunk's partial is the parsed value
      const events = r.chunks.flatMap((c) => c.json ?? []);
      expect(assembleJson(events)).toEqual(value);
      expect(r.last.partial).toEqual(value);
      expect(events.filter((e: JsonEvent) => e.kind === 'key').map((e) => e.path.at(-1))).toEqual(Object.keys(value));
      // type-ahead: `age` is an integer, announced before its first digit; every announced type is the value's
      const typed = events.filter((e) => e.kind === 'type');
      expect(typed.map((e) => `${JSON.stringify(e.path)} ${e.type}`)).toContain('["age"] number');
      for (const t of typed) {
        const at = JSON.stringify(t.path);
        const first = events.findIndex((e) => e.kind !== 'type' && e.kind !== 'key' && JSON.stringify(e.path) === at);
        expect(first, at).toBeGreaterThan(events.indexOf(t));
        expect(events[first].type, at).toBe(t.type);
      }
      // `{"name":"` and `"kind":"person"` are forced: fewer steps than tokens
      const steps = runner.log.length - stepsBefore;
      expect(steps).toBeLessThan(r.ids.length);
    }
  });

  test('json_object, GBNF and regex outputs match their format', { timeout: 120_000 }, async () => {
    const { engine } = setup();
    // The random model never closes its first string within 60 tokens (seed 1): the document is cut at maxTokens, and
    // what it wrote is the start of a JSON document: closing it the shortest way gives one that JSON.parse accepts.
    const any = await collect(engine, await engine.start({ ...base, maxTokens: 60, responseFormat: { type: 'json_object' } }));
    expect(any.last.finishReason).toBe('length');
    expect(any.ids).toHaveLength(60);
    const json = anyJson();
    const cut = advance(json, json.initial, any.text);
    expect(cut, any.text).not.toBeNull();
    const closed = any.text + new TextDecoder().decode(completeDocument(json, cut!)!);
    expect(closed.length).toBeGreaterThan(any.text.length);
    expect(JSON.parse(closed)).toEqual(any.last.partial);
    const gbnf = 'root ::= "color: " ("red" | "green" | "blue") "." ';
    const g = await collect(engine, await engine.start({ ...base, grammar: gbnf }));
    expect(g.text).toMatch(/^color: (red|green|blue)\.$/);
    expect(g.last.finishReason).toBe('stop');
    const re = await collect(engine, await engine.start({ ...base, regex: '[0-9]{3}-[a-z]{2,4}' }));
    expect(re.text).toMatch(/^[0-9]{3}-[a-z]{2,4}$/);
    expect(re.last.finishReason).toBe('stop');
  });

  test('batched: four requests with different formats share steps, each valid', { timeout: 120_000 }, async () => {
    const { engine, runner } = setup();
    const schema2 = { type: 'array', items: { type: 'integer', minimum: 1, maximum: 9 }, minItems: 2, maxItems: 4 };
    const requests: GenerateRequest[] = [
      { ...base, seed: 4, responseFormat: { type: 'json_schema', schema: PERSON } },
      { ...base, seed: 5, responseFormat: { type: 'json_schema', schema: schema2 } },
      { ...base, seed: 6, regex: '(yes|no)!' },
      { ...base, seed: 7, maxTokens: 8, temperature: 0 }, // unconstrained, beside them
    ];
    const ids = await Promise.all(requests.map((r) => engine.start(r)));
    const outs = await Promise.all(ids.map((id) => collect(engine, id)));
    expect(ajv.validate(PERSON, JSON.parse(outs[0].text))).toBe(true);
    expect(ajv.validate(schema2, JSON.parse(outs[1].text))).toBe(true);
    expect(outs[2].text).toMatch(/^(yes|no)!$/);
    expect(outs[3].ids).toHaveLength(8);
    expect(runner.log.some((s) => s.length >= 3)).toBe(true);
    expect(engine.stats().availablePages).toBe(64);
  });

  test('with speculative decoding: the same ids as without, still valid', { timeout: 120_000 }, async () => {
    const r = { ...base, seed: 9, responseFormat: { type: 'json_schema' as const, schema: PERSON } };
    const a = setup();
    const p = await collect(a.engine, await a.engine.start(r));
    for (const method of ['ngram', 'self'] as const) {
      const b = setup();
      const s = await collect(b.engine, await b.engine.start({ ...r, speculative: { method, k: 3, adaptive: false } }));
      expect(s.ids, method).toEqual(p.ids);
      expect(s.last.metrics!.speculative!.verifySteps, method).toBeGreaterThan(0);
      expect(ajv.validate(PERSON, JSON.parse(s.text))).toBe(true);
    }
  });

  test('maxTokens cuts a document short: finish length, the partial document so far', { timeout: 60_000 }, async () => {
    const { engine } = setup();
    const r = await collect(engine, await engine.start({ ...base, maxTokens: 6, responseFormat: { type: 'json_schema', schema: PERSON } }));
    expect(r.last.finishReason).toBe('length');
    expect(() => JSON.parse(r.text)).toThrow();
    expect(r.last.partial).toMatchObject({});
  });

  test('abort mid-document frees the pages', { timeout: 60_000 }, async () => {
    const { engine } = setup();
    const controller = new AbortController();
    const id = await engine.start({ ...base, responseFormat: { type: 'json_schema', schema: PERSON } }, controller.signal);
    const first = await engine.next(id);
    controller.abort();
    let last = first;
    while (!last.finishReason) last = await engine.next(id);
    expect(last.finishReason).toBe('abort');
    expect(engine.stats()).toMatchObject({ availablePages: 64, streams: 0 });
  });

  test('bad formats fail typed at start, before any step', async () => {
    const { engine, runner } = setup();
    const unenforceable = { type: 'array', items: { type: 'string' }, uniqueItems: true, maxItems: 3 };
    await expect(engine.start({ ...base, responseFormat: { type: 'json_schema', schema: unenforceable } })).rejects.toBeInstanceOf(UnsupportedSchemaError);
    await expect(engine.start({ ...base, grammar: 'root ::= ("a" ' })).rejects.toBeInstanceOf(GrammarSyntaxError);
    await expect(engine.start({ ...base, grammar: 'root ::= "a"', regex: 'a' })).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(engine.start({ ...base, responseFormat: { type: 'xml' } as never })).rejects.toThrow(/'json_schema', 'json_object', 'grammar' or 'regex'/);
    const noTok = setup({ tokenizer: false });
    await expect(noTok.engine.start({ promptIds: [1, 2], responseFormat: { type: 'json_object' } })).rejects.toBeInstanceOf(TokenizerRequiredError);
    expect(runner.log).toHaveLength(0);
    // lenient: the unsupported keyword is dropped and reported on the last chunk
    const lenient = await collect(engine, await engine.start({ ...base, maxTokens: 30, responseFormat: { type: 'json_schema', schema: unenforceable, strict: false } }));
    expect(lenient.last.warnings?.map((w) => w.keyword)).toContain('uniqueItems');
  });
});
