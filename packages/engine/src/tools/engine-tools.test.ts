// Tool calling through the engine on the CPU reference runner: random-weight models with real vocabularies and real
// chat templates (Qwen3's own: hermes; Llama 3.1's vocabulary with Meta's Llama 3.2 template: llama3). 'required',
// named and parallel calls over 50 seeded samples each: every call parses, names an allowed function and validates
// (ajv) against its schema, the streamed deltas joined equal the reply read whole, and the reply ends 'tool_calls'.
// Then 'auto' (the lazy grammar, made likely with logitBias, and the plain-text path), 'none', a two-turn loop with a
// tool result, speculation (ngram, self) giving the same ids, a preload with tools making turn 2 a prefix-cache hit,
// and the request checks and hostile tool lists.
import { beforeAll, describe, expect, test } from 'vitest';
import type { Tokenizer } from '@intab/model';
import { GrammarBudgetError, UnsupportedSchemaError } from '@intab/grammar';
import { schemaValidator } from '@intab/testing/schema-validator';
import { SHORT_TOOLS, manyTools } from '@intab/testing/tools-corpus';
import type { ChatMessage, GenerateRequest, ToolCall, ToolCallDelta, ToolChoice, ToolDefinition } from '../contract.ts';
import { Engine } from '../engine.ts';
import { InvalidRequestError } from '../errors.ts';
import { ReferenceRunner } from '../reference/runner.ts';
import { llama31VocabModel, qwen3VocabModel } from '../test-models.ts';
import { collect, type Collected } from '../test-streams.ts';
import { TOOL_FORMATS, type ToolFormat } from './formats.ts';
import { ToolCallParser } from './parser.ts';

const TOOLS = SHORT_TOOLS as ToolDefinition[];
const MESSAGES: ChatMessage[] = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'What is the weather in Oslo?' }];
const validators = new Map(TOOLS.map((t) => [t.function.name, schemaValidator(t.function.parameters)!]));

interface Model {
  name: string;
  tokenizer: Tokenizer;
  /** The ids that end a reply (the model's and the tokenizer's): reported in ids, never part of the text. */
  eos: Set<number>;
  format: ToolFormat;
  make(options?: { layers?: number }): Engine;
}

function model(name: 'qwen3' | 'llama3_1', format: ToolFormat): Model {
  const made = new Map<number, ReturnType<typeof qwen3VocabModel>>();
  const get = (layers: number) => {
    if (!made.has(layers)) made.set(layers, name === 'qwen3' ? qwen3VocabModel(4096, layers) : llama31VocabModel(4096, layers));
    return made.get(layers)!;
  };
  return {
    name,
    format,
    get tokenizer() {
      return get(1).tokenizer;
    },
    get eos() {
      const m = get(1);
      return new Set([...m.config.eosIds, ...m.tokenizer.stopIds]);
    },
    make(options = {}) {
      const { tokenizer, config, tensors } = get(options.layers ?? 1);
      const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 1024, pageSize: 16, maxBatch: 16 });
      return new Engine({ runner, tokenizer, options: { seed: 5, maxTokensPerStep: 512 } });
    },
  };
}

/** Deltas joined into calls as OpenAI's clients join them; each call's first delta must carry id, type, name and ''. */
function joinDeltas(deltas: ToolCallDelta[]): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const d of deltas) {
    if (d.id !== undefined) {
      expect(d).toMatchObject({ index: calls.length, type: 'function', function: { arguments: '' } });
      calls.push({ id: d.id, type: 'function', function: { name: d.function.name!, arguments: '' } });
    } else calls[d.index].function.arguments += d.function.arguments;
  }
  return calls;
}

/** The reply's text read whole (what a non-streaming caller gets): content and calls. */
function readWhole(m: Model, ids: number[]): { text: string; calls: { name: string; arguments: string }[] } {
  const p = new ToolCallParser(m.format);
  const eos = m.eos;
  const text = m.tokenizer.decode(ids.at(-1) !== undefined && eos.has(ids.at(-1)!) ? ids.slice(0, -1) : ids, { skipSpecialTokens: true });
  const a = p.push(text);
  const b = p.end();
  return { text: a.text + b.text, calls: joinDeltas([...a.calls, ...b.calls]).map((c) => c.function) };
}

