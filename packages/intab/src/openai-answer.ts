// One OpenAI completion request (chat or legacy) over an engine, as objects: the body is checked and mapped, what it
// may cost is estimated, the caller's `admit` hook lets it in (or answers for it: a rate limit's 429, a full queue's
// 503), the engine runs it, and the answer is one object or a pulled stream of objects, with a tally of what it used.
// The HTTP core (openai-http.ts) frames these as JSON and Server-Sent Events; a transport that carries objects itself
// (`intab serve`'s WebSocket) uses answerCompletion directly. Nothing here is a server's: who asks, how many run, and
// how bytes reach a socket belong to the transport, which hooks in through `admit`.

import type { Chunk, EmbedRequest, EmbedResult, FinishReason, GenerateRequest, RerankRequest, RerankResult, ToolFormatName } from '@intab/engine/contract';
import { IntabEngineError, InvalidRequestError } from '@intab/engine/errors';
import { CHAT_FIELDS, completionId, ignoredFields, toChatCompletion, toChatCompletionChunks, toGenerateRequest, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionCreateParams } from './openai.ts';
import { COMPLETION_FIELDS, textCompletionId, toCompletion, toCompletionChunks, toCompletionRequest, type Completion, type CompletionCreateParams } from './openai-completions.ts';
import { errorResponse, isErrorReply, type OpenAIErrorBody, type OpenAIErrorReply } from './openai-errors.ts';

/**
 * What the OpenAI core needs of an engine: the page's IntabEngine is one, and so is any engine that streams the
 * engine's chunks for a GenerateRequest (`intab serve`'s).
 */
export interface OpenAIEngine {
  /** The model's name: what /v1/models lists and answers report when the body names none. */
  readonly model: string;
  /**
   * The model's context length in tokens (/v1/models' max_model_len; the estimate of a request without max_tokens), and
   * how it writes tool calls (/v1/models' tool_format; null or absent: unknown).
   */
  readonly info: { readonly contextLength: number; readonly toolFormat?: ToolFormatName | null };
  /** The request's chunks; the request starts on the first pull, and an engine's refusal rejects that pull. */
  generate(request: GenerateRequest, options?: { signal?: AbortSignal }): AsyncIterable<Chunk>;
  /**
   * Optional: starts the request and resolves once the engine accepted it, before its first chunk; aborting `signal`
   * ends the request and frees its pages (even when its chunks are never read). With it a stream's head goes at once (a
   * server can then keep an idle stream alive through a long prefill); without it, the head goes with the first
   * chunk. Either way a request the engine refuses is an error answer, never a stream.
   */
  openStream?(request: GenerateRequest, signal: AbortSignal): Promise<AsyncIterable<Chunk>>;
  /**
   * Optional: one vector per input (EngineApi.embed), for POST /v1/embeddings; an engine without it answers that route
   * with a 400 'wrong_model_kind'. Aborting `signal` drops the inputs not yet embedded.
   */
  embed?(request: EmbedRequest, options?: { signal?: AbortSignal }): Promise<EmbedResult>;
  /**
   * Optional: a reranker's scores, best first (EngineApi.rerank), for POST /v1/rerank; an engine without it answers
   * that route with a 400 'wrong_model_kind'.
   */
  rerank?(request: RerankRequest, options?: { signal?: AbortSignal }): Promise<RerankResult>;
}

/** Which API a request came in on: POST /v1/chat/completions or POST /v1/completions. */
export type Endpoint = 'chat' | 'completions';

/** Every POST route the core answers, as admission, stats and errors name it. */
export type Route = Endpoint | 'embeddings' | 'rerank';

/** What `admit` is told of a checked request: where it came in, and what a rate limit charges it first. */
export interface AdmissionRequest {
  endpoint: Route;
  /** The most tokens it may use (the prompt, estimated at ~4 characters a token, plus max tokens). */
  estimate: number;
  /** The prompt's part of the estimate (all of it for embeddings and rerank, which generate nothing). */
  promptEstimate: number;
}

/** The body fields the HTTP surfaces read, per endpoint: the tab's chat API's, and vLLM's return_token_ids. */
export const HTTP_FIELDS: Readonly<Record<Endpoint, readonly string[]>> = {
  chat: [...CHAT_FIELDS, 'return_token_ids'],
  completions: [...COMPLETION_FIELDS, 'return_token_ids'],
};

