// The OpenAI chat completions API over the engine: request fields (snake_case, OpenAI semantics) become a
// GenerateRequest, and the engine's coalesced chunks become `chat.completion.chunk` objects (streaming) or
// one `chat.completion` — the exact shapes of OpenAI's API, so code written for the openai SDK or an
// OpenAI-compatible server runs unchanged against a model in the tab.

import { REQUEST_LIMITS as L, type ChatMessage, type Chunk, type FinishReason, type GenerateRequest, type ResponseFormat, type TokenLogprob, type ToolCall } from '@intab/engine/contract';
import { IntabEngineError } from '@intab/engine/errors';
import { bad, bodyOf, booleanField, checkDepth, checkRole, isObject, isPlainObject, logitBiasField, numberField, present, stopField, templateRole } from './openai-checks.ts';
import { messageToolCalls, openAiToolDeltas, ToolCallJoiner, toolResultOf, toolsOf } from './openai-tools.ts';

// ---- request ----

/** A message part of OpenAI's array content form; only text parts can be run. */
export interface ChatCompletionContentPartText {
  type: 'text';
  text: string;
}

export interface ChatCompletionMessageParam {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | (string & {});
  /** null on an assistant message that only calls tools. */
  content: string | ChatCompletionContentPartText[] | null;
  name?: string;
  /** An assistant message: the calls it made (as a chat.completion's message.tool_calls gave them). */
  tool_calls?: ChatCompletionMessageToolCall[] | null;
  /** A 'tool' message: the id of the call whose result `content` is. */
  tool_call_id?: string;
}

/** A call the model made (OpenAI's `message.tool_calls[i]`): `arguments` is a JSON string. */
export type ChatCompletionMessageToolCall = ToolCall;

/** A function the model may call (OpenAI's `tools[i]`). */
export interface ChatCompletionTool {
  type: 'function';
  function: {
    /** 1..64 characters of a-z, A-Z, 0-9, '_' and '-'. */
    name: string;
    description?: string;
    /** A JSON Schema of the arguments object [any object]. */
    parameters?: Record<string, unknown>;
    /** true: the schema is enforced in full or the request is refused; false/absent: keywords the grammar cannot enforce are dropped (as response_format's strict: false does). */
    strict?: boolean | null;
  };
}

/** 'auto' (the default with tools), 'none', 'required', or one function by name. */
export type ChatCompletionToolChoiceOption = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** The fields of OpenAI's `POST /v1/chat/completions` that a local model can honour. */
export interface ChatCompletionCreateParamsBase {
  /** Echoed in the response (defaults to the engine's model name); the engine runs its loaded model. */
  model?: string;
  messages: ChatCompletionMessageParam[];
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  /** Deprecated by OpenAI in favour of max_completion_tokens; both work (max_completion_tokens wins). */
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  /** Not in OpenAI's API (common in compatible servers): -1 or 0 = off. */
  top_k?: number | null;
  /** Not in OpenAI's API (common in compatible servers). */
  min_p?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  /** Not in OpenAI's API (llama.cpp / vLLM semantics). */
  repetition_penalty?: number | null;
  /** Token id (as a string key, as in JSON) → bias added to its logit. */
  logit_bias?: Record<string, number> | null;
  seed?: number | null;
  stop?: string | string[] | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  /** Only 1: one choice per request (send several requests to get more). */
  n?: number | null;
  /**
   * Structured output, enforced token by token (with finish_reason 'stop' the output always parses and matches; with
   * 'length', max_tokens cut it short):
   * `{ type: 'json_schema', json_schema: { name, schema, strict } }`, `{ type: 'json_object' }` or `{ type: 'text' }`.
   * `strict: false` drops schema keywords the grammar cannot enforce instead of refusing the schema.
   */
  response_format?: ResponseFormatParam | null;
  /**
   * Not in OpenAI's API: `'oldest'` drops the chat's oldest turns (never the system messages or the last turn) until
   * it fits the model's context with room for a reply, instead of a 400 context_length_exceeded ['none'].
   */
  truncate?: 'oldest' | 'none' | null;
  /**
   * Not in OpenAI's API: a max_tokens past what the context leaves after the prompt is a 400 context_length_exceeded,
   * as OpenAI answers, instead of clamped to what is left (finish_reason 'length' at the limit) [false].
   */
  strict_context?: boolean | null;
  /**
   * Functions the model may call (at most 128): rendered by the model's chat template, the calls held to each
   * function's `parameters` schema by the grammar. Not with a JSON response_format.
   */
  tools?: ChatCompletionTool[] | null;
  /** ['auto' with tools] 'auto': text or calls; 'none': no call; 'required': one or more calls; or a named function. */
  tool_choice?: ChatCompletionToolChoiceOption | null;
  /** [true] More than one call in one reply. */
  parallel_tool_calls?: boolean | null;
}

