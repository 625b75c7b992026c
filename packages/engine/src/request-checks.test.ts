// checkRequest / resolveOptions field by field: every refusal is an InvalidRequestError whose field names the bad
// field (down to the element: 'stop[3]', 'logitBias[7]', 'messages[1].content') and whose message states the bound;
// what is accepted comes back with its defaults, null standing for the default as an absent field does. An unknown
// field is refused naming the closest known one; a message role outside the five is refused listing them; a preload's
// request is checked the same way (checkPreload).
import { describe, expect, test } from 'vitest';

import { REQUEST_LIMITS, type GenerateRequest, type PreloadRequest } from './contract.ts';
import { InvalidRequestError, deserializeError, serializeError } from './errors.ts';
import { CHAT_ROLES, GENERATE_FIELDS, closestName, editDistance } from './field-checks.ts';
import { checkPreload, checkRequest, templateMessages } from './request-checks.ts';
import { resolveOptions } from './sequence.ts';

const VOCAB = 512;

/** The refusal of `r` (with a one-token prompt unless it sends its own), or a failed expectation when it passes. */
function refusal(r: Record<string, unknown>, vocab = VOCAB, hasTokenizer = true): InvalidRequestError {
  const prompt = 'prompt' in r || 'promptIds' in r || 'messages' in r ? {} : { promptIds: [1] };
  try {
    checkRequest({ ...prompt, ...r } as GenerateRequest, vocab, hasTokenizer);
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidRequestError);
    return e as InvalidRequestError;
  }
  throw new Error(`accepted: ${JSON.stringify(r)}`);
}

const field = (r: Record<string, unknown>, vocab?: number, hasTokenizer?: boolean) => refusal(r, vocab, hasTokenizer).field;

describe('the prompt', () => {
  test('exactly one of prompt, promptIds and messages, each of its shape', () => {
    expect(field({ prompt: undefined })).toBe('prompt');
    expect(field({ prompt: null, messages: null })).toBe('prompt');
    expect(refusal({ prompt: 'a', promptIds: [1] }).message).toContain('"prompt and promptIds"');
    expect(field({ prompt: 5 })).toBe('prompt');
    expect(field({ promptIds: [] })).toBe('promptIds');
    expect(field({ promptIds: '1 2' })).toBe('promptIds');
    expect(field({ promptIds: [1, 512] })).toBe('promptIds[1]');
    expect(field({ promptIds: [1, 2.5] })).toBe('promptIds[1]');
    expect(field({ promptIds: [-1] })).toBe('promptIds[0]');
    expect(field({ promptIds: [1, NaN] })).toBe('promptIds[1]');
    expect(field({ promptIds: [1, , 2] })).toBe('promptIds[1]'); // a hole is an undefined id, not a skipped one
    expect(field({ messages: [] })).toBe('messages');
    expect(field({ messages: { role: 'user', content: 'x' } })).toBe('messages');
    expect(field({ messages: [{ role: 'user', content: 'x' }, null] })).toBe('messages[1]');
    expect(field({ messages: [['user', 'x']] })).toBe('messages[0]');
    expect(field({ messages: [{ content: 'x' }] })).toBe('messages[0].role');
    expect(field({ messages: [{ role: 'user', content: ['x'] }] })).toBe('messages[0].content');
  });

  test('a request that is not an object is refused as a whole', () => {
    for (const r of [null, 7, 'hi', [{ prompt: 'x' }]]) {
      expect(() => checkRequest(r as never, VOCAB, true)).toThrow(InvalidRequestError);
      try {
        checkRequest(r as never, VOCAB, true);
      } catch (e) {
        expect((e as InvalidRequestError).field).toBe('request');
      }
    }
  });
});