/** Every call of a reply parses, names an allowed function and validates under its schema. */
function checkCalls(calls: ToolCall[], allowed: readonly string[]): void {
  expect(calls.length).toBeGreaterThan(0);
  for (const c of calls) {
    expect(allowed).toContain(c.function.name);
    expect(c.id).toMatch(/^call_[0-9a-z_]+$/);
    const args = JSON.parse(c.function.arguments) as unknown;
    const v = validators.get(c.function.name)!(args);
    expect(v.valid, `${c.function.name}(${c.function.arguments}): ${JSON.stringify(v.errors)}`).toBe(true);
  }
}

/** Seeds 0..n-1 of a request: the first alone (its prompt then sits in the prefix cache), the others batched. */
async function samples(engine: Engine, request: Omit<GenerateRequest, 'seed'>, n: number): Promise<Collected[]> {
  const first = await collect(engine, await engine.start({ ...request, seed: 0 }));
  const ids = await Promise.all(Array.from({ length: n - 1 }, (_, i) => engine.start({ ...request, seed: i + 1 })));
  return [first, ...(await Promise.all(ids.map((id) => collect(engine, id))))];
}

const MODELS = [model('qwen3', TOOL_FORMATS.hermes), model('llama3_1', TOOL_FORMATS.llama3)];

