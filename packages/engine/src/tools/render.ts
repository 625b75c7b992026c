// A chat with tools as the model's chat template gets it (transformers' conventions): the tools as `tools` (OpenAI's
// `{ type: 'function', function: { name, description, parameters } }`), an assistant's calls as `tool_calls` with
// `function.arguments` as the parsed object (templates print it with tojson), content null as '' (templates concatenate
// it), a tool result with `tool_call_id` and the function's `name` (from its call when the message does not say). For
// the 'generic' format (a template that knows no tools) intab writes the tool list and the call syntax into the system
// message itself. A preload of `{ messages, tools }` renders through here too, so it is a prefix of the requests.

import type { ChatMessage, ToolDefinition } from '../contract.ts';
import { templateRole } from '../field-checks.ts';
import type { ToolFormat } from './formats.ts';

type TemplateMessage = { role: string; content: string; [field: string]: unknown };

/** The tools as the template's `tools` variable (strict is intab's business, not the prompt's). */
export function templateTools(tools: readonly ToolDefinition[]): unknown[] {
  return tools.map((t) => ({
    type: 'function',
    function: {
      name: t.function.name,
      ...(t.function.description !== undefined ? { description: t.function.description } : {}),
      parameters: t.function.parameters ?? { type: 'object', properties: {} },
    },
  }));
}

/**
 * The messages as the template gets them: copies, 'developer' as 'system', toolCalls as tool_calls (arguments parsed),
 * toolCallId as tool_call_id, content null as ''.
 */
export function templateChat(messages: readonly ChatMessage[]): TemplateMessage[] {
  const names = new Map<string, string>();
  for (const m of messages) for (const c of m.toolCalls ?? []) names.set(c.id, c.function.name);
  return messages.map((m) => {
    const out: TemplateMessage = { role: templateRole(m.role), content: m.content ?? '' };
    if (m.toolCalls?.length) {
      out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: parseArguments(c.function.arguments) } }));
    }
    if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
    const name = m.name ?? (m.role === 'tool' && m.toolCallId !== undefined ? names.get(m.toolCallId) : undefined);
    if (name !== undefined) out.name = name;
    return out;
  });
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // checked before (request-checks.ts): only a caller of this function alone gets here
  }
}

/**
 * The 'generic' format's system text: the tools and how to call them, in the syntax its grammar and parser use.
 * @example
 * genericToolPrompt(tools, TOOL_FORMATS.generic); // 'You can call these functions...<tool_call>{"name": ...'
 */
export function genericToolPrompt(tools: readonly ToolDefinition[], format: ToolFormat): string {
  const list = templateTools(tools).map((t) => JSON.stringify(t)).join('\n');
  return (
    'You can call these functions (JSON Schema signatures):\n' +
    `${list}\n\n` +
    `To call one, reply with ${format.callOpen}{"name": "<function name>", "${format.argumentsKey}": <arguments as a JSON object>}${format.callClose}` +
    (format.parallel ? ` (one such block per call, each on its own line)` : '') +
    ', and nothing after it; the results come back in the next message. Otherwise answer in plain text.'
  );
}

/**
 * A generic-format chat: the tool prompt joined to the first system message, or as a system message of its own first.
 * Tool results reach the template as 'user' messages (a template that knows no tools may refuse the role 'tool'), and
 * an assistant's calls as its text in the call syntax.
 */
export function withGenericTools(messages: TemplateMessage[], tools: readonly ToolDefinition[], format: ToolFormat): TemplateMessage[] {
  const prompt = genericToolPrompt(tools, format);
  const out = messages.map((m): TemplateMessage => {
    if (m.role === 'tool') return { role: 'user', content: `Result of ${String(m.name ?? 'the call')} (${String(m.tool_call_id ?? '')}):\n${m.content}` };
    const calls = m.tool_calls as { function: { name: string; arguments: unknown } }[] | undefined;
    if (!calls) return m;
    const text = calls.map((c) => `${format.callOpen}{"name": "${c.function.name}", "${format.argumentsKey}": ${JSON.stringify(c.function.arguments)}}${format.callClose}`).join(format.separator);
    return { role: m.role, content: m.content ? `${m.content}\n${text}` : text };
  });
  if (out[0]?.role === 'system') return [{ ...out[0], content: `${out[0].content}\n\n${prompt}` }, ...out.slice(1)];
  return [{ role: 'system', content: prompt }, ...out];
}

/**
 * What a template needs beyond `tools` and the messages, by format: Mistral's templates refuse call ids that are not 9
 * letters and digits (each id becomes one, the same for a call and its result); Phi-4-mini's read the tools from the
 * system message's own `tools` field (as JSON text), not from the `tools` variable.
 */
export function formatChat(chat: TemplateMessage[], tools: readonly ToolDefinition[], format: ToolFormat): TemplateMessage[] {
  if (format.name === 'mistral') {
    const id = (x: unknown) => mistralId(String(x));
    return chat.map((m) => {
      const out: TemplateMessage = { ...m };
      if (Array.isArray(m.tool_calls)) out.tool_calls = (m.tool_calls as { id: string }[]).map((c) => ({ ...c, id: id(c.id) }));
      if (m.tool_call_id !== undefined) out.tool_call_id = id(m.tool_call_id);
      return out;
    });
  }
  if (format.name === 'phi4' && tools.length > 0) {
    const json = JSON.stringify(templateTools(tools));
    if (chat[0]?.role === 'system') return [{ ...chat[0], tools: json }, ...chat.slice(1)];
    return [{ role: 'system', content: '', tools: json }, ...chat];
  }
  return chat;
}

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** 9 letters and digits from any id (FNV-1a, twice): stable, so a call and its result keep matching ids. */
function mistralId(id: string): string {
  if (/^[a-zA-Z0-9]{9}$/.test(id)) return id;
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < id.length; i++) {
    h1 = Math.imul(h1 ^ id.charCodeAt(i), 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ id.charCodeAt(i), 0x811c9dc5) >>> 0;
  }
  let out = '';
  for (let i = 0; i < 9; i++) {
    const h = i < 5 ? h1 : h2;
    out += ID_CHARS[(h >>> ((i % 5) * 6)) % ID_CHARS.length];
  }
  return out;
}
