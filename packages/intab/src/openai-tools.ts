// Tool calling in OpenAI's chat API, both ways: the request's `tools`, `tool_choice` and `parallel_tool_calls`, an
// assistant message's `tool_calls` and a 'tool' message's `tool_call_id` are checked (a bad value is a 400 naming the
// field as the body spells it) and become the engine's camelCase fields; the engine's Chunk.toolCalls deltas become
// OpenAI's streamed `delta.tool_calls` and, joined, a message's `tool_calls`. What depends on the model (the schemas'
// grammar, the template's rendering) is the engine's to refuse.

import type { ChatMessage, GenerateRequest, ToolCall, ToolCallDelta, ToolChoice, ToolDefinition } from '@intab/engine/contract';
import { bad, checkDepth, isObject, isPlainObject, present, type Body } from './openai-checks.ts';

/** OpenAI's limit on a request's tools (the engine's too). */
export const MAX_TOOLS = 128;

/** OpenAI's rule for a function's name: 1..64 of a-z, A-Z, 0-9, '_' and '-'. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const NAME_RULE = 'a function name: 1 to 64 characters of a-z, A-Z, 0-9, _ and -';
const CHOICES = "'auto', 'none', 'required' or { type: 'function', function: { name } }";

/** One of `tools`: `{ type: 'function', function: { name, description?, parameters?, strict? } }`. */
function toolOf(t: unknown, i: number, names: Set<string>): ToolDefinition {
  const at = `tools[${i}]`;
  if (!isObject(t)) bad(at, t, "{ type: 'function', function: { name, description?, parameters?, strict? } }");
  if (t.type !== 'function') bad(`${at}.type`, t.type, "'function' (functions are the only tools a model here can call)");
  const f = t.function;
  if (!isObject(f)) bad(`${at}.function`, f, '{ name, description?, parameters?, strict? }');
  if (typeof f.name !== 'string' || !FUNCTION_NAME.test(f.name)) bad(`${at}.function.name`, f.name, NAME_RULE);
  if (names.has(f.name)) bad(`${at}.function.name`, f.name, 'a name no other tool of the request has');
  names.add(f.name);
  if (present(f.description) && typeof f.description !== 'string') bad(`${at}.function.description`, f.description, 'a string');
  if (present(f.strict) && typeof f.strict !== 'boolean') bad(`${at}.function.strict`, f.strict, 'true or false');
  const fn: ToolDefinition['function'] = { name: f.name };
  if (typeof f.description === 'string') fn.description = f.description;
  if (present(f.parameters)) {
    if (!isPlainObject(f.parameters)) bad(`${at}.function.parameters`, f.parameters, "a JSON Schema object of the arguments (e.g. { type: 'object', properties: {...} })");
    checkDepth(`${at}.function.parameters`, f.parameters);
    fn.parameters = f.parameters;
  }
  if (typeof f.strict === 'boolean') fn.strict = f.strict;
  return { type: 'function', function: fn };
}

/**
 * The engine's tools, toolChoice and parallelToolCalls of a chat body. Without tools, tool_choice may only be 'none' or
 * 'auto' (nothing to call either way) and parallel_tool_calls is moot; both are then left out.
 * @example
 * toolsOf({ tools: [{ type: 'function', function: { name: 'now' } }], tool_choice: 'required' });
 * // { tools: [{ type: 'function', function: { name: 'now' } }], toolChoice: 'required' }
 */
export function toolsOf(b: Body): Pick<GenerateRequest, 'tools' | 'toolChoice' | 'parallelToolCalls'> {
  if (present(b.parallel_tool_calls) && typeof b.parallel_tool_calls !== 'boolean') bad('parallel_tool_calls', b.parallel_tool_calls, 'true or false (more than one call in one reply)');
  const choice = b.tool_choice;
  const tools = b.tools;
  if (!present(tools)) {
    if (present(choice) && choice !== 'none' && choice !== 'auto') bad('tool_choice', choice, "'none' or 'auto' without tools: send tools for the model to call");
    return {};
  }
  if (!Array.isArray(tools) || tools.length === 0) bad('tools', tools, "a non-empty array of { type: 'function', function: { name, parameters } } (leave tools out for no tools)");
  if (tools.length > MAX_TOOLS) bad('tools', `${tools.length} tools`, `at most ${MAX_TOOLS} tools`);
  const rf = b.response_format;
  if (isObject(rf) && (rf.type === 'json_schema' || rf.type === 'json_object')) {
    bad('response_format', rf.type, "absent or { type: 'text' } when tools are given: a reply is either calls or text; put the answer's shape in a tool's parameters instead");
  }
  const names = new Set<string>();
  const out: Pick<GenerateRequest, 'tools' | 'toolChoice' | 'parallelToolCalls'> = { tools: [] };
  // An index loop: a sparse array's holes are refused, not skipped.
  for (let i = 0; i < tools.length; i++) out.tools!.push(toolOf(tools[i], i, names));
  if (present(choice)) out.toolChoice = toolChoiceOf(choice, names);
  if (typeof b.parallel_tool_calls === 'boolean') out.parallelToolCalls = b.parallel_tool_calls;
  return out;
}

