// The call reader of every format on calls written by hand in each model's documented syntax: one call, several, text
// around them, every split of the text into two chunks (and one character at a time), and malformed calls (plain text
// before anything streamed, a typed error after).
import { describe, expect, test } from 'vitest';
import type { ToolCall, ToolCallDelta } from '../contract.ts';
import { ToolCallParseError } from '../errors.ts';
import { TOOL_FORMATS, type ToolFormat } from './formats.ts';
import { ToolCallParser } from './parser.ts';

/** Deltas joined into calls (OpenAI's accumulation rule), checking each call's first delta has id, type, name and ''. */
function join(deltas: ToolCallDelta[]): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const d of deltas) {
    if (d.id !== undefined) {
      expect(d.index).toBe(calls.length);
      expect(d.type).toBe('function');
      expect(d.function.arguments).toBe('');
      calls.push({ id: d.id, type: 'function', function: { name: d.function.name!, arguments: '' } });
    } else {
      expect(d.function.name).toBeUndefined();
      calls[d.index].function.arguments += d.function.arguments;
    }
  }
  return calls;
}

function read(format: ToolFormat, pieces: string[]): { text: string; calls: ToolCall[]; deltas: ToolCallDelta[] } {
  const p = new ToolCallParser(format);
  let text = '';
  const deltas: ToolCallDelta[] = [];
  for (const piece of [...pieces.map((x) => p.push(x)), p.end()]) {
    text += piece.text;
    deltas.push(...piece.calls);
  }
  return { text, calls: join(deltas), deltas };
}

const W = { name: 'get_weather', arguments: '{"city": "Oslo", "days": [1, 2], "unit": "c\\"x}"}' };
const T = { name: 'get_time', arguments: '{}' };

/** Each format's documented syntax: a reply with text before one call, and a reply of two calls (where it has them). */
const CASES: { format: ToolFormat; one: string; oneText: string; two?: string }[] = [
  {
    format: TOOL_FORMATS.hermes,
    one: `Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": ${W.arguments}}\n</tool_call>`,
    oneText: 'Let me check.\n',
    two: `<tool_call>\n{"name": "get_weather", "arguments": ${W.arguments}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n`,
  },
  { format: TOOL_FORMATS.llama3, one: `{"name": "get_weather", "parameters": ${W.arguments}}`, oneText: '' },
  {
    format: TOOL_FORMATS.mistral,
    one: `Sure. [TOOL_CALLS][{"name": "get_weather", "arguments": ${W.arguments}}]`,
    oneText: 'Sure. ',
    two: `[TOOL_CALLS][{"name": "get_weather", "arguments": ${W.arguments}}, {"name": "get_time", "arguments": {}}]`,
  },
  {
    format: TOOL_FORMATS.phi4,
    one: `Ok <|tool_call|>[{"name": "get_weather", "arguments": ${W.arguments}}]<|/tool_call|>`,
    oneText: 'Ok ',
    two: `<|tool_call|>[{"name":"get_weather","arguments":${W.arguments}},{"name":"get_time","arguments":{}}]<|/tool_call|>`,
  },
  {
    format: TOOL_FORMATS.generic,
    one: `Hmm.<tool_call>{"name": "get_weather", "arguments": ${W.arguments}}</tool_call>`,
    oneText: 'Hmm.',
    two: `<tool_call>{"name": "get_weather", "arguments": ${W.arguments}}</tool_call>\n<tool_call>{"arguments": {}, "name": "get_time"}</tool_call>`,
  },
];

describe('tool call reader', () => {
  for (const c of CASES) {
    test(`${c.format.name}: text then one call, split at every boundary`, () => {
      for (let i = 0; i <= c.one.length; i++) {
        const r = read(c.format, [c.one.slice(0, i), c.one.slice(i)]);
        expect(r.text, `split at ${i}`).toBe(c.oneText);
        expect(r.calls.map((x) => x.function)).toEqual([W]);
        expect(JSON.parse(r.calls[0].function.arguments)).toEqual({ city: 'Oslo', days: [1, 2], unit: 'c"x}' });
      }
      const chars = read(c.format, [...c.one]);
      expect(chars.text).toBe(c.oneText);
      expect(chars.calls.map((x) => x.function)).toEqual([W]);
      // The arguments' events describe the same object.
      const events = chars.deltas.flatMap((d) => d.json ?? []);
      expect(events.some((e) => e.kind === 'value' && e.path.join('/') === 'city' && e.complete && e.value === 'Oslo')).toBe(true);
    });
    if (c.two) {
      test(`${c.format.name}: two calls, split at every boundary`, () => {
        for (let i = 0; i <= c.two!.length; i += 1) {
          const r = read(c.format, [c.two!.slice(0, i), c.two!.slice(i)]);
          expect(r.text, `split at ${i}`).toBe('');
          expect(r.calls.map((x) => x.function)).toEqual([W, T]);
          expect(new Set(r.calls.map((x) => x.id)).size).toBe(2);
        }
      });
    }
  }

  test('llama3: <|python_tag|> before the object, and text that never calls', () => {
    expect(read(TOOL_FORMATS.llama3, ['<|python_tag|>', '{"name": "get_time", "parameters": {}}']).calls.map((x) => x.function)).toEqual([T]);
    expect(read(TOOL_FORMATS.llama3, ['The answer is {"a": 1}', ' ok']).text).toBe('The answer is {"a": 1} ok');
  });

  test('a malformed call before anything streamed is plain text; text mode reads on', () => {
    const bad = 'x <tool_call>\nnot json</tool_call> y';
    for (let i = 0; i <= bad.length; i++) {
      const r = read(TOOL_FORMATS.hermes, [bad.slice(0, i), bad.slice(i)]);
      expect(r.text, `split at ${i}`).toBe(bad);
      expect(r.calls).toEqual([]);
    }
    const then = read(TOOL_FORMATS.hermes, ['<tool_call>{"name": 3}', ' <tool_call>{"name": "get_time", "arguments": {}}</tool_call>']);
    expect(then.text).toBe('<tool_call>{"name": 3} ');
    expect(then.calls.map((x) => x.function)).toEqual([T]);
    // A trigger's start at the very end is held, then given back.
    expect(read(TOOL_FORMATS.hermes, ['a <tool_ca']).text).toBe('a <tool_ca');
    expect(read(TOOL_FORMATS.mistral, ['[TOOL_CALLS] oops']).text).toBe('[TOOL_CALLS] oops');
  });

  test('a call that breaks after its name streamed is a ToolCallParseError', () => {
    const p = new ToolCallParser(TOOL_FORMATS.hermes);
    p.push('<tool_call>{"name": "get_time", "arguments": {}');
    expect(() => p.push('!!')).toThrow(ToolCallParseError);
    const q = new ToolCallParser(TOOL_FORMATS.hermes);
    q.push('<tool_call>{"name": "get_time", "arguments": {"a": ');
    expect(() => q.push('}}')).toThrow(ToolCallParseError);
  });

  test('a call cut short (maxTokens) keeps what streamed, and no content comes of it', () => {
    const r = read(TOOL_FORMATS.hermes, ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os']);
    expect(r.text).toBe('');
    expect(r.calls.map((x) => x.function)).toEqual([{ name: 'get_weather', arguments: '{"city": "Os' }]);
  });
});
