// The OpenAI side of `intab serve`, in Node: request bodies become engine requests and the engine's chunks become
// OpenAI objects with the very functions the tab's own chat API and the Service Worker endpoint use (intab's
// openai.ts, openai-completions.ts and openai-server.ts's error mapping, reached by path until `intab serve` moves onto
// intab's one OpenAI core). What is added here is the server's: vLLM's `return_token_ids` (the ids each choice
// delivered, as `token_ids`, in stream chunks too), a token estimate for rate limits before the request runs, and the
// tally of what it used (to settle them after).

import { DEFAULT_MAX_TOKENS } from '@intab/engine';
import type { Chunk, GenerateRequest } from '@intab/engine/contract';
import { InvalidRequestError, deserializeError, isSerializedError } from '@intab/engine/errors';
import { CHAT_FIELDS, completionId, ignoredFields, toChatCompletion, toChatCompletionChunks, toGenerateRequest, type ChatCompletionCreateParams, type CompletionMeta } from '../../intab/src/openai.ts';
import { COMPLETION_FIELDS, textCompletionId, toCompletion, toCompletionChunks, toCompletionRequest, type CompletionCreateParams } from '../../intab/src/openai-completions.ts';
import { errorResponse, openAIError } from '../../intab/src/openai-server.ts';

export { openAIError };

/** Which API a request came in on: POST /v1/chat/completions or POST /v1/completions. */
export type Endpoint = 'chat' | 'completions';

/** A checked request, ready for the engine. */
export interface Prepared {
  endpoint: Endpoint;
  request: GenerateRequest;
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** vLLM's return_token_ids: every choice carries `token_ids`, the ids it delivered. */
  returnTokenIds: boolean;
  /** The most tokens it may use (prompt, estimated from text at ~4 characters a token, plus max tokens): what a rate limit charges first. */
  estimate: number;
  /** The prompt's part of the estimate. */
  promptEstimate: number;
  /** Body fields nothing reads: ignored, as OpenAI does, and named in the x-intab-ignored-fields header. */
  ignored: string[];
}

/** What a request used, filled in as its chunks pass. */
export interface Tally {
  promptTokens: number;
  completionTokens: number;
  finishReason: Chunk['finishReason'];
}

export function newTally(): Tally {
  return { promptTokens: 0, completionTokens: 0, finishReason: null };
}

/** A prompt's tokens before the tokenizer has seen it: ~4 characters a token, plus a few per chat message. */
function promptEstimate(r: GenerateRequest): number {
  if (r.promptIds) return r.promptIds.length;
  if (r.prompt !== undefined) return Math.ceil(r.prompt.length / 4) + 1;
  return (r.messages ?? []).reduce((n, m) => n + 4 + Math.ceil(String(m.content ?? '').length / 4), 3);
}

/**
 * Checks a request body and maps it to the engine's request; an invalid one throws InvalidRequestError (400).
 * `o.stream` forces streaming (the WebSocket transport always streams; its `done` event carries the usage).
 */
export function prepare(endpoint: Endpoint, body: unknown, o: { stream?: boolean; contextLength?: number } = {}): Prepared {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequestError('body', body, endpoint === 'chat' ? 'a JSON object with messages' : 'a JSON object with a prompt');
  }
  const b = body as Record<string, unknown>;
  const returnTokenIds = b.return_token_ids ?? false;
  if (typeof returnTokenIds !== 'boolean') throw new InvalidRequestError('return_token_ids', returnTokenIds, 'true or false');
  const request = endpoint === 'chat' ? toGenerateRequest(b as unknown as ChatCompletionCreateParams) : toCompletionRequest(b as unknown as CompletionCreateParams);
  const streamOptions = b.stream_options as { include_usage?: unknown } | null | undefined;
  const prompt = promptEstimate(request);
  // A default max tokens shrinks to what the context leaves (as the engine does); one that was asked for stays.
  const maxTokens = request.maxTokens ?? Math.max(1, Math.min(DEFAULT_MAX_TOKENS, (o.contextLength ?? Infinity) - prompt));
  return {
    endpoint,
    request,
    stream: o.stream ?? b.stream === true,
    includeUsage: o.stream === undefined && streamOptions?.include_usage === true,
    logprobs: endpoint === 'chat' ? b.logprobs === true : typeof b.logprobs === 'number',
    returnTokenIds,
    estimate: prompt + maxTokens,
    promptEstimate: prompt,
    ignored: ignoredFields(b, [...(endpoint === 'chat' ? CHAT_FIELDS : COMPLETION_FIELDS), 'return_token_ids']),
  };
}

function metaOf(p: Prepared, model: string): CompletionMeta {
  return { id: p.endpoint === 'chat' ? completionId() : textCompletionId(), created: Math.floor(Date.now() / 1000), model };
}

