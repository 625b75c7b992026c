// The one OpenAI HTTP core: a request (method, path, body text, signal) in, a response (status, headers, a body of
// bytes) out, over any engine that streams chunks. It owns what is OpenAI's about HTTP: routing (404 unknown_url, 405
// method_not_allowed with Allow), GET /v1/models[/{id}], POST /v1/chat/completions and /v1/completions (JSON, or SSE
// ending with [DONE], an error event mid-stream), POST /v1/embeddings and /v1/rerank (JSON), and the error of every situation
// (openai-errors.ts). What a server adds stays with its transport: TLS, auth, CORS, body limits, rate limits and
// admission (through `admit`, for every POST route), keep-alives, per-socket backpressure, shutdown (abort the
// signal with an OpenAIErrorReply to tell the client).
// The body is pulled: its next piece is made, and the engine's next chunk read, only when the transport reads it; a
// transport that stops reading stops the engine's sequence (its queue fills, and the engine pauses it).

import { answerCompletion, type Admission, type CompletionEnd, type CompletionOptions, type Endpoint, type ObjectStream, type OpenAIEngine, type Route, type Tally } from './openai-answer.ts';
import { errorResponse, invalidJson, isErrorReply, methodNotAllowed, modelNotFound, openAIError, unknownUrl, type OpenAIErrorReply } from './openai-errors.ts';
import { EMBEDDING_FIELDS, embedEstimate, toEmbedRequest, toEmbeddingResponse } from './openai-embeddings.ts';
import { RERANK_BODY_FIELDS, rerankEstimate, toRerankRequest, toRerankResponse } from './openai-rerank.ts';
import { ignoredFields } from './openai.ts';
import { encodeSSE } from './sse.ts';

/** One HTTP request, as a transport hands it over. */
export interface OpenAIHttpRequest {
  method: string;
  /** The path under the origin, e.g. '/v1/chat/completions' (a query and a trailing '/' are ignored). */
  path: string;
  /** The body as text (read for POST only). */
  body?: string;
  /**
   * Aborted when the client goes away: the engine's request ends and its pages are freed. Abort it with an
   * OpenAIErrorReply (a server shutting down) to answer with that instead (mid-stream: an error event).
   */
  signal?: AbortSignal;
}

/** The answer: write the status and headers, then the body's pieces as they are read. */
export interface OpenAIHttpResponse {
  status: number;
  headers: Record<string, string>;
  /**
   * Pulled: read it to its end, or cancel it (that ends the engine's request). It errors (with the signal's reason)
   * when the request was aborted mid-stream by a client that went away: it is then not a complete answer.
   */
  body: ReadableStream<Uint8Array>;
}

export interface OpenAIHttpOptions {
  /** Lets a request of a POST route in, or answers for it (a rate limit's 429, a full queue's 503): see answerCompletion. */
  admit?: CompletionOptions['admit'];
  /** When the model began to be served, in Unix seconds (/v1/models' `created`) [when the core first saw this engine]. */
  created?: number;
  /** Routes the transport answers itself beside the core's (e.g. 'GET /health'), named in the 404's message. */
  otherRoutes?: readonly string[];
}

/** The core's routes: path → the one method it answers. */
const ROUTES: Readonly<Record<string, string>> = { '/v1/chat/completions': 'POST', '/v1/completions': 'POST', '/v1/embeddings': 'POST', '/v1/rerank': 'POST', '/v1/models': 'GET' };
const SERVED = ['POST /v1/chat/completions', 'POST /v1/completions', 'POST /v1/embeddings', 'POST /v1/rerank', 'GET /v1/models'];
const JSON_TYPE = { 'content-type': 'application/json' };
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };

/** When the core first saw each engine: /v1/models' `created` when the transport gives none. */
const firstSeen = new WeakMap<object, number>();

/**
 * Answers one OpenAI HTTP request with `engine`. It never rejects, but with the signal's reason when the client went
 * away before there was an answer (nobody is left to read one).
 * @example
 * // A Node server (an HTTP/2 or a WebSocket transport does the same with its own writes):
 * const res = await handleOpenAI(engine, { method: req.method, path: req.url, body: text, signal: gone.signal });
 * nodeRes.writeHead(res.status, res.headers);
 * for (const reader = res.body.getReader(); ; ) {
 *   const { done, value } = await reader.read();
 *   if (done) break;
 *   if (!nodeRes.write(value)) await once(nodeRes, 'drain'); // a slow client: nothing more is pulled meanwhile
 * }
 * nodeRes.end();
 */
