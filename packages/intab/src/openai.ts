// The OpenAI chat completions API over the engine: request fields (snake_case, OpenAI semantics) become a
// GenerateRequest, and the engine's coalesced chunks become `chat.completion.chunk` objects (streaming) or
// one `chat.completion` — the exact shapes of OpenAI's API, so code written for the openai SDK or an
// OpenAI-compatible server runs unchanged against a model in the tab.

import type { Chunk, FinishReason, GenerateRequest, TokenLogprob } from '@intab/engine/contract';
import { IntabEngineError, InvalidRequestError } from '@intab/engine/errors';

// ---- request ----

/** A message part of OpenAI's array content form; only text parts can be run. */
export interface ChatCompletionContentPartText {
  type: 'text';
  text: string;
}

export interface ChatCompletionMessageParam {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string | ChatCompletionContentPartText[] | null;
  name?: string;
}

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
  /** Not in OpenAI's API (common in compatible servers). */
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
  'top_logprobs', 'n', 'response_format', 'truncate', 'strict_context',
];

/**
 * The fields of a request body that nothing reads (tools, user, metadata, a typo…), sorted: they are ignored, as
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

/** OpenAI's finish reasons that a local model produces. */
export type ChatFinishReason = 'stop' | 'length';

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string | null; refusal?: string | null };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason | null;
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
    message: { role: 'assistant'; content: string | null; refusal: string | null };
    logprobs: ChoiceLogprobs | null;
    finish_reason: ChatFinishReason;
  }[];
  usage: CompletionUsage;
}

// ---- mapping ----

function num(field: string, v: number | null | undefined, expected: string): number | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidRequestError(field, v, expected);
  return v;
}

function text(m: ChatCompletionMessageParam, i: number): string {
  if (typeof m.content === 'string') return m.content;
  if (m.content === null || m.content === undefined) return '';
  if (!Array.isArray(m.content)) throw new InvalidRequestError(`messages[${i}].content`, m.content, 'a string or an array of { type: "text", text } parts');
  return m.content
    .map((p, j) => {
      if (p?.type !== 'text' || typeof p.text !== 'string') {
        throw new InvalidRequestError(`messages[${i}].content[${j}]`, p, 'a { type: "text", text } part (this model reads text only)');
      }
      return p.text;
    })
    .join('');
}

/**
 * The GenerateRequest of an OpenAI chat completion request; options the engine has no notion of are
 * InvalidRequestErrors naming the field. Range checks of the sampling values are the engine's.
 * @example
 * toGenerateRequest({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 16, stop: '\n' });
 * // { messages: [...], maxTokens: 16, stop: ['\n'] }
 */
