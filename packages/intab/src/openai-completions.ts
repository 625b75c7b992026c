// OpenAI's legacy text completions (`POST /v1/completions`) over the engine, beside the chat API of openai.ts: a
// prompt (text or token ids) instead of messages, `text_completion` objects with `choices[].text`, and the legacy
// logprobs shape (tokens / token_logprobs / top_logprobs / text_offset). The sampling fields are the chat API's, so
// they are mapped (and checked) by toGenerateRequest; only what differs lives here. The HTTP core (openai-http.ts)
// answers /v1/completions with these, on the Service Worker endpoint and in `intab serve`.

import { REQUEST_LIMITS as L, type Chunk, type GenerateRequest, type TokenLogprob } from '@intab/engine/contract';
import { IntabEngineError } from '@intab/engine/errors';
import { CHAT_FIELDS, openAiFinishReason, openAiId, tokenIdsOf, toGenerateRequest, usageOf, type ChatCompletionCreateParams, type ChatCompletionCreateParamsBase, type CompletionMeta, type CompletionUsage } from './openai.ts';
import { bad, bodyOf, numberField, present } from './openai-checks.ts';

// ---- request ----

/** The fields of OpenAI's `POST /v1/completions` that a local model can honour. */
export interface CompletionCreateParams extends Omit<ChatCompletionCreateParamsBase, 'messages' | 'logprobs' | 'top_logprobs' | 'max_completion_tokens'> {
  /** One prompt: text, or token ids (a one-element array of either is accepted too). */
  prompt: string | number[] | string[] | number[][];
  /** [16, as OpenAI's] */
  max_tokens?: number | null;
  /** The legacy form: how many alternatives per token to return with each token's logprob (0 to 20). */
  logprobs?: number | null;
  /** Not supported (there is no prompt scoring): false or absent. */
  echo?: boolean | null;
  /** Not supported (no fill-in-the-middle): absent or empty. */
  suffix?: string | null;
  /** Only 1. */
  best_of?: number | null;
  user?: string;
}

/** OpenAI's default max_tokens of a text completion. */
export const COMPLETION_DEFAULT_MAX_TOKENS = 16;

/** The one prompt of a body: text, or token ids (a one-element array of either is accepted too). */
function promptOf(p: unknown): Pick<GenerateRequest, 'prompt' | 'promptIds'> {
  const expected = 'one prompt: a string or a non-empty array of token ids (send one request per prompt)';
  const one = Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0])) ? p[0] : p;
  if (typeof one === 'string') return { prompt: one };
  if (!Array.isArray(one) || one.length === 0) bad('prompt', p, expected);
  // An index loop: a sparse array's holes are refused, not skipped. Ids past the vocabulary are the engine's to refuse.
  for (let i = 0; i < one.length; i++) if (!Number.isSafeInteger(one[i]) || one[i] < 0) bad('prompt', p, expected);
  return { promptIds: one as number[] };
}

/** The legacy completion request fields intab reads (the chat API's sampling fields, a prompt instead of messages). */
export const COMPLETION_FIELDS: readonly string[] = [...CHAT_FIELDS.filter((f) => f !== 'messages'), 'prompt', 'echo', 'suffix', 'best_of'];

/**
 * The GenerateRequest of a legacy completion request. Fields it cannot honour (echo, suffix, best_of > 1, several
 * prompts) and fields of the wrong type or out of range are InvalidRequestErrors naming the field.
 * @example
 * toCompletionRequest({ prompt: 'Once upon a time', max_tokens: 32, logprobs: 2 });
 * // { prompt: 'Once upon a time', maxTokens: 32, logprobs: true, topLogprobs: 2 }
 */
export function toCompletionRequest(p: CompletionCreateParams): GenerateRequest {
  const b = bodyOf(p, 'an object with a prompt');
  if (present(b.echo) && b.echo !== false) bad('echo', b.echo, 'false (the prompt is not scored or echoed)');
  if (present(b.suffix) && b.suffix !== '') bad('suffix', b.suffix, 'absent (no fill-in-the-middle)');
  if (present(b.best_of) && b.best_of !== 1) bad('best_of', b.best_of, '1 (send several requests, with different seeds, to choose among)');
  // Calls need a chat: its template renders the tools and reads the calls back.
  for (const field of ['tools', 'tool_choice', 'parallel_tool_calls'] as const) {
    if (present(b[field])) bad(field, b[field], 'absent: the legacy completions API has no tools; send tools to /v1/chat/completions (chat.completions.create)');
  }
  const lp = numberField(b, 'logprobs', { lo: 0, hi: L.topLogprobs, integer: true, expected: `an integer from 0 to ${L.topLogprobs} (alternatives per token)` });
  const prompt = promptOf(b.prompt);
  // The sampling fields are the chat API's: its mapping checks them (and names them).
  const { prompt: _prompt, echo: _echo, suffix: _suffix, best_of: _bestOf, user: _user, logprobs: _logprobs, ...rest } = b;
  const request = toGenerateRequest({
    ...rest,
    messages: [{ role: 'user', content: '' }],
    max_tokens: b.max_tokens ?? COMPLETION_DEFAULT_MAX_TOKENS,
    logprobs: lp !== undefined,
    top_logprobs: lp ?? null,
  } as ChatCompletionCreateParams);
  delete request.messages;
  return { ...request, ...prompt };
}

// ---- response ----

/** The legacy logprobs of a text completion choice. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[] | null;
  /** Where each token starts in the choice's text (UTF-16 code units, as JavaScript strings count). */
  text_offset: number[];
}

