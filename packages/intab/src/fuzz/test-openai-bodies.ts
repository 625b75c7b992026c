// Seeded OpenAI request bodies for the body fuzzer (test tooling): chat completions and legacy completions, built
// valid field by field (the tiny test model's vocabulary of 128 ids, its ChatML template) and then mutated — a field
// of the wrong type, extreme numbers (NaN, ±Infinity, -0, denormals, 2^53 + 2, 1e308), strings that are empty, huge,
// unpaired surrogates or template syntax, deep nesting, huge arrays and objects, prototype keys (__proto__,
// constructor), fields of the other endpoint — as JSON text (what an HTTP surface parses) or as a JavaScript value
// (what a caller of chat.completions.create hands over: undefined, bigint, symbols, sparse arrays, Maps).

import type { Random } from '@intab/testing/fuzz';

export type Endpoint = 'chat' | 'completions';

export interface BodyCase {
  endpoint: Endpoint;
  /** 'json': `text` is the body as sent over HTTP and `value` its JSON.parse; 'js': `value` is handed over as it is. */
  mode: 'json' | 'js';
  text?: string;
  value: unknown;
}

/** The test model's vocabulary (test-fixture.ts's referenceEngine). */
export const FUZZ_VOCAB = 128;

const NUMBERS = [
  0, -0, 1, -1, 0.5, 2, 2.0000001, 3, 16, 17, 20, 21, 100, 100.0001, 101, -100, -100.5, -2, -2.0001, 0.01, 0.0099, 10, 10.5,
  127, 128, 129, 1024, 1025, 1e-7, 1e-320, Number.MIN_VALUE, 0.1 + 0.2, 1e6, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 1e21,
  1e308, -1e308, Number.MAX_VALUE, NaN, Infinity, -Infinity,
];
const STRINGS = ['', ' ', 'hi', '\n', '\n\n', '\u0000', '\uD800', '\uDC00x', '😀', 'é', 'e\u0301', 'שלום', '中文', '<|im_start|>', '<|im_end|>', '{{ x }}', '{% for m in messages %}', '__proto__', 'constructor', 'user', 'system', 'text', 'json_schema', '1', '-1', 'NaN', 'true', 'null'];
const KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '', ' ', 'a', '0', '-1', '1e2', '01', '0x10', '9'.repeat(30), '😀'];

/** An object with these own entries ('__proto__' included as an own key, as JSON.parse makes it). */
const obj = (entries: [string, unknown][]): Record<string, unknown> => Object.fromEntries(entries);

/** Large sizes: mostly past every bound that counts (1,024 stop characters, 20,000 prompt characters), now and then far past. */
function large(r: Random): number {
  return r.chance(0.03) ? r.pick([100_000, 1_000_000]) : r.pick([1_025, 5_000, 30_000]);
}

function hugeString(r: Random): string {
  return r.pick(['x', 'ab', '😀', ' ', '\n', '<|im_end|>']).repeat(large(r));
}

function deep(r: Random, levels: number): unknown {
  let v: unknown = r.pick([1, 'x', null, []]);
  for (let i = 0; i < levels; i++) v = r.chance(0.5) ? [v] : { a: v };
  return v;
}

/** Any value, `js` allowing what JSON cannot carry. */
export function anyValue(r: Random, js: boolean, depth = 2): unknown {
  switch (r.int(js ? 14 : 10)) {
    case 0: case 1: return r.pick(NUMBERS);
    case 2: return r.pick(STRINGS);
    case 3: return r.chance(0.5);
    case 4: return null;
    case 5: return depth > 0 ? Array.from({ length: r.int(5) }, () => anyValue(r, js, depth - 1)) : [];
    case 6: return depth > 0 ? obj(Array.from({ length: r.int(4) }, () => [r.pick(KEYS), anyValue(r, js, depth - 1)])) : {};
    case 7: return deep(r, r.pick([10, 127, 128, 129, 500, js ? 3_000 : 1_000]));
    case 8: return r.chance(0.5) ? Array.from({ length: Math.min(large(r), 100_000) }, (_, i) => i % 300) : hugeString(r);
    case 9: return r.chance(0.5) ? r.int(FUZZ_VOCAB * 2) - 10 : r.next() * 4 - 1;
    case 10: return r.pick([undefined, 1n, 2n ** 70n, Symbol('s')]);
    case 11: {
      const sparse: unknown[] = [1];
      sparse[r.pick([2, 5, 50])] = 'x'; // holes in between
      return sparse;
    }
    case 12: return r.pick([new Map([[1, 1]]), new Date(0), Object.create(null) as object, new Uint8Array(3), [1, 2].values()]);
    default: return r.pick([() => 1, Object.assign(Object.create(null) as object, { role: 'user', content: 'x' })]);
  }
}