describe('sampling', () => {
  test('NaN, Infinity and out-of-range numbers name the field and say the range', () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ temperature: NaN }, 'temperature', `[0, ${REQUEST_LIMITS.temperature}]`],
      [{ temperature: Infinity }, 'temperature', '(0 = greedy)'],
      [{ temperature: -0.1 }, 'temperature', '[0, 100]'],
      [{ temperature: 101 }, 'temperature', '[0, 100]'],
      [{ temperature: '1' }, 'temperature', '[0, 100]'],
      [{ topK: -1 }, 'topK', '≥ 0'],
      [{ topK: 1.5 }, 'topK', '≥ 0'],
      [{ topK: 2 ** 60 }, 'topK', '≥ 0'],
      [{ topP: 0 }, 'topP', '(0, 1]'],
      [{ topP: 1.01 }, 'topP', '(0, 1]'],
      [{ minP: -0.01 }, 'minP', '[0, 1]'],
      [{ minP: 2 }, 'minP', '[0, 1]'],
      [{ repetitionPenalty: 0 }, 'repetitionPenalty', '[0.01, 10]'],
      [{ repetitionPenalty: 1e-40 }, 'repetitionPenalty', '[0.01, 10]'],
      [{ repetitionPenalty: 11 }, 'repetitionPenalty', '[0.01, 10]'],
      [{ presencePenalty: -2.5 }, 'presencePenalty', '[-2, 2]'],
      [{ frequencyPenalty: 1e39 }, 'frequencyPenalty', '[-2, 2]'],
      [{ frequencyPenalty: -Infinity }, 'frequencyPenalty', '[-2, 2]'],
      [{ seed: 1.5 }, 'seed', 'an integer'],
      [{ seed: 2 ** 60 }, 'seed', '2^53 - 1'],
      [{ seed: '42' }, 'seed', 'an integer'],
      [{ logprobs: 1 }, 'logprobs', 'a boolean'],
      [{ topLogprobs: 21, logprobs: true }, 'topLogprobs', '[0, 20]'],
      [{ topLogprobs: -1, logprobs: true }, 'topLogprobs', '[0, 20]'],
      [{ topLogprobs: 2.5, logprobs: true }, 'topLogprobs', '[0, 20]'],
      [{ topLogprobs: 2 }, 'topLogprobs', 'logprobs: true'],
    ];
    for (const [r, name, bound] of cases) {
      const e = refusal(r);
      expect([e.field, e.message], JSON.stringify(r)).toEqual([name, expect.stringContaining(bound)]);
    }
    expect(refusal({ topLogprobs: 12, logprobs: true }, 10).message).toContain('[0, 10]'); // a vocabulary smaller than 20
  });

  test('logitBias: an object of token-id keys, biases in [-100, 100] or -Infinity, at most 1024 entries', () => {
    expect(field({ logitBias: [1, 2] })).toBe('logitBias');
    expect(field({ logitBias: new Map([[1, 1]]) })).toBe('logitBias');
    expect(field({ logitBias: 'x' })).toBe('logitBias');
    for (const key of ['abc', '-1', '1.5', '1e2', '01', ' 1', '', '0x10', '__proto__', '512']) {
      const e = refusal({ logitBias: JSON.parse(`{${JSON.stringify(key)}: 1}`) });
      expect([e.field, e.message], key).toEqual([`logitBias[${key}]`, expect.stringContaining('a key that is a token id in [0, 512)')]);
    }
    expect(field({ logitBias: { ['9'.repeat(5000)]: 1 } })).toBe(`logitBias[${'9'.repeat(21)}...]`);
    for (const v of [101, -100.5, NaN, Infinity, '1', null]) {
      const e = refusal({ logitBias: { 7: v } });
      expect([e.field, e.message], String(v)).toEqual(['logitBias[7]', expect.stringContaining('[-100, 100], or -Infinity')]);
    }
    const many = Object.fromEntries(Array.from({ length: REQUEST_LIMITS.logitBiasEntries + 1 }, (_, i) => [i, 1]));
    expect(refusal({ logitBias: many }, 2048).message).toContain(`at most ${REQUEST_LIMITS.logitBiasEntries}`);
    // accepted: the bounds themselves, a ban, and a bias object without a prototype
    const ok = resolveOptions({ promptIds: [1], logitBias: Object.assign(Object.create(null), { 0: -100, 511: 100, 5: -Infinity }) }, VOCAB, true);
    expect(ok.logitBias).toEqual({ 0: -100, 511: 100, 5: -Infinity });
  });
});