describe.each(MODELS)('tool calls on $name ($format.name)', (m) => {
  let engine: Engine;
  beforeAll(() => {
    engine = m.make();
  });

  // parallel: a little bias toward the newline that may follow a call (the separator), so that some replies go on to
  // a second call rather than end (this random model prefers its end token there).
  const newline = m.tokenizer.encode('\n', { addSpecialTokens: false })[0];
  const cases: { label: string; toolChoice: ToolChoice; parallelToolCalls?: boolean; allowed: string[]; logitBias?: Record<number, number> }[] = [
    { label: "'required'", toolChoice: 'required', parallelToolCalls: false, allowed: TOOLS.map((t) => t.function.name) },
    { label: 'a named function', toolChoice: { type: 'function', function: { name: 'add' } }, allowed: ['add'] },
    { label: "'required', parallel", toolChoice: 'required', parallelToolCalls: true, allowed: TOOLS.map((t) => t.function.name), logitBias: { [newline]: 6 } },
  ];
  for (const c of cases) {
    test(`${c.label}: 50 seeded samples, every call valid, streamed = whole, 'tool_calls'`, { timeout: 600_000 }, async () => {
      const outs = await samples(engine, { messages: MESSAGES, tools: TOOLS, toolChoice: c.toolChoice, parallelToolCalls: c.parallelToolCalls, maxTokens: 200, temperature: 1, logitBias: c.logitBias }, 50);
      let several = 0;
      for (const o of outs) {
        const calls = joinDeltas(o.chunks.flatMap((ch) => ch.toolCalls ?? []));
        checkCalls(calls, c.allowed);
        expect(o.last.finishReason).toBe('tool_calls');
        expect(o.text).toBe(''); // forced from the first token: no content, no call syntax in the text
        expect(readWhole(m, o.ids)).toEqual({ text: '', calls: calls.map((x) => x.function) });
        if (c.parallelToolCalls !== true || typeof c.toolChoice === 'object' || !m.format.parallel) expect(calls).toHaveLength(1);
        if (calls.length > 1) several++;
        // The partial-JSON events of each call's arguments end in its whole document.
        const first = o.chunks.flatMap((ch) => ch.toolCalls ?? []).filter((d) => d.index === 0);
        const events = first.flatMap((d) => d.json ?? []);
        expect(events.at(-1)).toMatchObject({ kind: 'close', path: [] });
      }
      if (c.parallelToolCalls === true && m.format.parallel) expect(several).toBeGreaterThan(0);
    });
  }

  test("'auto': the lazy grammar holds a call begun after free text; plain text stays content", { timeout: 300_000 }, async () => {
    const tok = m.tokenizer;
    // The trigger's first token, made likely: Qwen3's trigger is one token (<tool_call>), so calls begin in the reply;
    // Llama 3's is text of three tokens ('{"', 'name', '"'), which a bias that holds at every position cannot put in
    // order, so its replies begin the trigger and leave it (the lazy grammar's partial match, then free text again).
    const trigger = tok.encode(m.format.trigger, { addSpecialTokens: false });
    const bias = { [trigger[0]]: trigger.length === 1 ? 40 : 100 };
    const lazy = await samples(engine, { messages: MESSAGES, tools: TOOLS, maxTokens: 48, temperature: 1, logitBias: bias }, 6);
    let called = 0;
    for (const o of lazy) {
      const calls = joinDeltas(o.chunks.flatMap((ch) => ch.toolCalls ?? []));
      const whole = readWhole(m, o.ids);
      expect(whole.calls).toEqual(calls.map((x) => x.function));
      expect(o.text).toBe(whole.text);
      expect(o.text.length + calls.length).toBeGreaterThan(0);
      expect(o.text.includes(m.format.trigger)).toBe(false);
      if (calls.length > 0) {
        called++;
        checkCalls(calls, TOOLS.map((t) => t.function.name));
        expect(o.last.finishReason).toBe('tool_calls');
      }
    }
    if (trigger.length === 1) expect(called).toBeGreaterThan(0);
    else expect(lazy.every((o) => o.ids.includes(trigger[0]) && o.text.includes(m.tokenizer.decode([trigger[0]])))).toBe(true);
    // Without the bias the random model writes text to maxTokens: all of it content, no calls.
    const plain = await collect(engine, await engine.start({ messages: MESSAGES, tools: TOOLS, maxTokens: 12, temperature: 1, seed: 3 }));
    expect(plain.chunks.some((ch) => ch.toolCalls)).toBe(false);
    expect(plain.text).toBe(tok.decode(plain.ids, { skipSpecialTokens: true }));
    expect(plain.last.finishReason).toBe('length');
  });

  test("'none': the trigger cannot be written, even when it is made likely", { timeout: 300_000 }, async () => {
    const tok = m.tokenizer;
    const trigger = tok.encode(m.format.trigger, { addSpecialTokens: false });
    const bias = Object.fromEntries(trigger.map((t) => [t, 40]));
    const outs = await samples(engine, { messages: MESSAGES, tools: TOOLS, toolChoice: 'none', maxTokens: 24, temperature: 1, logitBias: bias }, 6);
    for (const o of outs) {
      expect(o.chunks.some((ch) => ch.toolCalls)).toBe(false);
      if (trigger.length === 1) expect(o.ids).not.toContain(trigger[0]);
      expect(o.text).toBe(readWhole(m, o.ids).text); // all of it content
      expect(o.text.includes(m.format.trigger)).toBe(false);
      expect(o.last.finishReason).not.toBe('tool_calls');
    }
  });

  test('two turns: the call and its result go back through the template; turn 2 reuses turn 1 from the prefix cache', { timeout: 300_000 }, async () => {
    const first = await collect(engine, await engine.start({ messages: MESSAGES, tools: TOOLS, toolChoice: { type: 'function', function: { name: 'get_time' } }, maxTokens: 60, seed: 7 }));
    const [call] = joinDeltas(first.chunks.flatMap((ch) => ch.toolCalls ?? []));
    expect(call.function.name).toBe('get_time');
    const history: ChatMessage[] = [...MESSAGES, { role: 'assistant', content: null, toolCalls: [call] }, { role: 'tool', toolCallId: call.id, content: '{"time": "12:00"}' }];
    const second = await collect(engine, await engine.start({ messages: history, tools: TOOLS, maxTokens: 8, seed: 8 }));
    const m1 = first.last.metrics!;
    const m2 = second.last.metrics!;
    expect(m2.promptTokens).toBeGreaterThan(m1.promptTokens + first.ids.length - 2);
    // Turn 1's prompt pages were cached when it finished: turn 2 prefills only what follows them.
    expect(m2.cachedTokens).toBeGreaterThanOrEqual(Math.floor(m1.promptTokens / 16) * 16);
  });
});