export type ResponseFormatParam =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name?: string; description?: string; schema?: Record<string, unknown> | boolean; strict?: boolean | null } };

export interface ChatCompletionCreateParamsStreaming extends ChatCompletionCreateParamsBase {
  stream: true;
}

export interface ChatCompletionCreateParamsNonStreaming extends ChatCompletionCreateParamsBase {
  stream?: false | null;
}

export type ChatCompletionCreateParams = ChatCompletionCreateParamsStreaming | ChatCompletionCreateParamsNonStreaming;

/** The chat request fields intab reads: OpenAI's that a local model can honour, compatible servers' and its own. */
export const CHAT_FIELDS: readonly string[] = [
  'model', 'messages', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'top_k',
  'min_p', 'frequency_penalty', 'presence_penalty', 'repetition_penalty', 'logit_bias', 'seed', 'stop', 'logprobs',
  'top_logprobs', 'n', 'response_format', 'truncate', 'strict_context', 'tools', 'tool_choice', 'parallel_tool_calls',
];

/**
 * The fields of a request body that nothing reads (user, metadata, a typo…), sorted: they are ignored, as
 * OpenAI ignores what it does not know, but the surfaces that take bodies say which (a warning, a response header).
 * @example
 * ignoredFields({ messages, temprature: 0, user: 'u1' }); // ['temprature', 'user']
 */
export function ignoredFields(body: unknown, known: readonly string[] = CHAT_FIELDS): string[] {
  if (typeof body !== 'object' || body === null) return [];
  return Object.keys(body).filter((k) => !known.includes(k)).sort();
}

// ---- response ----

export interface ChatCompletionTopLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface ChatCompletionTokenLogprob extends ChatCompletionTopLogprob {
  top_logprobs: ChatCompletionTopLogprob[];
}

export interface ChoiceLogprobs {
  content: ChatCompletionTokenLogprob[] | null;
  refusal: ChatCompletionTokenLogprob[] | null;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** cached_tokens: prompt tokens whose K/V came from the prefix cache (not prefilled again). */
  prompt_tokens_details?: { cached_tokens: number };
}

/** OpenAI's finish reasons that a local model produces ('tool_calls': the reply ended with calls). */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls';

/** One part of a call in a streamed delta (OpenAI's `delta.tool_calls[i]`): the first carries id, type and name. */
export interface ChatCompletionChunkToolCall {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; refusal?: string | null; tool_calls?: ChatCompletionChunkToolCall[] };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason | null;
    /** vLLM's return_token_ids (the HTTP surfaces): the ids delivered since the previous chunk. */
    token_ids?: number[];
  }[];
  /** With stream_options.include_usage: null on every chunk but the last, which has `choices: []`. */
  usage?: CompletionUsage | null;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: {
    index: number;
    /** content: null when the reply is only calls; tool_calls: present when the model made calls. */
    message: { role: 'assistant'; content: string | null; refusal: string | null; tool_calls?: ChatCompletionMessageToolCall[] };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason;
    /** vLLM's return_token_ids (the HTTP surfaces): every id of the answer. */
    token_ids?: number[];
  }[];
  usage: CompletionUsage;
}

// ---- mapping ----

/** A message's text: a string, null (an assistant turn of tool calls), or OpenAI's array of text parts. */
function text(content: unknown, i: number): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (!Array.isArray(content)) bad(`messages[${i}].content`, content, 'a string or an array of { type: "text", text } parts');
  let out = '';
  // Index loops here and below: a sparse array's holes are refused, not skipped.
  for (let j = 0; j < content.length; j++) {
    const part: unknown = content[j];
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string') {
      bad(`messages[${i}].content[${j}]`, part, 'a { type: "text", text } part (this model reads text only)');
    }
    out += part.text;
  }
  return out;
}