export function toGenerateRequest(p: ChatCompletionCreateParams): GenerateRequest {
  if (typeof p !== 'object' || p === null) throw new InvalidRequestError('request', p, 'an object with messages');
  if (p.n !== null && p.n !== undefined && p.n !== 1) {
    throw new InvalidRequestError('n', p.n, '1 (intab returns one choice per request: send n requests, with different seeds, to get n choices)');
  }
  if (!Array.isArray(p.messages) || p.messages.length === 0) throw new InvalidRequestError('messages', p.messages, 'a non-empty array of { role, content }');
  const r: GenerateRequest = {
    messages: p.messages.map((m, i) => {
      if (typeof m !== 'object' || m === null || typeof m.role !== 'string') throw new InvalidRequestError(`messages[${i}]`, m, 'an object { role, content }');
      // OpenAI's 'developer' role is the system prompt of newer models; chat templates know 'system'.
      return { role: m.role === 'developer' ? 'system' : m.role, content: text(m, i) };
    }),
  };
  const maxTokens = num('max_completion_tokens', p.max_completion_tokens, 'a positive integer') ?? num('max_tokens', p.max_tokens, 'a positive integer');
  if (maxTokens !== undefined) r.maxTokens = maxTokens;
  if (p.truncate !== null && p.truncate !== undefined) {
    if (p.truncate !== 'oldest' && p.truncate !== 'none') throw new InvalidRequestError('truncate', p.truncate, "'oldest' (drop the oldest turns to fit the context) or 'none'");
    r.truncate = p.truncate;
  }
  if (p.strict_context !== null && p.strict_context !== undefined) {
    if (typeof p.strict_context !== 'boolean') throw new InvalidRequestError('strict_context', p.strict_context, 'a boolean (true: refuse a max_tokens the context cannot hold instead of clamping it)');
    r.strictContext = p.strict_context;
  }
  const set = <K extends keyof GenerateRequest>(key: K, field: keyof ChatCompletionCreateParamsBase, expected: string) => {
    const v = num(field, p[field] as number | null | undefined, expected);
    if (v !== undefined) (r as Record<string, unknown>)[key] = v;
  };
  set('temperature', 'temperature', 'a number from 0 to 2');
  set('topP', 'top_p', 'a number in (0, 1]');
  set('topK', 'top_k', 'a non-negative integer');
  set('minP', 'min_p', 'a number in [0, 1]');
  set('frequencyPenalty', 'frequency_penalty', 'a number from -2 to 2');
  set('presencePenalty', 'presence_penalty', 'a number from -2 to 2');
  set('repetitionPenalty', 'repetition_penalty', 'a positive number');
  set('seed', 'seed', 'an integer');
  if (p.logit_bias !== null && p.logit_bias !== undefined) {
    if (typeof p.logit_bias !== 'object') throw new InvalidRequestError('logit_bias', p.logit_bias, 'an object { "<token id>": bias }');
    const bias: Record<number, number> = {};
    for (const [k, v] of Object.entries(p.logit_bias)) {
      if (!/^\d+$/.test(k)) throw new InvalidRequestError(`logit_bias["${k}"]`, k, 'a key that is a token id (a non-negative integer)');
      bias[Number(k)] = num(`logit_bias["${k}"]`, v, 'a number from -100 to 100') as number;
    }
    r.logitBias = bias;
  }
  if (p.stop !== null && p.stop !== undefined) {
    const stop = typeof p.stop === 'string' ? [p.stop] : p.stop;
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string')) throw new InvalidRequestError('stop', p.stop, 'a string or an array of strings');
    r.stop = stop;
  }
  const topLogprobs = num('top_logprobs', p.top_logprobs, 'an integer from 0 to 20');
  if (topLogprobs !== undefined && topLogprobs > 0 && p.logprobs !== true) {
    throw new InvalidRequestError('top_logprobs', topLogprobs, 'set only together with logprobs: true');
  }
  if (p.logprobs === true) {
    r.logprobs = true;
    if (topLogprobs !== undefined) r.topLogprobs = topLogprobs;
  }
  const format = p.response_format;
  if (format !== null && format !== undefined) {
    if (typeof format !== 'object') throw new InvalidRequestError('response_format', format, "{ type: 'json_schema', json_schema: { schema } }, { type: 'json_object' } or { type: 'text' }");
    if (format.type === 'json_object') r.responseFormat = { type: 'json_object' };
    else if (format.type === 'json_schema') {
      const js = format.json_schema;
      if (typeof js !== 'object' || js === null) throw new InvalidRequestError('response_format.json_schema', js, '{ name, schema, strict? }');
      // OpenAI's strict defaults to false (its structured outputs then are best effort); here a schema is always
      // enforced, and strict: false only lets keywords the grammar cannot enforce be dropped instead of refused.
      r.responseFormat = { type: 'json_schema', schema: js.schema ?? {}, strict: js.strict !== false };
    } else if (format.type !== 'text') throw new InvalidRequestError('response_format.type', (format as { type?: unknown }).type, "'json_schema', 'json_object' or 'text'");
  }
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
 * OpenAI's finish_reason of a last chunk: 'stop' or 'length'; undefined when it was aborted (each caller says what an
 * abort gives); an 'error' chunk throws its error (a remote stream that broke: the official client throws too).
 */