describe('stopping', () => {
  test('stop: at most 16 non-empty strings of at most 1024 characters, and only with a tokenizer', () => {
    expect(field({ stop: '\n' })).toBe('stop');
    expect(refusal({ stop: '\n' }).message).toContain('in [ ]');
    expect(refusal({ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }).message).toContain(`at most ${REQUEST_LIMITS.stop} stop strings`);
    expect(field({ stop: ['a', 'b', 'c', ''] })).toBe('stop[3]');
    expect(field({ stop: ['a', 3] })).toBe('stop[1]');
    expect(refusal({ stop: ['x'.repeat(REQUEST_LIMITS.stopLength + 1)] }).message).toContain(`at most ${REQUEST_LIMITS.stopLength} characters`);
    expect(field({ stop: ['a', , 'b'] })).toBe('stop[1]');
    expect(field({ stop: ['x'] }, VOCAB, false)).toBe('stop');
    expect(resolveOptions({ promptIds: [1], stop: Array.from({ length: 16 }, () => 'x'.repeat(1024)) }, VOCAB, true).stop).toHaveLength(16);
  });

  test('maxTokens, stopTokenIds, booleans and truncate', () => {
    for (const v of [0, -1, 1.5, NaN, Infinity, '16', 2 ** 60]) expect(field({ maxTokens: v }), String(v)).toBe('maxTokens');
    expect(field({ stopTokenIds: 5 })).toBe('stopTokenIds');
    expect(field({ stopTokenIds: [5, 512] })).toBe('stopTokenIds[1]');
    for (const f of ['ignoreEos', 'cache', 'strictContext', 'logprobs']) expect(field({ [f]: 'yes' }), f).toBe(f);
    expect(field({ truncate: 'newest' })).toBe('truncate');
    expect(field({ truncate: 'oldest' })).toBe('truncate'); // not a chat
    expect(resolveOptions({ messages: [{ role: 'user', content: 'x' }], truncate: 'oldest' }, VOCAB, true).truncate).toBe('oldest');
  });
});

describe('speculative and formats', () => {
  test('their shapes are refused before any work, naming the field', () => {
    expect(field({ speculative: true })).toBe('speculative');
    expect(field({ speculative: 'fast' })).toBe('speculative');
    expect(field({ speculative: ['ngram'] })).toBe('speculative');
    expect(field({ speculative: { method: 5 } })).toBe('speculative.method');
    expect(field({ responseFormat: 'json' })).toBe('responseFormat');
    expect(field({ responseFormat: { type: 'xml' } })).toBe('responseFormat.type');
    expect(field({ responseFormat: { type: 'json_schema', schema: [] } })).toBe('responseFormat.schema');
    expect(field({ grammar: 5 })).toBe('grammar');
    expect(field({ grammar: 'root ::= "a"', regex: 'a' })).toBe('responseFormat');
    expect(() => checkRequest({ promptIds: [1], speculative: { method: 'ngram', k: 4 }, responseFormat: { type: 'json_object' } }, VOCAB, true)).not.toThrow();
  });
});

describe('resolveOptions', () => {
  test('defaults, null as absent, and a top-k of the whole vocabulary turned off', () => {
    const nulls = { maxTokens: null, temperature: null, topK: null, topP: null, seed: null, stop: null, logitBias: null, logprobs: null, truncate: null } as unknown as GenerateRequest;
    const o = resolveOptions({ promptIds: [1], ...nulls }, VOCAB, true);
    expect(o).toMatchObject({ maxTokens: 256, maxTokensGiven: false, temperature: 1, topK: 0, topP: 1, stop: [], logprobs: false, truncate: 'none' });
    expect([o.seed, o.logitBias]).toEqual([undefined, undefined]);
    expect(resolveOptions({ promptIds: [1], topK: 2 ** 40 }, VOCAB, true).topK).toBe(0);
    expect(resolveOptions({ promptIds: [1], topK: VOCAB - 1 }, VOCAB, true).topK).toBe(VOCAB - 1);
    expect(resolveOptions({ promptIds: [1], maxTokens: 3 }, VOCAB, true)).toMatchObject({ maxTokens: 3, maxTokensGiven: true });
  });
});