/**
 * The chat's messages. An assistant message may carry tool_calls (its content then null or text); a 'tool' message
 * answers one of those calls by tool_call_id, and gets the called function's name when it gives none.
 */
function messagesOf(v: unknown): ChatMessage[] {
  if (!Array.isArray(v) || v.length === 0) bad('messages', v, 'a non-empty array of { role, content }');
  const out: ChatMessage[] = [];
  /** The calls of the assistant messages so far: id → function name. */
  const calls = new Map<string, string>();
  for (let i = 0; i < v.length; i++) {
    const m: unknown = v[i];
    if (!isObject(m)) bad(`messages[${i}]`, m, 'an object { role, content }');
    // A role outside CHAT_ROLES is a 400 naming messages[i].role (unlike an unknown field, which OpenAI ignores too).
    checkRole(m.role, `messages[${i}].role`);
    if (present(m.name) && typeof m.name !== 'string') bad(`messages[${i}].name`, m.name, 'a string');
    if (present(m.tool_calls) && m.role !== 'assistant') bad(`messages[${i}].tool_calls`, m.tool_calls, 'absent: only an assistant message carries tool_calls');
    if (present(m.tool_call_id) && m.role !== 'tool') bad(`messages[${i}].tool_call_id`, m.tool_call_id, "absent: only a 'tool' message carries tool_call_id");
    // OpenAI's 'developer' role is the system prompt of newer models; chat templates know 'system'.
    const message: ChatMessage = { role: templateRole(m.role), content: text(m.content, i) };
    if (m.role === 'assistant') {
      const toolCalls = messageToolCalls(m.tool_calls, i, calls);
      if (toolCalls) {
        message.toolCalls = toolCalls;
        if (!present(m.content)) message.content = null;
      }
    } else if (m.role === 'tool') {
      Object.assign(message, toolResultOf(m, i, calls));
    }
    out.push(message);
  }
  return out;
}

function formatOf(v: unknown): ResponseFormat | undefined {
  if (!present(v)) return undefined;
  if (!isObject(v)) bad('response_format', v, "{ type: 'json_schema', json_schema: { schema } }, { type: 'json_object' } or { type: 'text' }");
  switch (v.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js = v.json_schema;
      if (!isObject(js)) bad('response_format.json_schema', js, '{ name, schema, strict? }');
      if (present(js.name) && typeof js.name !== 'string') bad('response_format.json_schema.name', js.name, 'a string');
      const schema = js.schema ?? {};
      if (typeof schema !== 'boolean' && !isPlainObject(schema)) bad('response_format.json_schema.schema', schema, 'a JSON Schema (an object, or true/false)');
      checkDepth('response_format.json_schema.schema', schema);
      if (present(js.strict) && typeof js.strict !== 'boolean') bad('response_format.json_schema.strict', js.strict, 'true or false');
      // OpenAI's strict defaults to false (its structured outputs then are best effort); here a schema is always
      // enforced, and strict: false only lets keywords the grammar cannot enforce be dropped instead of refused.
      return { type: 'json_schema', schema: schema as Record<string, unknown> | boolean, strict: js.strict !== false };
    }
    default:
      return bad('response_format.type', v.type, "'json_schema', 'json_object' or 'text'");
  }
}

const MAX_INT = Number.MAX_SAFE_INTEGER;

/**
 * The GenerateRequest of an OpenAI chat completion request. A field of the wrong type or out of range, and an option
 * the engine has no notion of, is an InvalidRequestError naming the field as the body spells it (the ranges are
 * OpenAI's; where OpenAI has none, the engine's REQUEST_LIMITS). What depends on the model (token ids past its
 * vocabulary, a prompt over its context) is the engine's to refuse.
 * @example
 * toGenerateRequest({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 16, stop: '\n' });
 * // { messages: [...], maxTokens: 16, stop: ['\n'] }
 */