describe('tool calls, engine-wide', () => {
  const qwen = MODELS[0];
  const llama = MODELS[1];

  test('speculation (ngram, self) under the tool grammar gives the ids of plain decoding', { timeout: 600_000 }, async () => {
    for (const m of [qwen, llama]) {
      const engine = m.make({ layers: 2 });
      const base = { messages: MESSAGES, tools: TOOLS, toolChoice: 'required' as const, maxTokens: 60, temperature: 0.8 };
      for (let seed = 0; seed < 2; seed++) {
        const plain = await collect(engine, await engine.start({ ...base, seed, cache: false }));
        for (const speculative of [{ method: 'ngram' as const, k: 4, adaptive: false }, { method: 'self' as const, k: 3, layers: 1, adaptive: false }]) {
          const spec = await collect(engine, await engine.start({ ...base, seed, cache: false, speculative }));
          expect(spec.ids, `${m.name} seed ${seed} ${speculative.method}`).toEqual(plain.ids);
          expect(spec.last.finishReason).toBe('tool_calls');
        }
      }
      await engine.destroy();
    }
  });

  test('a preload of { messages, tools } is the prefix of the requests with those tools: turn 2 prefills only the new message', { timeout: 300_000 }, async () => {
    const engine = qwen.make();
    const tools = manyTools(10) as ToolDefinition[];
    const turn1: ChatMessage[] = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Call tool 3.' }, { role: 'assistant', content: 'Done.' }];
    const pre = await engine.preload({ messages: turn1, tools });
    const request = { messages: [...turn1, { role: 'user', content: 'And now tool 4, please.' }], tools, maxTokens: 2, seed: 1 };
    const out = await collect(engine, await engine.start(request));
    const metrics = out.last.metrics!;
    expect(metrics.cachedTokens).toBeGreaterThanOrEqual(Math.floor(pre.tokens / 16) * 16);
    expect(metrics.cachedTokens).toBeLessThanOrEqual(pre.tokens);
    // What was prefilled: the new message and the page the preload's last tokens share with it.
    expect(metrics.promptTokens - metrics.cachedTokens).toBeLessThan(16 + 20);
    // Without tools the same messages render another prefix: no hit past the common start.
    const bare = await collect(engine, await engine.start({ ...request, tools: undefined }));
    expect(bare.last.metrics!.cachedTokens).toBeLessThan(metrics.cachedTokens);
    await engine.destroy();
  });

  test('request checks: each refusal names the field and what to pass', async () => {
    const engine = qwen.make();
    const refused = async (r: Partial<GenerateRequest>, field: string) => {
      const err = await engine.start({ messages: MESSAGES, ...r } as GenerateRequest).then(() => undefined, (e: unknown) => e);
      expect(err, JSON.stringify(r).slice(0, 80)).toBeInstanceOf(InvalidRequestError);
      expect((err as InvalidRequestError).field).toBe(field);
    };
    await refused({ messages: undefined, prompt: 'hi', tools: TOOLS }, 'tools');
    await refused({ tools: TOOLS, responseFormat: { type: 'json_object' } }, 'tools');
    await refused({ tools: TOOLS, regex: 'a+' }, 'tools');
    await refused({ toolChoice: 'required' }, 'toolChoice');
    await refused({ tools: TOOLS, toolChoice: { type: 'function', function: { name: 'nope' } } }, 'toolChoice.function.name');
    await refused({ tools: TOOLS, toolChoice: 'sometimes' as never }, 'toolChoice');
    await refused({ tools: manyTools(129) as ToolDefinition[] }, 'tools');
    await refused({ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name');
    await refused({ tools: [{ type: 'function', function: { name: 'x'.repeat(65) } }] }, 'tools[0].function.name');
    await refused({ tools: [{ type: 'function', function: { name: 'a' } }, { type: 'function', function: { name: 'a' } }] }, 'tools[1].function.name');
    await refused({ tools: [{ type: 'retrieval' } as never] }, 'tools[0].type');
    await refused({ tools: [{ type: 'function', function: { name: 'a', parameters: [] as never } }] }, 'tools[0].function.parameters');
    await refused({ tools: TOOLS, parallelToolCalls: 'yes' as never }, 'parallelToolCalls');
    await refused({ messages: [{ role: 'user', content: null }] }, 'messages[0].content');
    await refused({ messages: [{ role: 'user', content: 'x', toolCallId: 'call_1' }] }, 'messages[0].toolCallId');
    await refused({ messages: [{ role: 'assistant', content: null, toolCalls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'nope' } }] }] }, 'messages[0].toolCalls[0].function.arguments');
    await refused({ messages: [{ role: 'user', content: 'x', toolCalls: [] }] }, 'messages[0].toolCalls');
    await engine.destroy();
  });

  test('hostile tool lists end in a typed error, never a hang', { timeout: 120_000 }, async () => {
    const engine = qwen.make();
    const start = (tools: ToolDefinition[], extra: Partial<GenerateRequest> = {}) => engine.start({ messages: MESSAGES, tools, toolChoice: 'required', maxTokens: 4, ...extra }).then((id) => collect(engine, id), (e: unknown) => e);
    // Thousands of tools: refused before anything is compiled.
    expect(await start(manyTools(5000) as ToolDefinition[])).toBeInstanceOf(InvalidRequestError);
    // Deep schemas: the grammar's nesting budget, and past 256 levels of JSON refused before anything recurses on them.
    const nested = (levels: number) => {
      let deep: Record<string, unknown> = { type: 'object' };
      for (let i = 0; i < levels; i++) deep = { type: 'object', properties: { a: deep }, required: ['a'] };
      return [{ type: 'function' as const, function: { name: 'deep', parameters: deep } }];
    };
    expect(await start(nested(100))).toBeInstanceOf(GrammarBudgetError);
    const deeper = await start(nested(5000));
    expect(deeper).toBeInstanceOf(InvalidRequestError);
    expect((deeper as InvalidRequestError).field).toBe('tools[0].function.parameters');
    // 128 tools of huge schemas: refused by their size before any is compiled.
    const huge = (i: number): ToolDefinition => ({
      type: 'function',
      function: { name: `huge_${i}`, parameters: { type: 'object', properties: Object.fromEntries(Array.from({ length: 400 }, (_, j) => [`p${j}`, { type: 'string', pattern: `^[a-z]{${j % 7},${20 + (j % 13)}}x[0-9]{2,9}$` }])) } },
    });
    const sized = await start(Array.from({ length: 128 }, (_, i) => huge(i)));
    expect(sized).toBeInstanceOf(InvalidRequestError);
    expect((sized as InvalidRequestError).field).toMatch(/^tools\[\d+\]\.function\.parameters$/);
    // Small schemas that each cost a fifth of the compile budget: one budget for all the tools of a request.
    const defs: Record<string, unknown> = { a14: { type: 'string' } };
    for (let i = 0; i < 14; i++) defs[`a${i}`] = { anyOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    const fan = { type: 'object', properties: { x: { $ref: '#/$defs/a0' } }, required: ['x'], $defs: defs };
    expect(await start(Array.from({ length: 8 }, (_, i) => ({ type: 'function' as const, function: { name: `fan_${i}`, parameters: fan } })))).toBeInstanceOf(GrammarBudgetError);
    // Names with odd characters never reach a grammar.
    for (const name of ['a"b', 'a\\b', '😀', 'a b', '', 'a\n']) expect(await start([{ type: 'function', function: { name } }])).toBeInstanceOf(InvalidRequestError);
    // strict: a keyword the grammar cannot enforce is refused; lenient, it is named on the last chunk.
    const odd = { type: 'object', properties: { s: { type: 'string', format: 'regex' } }, required: ['s'] };
    expect(await start([{ type: 'function', function: { name: 'odd', parameters: odd, strict: true } }])).toBeInstanceOf(UnsupportedSchemaError);
    const lenient = (await start([{ type: 'function', function: { name: 'odd', parameters: odd } }], { maxTokens: 200 })) as Collected;
    expect(lenient.last.warnings).toEqual([expect.objectContaining({ path: '/tools/0/function/parameters/properties/s', keyword: 'format' })]);
    await engine.destroy();
  });
});