describe('unknown fields', () => {
  test("are refused naming the field and the closest known one: a typo never runs with the default", () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ maxToken: 5 }, 'maxToken', 'maxTokens'],
      [{ temprature: 0 }, 'temprature', 'temperature'],
      [{ top_p: 0.9 }, 'top_p', 'topP'], // OpenAI's spelling of the same field
      [{ max_tokens: 5 }, 'max_tokens', 'maxTokens'],
      [{ Seed: 3 }, 'Seed', 'seed'],
      [{ stopTokens: [1] }, 'stopTokens', 'stopTokenIds'],
      [{ responseFormats: { type: 'json_object' } }, 'responseFormats', 'responseFormat'],
      [{ promt: 'hi' }, 'promt', 'prompt'], // refused as a typo, not as a request without a prompt
    ];
    for (const [r, name, near] of cases) {
      const e = refusal(r);
      expect([e.field, e.message], name).toEqual([name, `generate(): unknown field '${name}': did you mean '${near}'? Rename it and try again.`]);
      expect(e.expected).toBe(`absent (did you mean '${near}'?)`);
    }
  });

  test('with nothing close, the message says to remove it and lists what generate() takes', () => {
    for (const name of ['stream', 'functions', 'n', 'user', 'wizardry']) {
      const e = refusal({ [name]: 1 });
      expect(e.field).toBe(name);
      expect(e.message).toBe(`generate(): unknown field '${name}': remove it. generate() takes ${GENERATE_FIELDS.join(', ')}.`);
      expect(e.message).not.toContain('did you mean');
    }
    // An own '__proto__' key (as JSON.parse makes it), and a huge key, cut in the field and the message.
    expect(field(JSON.parse('{"promptIds": [1], "__proto__": {"maxTokens": 1}}'))).toBe('__proto__');
    const huge = refusal({ ['k'.repeat(10_000)]: 1 });
    expect(huge.field).toBe(`${'k'.repeat(21)}...`);
    expect(huge.message.length).toBeLessThan(600);
  });

  test('the refusal crosses the worker intact: class, field, message', () => {
    const back = deserializeError(structuredClone(serializeError(refusal({ maxToken: 5 })))) as InvalidRequestError;
    expect(back).toBeInstanceOf(InvalidRequestError);
    expect([back.field, back.value, back.message]).toEqual(['maxToken', '5', "generate(): unknown field 'maxToken': did you mean 'maxTokens'? Rename it and try again."]);
  });

  test('an unknown field that is undefined or null is absent, as a known one is; every listed field passes this check', () => {
    expect(() => checkRequest({ promptIds: [1], maxToken: undefined, stopp: null } as never, VOCAB, true)).not.toThrow();
    for (const f of GENERATE_FIELDS) {
      try {
        checkRequest({ promptIds: [1], [f]: 'x' } as never, VOCAB, true);
      } catch (e) {
        // Refused for its value (or for a second prompt), never as unknown.
        expect((e as Error).message, f).not.toContain('unknown field');
      }
    }
  });

  test('closestName: case, _ and - do not count; at most 2 edits or a third of the name', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(closestName('MAX-TOKENS', GENERATE_FIELDS)).toBe('maxTokens');
    expect(closestName('ignore_eos', GENERATE_FIELDS)).toBe('ignoreEos');
    expect(closestName('logit_bias', GENERATE_FIELDS)).toBe('logitBias');
    expect(closestName('repetitionPenality', GENERATE_FIELDS)).toBe('repetitionPenalty');
    expect(closestName('stream', GENERATE_FIELDS)).toBeUndefined();
    expect(closestName('x'.repeat(100_000), GENERATE_FIELDS)).toBeUndefined();
  });
});

