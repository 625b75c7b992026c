// The chat pages' tool plumbing without a page: calls gathered from streamed deltas (split anywhere, several at once),
// the tool_choice of each round of the loop (it always ends), and the `?tools=` / `?tool_choice=` parameters, bad
// ones refused with an InvalidRequestError that says what is expected.
import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from 'intab';
import { describeCall, MAX_TOOL_ROUNDS, parseArguments, parseToolChoiceParam, parseToolsParam, ToolCallCollector, toolChoiceForRound } from './tool-calls.ts';

describe('ToolCallCollector', () => {
  it('joins streamed deltas into the calls, in order, and says which changed', () => {
    const c = new ToolCallCollector();
    expect(c.add(undefined)).toEqual([]);
    expect(c.add([{ index: 0, id: 'call_a', type: 'function', function: { name: 'calculator', arguments: '' } }])).toEqual([0]);
    expect(c.get(0)).toEqual({ id: 'call_a', type: 'function', function: { name: 'calculator', arguments: '' } });
    expect(c.add([{ index: 0, function: { arguments: '{"expr' } }])).toEqual([0]);
    expect(c.add([{ index: 0, function: { arguments: 'ession": "1+1"}' } }, { index: 1, id: 'call_b', type: 'function', function: { name: 'get_current_time', arguments: '' } }, { index: 1, function: { arguments: '{}' } }])).toEqual([0, 1]);
    expect(c.all()).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'calculator', arguments: '{"expression": "1+1"}' } },
      { id: 'call_b', type: 'function', function: { name: 'get_current_time', arguments: '{}' } },
    ]);
    // all() is a copy: the collector's calls do not change with it.
    c.all()[0].function.arguments = 'x';
    expect(c.get(0).function.arguments).toBe('{"expression": "1+1"}');
    expect(describeCall(c.get(1))).toBe('get_current_time({})');
  });

  it('refuses a delta whose index skips a call', () => {
    const c = new ToolCallCollector();
    expect(() => c.add([{ index: 1, function: { arguments: '{}' } }])).toThrow(InvalidRequestError);
    expect(() => c.add([{ index: -1, function: {} }])).toThrow(/tool_calls\[\]\.index/);
  });
});

describe('toolChoiceForRound', () => {
  it("sends the page's choice first, then 'auto', and 'none' on the last round", () => {
    const rounds = Array.from({ length: MAX_TOOL_ROUNDS }, (_, r) => toolChoiceForRound('required', r));
    expect(rounds).toEqual(['required', 'auto', 'auto', 'auto', 'none']);
    expect(toolChoiceForRound(undefined, 0)).toBeUndefined();
    expect(toolChoiceForRound({ type: 'function', function: { name: 'f' } }, 0, 2)).toEqual({ type: 'function', function: { name: 'f' } });
    expect(toolChoiceForRound('required', 1, 2)).toBe('none');
    expect(toolChoiceForRound('required', 0, 1)).toBe('none');
  });
});

describe('the pages parameters', () => {
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  it('reads ?tools= as a JSON list of function tools', () => {
    expect(parseToolsParam(null)).toBeUndefined();
    expect(parseToolsParam(' ')).toBeUndefined();
    expect(parseToolsParam(JSON.stringify(tools))).toEqual(tools);
    expect(parseToolsParam('[]')).toEqual([]);
    const refused = (text: string) => {
      try {
        parseToolsParam(text);
      } catch (err) {
        expect(err).toBeInstanceOf(InvalidRequestError);
        return (err as InvalidRequestError).message;
      }
      throw new Error(`${text} was taken`);
    };
    expect(refused('[{')).toMatch(/^Invalid request: 'tools' should be a JSON list of tools as JSON text \(/);
    expect(refused('{"type": "function"}')).toMatch(/'tools' should be a list of \{ "type": "function"/);
    expect(refused('[{"type": "function", "function": {"name": "a"}}, {"type": "retrieval"}]')).toMatch(/'tools\[1\]' should be/);
    expect(refused('[{"type": "function", "function": {"description": "no name"}}]')).toMatch(/'tools\[0\]' should be/);
    expect(refused('[null]')).toMatch(/'tools\[0\]' should be/);
  });

  it('reads ?tool_choice= as a mode or a tool name', () => {
    expect(parseToolChoiceParam(null, tools)).toBeUndefined();
    expect(parseToolChoiceParam('required', tools)).toBe('required');
    expect(parseToolChoiceParam('none', undefined)).toBe('none');
    expect(parseToolChoiceParam('get_weather', tools)).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(() => parseToolChoiceParam('get_time', tools)).toThrow("'tool_choice' should be 'auto', 'none', 'required' or the name of a tool (get_weather)");
    expect(() => parseToolChoiceParam('x', undefined)).toThrow('(this page has none)');
  });

  it('parses arguments to an object or says why not', () => {
    expect(parseArguments('{"a": [1]}')).toEqual({ args: { a: [1] } });
    expect(parseArguments('')).toEqual({ args: {} });
    expect(parseArguments('null')).toEqual({ error: 'the arguments are not a JSON object' });
    expect(parseArguments('"s"')).toEqual({ error: 'the arguments are not a JSON object' });
    expect(parseArguments('{')).toMatchObject({ error: expect.stringMatching(/^the arguments are not JSON \(/) });
  });
});