function toolChoiceOf(v: unknown, names: Set<string>): ToolChoice {
  if (v === 'auto' || v === 'none' || v === 'required') return v;
  if (typeof v === 'string') bad('tool_choice', v, CHOICES);
  if (!isObject(v)) bad('tool_choice', v, CHOICES);
  if (v.type !== 'function') bad('tool_choice.type', v.type, "'function'");
  const f = v.function;
  if (!isObject(f) || typeof f.name !== 'string') bad('tool_choice.function', f, '{ name } of one of the tools');
  if (!names.has(f.name)) bad('tool_choice.function.name', f.name, `the name of one of the tools (${[...names].slice(0, 8).join(', ')}${names.size > 8 ? ', ...' : ''})`);
  return { type: 'function', function: { name: f.name } };
}

// ---- the history: assistant calls and tool results ----

/**
 * An assistant message's tool_calls: `[{ id, type: 'function', function: { name, arguments } }]`, arguments a JSON
 * string (as the model wrote them; the template renders them). Their ids go into `calls` (id → function name), for the
 * 'tool' messages that answer them. undefined when absent or empty.
 */
export function messageToolCalls(v: unknown, i: number, calls: Map<string, string>): ToolCall[] | undefined {
  if (!present(v)) return undefined;
  const at = `messages[${i}].tool_calls`;
  if (!Array.isArray(v)) bad(at, v, "an array of { id, type: 'function', function: { name, arguments } }");
  if (v.length === 0) return undefined;
  const out: ToolCall[] = [];
  for (let j = 0; j < v.length; j++) {
    const c: unknown = v[j];
    const cat = `${at}[${j}]`;
    if (!isObject(c)) bad(cat, c, "{ id, type: 'function', function: { name, arguments } }");
    if (typeof c.id !== 'string' || c.id === '') bad(`${cat}.id`, c.id, "the call's id (a non-empty string, as the reply gave it)");
    if (present(c.type) && c.type !== 'function') bad(`${cat}.type`, c.type, "'function'");
    const f = c.function;
    if (!isObject(f)) bad(`${cat}.function`, f, '{ name, arguments }');
    if (typeof f.name !== 'string' || f.name === '') bad(`${cat}.function.name`, f.name, "the called function's name");
    if (typeof f.arguments !== 'string') bad(`${cat}.function.arguments`, f.arguments, 'the arguments as a JSON string (as the reply gave them)');
    calls.set(c.id, f.name);
    out.push({ id: c.id, type: 'function', function: { name: f.name, arguments: f.arguments } });
  }
  return out;
}

/** A 'tool' message's tool_call_id (one of an earlier assistant message's calls) and the called function's name. */
export function toolResultOf(m: Body, i: number, calls: Map<string, string>): Pick<ChatMessage, 'toolCallId' | 'name'> {
  const id = m.tool_call_id;
  if (typeof id !== 'string' || id === '') bad(`messages[${i}].tool_call_id`, id, "the id of the call whose result this is (a 'tool' message answers an assistant message's tool_calls)");
  const called = calls.get(id);
  if (called === undefined) bad(`messages[${i}].tool_call_id`, id, 'the id of a call in an earlier assistant message\'s tool_calls');
  return { toolCallId: id, name: typeof m.name === 'string' ? m.name : called };
}

// ---- the answer: the engine's deltas as OpenAI's ----

/**
 * One engine chunk's call deltas as OpenAI streams them: the first delta of a call (index, id, type, name, arguments
 * '') as it is, and the argument fragments of one call that follow each other in the chunk joined into one; the
 * partial-JSON events stay the engine's.
 */
export function openAiToolDeltas(deltas: readonly ToolCallDelta[]): { index: number; id?: string; type?: 'function'; function: { name?: string; arguments: string } }[] {
  const out: ReturnType<typeof openAiToolDeltas> = [];
  for (const d of deltas) {
    const prev = out.at(-1);
    const fragment = d.id === undefined && d.function.name === undefined;
    if (fragment && prev && prev.index === d.index && prev.id === undefined && prev.function.name === undefined) {
      prev.function.arguments += d.function.arguments;
      continue;
    }
    const fn: { name?: string; arguments: string } = { arguments: d.function.arguments };
    if (d.function.name !== undefined) fn.name = d.function.name;
    out.push({ index: d.index, ...(d.id !== undefined ? { id: d.id } : {}), ...(d.type !== undefined ? { type: d.type } : {}), function: fn });
  }
  return out;
}

/** The calls of a reply, joined from its deltas in order (a chat.completion's message.tool_calls). */
export class ToolCallJoiner {
  private readonly calls: ToolCall[] = [];

  add(deltas: readonly ToolCallDelta[] | undefined): void {
    for (const d of deltas ?? []) {
      const call = (this.calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (d.id !== undefined) call.id = d.id;
      if (d.function.name !== undefined) call.function.name = d.function.name;
      call.function.arguments += d.function.arguments;
    }
  }

  /** The calls, in index order (none: an empty array). */
  get joined(): ToolCall[] {
    return this.calls.filter((c) => c !== undefined);
  }
}