describe('message roles', () => {
  const chat = (role: unknown) => ({ messages: [{ role: 'user', content: 'a' }, { role, content: 'b' }] });

  test('system, user, assistant, tool and developer are accepted', () => {
    expect(CHAT_ROLES).toEqual(['system', 'user', 'assistant', 'tool', 'developer']);
    for (const role of CHAT_ROLES) expect(() => checkRequest(chat(role) as GenerateRequest, VOCAB, true), role).not.toThrow();
  });

  test('any other role is refused as messages[i].role, listing the five', () => {
    for (const role of ['wizard', '', 'ROBOT', 'function', 'System ', 'model', 5, null, undefined]) {
      const e = refusal(chat(role));
      expect(e.field, String(role)).toBe('messages[1].role');
      expect(e.message).toContain("one of 'system', 'user', 'assistant', 'tool' or 'developer' (OpenAI's name of 'system')");
    }
    expect(refusal(chat('wizard')).message).not.toContain('did you mean');
    expect(refusal(chat('assitant')).message).toContain("did you mean 'assistant'?");
    expect(refusal(chat('User')).message).toContain("did you mean 'user'?");
  });

  test("templateMessages: 'developer' reaches the template as 'system'; other roles and fields as they are, in copies", () => {
    const messages = [
      { role: 'developer', content: 'be brief' },
      { role: 'user', content: 'hi', name: 'ann' },
      { role: 'tool', content: '42', tool_call_id: 'c1' },
    ];
    const out = templateMessages(messages);
    expect(out).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi', name: 'ann' },
      { role: 'tool', content: '42', tool_call_id: 'c1' },
    ]);
    expect(messages[0]!.role).toBe('developer'); // the caller's objects are not changed
    expect(out[1]).not.toBe(messages[1]);
  });
});

describe('checkPreload', () => {
  const preload = (r: unknown): InvalidRequestError => {
    try {
      checkPreload(r as PreloadRequest, VOCAB);
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidRequestError);
      return e as InvalidRequestError;
    }
    throw new Error(`accepted: ${JSON.stringify(r)}`);
  };

  test('one prompt and nothing else, of its shape, with known roles', () => {
    for (const r of [{ prompt: 'x' }, { promptIds: [1, 2] }, ...CHAT_ROLES.map((role) => ({ messages: [{ role, content: 'x' }] }))]) {
      expect(() => checkPreload(r as PreloadRequest, VOCAB), JSON.stringify(r)).not.toThrow();
    }
    expect(preload({ messages: [{ role: 'wizard', content: 'x' }] }).field).toBe('messages[0].role');
    const extra = preload({ messages: [{ role: 'system', content: 'x' }], maxTokens: 5 });
    expect([extra.field, extra.message]).toEqual(['maxTokens', "preload(): unknown field 'maxTokens': remove it. preload() takes messages, prompt, promptIds, tools."]);
    // Tools go with messages (the chat they belong to), checked as a request's are.
    expect(() => checkPreload({ messages: [{ role: 'system', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }] }, VOCAB)).not.toThrow();
    expect(preload({ prompt: 'x', tools: [{ type: 'function', function: { name: 'f' } }] }).field).toBe('tools');
    expect(preload({ messages: [{ role: 'system', content: 'x' }], tools: [{ type: 'function', function: { name: 'a b' } }] }).field).toBe('tools[0].function.name');
    expect(preload({ mesages: [{ role: 'system', content: 'x' }] }).message).toBe("preload(): unknown field 'mesages': did you mean 'messages'? Rename it and try again.");
    expect(preload({ prompt: 'a', promptIds: [1] }).field).toBe('preload');
    expect(preload({}).field).toBe('preload');
    expect(preload(null).field).toBe('preload');
    expect(preload({ promptIds: [VOCAB] }).field).toBe('promptIds[0]');
  });
});