// ---- valid fields ----

function text(r: Random): string {
  return r.chance(0.98) ? r.pick(['Hi', 'Once upon a time', 'What is 2+2?', 'é😀 中文', 'a b c', '\n', '']) : hugeString(r);
}

function message(r: Random, i: number): Record<string, unknown> {
  // Mostly the usual turns; now and then a tool result, and a role no surface takes (refused as messages[i].role).
  const usual = i === 0 && r.chance(0.3) ? r.pick(['system', 'developer']) : i % 2 === 0 ? 'user' : 'assistant';
  const role = r.chance(0.9) ? usual : r.chance(0.7) ? 'tool' : r.pick(['function', '', 'ROBOT', 'User', 'wizard']);
  const m: Record<string, unknown> = { role, content: r.chance(0.8) ? text(r) : r.pick<unknown>([null, [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], [{ type: 'image_url', image_url: { url: 'x' } }], []]) };
  if (r.chance(0.05)) m.name = 'bob';
  if (role === 'assistant' && r.chance(0.1)) m.tool_calls = [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }];
  // A tool result names its call (one an earlier assistant message made, or not: refused as messages[i].tool_call_id).
  if (role === 'tool' && r.chance(0.8)) m.tool_call_id = 'c1';
  return m;
}

function schema(r: Random): unknown {
  return r.pick<unknown>([
    { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
    { type: 'string', maxLength: 5 },
    { enum: ['x', 'y'] },
    { type: 'array', items: { type: 'boolean' }, maxItems: 2 },
    true,
    {},
    { type: 'object', properties: { n: { type: 'number', minimum: 0 } }, additionalProperties: false },
    { type: 'string', pattern: '^[a-z]+$', maxLength: 4 },
    { type: 'object', properties: { s: { type: 'string', format: 'date' } }, required: ['s'] },
  ]);
}

function responseFormat(r: Random): unknown {
  switch (r.int(4)) {
    case 0: return { type: 'text' };
    case 1: return { type: 'json_object' };
    default: return { type: 'json_schema', json_schema: { name: 'out', schema: schema(r), ...(r.chance(0.5) ? { strict: r.chance(0.7) } : {}) } };
  }
}

function logitBias(r: Random): Record<string, unknown> {
  return obj(Array.from({ length: r.int(4) }, () => [String(r.int(FUZZ_VOCAB)), r.pick([-100, -1, 0, 0.5, 5, 100])]));
}

/** The fields both endpoints read, with valid values. */
const COMMON: Record<string, (r: Random) => unknown> = {
  model: (r) => r.pick(['tiny-llama', 'gpt-4o-mini', '']),
  stream: (r) => r.chance(0.5),
  stream_options: (r) => ({ include_usage: r.chance(0.5) }),
  max_tokens: (r) => 1 + r.int(8),
  temperature: (r) => r.pick([0, 0.7, 1, 2]),
  top_p: (r) => r.pick([0.1, 0.9, 1]),
  top_k: (r) => r.pick([-1, 0, 1, 40, 127, 128, 100_000]),
  min_p: (r) => r.pick([0, 0.05, 1]),
  frequency_penalty: (r) => r.pick([-2, 0, 0.5, 2]),
  presence_penalty: (r) => r.pick([-2, 0, 0.5, 2]),
  repetition_penalty: (r) => r.pick([0.01, 1, 1.1, 10]),
  logit_bias: logitBias,
  seed: (r) => r.pick([0, 42, -7, 2 ** 40, 12345678901234567890]),
  stop: (r) => (r.chance(0.4) ? r.pick(['\n', 'END', 'é']) : Array.from({ length: r.int(5) }, () => r.pick(['\n', 'x', '<|im_end|>', 'abc']))),
  n: () => 1,
  truncate: (r) => r.pick(['oldest', 'none']),
  strict_context: (r) => r.chance(0.5),
  response_format: responseFormat,
  user: () => 'u1',
};

const CHAT: Record<string, (r: Random) => unknown> = {
  ...COMMON,
  messages: (r) => Array.from({ length: 1 + r.int(4) }, (_, i) => message(r, i)),
  max_completion_tokens: (r) => 1 + r.int(8),
  logprobs: (r) => r.chance(0.5),
  top_logprobs: (r) => r.int(21),
  tools: () => [{ type: 'function', function: { name: 'f', parameters: {} } }],
  tool_choice: (r) => r.pick<unknown>(['auto', 'none', 'required', { type: 'function', function: { name: 'f' } }]),
  parallel_tool_calls: (r) => r.chance(0.5),
};

const COMPLETIONS: Record<string, (r: Random) => unknown> = {
  ...COMMON,
  prompt: (r) => r.pick<() => unknown>([() => text(r), () => Array.from({ length: 1 + r.int(8) }, () => r.int(FUZZ_VOCAB)), () => [text(r)], () => [[1, 2, 3]]])(),
  logprobs: (r) => r.int(21),
  echo: () => false,
  suffix: () => '',
  best_of: () => 1,
};

// ---- mutations ----

/** Values aimed at one field's checks: its bounds, its element types, its sizes. */
function nearMiss(r: Random, field: string, js: boolean): unknown {
  switch (field) {
    case 'messages':
      return r.pick<() => unknown>([
        () => [],
        () => ({ role: 'user', content: 'x' }),
        () => [{ role: 'user' }],
        () => [{ role: 1, content: 'x' }],
        () => [{ role: r.pick(['wizard', 'assitant', 'function']), content: 'x' }],
        () => [{ role: 'user', content: { text: 'x' } }],
        () => [{ role: 'user', content: [{ type: 'text' }] }],
        () => [{ role: 'user', content: [null] }],
        () => [{ role: 'user', content: 'x', name: 5 }],
        () => [null],
        () => [['user', 'x']],
        () => Array.from({ length: r.pick([100, 2_000]) }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' })),
        () => [{ role: 'user', content: hugeString(r) }],
        () => [obj([['__proto__', { role: 'user', content: 'x' }]])],
        () => [{ role: 'user', content: Array.from({ length: 2_000 }, () => ({ type: 'text', text: 'ab' })) }],
      ])();
    case 'logit_bias':
      return r.pick<() => unknown>([
        () => obj([[r.pick(KEYS), 1]]),
        () => obj([[String(r.pick([FUZZ_VOCAB, FUZZ_VOCAB + 1, 99_999_999, 2 ** 53])), 1]]),
        () => obj([['5', r.pick<unknown>([101, -101, NaN, '1', null, [1], 1e308, -0])]]),
        () => obj(Array.from({ length: r.pick([1024, 1025]) }, (_, i) => [String(i), 1])),
        () => [1, 2],
        () => obj([['9'.repeat(large(r)), 1]]),
      ])();
    case 'stop':
      return r.pick<() => unknown>([
        () => '',
        () => [''],
        () => Array.from({ length: r.pick([16, 17, 1_000]) }, (_, i) => `s${i}`),
        () => ['x'.repeat(r.pick([1024, 1025, large(r)]))],
        () => ['a', 3],
        () => [['a']],
        () => (js ? ['a', , 'b'] : ['a', null, 'b']), // a hole where JSON has null
      ])();
    case 'prompt':
      return r.pick<() => unknown>([
        () => [],
        () => ['a', 'b'],
        () => [[1], [2]],
        () => [1, -2],
        () => [1, 2.5],
        () => [FUZZ_VOCAB, 0],
        () => [2 ** 60],
        () => Array.from({ length: Math.min(large(r), 100_000) }, (_, i) => i % FUZZ_VOCAB),
        () => [[]],
        () => [null],
        () => hugeString(r),
      ])();
    case 'response_format':
      return r.pick<() => unknown>([
        () => ({ type: 'json_schema' }),
        () => ({ type: 'json_schema', json_schema: { schema: [] } }),
        () => ({ type: 'json_schema', json_schema: { schema: 5 } }),
        () => ({ type: 'json_schema', json_schema: { schema: deep(r, r.pick([100, 127, 128, 129, 2_000])) } }),
        () => ({ type: 'json_schema', json_schema: { schema: { type: 'objekt' } } }),
        () => ({ type: 'json_schema', json_schema: { schema: { $ref: '#/nowhere' } } }),
        () => ({ type: 'json_schema', json_schema: { schema: { type: 'string', pattern: '(' } } }),
        () => ({ type: 'json_schema', json_schema: { schema: { type: 'string', minLength: 1e9 } } }),
        () => ({ type: 'json_schema', json_schema: { name: 5, schema: {} } }),
        () => ({ type: 'json_schema', json_schema: { schema: {}, strict: 'yes' } }),
        () => ({ type: 'xml' }),
        () => ({ type: 'grammar', grammar: 'root ::= "a"' }),
        () => 'json_object',
        () => [],
      ])();
    case 'stream_options':
      return r.pick<unknown>(['yes', [], { include_usage: 'yes' }, { include_usage: null }]);
    case 'tools':
      return r.pick<() => unknown>([
        () => [],
        () => ({ type: 'function', function: { name: 'f' } }),
        () => [{ type: 'function', function: { name: r.pick(['', 'a b', 'é', 'x'.repeat(65), '__proto__', 'constructor']) } }],
        () => [{ type: 'function', function: { name: 'f' } }, { type: 'function', function: { name: 'f' } }],
        () => [{ type: 'code_interpreter' }],
        () => [{ type: 'function', function: { name: 'f', parameters: r.pick<unknown>([[], 'object', true, deep(r, r.pick([127, 129, 2_000]))]) } }],
        () => [{ type: 'function', function: { name: 'f', strict: 'yes', description: 5 } }],
        () => [{ type: 'function', function: { name: 'f', strict: true, parameters: { type: 'object', properties: { a: { type: 'string', pattern: '(' } } } } }],
        () => Array.from({ length: r.pick([128, 129, 5_000]) }, (_, i) => ({ type: 'function', function: { name: `f${i}` } })),
        () => [null],
        () => [obj([['__proto__', { type: 'function' }]])],
      ])();
    case 'tool_choice':
      return r.pick<unknown>(['any', 'REQUIRED', '', { type: 'function' }, { type: 'function', function: { name: 'g' } }, { function: { name: 'f' } }, [], 5]);
    default:
      return r.chance(0.5) ? r.pick(NUMBERS) : anyValue(r, js);
  }
}

function mutate(r: Random, body: Record<string, unknown>, fields: Record<string, (r: Random) => unknown>, js: boolean): void {
  const names = Object.keys(fields);
  for (let m = r.int(4); m > 0; m--) {
    const field = r.chance(0.8) ? r.pick(names) : r.pick([...KEYS, 'messages', 'prompt', 'max_completion_tokens', 'top_logprobs', 'return_token_ids']);
    switch (r.int(5)) {
      case 0: delete body[field]; break;
      case 1: body[field] = anyValue(r, js); break;
      case 2: body[field] = r.pick(NUMBERS); break;
      default: body[field] = nearMiss(r, field, js);
    }
  }
}

/** A JSON body nested `levels` deep in one field (built as text: JSON.stringify overflows long before JSON.parse). */
function deepText(r: Random, endpoint: Endpoint): string {
  const levels = r.pick([1_000, 10_000, 100_000]);
  const open = r.chance(0.5) ? '[' : '{"a":';
  const close = open === '[' ? ']' : '}';
  const nested = `${open.repeat(levels)}1${close.repeat(levels)}`;
  const head = endpoint === 'chat' ? '"messages":[{"role":"user","content":"hi"}]' : '"prompt":"hi"';
  const field = r.pick(['metadata', 'logit_bias', 'stop', 'messages', 'prompt', 'response_format', 'seed']);
  if (field === 'response_format') return `{${head},"max_tokens":2,"response_format":{"type":"json_schema","json_schema":{"schema":${nested}}}}`;
  return field === 'messages' || field === 'prompt' ? `{"max_tokens":2,"${field}":${nested}}` : `{${head},"max_tokens":2,"${field}":${nested}}`;
}

/** One body: mostly a valid one with a few mutations; now and then not an object at all, or deep JSON text. */
export function bodyCase(r: Random, endpoint: Endpoint): BodyCase {
  const js = r.chance(0.3);
  const fields = endpoint === 'chat' ? CHAT : COMPLETIONS;
  if (!js && r.chance(0.02)) {
    const text = deepText(r, endpoint);
    return { endpoint, mode: 'json', text, value: JSON.parse(text) };
  }
  let value: unknown;
  if (r.chance(0.03)) value = anyValue(r, js); // a body that is not an object, or a stray one
  else {
    const body: Record<string, unknown> = {};
    const required = endpoint === 'chat' ? 'messages' : 'prompt';
    for (const name of Object.keys(fields)) if (name === required || r.chance(0.25)) body[name] = fields[name]!(r);
    if (r.chance(0.85)) mutate(r, body, r.chance(0.1) ? (endpoint === 'chat' ? COMPLETIONS : CHAT) : fields, js);
    value = body;
  }
  if (js) return { endpoint, mode: 'js', value };
  // As an HTTP client would send it: what JSON cannot carry (NaN, Infinity) becomes null, as JSON.stringify writes it.
  const text = JSON.stringify(value) ?? 'null';
  return { endpoint, mode: 'json', text, value: JSON.parse(text) };
}

/** A short description of a case for a crash report (the seed and case index replay it exactly). */
export function showCase(c: BodyCase): string {
  if (c.text !== undefined) return `${c.endpoint} json ${c.text.length > 300 ? `${c.text.slice(0, 300)}... (${c.text.length} chars)` : c.text}`;
  let shown: string;
  try {
    shown = JSON.stringify(c.value, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'symbol' ? String(v) : v)) ?? String(c.value);
  } catch {
    shown = `(not serializable: ${typeof c.value})`;
  }
  return `${c.endpoint} js ${shown.length > 300 ? `${shown.slice(0, 300)}...` : shown}`;
}