export function openAiFinishReason(last: Chunk): ChatFinishReason | undefined {
  const reason = last.finishReason as FinishReason;
  if (reason === 'stop' || reason === 'length') return reason;
  if (reason === 'error') throw last.error ?? new IntabEngineError('The engine ended the stream with an error it did not report: the request failed; retry it or reload the model.');
  return undefined; // 'abort'
}

/**
 * OpenAI `chat.completion.chunk` objects from the engine's chunks: role on the first, one chunk per
 * engine chunk with text (or logprobs), then an empty delta with finish_reason ('stop' | 'length'), then
 * the usage chunk (`choices: []`) when includeUsage. An aborted stream throws the signal's reason (an AbortError),
 * after the chunks before it, as the official client's stream does.
 * @example
 * for await (const c of toChatCompletionChunks(engine.generate(request), meta, { includeUsage: true }))
 *   process(c.choices[0]?.delta.content);
 */
export async function* toChatCompletionChunks(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { includeUsage?: boolean; logprobs?: boolean; signal?: AbortSignal } = {},
): AsyncGenerator<ChatCompletionChunk, void, undefined> {
  const usage = options.includeUsage ? { usage: null } : {};
  const base = (choices: ChatCompletionChunk['choices']): ChatCompletionChunk => ({ id: meta.id, object: 'chat.completion.chunk', created: meta.created, model: meta.model, choices, ...usage });
  let first = true;
  let completionTokens = 0;
  for await (const c of chunks) {
    completionTokens += c.ids.length;
    const hasLogprobs = options.logprobs === true && (c.logprobs?.length ?? 0) > 0;
    if (first || c.text !== '' || hasLogprobs) {
      const delta: ChatCompletionChunk['choices'][number]['delta'] = first ? { role: 'assistant', content: c.text, refusal: null } : { content: c.text };
      first = false;
      const logprobs = options.logprobs === true ? { content: toOpenAiLogprobs(c.logprobs ?? []), refusal: null } : null;
      yield base([{ index: 0, delta, logprobs, finish_reason: null }]);
    }
    if (c.finishReason === null) continue;
    const reason = openAiFinishReason(c);
    // Aborted: the stream throws the signal's reason, as the official client's stream throws APIUserAbortError.
    if (reason === undefined) throw options.signal?.reason ?? new DOMException('The chat completion was aborted.', 'AbortError');
    yield base([{ index: 0, delta: {}, logprobs: null, finish_reason: reason }]);
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
 * signal's reason (as fetch does), since there is no complete answer to return.
 * @example
 * const completion = await toChatCompletion(engine.generate(request), meta, {});
 * completion.choices[0].message.content;
 */
export async function toChatCompletion(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { logprobs?: boolean; signal?: AbortSignal } = {},
): Promise<ChatCompletion> {
  let content = '';
  const logprobs: ChatCompletionTokenLogprob[] = [];
  let completionTokens = 0;
  for await (const c of chunks) {
    content += c.text;
    completionTokens += c.ids.length;
    if (options.logprobs && c.logprobs) logprobs.push(...toOpenAiLogprobs(c.logprobs));
    if (c.finishReason === null) continue;
    const reason = openAiFinishReason(c);
    if (reason === undefined) {
      throw options.signal?.reason ?? new DOMException('The chat completion was aborted.', 'AbortError');
    }
    return {
      id: meta.id,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null },
          logprobs: options.logprobs ? { content: logprobs, refusal: null } : null,
          finish_reason: reason,
        },
      ],
      usage: usageOf(c, completionTokens),
    };
  }
  throw new IntabEngineError('The engine ended the stream without a last chunk: the request failed; retry it or reload the model.');
}