/** The engine's chunks, counted into `tally`, their ids kept in `ids` until taken. */
async function* counted(chunks: AsyncIterable<Chunk>, tally: Tally, ids: number[]): AsyncGenerator<Chunk, void, undefined> {
  for await (const c of chunks) {
    tally.completionTokens += c.ids.length;
    if (c.metrics) tally.promptTokens = c.metrics.promptTokens;
    if (c.finishReason !== null) tally.finishReason = c.finishReason;
    ids.push(...c.ids);
    yield c;
  }
}

/** A stream object that carries only ids (no text yet): a chunk of the endpoint's kind with an empty delta / text. */
function idsOnly(p: Prepared, meta: CompletionMeta, ids: number[]): Record<string, unknown> {
  const choice = p.endpoint === 'chat' ? { index: 0, delta: {}, logprobs: null, finish_reason: null, token_ids: ids } : { index: 0, text: '', logprobs: null, finish_reason: null, token_ids: ids };
  return { id: meta.id, object: p.endpoint === 'chat' ? 'chat.completion.chunk' : 'text_completion', created: meta.created, model: meta.model, choices: [choice], ...(p.includeUsage ? { usage: null } : {}) };
}

/**
 * The OpenAI stream objects of a request (`chat.completion.chunk` or streamed `text_completion`), pulled from the
 * engine only as they are pulled from here. With return_token_ids each object that has a choice carries the ids that
 * arrived since the previous one, so the objects' token_ids add up to every id the request delivered; an engine chunk
 * the conversion writes nothing for (its text is not complete yet: part of a UTF-8 character, or a model without a
 * tokenizer) has its ids sent at once on an object of their own, so ids stream as they are generated.
 */
export async function* streamChunks(p: Prepared, model: string, chunks: AsyncIterable<Chunk>, tally: Tally): AsyncGenerator<Record<string, unknown>, void, undefined> {
  const ids: number[] = [];
  const meta = metaOf(p, model);
  const options = { includeUsage: p.includeUsage, logprobs: p.logprobs };
  // Objects of ids only, and what wakes the loop below when one is queued while the conversion waits for the engine.
  const extra: Record<string, unknown>[] = [];
  let nudge = () => {};
  let wrote = false;
  async function* source(): AsyncGenerator<Chunk, void, undefined> {
    for await (const c of counted(chunks, tally, ids)) {
      wrote = false;
      yield c;
      // The conversion asks for the next chunk without having written one for this one.
      if (p.returnTokenIds && !wrote && ids.length && c.finishReason === null) {
        extra.push(idsOnly(p, meta, ids.splice(0)));
        nudge();
      }
    }
  }
  const objects = p.endpoint === 'chat' ? toChatCompletionChunks(source(), meta, options) : toCompletionChunks(source(), meta, options);
  try {
    // (A rejection while ids-only objects are being written is seen at the next race, or dropped with the stream.)
    let next = objects.next();
    next.catch(() => {});
    for (;;) {
      const r = await Promise.race([next, new Promise<null>((resolve) => (nudge = () => resolve(null)))]);
      while (extra.length) yield extra.shift()!;
      if (r === null) continue;
      if (r.done) return;
      wrote = true;
      const o = r.value;
      const choice = o.choices[0] as (typeof o.choices)[number] & { token_ids?: number[] };
      if (p.returnTokenIds && choice) choice.token_ids = ids.splice(0);
      yield o as unknown as Record<string, unknown>;
      next = objects.next();
      next.catch(() => {});
    }
  } finally {
    await objects.return(undefined);
  }
}

/** The whole answer of a non-streamed request (`chat.completion` or `text_completion`). */
export async function complete(p: Prepared, model: string, chunks: AsyncIterable<Chunk>, tally: Tally, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const ids: number[] = [];
  const source = counted(chunks, tally, ids);
  const meta = metaOf(p, model);
  const answer = p.endpoint === 'chat' ? await toChatCompletion(source, meta, { logprobs: p.logprobs, signal }) : await toCompletion(source, meta, { logprobs: p.logprobs, signal });
  if (p.returnTokenIds) (answer.choices[0] as { token_ids?: number[] }).token_ids = ids;
  return answer as unknown as Record<string, unknown>;
}

/** The HTTP status and OpenAI error body of an error: thrown here, or one the page sent (serialized, class kept). */
export function errorReply(err: unknown): { status: number; body: ReturnType<typeof openAIError> } {
  return errorResponse(isSerializedError(err) ? deserializeError(err) : err);
}

/** An error the page sent, as its class (InvalidRequestError, EngineClosedError, ...), so errorReply maps it. */
export function reviveError(data: unknown): Error {
  return isSerializedError(data) ? deserializeError(data) : new Error(String(data));
}