export type CompletionFinishReason = 'stop' | 'length';

export interface CompletionChoice {
  index: number;
  text: string;
  logprobs: CompletionLogprobs | null;
  finish_reason: CompletionFinishReason | null;
  /** vLLM's return_token_ids (the HTTP surfaces): the ids of this piece (streamed) or of the whole answer. */
  token_ids?: number[];
}

/** One `text_completion` object: the whole answer, or (streaming) one piece of it. */
export interface Completion {
  id: string;
  object: 'text_completion';
  created: number;
  model: string;
  choices: CompletionChoice[];
  /** Non-streamed: always. Streamed with stream_options.include_usage: null on every chunk but the last (`choices: []`). */
  usage?: CompletionUsage | null;
}

/** A fresh completion id (`cmpl-` + 24 random characters, as OpenAI's). */
export function textCompletionId(): string {
  return openAiId('cmpl-');
}

/** Legacy logprobs of some tokens whose text starts at `offset` in the choice's text; returns the next offset too. */
function legacyLogprobs(lp: readonly TokenLogprob[], offset: number): { logprobs: CompletionLogprobs; offset: number } {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  for (const t of lp) {
    out.tokens.push(t.text);
    out.token_logprobs.push(t.logprob);
    out.top_logprobs!.push(Object.fromEntries((t.top ?? []).map((a) => [a.text, a.logprob])));
    out.text_offset.push(offset);
    offset += t.text.length;
  }
  return { logprobs: out, offset };
}

/**
 * A text completion's finish_reason ('stop' | 'length'; undefined when aborted): a prompt has no tools, so the engine's
 * 'tool_calls' cannot end one (were it to, the reply stopped, which is what 'stop' says).
 */
function completionFinishReason(last: Chunk): CompletionFinishReason | undefined {
  const reason = openAiFinishReason(last);
  return reason === 'tool_calls' ? 'stop' : reason;
}

/**
 * Streamed `text_completion` objects from the engine's chunks: one per engine chunk with text (or logprobs), then an
 * empty-text one with finish_reason, then the usage chunk (`choices: []`) when includeUsage. An aborted stream simply
 * ends. With `tokenIds` (vLLM's return_token_ids) each choice carries `token_ids` as toChatCompletionChunks writes them.
 * @example
 * for await (const c of toCompletionChunks(engine.generate(toCompletionRequest(body)), meta)) write(c.choices[0]?.text);
 */
export async function* toCompletionChunks(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { includeUsage?: boolean; logprobs?: boolean; tokenIds?: boolean } = {},
): AsyncGenerator<Completion, void, undefined> {
  const usage = options.includeUsage ? { usage: null } : {};
  const base = (choices: CompletionChoice[]): Completion => ({ id: meta.id, object: 'text_completion', created: meta.created, model: meta.model, choices, ...usage });
  const ids = tokenIdsOf(options.tokenIds);
  let completionTokens = 0;
  let offset = 0;
  for await (const c of chunks) {
    completionTokens += c.ids.length;
    ids.add(c.ids);
    const hasLogprobs = options.logprobs === true && (c.logprobs?.length ?? 0) > 0;
    if (c.text !== '' || hasLogprobs) {
      let logprobs: CompletionLogprobs | null = null;
      if (options.logprobs === true) ({ logprobs, offset } = legacyLogprobs(c.logprobs ?? [], offset));
      yield base([ids.take({ index: 0, text: c.text, logprobs, finish_reason: null })]);
    } else if (ids.waiting && c.finishReason === null) {
      yield base([ids.take({ index: 0, text: '', logprobs: null, finish_reason: null })]);
    }
    if (c.finishReason === null) continue;
    const reason = completionFinishReason(c);
    if (reason === undefined) return;
    yield base([ids.take({ index: 0, text: '', logprobs: null, finish_reason: reason })]);
    if (options.includeUsage) yield { ...base([]), usage: usageOf(c, completionTokens) };
    return;
  }
}

/**
 * One `text_completion` from a whole stream of engine chunks. An aborted stream rejects with the signal's reason.
 * @example
 * const completion = await toCompletion(engine.generate(toCompletionRequest(body)), meta);
 * completion.choices[0].text;
 */
export async function toCompletion(
  chunks: AsyncIterable<Chunk>,
  meta: CompletionMeta,
  options: { logprobs?: boolean; tokenIds?: boolean; signal?: AbortSignal } = {},
): Promise<Completion> {
  let text = '';
  const lp: TokenLogprob[] = [];
  const ids = tokenIdsOf(options.tokenIds);
  let completionTokens = 0;
  for await (const c of chunks) {
    text += c.text;
    completionTokens += c.ids.length;
    ids.add(c.ids);
    if (options.logprobs && c.logprobs) lp.push(...c.logprobs);
    if (c.finishReason === null) continue;
    const reason = completionFinishReason(c);
    if (reason === undefined) throw options.signal?.reason ?? new DOMException('The completion was aborted.', 'AbortError');
    return {
      id: meta.id,
      object: 'text_completion',
      created: meta.created,
      model: meta.model,
      choices: [ids.take({ index: 0, text, logprobs: options.logprobs ? legacyLogprobs(lp, 0).logprobs : null, finish_reason: reason })],
      usage: usageOf(c, completionTokens),
    };
  }
  throw new IntabEngineError('The engine ended the stream without a last chunk: the request failed; retry it or reload the model.');
}