export function toGenerateRequest(p: ChatCompletionCreateParams): GenerateRequest {
  const b = bodyOf(p, 'an object with messages');
  if (present(b.n) && b.n !== 1) {
    bad('n', b.n, '1 (intab returns one choice per request: send n requests, with different seeds, to get n choices)');
  }
  if (present(b.model) && typeof b.model !== 'string') bad('model', b.model, 'a string (echoed in the response; the engine runs its loaded model)');
  booleanField(b, 'stream', 'true: stream chat.completion.chunk objects');
  if (present(b.stream_options)) {
    if (!isObject(b.stream_options)) bad('stream_options', b.stream_options, '{ include_usage?: boolean }');
    if (present(b.stream_options.include_usage) && typeof b.stream_options.include_usage !== 'boolean') bad('stream_options.include_usage', b.stream_options.include_usage, 'true or false');
  }
  const r: GenerateRequest = { messages: messagesOf(b.messages) };
  // max_completion_tokens wins; max_tokens is its deprecated name. Both are checked.
  const maxCompletion = numberField(b, 'max_completion_tokens', { lo: 1, hi: MAX_INT, integer: true, expected: 'a positive integer' });
  const maxTokens = numberField(b, 'max_tokens', { lo: 1, hi: MAX_INT, integer: true, expected: 'a positive integer' });
  if (maxCompletion !== undefined || maxTokens !== undefined) r.maxTokens = maxCompletion ?? maxTokens;
  if (present(b.truncate)) {
    if (b.truncate !== 'oldest' && b.truncate !== 'none') bad('truncate', b.truncate, "'oldest' (drop the oldest turns to fit the context) or 'none'");
    r.truncate = b.truncate;
  }
  const strictContext = booleanField(b, 'strict_context', 'true: refuse a max_tokens the context cannot hold instead of clamping it');
  if (strictContext !== undefined) r.strictContext = strictContext;
  const set = (key: keyof GenerateRequest, field: string, o: Parameters<typeof numberField>[2]) => {
    const v = numberField(b, field, o);
    if (v !== undefined) (r as Record<string, unknown>)[key] = v;
  };
  const penalty = { lo: -L.penalty, hi: L.penalty, expected: `a number from -${L.penalty} to ${L.penalty}` };
  // OpenAI caps temperature at 2; the engine takes up to 100 (a high temperature with min_p is a known recipe).
  set('temperature', 'temperature', { lo: 0, hi: L.temperature, expected: `a number from 0 to ${L.temperature} (0 = greedy)` });
  set('topP', 'top_p', { lo: 0, hi: 1, open: true, expected: 'a number in (0, 1] (for greedy decoding send temperature: 0)' });
  // -1 is vLLM's "off", as 0 is here.
  const topK = numberField(b, 'top_k', { lo: -1, hi: MAX_INT, integer: true, expected: 'an integer ≥ -1 (-1 or 0 = off)' });
  if (topK !== undefined && topK > 0) r.topK = topK;
  set('minP', 'min_p', { lo: 0, hi: 1, expected: 'a number from 0 to 1 (0 = off)' });
  set('frequencyPenalty', 'frequency_penalty', penalty);
  set('presencePenalty', 'presence_penalty', penalty);
  const [repLo, repHi] = L.repetitionPenalty;
  set('repetitionPenalty', 'repetition_penalty', { lo: repLo, hi: repHi, expected: `a number from ${repLo} to ${repHi} (1 = off)` });
  if (present(b.seed)) {
    if (typeof b.seed !== 'number' || !Number.isInteger(b.seed)) bad('seed', b.seed, 'an integer');
    // OpenAI's seed is an int64, inexact in JSON past 2^53; the engine's RNG reads a seed's low 32 bits anyway.
    r.seed = Number.isSafeInteger(b.seed) ? b.seed : b.seed >>> 0;
  }
  const bias = logitBiasField(b);
  if (bias !== undefined) r.logitBias = bias;
  const stop = stopField(b);
  if (stop !== undefined) r.stop = stop;
  const logprobs = booleanField(b, 'logprobs', "true: return each token's logprob");
  const topLogprobs = numberField(b, 'top_logprobs', { lo: 0, hi: L.topLogprobs, integer: true, expected: `an integer from 0 to ${L.topLogprobs}` });
  if (topLogprobs !== undefined && topLogprobs > 0 && logprobs !== true) bad('top_logprobs', topLogprobs, 'set only together with logprobs: true');
  if (logprobs === true) {
    r.logprobs = true;
    if (topLogprobs !== undefined) r.topLogprobs = topLogprobs;
  }
  const format = formatOf(b.response_format);
  if (format) r.responseFormat = format;
  Object.assign(r, toolsOf(b));
  return r;
}

