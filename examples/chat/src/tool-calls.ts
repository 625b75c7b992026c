// Tool calling as both chat pages use it, with no DOM: the OpenAI shapes of tools, calls and the conversation's
// messages; the calls of a reply gathered from its streamed `delta.tool_calls`; which `tool_choice` each round of the
// loop sends (the model's calls, run, answered with `tool` messages, until it answers in text, at most
// MAX_TOOL_ROUNDS replies); and the pages' `?tools=` and `?tool_choice=` parameters, read and checked.

import { InvalidRequestError, type ChatCompletionMessageToolCall, type ChatCompletionToolChoiceOption, type ToolDefinition } from 'intab';

/** A function the model may call (OpenAI's `tools[i]`). */
export type FunctionTool = ToolDefinition;

/** OpenAI's `tool_choice`. */
export type ToolChoiceParam = ChatCompletionToolChoiceOption;

/** A call the model made (OpenAI's `message.tool_calls[i]`): `arguments` is JSON text. */
export type ToolCallMade = ChatCompletionMessageToolCall;

/** One streamed piece of a call (OpenAI's `delta.tool_calls[i]`, read leniently: the first names it, the next ones add arguments). */
export interface ToolCallDeltaParam {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** A message of a conversation with tools, as OpenAI's chat API takes it. */
export type ConversationMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCallMade[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Replies per user message, the first included: the last of them may not call tools, so the loop always ends. */
export const MAX_TOOL_ROUNDS = 5;

/**
 * The calls of one reply, gathered from its chunks' `delta.tool_calls` as they stream.
 * @example
 * const calls = new ToolCallCollector();
 * for await (const chunk of stream) for (const i of calls.add(chunk.choices[0]?.delta?.tool_calls)) show(calls.get(i));
 * calls.all(); // [{ id, type: 'function', function: { name, arguments } }]
 */
export class ToolCallCollector {
  readonly #calls: ToolCallMade[] = [];

  /** Adds a chunk's deltas; returns the indexes of the calls they changed (in order, each once). */
  add(deltas: readonly ToolCallDeltaParam[] | null | undefined): number[] {
    const changed: number[] = [];
    for (const d of deltas ?? []) {
      if (!Number.isInteger(d.index) || d.index < 0 || d.index > this.#calls.length) {
        throw new InvalidRequestError('tool_calls[].index', d.index, `the next call's index (${this.#calls.length}) or an earlier one`);
      }
      const call = (this.#calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (d.id) call.id = d.id;
      if (d.function?.name) call.function.name += d.function.name;
      if (d.function?.arguments) call.function.arguments += d.function.arguments;
      if (!changed.includes(d.index)) changed.push(d.index);
    }
    return changed;
  }

  /** Call `index` as it stands. */
  get(index: number): ToolCallMade {
    return this.#calls[index];
  }

  /** Every call so far, in order. */
  all(): ToolCallMade[] {
    return this.#calls.map((c) => ({ ...c, function: { ...c.function } }));
  }
}

/**
 * The `tool_choice` of reply `round` (0: the first reply to the user's message): `first` on round 0 (a page's
 * `?tool_choice=`; undefined leaves the API's default, 'auto'), 'auto' after it, and 'none' on the last round, so the
 * model ends in text.
 */
export function toolChoiceForRound(first: ToolChoiceParam | undefined, round: number, rounds = MAX_TOOL_ROUNDS): ToolChoiceParam | undefined {
  if (round >= rounds - 1) return 'none';
  return round === 0 ? first : 'auto';
}

/**
 * The functions of a `?tools=` parameter: a JSON list of OpenAI tools (`[{ "type": "function", "function": { "name",
 * "description", "parameters" } }]`). null: no tools. Not JSON or not such a list: an InvalidRequestError saying so
 * (the engine checks names and schemas in depth).
 */
export function parseToolsParam(text: string | null): FunctionTool[] | undefined {
  if (text === null || text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InvalidRequestError('tools', text, `a JSON list of tools as JSON text (${(err as Error).message})`);
  }
  const expected = 'a list of { "type": "function", "function": { "name", "description", "parameters" } }';
  if (!Array.isArray(value)) throw new InvalidRequestError('tools', value, expected);
  for (const [i, t] of value.entries()) {
    const f = (t as { function?: unknown } | null)?.function as { name?: unknown } | null | undefined;
    if (typeof t !== 'object' || t === null || (t as { type?: unknown }).type !== 'function' || typeof f !== 'object' || f === null || typeof f.name !== 'string') {
      throw new InvalidRequestError(`tools[${i}]`, t, expected);
    }
  }
  return value as FunctionTool[];
}

/**
 * A `?tool_choice=` parameter: 'auto', 'none', 'required', or a function's name (a call of that function). null: the
 * default. A name that is none of the tools': an InvalidRequestError that lists them.
 */
export function parseToolChoiceParam(text: string | null, tools: readonly FunctionTool[] | undefined): ToolChoiceParam | undefined {
  if (text === null || text === '') return undefined;
  if (text === 'auto' || text === 'none' || text === 'required') return text;
  const names = (tools ?? []).map((t) => t.function.name);
  if (!names.includes(text)) {
    throw new InvalidRequestError('tool_choice', text, `'auto', 'none', 'required' or the name of a tool (${names.length ? names.join(', ') : 'this page has none'})`);
  }
  return { type: 'function', function: { name: text } };
}

/** A call's arguments as an object: JSON text of an object, else an error that says what is wrong (never a throw). */
export function parseArguments(text: string): { args: Record<string, unknown> } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text === '' ? '{}' : text);
  } catch (err) {
    return { error: `the arguments are not JSON (${(err as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: 'the arguments are not a JSON object' };
  return { args: value as Record<string, unknown> };
}

/** A call as one line for people: `name({"a": 1})`. */
export function describeCall(call: ToolCallMade): string {
  return `${call.function.name}(${call.function.arguments})`;
}