export async function handleOpenAI(engine: OpenAIEngine, request: OpenAIHttpRequest, options: OpenAIHttpOptions = {}): Promise<OpenAIHttpResponse> {
  const method = request.method.toUpperCase();
  const path = pathOf(request.path);
  const modelPath = path.startsWith('/v1/models/');
  const allowed = ROUTES[path] ?? (modelPath ? 'GET' : undefined);
  if (allowed === undefined) return reply(unknownUrl(method, path, [...SERVED, ...(options.otherRoutes ?? [])]));
  // (OPTIONS too: a CORS preflight is the transport's, which knows its origins; the Service Worker answers its own.)
  if (method !== allowed) return reply(methodNotAllowed(method, path, allowed));
  if (allowed === 'GET') return models(engine, path, options.created);
  let body: unknown;
  try {
    body = JSON.parse(request.body ?? '');
  } catch (err) {
    return reply(invalidJson((err as Error).message));
  }
  if (path === '/v1/embeddings') return embeddings(engine, body, options.admit, request.signal);
  if (path === '/v1/rerank') return rerank(engine, body, options.admit, request.signal);
  const endpoint: Endpoint = path === '/v1/chat/completions' ? 'chat' : 'completions';
  const answer = await answerCompletion(engine, endpoint, body, { admit: options.admit, signal: request.signal });
  switch (answer.kind) {
    case 'error':
      return reply({ status: answer.status, body: answer.body, headers: answer.headers });
    case 'object':
      return { status: answer.status, headers: { ...answer.headers, ...JSON_TYPE }, body: bytes(JSON.stringify(answer.object)) };
    case 'stream':
      return { status: answer.status, headers: { ...answer.headers, ...SSE_HEADERS }, body: encodeSSE(withErrorEvent(answer.objects, endpoint, request.signal)) };
  }
}

/**
 * POST /v1/embeddings: one JSON answer (no stream), let in by the transport's `admit` as completions are (its rate
 * limits are charged the inputs' estimated tokens, settled with the tokens embedded). Fields nothing reads are named in
 * x-intab-ignored-fields, as for completions. A client that went away gets nothing: its inputs leave the engine's queue.
 */
async function embeddings(engine: OpenAIEngine, body: unknown, admit: OpenAIHttpOptions['admit'], signal: AbortSignal | undefined): Promise<OpenAIHttpResponse> {
  let prepared: ReturnType<typeof toEmbedRequest>;
  try {
    prepared = toEmbedRequest(body);
  } catch (err) {
    return reply(errorResponse(err, 'embeddings'));
  }
  const embed = engine.embed?.bind(engine);
  if (!embed) {
    return reply({ status: 400, body: openAIError(`The model served here (${engine.model}) does not embed: send embeddings requests to a server of an embedding model.`, 'invalid_request_error', 'wrong_model_kind', 'model') });
  }
  const ignored = ignoredFields(body, EMBEDDING_FIELDS);
  const estimate = embedEstimate(prepared.request);
  return admittedJson('embeddings', estimate, admit, signal, ignored, async () => {
    const result = await embed(prepared.request, { signal });
    return { value: toEmbeddingResponse(result, prepared.model ?? engine.model, prepared.format), promptTokens: result.promptTokens };
  });
}

/**
 * POST /v1/rerank (llama.cpp's server, Jina and Cohere share its shape): the documents best first, let in by `admit`
 * as embeddings are.
 */
async function rerank(engine: OpenAIEngine, body: unknown, admit: OpenAIHttpOptions['admit'], signal: AbortSignal | undefined): Promise<OpenAIHttpResponse> {
  let prepared: ReturnType<typeof toRerankRequest>;
  try {
    prepared = toRerankRequest(body);
  } catch (err) {
    return reply(errorResponse(err, 'rerank'));
  }
  const rank = engine.rerank?.bind(engine);
  if (!rank) {
    return reply({ status: 400, body: openAIError(`The model served here (${engine.model}) does not rerank: send rerank requests to a server of a reranker (a cross-encoder such as bge-reranker).`, 'invalid_request_error', 'wrong_model_kind', 'model') });
  }
  const ignored = ignoredFields(body, RERANK_BODY_FIELDS);
  return admittedJson('rerank', rerankEstimate(prepared.request), admit, signal, ignored, async () => {
    const result = await rank(prepared.request, { signal });
    return { value: toRerankResponse(result, prepared.model ?? engine.model, prepared.request.documents, prepared.returnDocuments), promptTokens: result.promptTokens };
  });
}

