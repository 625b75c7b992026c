// The page's half of the OpenAI-compatible endpoint that a Service Worker serves (intab/service-worker): the Service
// Worker does not hold the model (it is stopped when idle, and WebGPU there is unreliable), so it relays each HTTP
// request over a MessageChannel to a page whose engine answers it here, and streams the answer back as the response
// body. `POST /v1/chat/completions` (SSE when `stream: true`, else one JSON) and `GET /v1/models`; errors are
// OpenAI-shaped, with the status OpenAI would send; a relayed `abort` (the client went away) aborts the request.
// A stream is pulled: the engine's next chunk is read only for a `pull` from the Service Worker (one per piece its
// response's reader takes), so what nobody has asked for waits in the engine, whose full queue pauses the sequence.

import { InvalidRequestError, ContextLengthExceededError, EngineClosedError } from '@intab/engine/errors';
import type { IntabEngine } from './engine.ts';
import { ignoredFields, type ChatCompletionCreateParams, type ChatCompletionCreateParamsNonStreaming } from './openai.ts';

/** A request as the Service Worker relays it. */
export interface RelayedRequest {
  type: 'intab:request';
  method: string;
  /** The path after the origin, e.g. '/v1/chat/completions'. */
  path: string;
  /** The request body as text ('' for GET). */
  body: string;
  /**
   * The Service Worker asks for each body piece of a stream with `{ type: 'pull' }` (intab/service-worker does), and
   * the engine's next chunk is read only then. Absent (a Service Worker of an older intab): pieces go as they come.
   */
  pull?: boolean;
}

/** What the Service Worker sends over the request's port: a credit for one more body piece, or the client went away. */
export type RelayControl = { type: 'pull' } | { type: 'abort' };

/**
 * What the page sends back over the request's port: the head once, body pieces, then the end. A one-piece answer (JSON)
 * goes at once; a stream's pieces go one per `pull` when the request asked for pulls.
 */
export type RelayReply =
  | { type: 'head'; status: number; headers: Record<string, string> }
  | { type: 'body'; chunk: string }
  | { type: 'end' };

/** An OpenAI-shaped error body. */
export function openAIError(message: string, type: string, code: string | null = null, param: string | null = null): { error: { message: string; type: string; param: string | null; code: string | null } } {
  return { error: { message, type, param, code } };
}

/** The engine's request fields that an OpenAI body spells otherwise (the OpenAI mapping names its own fields already). */
const OPENAI_PARAMS = new Map(Object.entries({
  maxTokens: 'max_tokens', topP: 'top_p', topK: 'top_k', minP: 'min_p', repetitionPenalty: 'repetition_penalty', presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty', logitBias: 'logit_bias', topLogprobs: 'top_logprobs', strictContext: 'strict_context', promptIds: 'prompt',
  responseFormat: 'response_format', 'responseFormat.schema': 'response_format.json_schema.schema', 'responseFormat.strict': 'response_format.json_schema.strict',
}));

/**
 * The OpenAI `param` of an InvalidRequestError's field: the body's own spelling ('logitBias[70000]' → 'logit_bias[70000]',
 * 'promptIds[3]' → 'prompt'); null for the body as a whole, as OpenAI answers.
 */
export function openAiParam(field: string | undefined): string | null {
  if (field === undefined || field === 'request' || field === 'body') return null;
  const whole = OPENAI_PARAMS.get(field);
  if (whole) return whole;
  const root = /^[A-Za-z_]+/.exec(field)?.[0] ?? '';
  const param = OPENAI_PARAMS.get(root);
  if (!param) return field;
  return root === 'promptIds' ? param : param + field.slice(root.length);
}