/**
 * The engine's default max tokens (DEFAULT_MAX_TOKENS of @intab/engine's sequence.ts, not imported: that module brings
 * the GPU and model packages along), for the estimate of a chat request that gives none.
 */
export const ENGINE_DEFAULT_MAX_TOKENS = 256;

/** A checked request, ready for the engine. */
export interface PreparedCompletion extends AdmissionRequest {
  endpoint: Endpoint;
  request: GenerateRequest;
  /** The model name the body gave (answers echo it), if any. */
  model?: string;
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** vLLM's return_token_ids: every choice carries `token_ids`, the ids it delivered. */
  returnTokenIds: boolean;
  /** Body fields nothing reads: ignored, as OpenAI does, and named in the x-intab-ignored-fields header. */
  ignored: string[];
}

/** What a request used, filled in as its chunks pass (a server reads it live for its stats, and settles limits with it). */
export interface Tally {
  promptTokens: number;
  completionTokens: number;
  finishReason: FinishReason | null;
}

/** How a request that was let in ended, for the `ended` callback of its Admission. */
export interface CompletionEnd {
  /** 'completed': answered to its finish_reason; 'aborted': the signal (the client went away), or a stream left early; 'failed': an error. */
  outcome: 'completed' | 'aborted' | 'failed';
  /** Whether the engine accepted the request (false: it refused it, or failed, before any work: nothing was used). */
  ran: boolean;
  tally: Tally;
  error?: unknown;
}

/** What `admit` lets a request in with. */
export interface Admission {
  /** Headers for every answer of this request (rate-limit headers...). */
  headers?: Record<string, string>;
  /** Called once when the request is over, whatever the outcome (to free a slot, settle a charge, log). */
  ended?(end: CompletionEnd): void;
}

/** What a transport hooks in with (the options' signal is the request's, and comes last). */
export interface CompletionOptions {
  /**
   * Called once the body is checked, before the engine sees it: return an OpenAIErrorReply to answer for it (a 429,
   * a 503), an Admission to let it in with headers and an end callback, or nothing to let it in as it is. `tally`
   * fills in as the request runs.
   */
  admit?(request: AdmissionRequest, tally: Readonly<Tally>): Admission | OpenAIErrorReply | undefined | Promise<Admission | OpenAIErrorReply | undefined>;
  /** Stream whatever the body says, and without a usage chunk (a transport that always streams and reports the tally itself). */
  stream?: boolean;
  /**
   * Aborting it ends the request and frees its pages. Its reason decides what the client is told: an OpenAIErrorReply
   * (a server shutting down) is answered (mid-stream: as an error event); anything else means nobody is listening.
   */
  signal?: AbortSignal;
}

/**
 * A pulled stream of OpenAI objects. Read it to its end or `return()` it, even before its first `next()`: that
 * cancels the engine's request (and frees its pages) however far it got.
 */
export interface ObjectStream<T> extends AsyncIterable<T> {
  next(): Promise<IteratorResult<T, void>>;
  return(): Promise<IteratorResult<T, void>>;
}

/** The answer to one completion request: an error, one object, or a stream of objects. */
export type CompletionAnswer = { status: number; headers: Record<string, string>; tally: Tally } & (
  | { kind: 'error'; body: OpenAIErrorBody }
  | { kind: 'object'; object: ChatCompletion | Completion }
  | {
      kind: 'stream';
      /**
       * The chunks, pulled from the engine only as they are pulled from here. It throws what ends it otherwise: an
       * engine error mid-stream, or the signal's reason.
       */
      objects: ObjectStream<ChatCompletionChunk | Completion>;
    }
);

/**
 * A prompt's tokens before the tokenizer has seen it: ~4 characters a token, plus a few per chat message; a message's
 * calls and the request's tools (rendered into the prompt) count by their JSON.
 */
function promptEstimate(r: GenerateRequest): number {
  if (r.promptIds) return r.promptIds.length;
  if (r.prompt !== undefined) return Math.ceil(r.prompt.length / 4) + 1;
  const chars = (v: unknown) => (v === undefined ? 0 : JSON.stringify(v).length);
  const tools = Math.ceil(chars(r.tools) / 4);
  return (r.messages ?? []).reduce((n, m) => n + 4 + Math.ceil((String(m.content ?? '').length + chars(m.toolCalls)) / 4), 3 + tools);
}