/**
 * A JSON route's request through admission: `admit` lets it in (or answers for it), `run` makes the answer, and the
 * admission's end is told what it used. Never rejects, but with the signal's reason when the client went away.
 */
async function admittedJson(route: Route, estimate: number, admit: OpenAIHttpOptions['admit'], signal: AbortSignal | undefined, ignored: readonly string[], run: () => Promise<{ value: unknown; promptTokens: number }>): Promise<OpenAIHttpResponse> {
  const named: Record<string, string> = ignored.length ? { 'x-intab-ignored-fields': ignored.join(', ') } : {};
  const tally: Tally = { promptTokens: 0, completionTokens: 0, finishReason: null };
  let admitted: Admission | OpenAIErrorReply | undefined;
  try {
    admitted = await admit?.({ endpoint: route, estimate, promptEstimate: estimate }, tally);
  } catch (err) {
    return reply(errorResponse(err, route));
  }
  if (isErrorReply(admitted)) return reply({ ...admitted, headers: { ...named, ...admitted.headers } });
  const headers = { ...named, ...admitted?.headers };
  let over = false;
  const end = (outcome: CompletionEnd['outcome'], error?: unknown) => {
    if (over) return;
    over = true;
    admitted?.ended?.({ outcome, ran: outcome === 'completed', tally, ...(error !== undefined ? { error } : {}) });
  };
  try {
    const { value, promptTokens } = await run();
    tally.promptTokens = promptTokens;
    end('completed');
    return json(200, value, headers);
  } catch (err) {
    if (signal?.aborted) {
      end('aborted');
      if (isErrorReply(signal.reason)) return reply({ ...signal.reason, headers: { ...headers, ...signal.reason.headers } });
      throw signal.reason;
    }
    end('failed', err);
    const r = errorResponse(err, route);
    return reply({ ...r, headers });
  }
}

/** The path without its query and trailing slashes ('/v1/models/?x' → '/v1/models'). */
function pathOf(raw: string): string {
  const path = raw.split(/[?#]/)[0].replace(/\/+$/, '');
  return path.startsWith('/') ? path : `/${path}`;
}

/**
 * GET /v1/models and /v1/models/{id}: the one model served, with vLLM's max_model_len and intab's tool_format (how the
 * model writes tool calls, null when unknown: the remote backend reports it as its ModelInfo.toolFormat).
 */
function models(engine: OpenAIEngine, path: string, created: number | undefined): OpenAIHttpResponse {
  if (!firstSeen.has(engine)) firstSeen.set(engine, Math.floor(Date.now() / 1000));
  const model = { id: engine.model, object: 'model', created: created ?? firstSeen.get(engine)!, owned_by: 'intab', max_model_len: engine.info.contextLength, tool_format: engine.info.toolFormat ?? null };
  if (path === '/v1/models') return json(200, { object: 'list', data: [model] });
  let id: string;
  try {
    id = decodeURIComponent(path.slice('/v1/models/'.length));
  } catch {
    id = path.slice('/v1/models/'.length); // not percent-encoding: the id as sent
  }
  return id === engine.model ? json(200, model) : reply(modelNotFound(id, engine.model));
}

/**
 * A stream's objects, and after an error that ends it an error event (as OpenAI-compatible servers send); the SSE
 * writer then ends the body with [DONE]. A request aborted by a client that went away gets nothing more: the body
 * errors. Not a generator: a body cancelled before it was read must still reach the objects' return().
 */
function withErrorEvent(objects: ObjectStream<unknown>, endpoint: Endpoint, signal: AbortSignal | undefined): ObjectStream<unknown> {
  let ended = false;
  return {
    async next() {
      if (ended) return { done: true, value: undefined };
      try {
        return await objects.next();
      } catch (err) {
        const reason = signal?.aborted ? signal.reason : undefined;
        if (signal?.aborted && !isErrorReply(reason)) throw err;
        ended = true;
        return { done: false, value: isErrorReply(reason) ? reason.body : errorResponse(err, endpoint).body };
      }
    },
    return: () => objects.return(),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

const encoder = new TextEncoder();

/** A body of one piece, pulled like the others. */
function bytes(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        controller.enqueue(encoder.encode(text));
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}

function json(status: number, value: unknown, headers: Record<string, string> = {}): OpenAIHttpResponse {
  return { status, headers: { ...headers, ...JSON_TYPE }, body: bytes(JSON.stringify(value)) };
}

function reply(r: OpenAIErrorReply): OpenAIHttpResponse {
  return json(r.status, r.body, r.headers);
}