/** The HTTP status and OpenAI error body of an error thrown while answering. */
export function errorResponse(err: unknown): { status: number; body: ReturnType<typeof openAIError> } {
  const e = err as Error & { field?: string };
  if (err instanceof InvalidRequestError || e?.name === 'InvalidRequestError') return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, openAiParam(e.field)) };
  // As OpenAI answers a prompt over the context (and here, with strict_context, a max_tokens past it).
  if (err instanceof ContextLengthExceededError || e?.name === 'ContextLengthExceededError') return { status: 400, body: openAIError(e.message, 'invalid_request_error', 'context_length_exceeded', 'messages') };
  if (err instanceof EngineClosedError) return { status: 503, body: openAIError(e.message, 'service_unavailable', 'engine_closed') };
  // The only part of an OpenAI body that becomes a grammar is response_format.
  if (e?.name === 'UnsupportedSchemaError' || e?.name === 'InvalidSchemaError' || e?.name === 'GrammarSyntaxError' || e?.name === 'GrammarBudgetError') {
    return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, 'response_format') };
  }
  // The chat template refused the conversation (its raise_exception: roles out of order...), as vLLM answers it.
  if (e?.name === 'ChatTemplateError' && (e as { reason?: string }).reason === 'failed') return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, 'messages') };
  if (e?.name === 'TokenizerRequiredError' || (e?.name === 'ChatTemplateError' && (e as { reason?: string }).reason === 'missing')) {
    return { status: 400, body: openAIError(e.message, 'invalid_request_error') };
  }
  return { status: 500, body: openAIError(`The engine failed: ${e?.message ?? String(err)}`, 'server_error') };
}

/**
 * Answers one relayed request with `engine` over `port` (the port's other end is in the Service Worker).
 * Resolves when the answer is complete (or aborted).
 */
export async function answerRelayed(engine: IntabEngine, req: RelayedRequest, port: MessagePort, events?: { started?: () => void; ended?: () => void }): Promise<void> {
  const send = (m: RelayReply) => port.postMessage(m);
  const controller = new AbortController();
  const credits = pieceCredits(req.pull === true, controller.signal);
  port.onmessage = (e: MessageEvent) => {
    const type = (e.data as Partial<RelayControl> | null)?.type;
    if (type === 'abort') controller.abort(new DOMException('The HTTP client went away.', 'AbortError'));
    else if (type === 'pull') credits.add();
  };
  let headSent = false;
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    headSent = true;
    send({ type: 'head', status, headers: { 'content-type': 'application/json', ...headers } });
    send({ type: 'body', chunk: JSON.stringify(body) });
    send({ type: 'end' });
  };
  events?.started?.();
  try {
    const path = req.path.split('?')[0].replace(/\/+$/, '');
    if (path === '/v1/models') {
      if (req.method !== 'GET') return json(405, openAIError(`Method ${req.method} is not allowed on ${path}: use GET.`, 'invalid_request_error'));
      return json(200, { object: 'list', data: [{ id: engine.model, object: 'model', created: 0, owned_by: 'intab' }] });
    }
    if (path !== '/v1/chat/completions') {
      return json(404, openAIError(`${req.method} ${path} is not served here: this endpoint serves POST /v1/chat/completions and GET /v1/models.`, 'invalid_request_error', 'unknown_url'));
    }
    if (req.method !== 'POST') return json(405, openAIError(`Method ${req.method} is not allowed on ${path}: use POST.`, 'invalid_request_error'));
    let body: ChatCompletionCreateParams;
    try {
      body = JSON.parse(req.body);
    } catch (err) {
      return json(400, openAIError(`The request body is not JSON (${(err as Error).message}): send { "messages": [...] } as application/json.`, 'invalid_request_error'));
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return json(400, openAIError('The request body must be a JSON object with messages.', 'invalid_request_error'));
    // Fields nothing reads are ignored, as OpenAI does, and named in a header.
    const ignored = ignoredFields(body);
    const named: Record<string, string> = ignored.length ? { 'x-intab-ignored-fields': ignored.join(', ') } : {};
    // Only `true` streams: any other stream value goes to the mapping as sent (a non-boolean is a 400 naming it).
    if (body.stream === true) {
      const stream = await engine.chat.completions.create({ ...body, stream: true }, { signal: controller.signal });
      headSent = true;
      send({ type: 'head', status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...named } });
      const chunks = stream[Symbol.asyncIterator]();
      try {
        // A credit first, then the engine's next chunk: what is not asked for stays in the engine's queue, where a
        // full queue pauses the sequence. The credit taken for the chunk that turns out to be the last carries [DONE]
        // (or, thrown, the error event below).
        while (await credits.take()) {
          const next = await chunks.next();
          if (next.done) {
            if (!controller.signal.aborted) send({ type: 'body', chunk: 'data: [DONE]\n\n' });
            break;
          }
          send({ type: 'body', chunk: `data: ${JSON.stringify(next.value)}\n\n` });
        }
      } finally {
        // Left while the engine's stream is still open (aborted while the client was not reading): cancel it there.
        await chunks.return?.();
      }
      send({ type: 'end' });
      return;
    }
    const completion = await engine.chat.completions.create(body as ChatCompletionCreateParamsNonStreaming, { signal: controller.signal });
    json(200, completion, named);
  } catch (err) {
    if (controller.signal.aborted) return send({ type: 'end' });
    const { status, body } = errorResponse(err);
    if (!headSent) return json(status, body);
    // Mid-stream: an error event (as OpenAI-compatible servers send), then the end.
    send({ type: 'body', chunk: `data: ${JSON.stringify(body)}\n\n` });
    send({ type: 'end' });
  } finally {
    port.onmessage = null;
    events?.ended?.();
  }
}