const utf8 = new TextEncoder();

function bytesOf(s: string): number[] {
  return Array.from(utf8.encode(s));
}

/** OpenAI's logprobs `content` entries for the engine's per-token logprobs. */
export function toOpenAiLogprobs(lp: readonly TokenLogprob[]): ChatCompletionTokenLogprob[] {
  return lp.map((t) => ({
    token: t.text,
    logprob: t.logprob,
    bytes: bytesOf(t.text),
    top_logprobs: (t.top ?? []).map((a) => ({ token: a.text, logprob: a.logprob, bytes: bytesOf(a.text) })),
  }));
}

/** What identifies one completion in all of its chunks. */
export interface CompletionMeta {
  id: string;
  created: number;
  model: string;
}

/** A fresh id: `prefix` + 24 random characters, as OpenAI's (`chatcmpl-`, `cmpl-`). */
export function openAiId(prefix: string): string {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  let b64 = '';
  for (const b of bytes) b64 += String.fromCharCode(b);
  return `${prefix}${btoa(b64).replace(/[+/=]/g, (c) => (c === '+' ? 'A' : c === '/' ? 'B' : ''))}`;
}

/** A fresh completion id (`chatcmpl-` + 24 random characters, as OpenAI's). */
export function completionId(): string {
  return openAiId('chatcmpl-');
}

/**
 * OpenAI's finish_reason of a last chunk: 'stop', 'length' or 'tool_calls'; undefined when it was aborted (each caller says what an
 * abort gives); an 'error' chunk throws its error (a remote stream that broke: the official client throws too).
 */
export function openAiFinishReason(last: Chunk): ChatFinishReason | undefined {
  const reason = last.finishReason as FinishReason;
  if (reason === 'stop' || reason === 'length' || reason === 'tool_calls') return reason;
  if (reason === 'error') throw last.error ?? new IntabEngineError('The engine ended the stream with an error it did not report: the request failed; retry it or reload the model.');
  return undefined; // 'abort'
}

/**
 * vLLM's return_token_ids, as the converters write it: `take(choice)` gives a choice the ids delivered since the
 * previous one took them (when on), and `waiting` says whether a chunk's ids still wait for a choice.
 */
export function tokenIdsOf(on: boolean | undefined): { add(ids: readonly number[]): void; take<C extends object>(choice: C): C; readonly waiting: boolean } {
  const ids: number[] = [];
  return {
    add(more) {
      if (on) ids.push(...more);
    },
    take(choice) {
      return on ? { ...choice, token_ids: ids.splice(0) } : choice;
    },
    get waiting() {
      return ids.length > 0;
    },
  };
}

/**
 * OpenAI `chat.completion.chunk` objects from the engine's chunks: role on the first, one chunk per
 * engine chunk with text (or logprobs, or tool calls: `delta.tool_calls`, the first delta of a call with its index,
 * id, type, name and arguments '', then fragments of its arguments), then an empty delta with finish_reason ('stop' |
 * 'length' | 'tool_calls'), then
 * the usage chunk (`choices: []`) when includeUsage. An aborted stream throws the signal's reason (an AbortError) at
 * its next step, after the chunks taken before the abort and none after it, as the official client's stream does.
 * With `tokenIds` (vLLM's return_token_ids) each choice carries `token_ids`, the ids delivered since the previous one,
 * and an engine chunk of ids without text (part of a UTF-8 character, ids that spell nothing) is sent at once as a
 * chunk of its own with an empty delta, so ids stream as they are generated.
 * @example
 * for await (const c of toChatCompletionChunks(engine.generate(request), meta, { includeUsage: true }))
 *   process(c.choices[0]?.delta.content);
 */