/**
 * Checks a request body and maps it to the engine's request; an invalid one throws InvalidRequestError (a 400).
 * `o.stream` forces streaming without a usage chunk (a WebSocket's `done` event carries the usage instead).
 * @example
 * const p = prepareCompletion('completions', { prompt: 'Once', max_tokens: 8, return_token_ids: true }, { contextLength: 2048 });
 * // p.request: { prompt: 'Once', maxTokens: 8 }; p.estimate: 11; p.returnTokenIds: true
 */
export function prepareCompletion(endpoint: Endpoint, body: unknown, o: { stream?: boolean; contextLength?: number } = {}): PreparedCompletion {
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
  const maxTokens = request.maxTokens ?? Math.max(1, Math.min(ENGINE_DEFAULT_MAX_TOKENS, (o.contextLength ?? Infinity) - prompt));
  return {
    endpoint,
    request,
    ...(typeof b.model === 'string' ? { model: b.model } : {}),
    stream: o.stream ?? b.stream === true,
    includeUsage: o.stream === undefined && streamOptions?.include_usage === true,
    logprobs: endpoint === 'chat' ? b.logprobs === true : typeof b.logprobs === 'number',
    returnTokenIds,
    estimate: prompt + maxTokens,
    promptEstimate: prompt,
    ignored: ignoredFields(b, HTTP_FIELDS[endpoint]),
  };
}

/**
 * Answers one completion request over `engine`. Never rejects, but with the signal's reason when it was aborted (by
 * a client that went away) before there was an answer; a refusal, a failure or an abort whose reason is an
 * OpenAIErrorReply is an error answer.
 * @example
 * const answer = await answerCompletion(engine, 'chat', { messages, stream: true }, { signal });
 * if (answer.kind === 'stream') for await (const chunk of answer.objects) send(chunk);
 */