/**
 * The Service Worker's credits for body pieces (`pull` messages): take() resolves true when one may be sent (and uses
 * it up), false once `signal` aborted. Not `pulled` (an older Service Worker sends none): every piece may go.
 */
function pieceCredits(pulled: boolean, signal: AbortSignal): { add(): void; take(): Promise<boolean> } {
  let credits = 0;
  let wake: (() => void) | undefined;
  const rouse = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  signal.addEventListener('abort', rouse, { once: true });
  return {
    add() {
      credits++;
      rouse();
    },
    async take() {
      if (!pulled) return true;
      while (credits === 0 && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
      if (signal.aborted) return false;
      credits--;
      return true;
    },
  };
}

export interface ServeOpenAIOptions {
  /** The page's Service Worker container [navigator.serviceWorker]. */
  container?: ServiceWorkerContainer;
  /** Called when a relayed request starts and ends (dashboards). */
  onRequest?: (event: 'start' | 'end') => void;
}

/**
 * Lets this page answer the OpenAI-compatible requests its Service Worker relays (see intab/service-worker):
 * `fetch(location.origin + '/v1/chat/completions', ...)` from any page of the origin, or the official `openai`
 * client with `baseURL: location.origin + '/v1'`, is then answered by `engine`. Returns a function that stops it.
 * @example
 * const engine = await createEngine({ model });
 * const stop = serveOpenAI(engine);
 * // elsewhere: new OpenAI({ baseURL: location.origin + '/v1', apiKey: 'unused', dangerouslyAllowBrowser: true })
 */
export function serveOpenAI(engine: IntabEngine, options: ServeOpenAIOptions = {}): () => void {
  const container = options.container ?? (globalThis as { navigator?: Navigator }).navigator?.serviceWorker;
  if (!container) return () => {};
  const onMessage = (e: MessageEvent) => {
    const data = e.data as { type?: string } | undefined;
    const port = e.ports[0];
    if (!port) return;
    if (data?.type === 'intab:ping') port.postMessage({ type: 'intab:pong', model: engine.model });
    else if (data?.type === 'intab:request') {
      void answerRelayed(engine, data as RelayedRequest, port, { started: () => options.onRequest?.('start'), ended: () => options.onRequest?.('end') });
    }
  };
  container.addEventListener('message', onMessage);
  // Messages queued before the page was ready are delivered once this is called (the container's message queue).
  container.startMessages?.();
  return () => container.removeEventListener('message', onMessage);
}