export async function* toChatCompletionChunks(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { includeUsage?: boolean; logprobs?: boolean; tokenIds?: boolean; signal?: AbortSignal } = {},
): AsyncGenerator<ChatCompletionChunk, void, undefined> {
  const usage = options.includeUsage ? { usage: null } : {};
  const base = (choices: ChatCompletionChunk['choices']): ChatCompletionChunk => ({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices, ...usage });
  const ids = tokenIdsOf(options.tokenIds);
  let first = true;
  let completionTokens = 0;
  for await (const c of chunks) {
    // Aborted: nothing more is shown, not even what the engine produced before the abort reached it; the stream throws
    // at its next step, as the official client's stream throws APIUserAbortError once its signal is aborted.
    if (options.signal?.aborted) throw options.signal.reason ?? new DOMException('The chat completion was aborted.', 'AbortError');
    completionTokens += c.ids.length;
    ids.add(c.ids);
    const hasLogprobs = options.logprobs === true && (c.logprobs?.length ?? 0) > 0;
    const calls = c.toolCalls?.length ? openAiToolDeltas(c.toolCalls) : undefined;
    if (first || c.text !== '' || hasLogprobs || calls) {
      // A delta of calls alone has no content (OpenAI's first delta of a reply that only calls says content: null).
      const content = calls && c.text === '' ? (first ? { content: null } : {}) : { content: c.text };
      const delta: ChatCompletionChunk['choices'][number]['delta'] = first ? { role: 'assistant', ...content, refusal: null } : content;
      if (calls) delta.tool_calls = calls;
      first = false;
      const logprobs = options.logprobs === true ? { content: toOpenAiLogprobs(c.logprobs ?? []), refusal: null } : null;
      yield base([ids.take({ index: 0, delta, logprobs, finish_reason: null })]);
    } else if (ids.waiting && c.finishReason === null) {
      yield base([ids.take({ index: 0, delta: {}, logprobs: null, finish_reason: null })]);
    }
    if (c.finishReason === null) continue;
    const reason = openAiFinishReason(c);
    // Aborted: the stream throws the signal's reason, as the official client's stream throws APIUserAbortError.
    if (reason === undefined) throw options.signal?.reason ?? new DOMException('The chat completion was aborted.', 'AbortError');
    yield base([ids.take({ index: 0, delta: {}, logprobs: null, finish_reason: reason })]);
    if (options.includeUsage) yield { ...base([]), usage: usageOf(c, completionTokens) };
    return;
  }
}

/** OpenAI's usage of a finished request, from its last chunk's metrics (`counted`: ids seen, when metrics are absent). */
export function usageOf(last: Chunk, counted: number): CompletionUsage {
  const promptTokens = last.metrics?.promptTokens ?? 0;
  const completion = last.metrics?.completionTokens ?? counted;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
    prompt_tokens_details: { cached_tokens: last.metrics?.cachedTokens ?? 0 },
  };
}

/**
 * One OpenAI `chat.completion` from a whole stream of engine chunks. An aborted stream rejects with the
 * signal's reason (as fetch does), since there is no complete answer to return. With `tokenIds` (vLLM's
 * return_token_ids) the choice carries `token_ids`, every id of the answer.
 * @example
 * const completion = await toChatCompletion(engine.generate(request), meta, {});
 * completion.choices[0].message.content;
 */
export async function toChatCompletion(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { logprobs?: boolean; tokenIds?: boolean; signal?: AbortSignal } = {},
): Promise<ChatCompletion> {
  let content = '';
  const logprobs: ChatCompletionTokenLogprob[] = [];
  const ids = tokenIdsOf(options.tokenIds);
  const calls = new ToolCallJoiner();
  let completionTokens = 0;
  for await (const c of chunks) {
    content += c.text;
    calls.add(c.toolCalls);
    completionTokens += c.ids.length;
    ids.add(c.ids);
    if (options.logprobs && c.logprobs) logprobs.push(...toOpenAiLogprobs(c.logprobs));
    if (c.finishReason === null) continue;
    const reason = openAiFinishReason(c);
    if (reason === undefined) {
      throw options.signal?.reason ?? new DOMException('The chat completion was aborted.', 'AbortError');
    }
    const toolCalls = calls.joined;
    // A reply of calls alone has content null, as OpenAI answers it; text written before the calls stays.
    const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: toolCalls.length && content === '' ? null : content, refusal: null };
    if (toolCalls.length) message.tool_calls = toolCalls;
    return {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [
        ids.take({
          index: 0,
          message,
          logprobs: options.logprobs ? { content: logprobs, refusal: null } : null,
          finish_reason: reason,
        }),
      ],
      usage: usageOf(c, completionTokens),
    };
  }
  throw new IntabEngineError('The engine ended the stream without a last chunk: the request failed; retry it or reload the model.');
}