export async function answerCompletion(engine: OpenAIEngine, endpoint: Endpoint, body: unknown, options: CompletionOptions = {}): Promise<CompletionAnswer> {
  const { signal } = options;
  const tally: Tally = { promptTokens: 0, completionTokens: 0, finishReason: null };
  const refuse = (r: OpenAIErrorReply, headers: Record<string, string> = {}): CompletionAnswer => ({ kind: 'error', status: r.status, headers: { ...headers, ...r.headers }, body: r.body, tally });
  let prepared: PreparedCompletion;
  try {
    prepared = prepareCompletion(endpoint, body, { contextLength: engine.info.contextLength, stream: options.stream });
  } catch (err) {
    return refuse(errorResponse(err, endpoint));
  }
  const named: Record<string, string> = prepared.ignored.length ? { 'x-intab-ignored-fields': prepared.ignored.join(', ') } : {};
  let admitted: Admission | OpenAIErrorReply | undefined;
  try {
    admitted = await options.admit?.(prepared, tally);
  } catch (err) {
    return refuse(errorResponse(err, endpoint), named);
  }
  if (isErrorReply(admitted)) return refuse(admitted, named);
  const admission = admitted ?? {};
  const headers = { ...named, ...admission.headers };

  // The engine's signal: the caller's, and a stream cancelled before it was read (no generator below ever ran to its
  // finally then, so only an abort reaches the engine).
  const engineSignal = new AbortController();
  // The end, told once: when the answer is complete, fails, or the signal aborts it (even while nobody reads the stream).
  let ran = false;
  let over = false;
  const end = (outcome: CompletionEnd['outcome'], error?: unknown) => {
    if (over) return;
    over = true;
    signal?.removeEventListener('abort', onAbort);
    admission.ended?.({ outcome, ran, tally, ...(error !== undefined ? { error } : {}) });
  };
  // One listener for both: one that removed the other while the event is dispatched would keep it from running.
  const onAbort = () => {
    engineSignal.abort(signal?.reason);
    end('aborted');
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  /** What an error that ends the request answers: the abort's own reply, else the error's. */
  const failed = (err: unknown): CompletionAnswer => {
    if (signal?.aborted) {
      end('aborted');
      if (isErrorReply(signal.reason)) return refuse(signal.reason, headers);
      throw signal.reason;
    }
    end('failed', err);
    return refuse(errorResponse(err, endpoint, prepared.request.tools ? 'tools' : 'response_format'), headers);
  };

  let chunks: AsyncIterable<Chunk>;
  let close: () => Promise<unknown>;
  try {
    const opened = await accepted(engine, prepared.request, engineSignal.signal);
    chunks = counted(opened.chunks, tally);
    close = opened.close;
    ran = true;
  } catch (err) {
    return failed(err);
  }
  const meta = { id: endpoint === 'chat' ? completionId() : textCompletionId(), created: Math.floor(Date.now() / 1000), model: prepared.model ?? engine.model };
  const convert = { logprobs: prepared.logprobs, tokenIds: prepared.returnTokenIds };
  if (!prepared.stream) {
    try {
      const object = endpoint === 'chat' ? await toChatCompletion(chunks, meta, { ...convert, signal }) : await toCompletion(chunks, meta, { ...convert, signal });
      if (signal?.aborted) throw signal.reason;
      end('completed');
      return { kind: 'object', status: 200, headers, object, tally };
    } catch (err) {
      return failed(err);
    }
  }
  const objects = endpoint === 'chat' ? toChatCompletionChunks(chunks, meta, { ...convert, includeUsage: prepared.includeUsage, signal }) : toCompletionChunks(chunks, meta, { ...convert, includeUsage: prepared.includeUsage });
  async function* pulled(): AsyncGenerator<ChatCompletionChunk | Completion, void, undefined> {
    try {
      for (;;) {
        const next = await objects.next();
        // Aborted: nothing more is sent, and the stream does not end as if it were complete.
        if (signal?.aborted) throw signal.reason;
        if (next.done) break;
        yield next.value;
      }
      end('completed');
    } catch (err) {
      end(signal?.aborted ? 'aborted' : 'failed', err);
      throw err;
    } finally {
      // Left early (the transport stopped reading): the engine's request is cancelled, its pages freed.
      await objects.return(undefined);
      end('aborted');
    }
  }
  const gen = pulled();
  // Whether the generator ran: a generator's return() before its first next() skips its finally.
  let started = false;
  const stream: ObjectStream<ChatCompletionChunk | Completion> = {
    next() {
      started = true;
      return gen.next();
    },
    async return() {
      if (!started) {
        started = true;
        engineSignal.abort(new DOMException('The stream was cancelled before it was read.', 'AbortError'));
        await close();
        end('aborted');
      }
      return gen.return(undefined);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { kind: 'stream', status: 200, headers, objects: stream, tally };
}

/**
 * The request's chunks once the engine accepted it: through `openStream` when the engine has it, else by pulling the
 * first chunk (a refusal rejects that pull; a first chunk that failed is thrown here, so it is an error answer too).
 * `close` ends an engine stream that nothing will read (an `openStream` engine's ends with the signal).
 */
async function accepted(engine: OpenAIEngine, request: GenerateRequest, signal: AbortSignal): Promise<{ chunks: AsyncIterable<Chunk>; close: () => Promise<unknown> }> {
  if (engine.openStream) return { chunks: await engine.openStream(request, signal), close: async () => {} };
  const rest = engine.generate(request, { signal })[Symbol.asyncIterator]();
  const first = await rest.next();
  if (first.done) throw new IntabEngineError('The engine ended the stream without a chunk: the request failed; retry it or reload the model.');
  const c = first.value;
  if (c.finishReason === 'error' || c.finishReason === 'abort') {
    await rest.return?.();
    if (c.finishReason === 'error') throw c.error ?? new IntabEngineError('The engine ended the request with an error it did not report: retry it or reload the model.');
    throw signal?.aborted ? signal.reason : new IntabEngineError('The engine ended the request before it began (it was stopped or destroyed): retry it.');
  }
  const chunks = (async function* () {
    try {
      yield c;
      for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
    } finally {
      await rest.return?.();
    }
  })();
  return { chunks, close: async () => rest.return?.() };
}

/** The engine's chunks, counted into `tally` as they pass. */
async function* counted(chunks: AsyncIterable<Chunk>, tally: Tally): AsyncGenerator<Chunk, void, undefined> {
  for await (const c of chunks) {
    tally.completionTokens += c.ids.length;
    if (c.metrics) tally.promptTokens = c.metrics.promptTokens;
    if (c.finishReason !== null) tally.finishReason = c.finishReason;
    yield c;
  }
}
