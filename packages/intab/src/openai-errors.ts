// The OpenAI error of every situation an HTTP surface meets (the Service Worker endpoint, `intab serve`), in one place:
// one status, `type`, `code` and `param` per situation. The core's own (an unknown URL, a wrong method, a body that is
// not JSON, an unknown model) are built here; errorResponse maps what the mapping or the engine throws (a bad field,
// a context exceeded, a closed engine) to the status OpenAI would send, its `param` spelled as the body spells it.

import { ContextLengthExceededError, EngineClosedError, InvalidRequestError, ModelKindError } from '@intab/engine/errors';

/** The `error` object of an OpenAI error body. */
export interface OpenAIErrorFields {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** An OpenAI error body: `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorBody {
  error: OpenAIErrorFields;
}

/** An error answer: its status, its OpenAI body, and headers it needs (Allow, Retry-After...). */
export interface OpenAIErrorReply {
  status: number;
  body: OpenAIErrorBody;
  headers?: Record<string, string>;
}

/**
 * An OpenAI-shaped error body.
 * @example
 * openAIError('Rate limit reached: retry in 2s.', 'requests', 'rate_limit_exceeded');
 * // { error: { message: 'Rate limit reached: retry in 2s.', type: 'requests', param: null, code: 'rate_limit_exceeded' } }
 */
export function openAIError(message: string, type: string, code: string | null = null, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type, param, code } };
}

/**
 * Whether `v` is an OpenAIErrorReply: what a server aborts a request with to tell its client why (a shutdown's 503),
 * as opposed to a client that went away, whom nothing can reach.
 * @example
 * controller.abort({ status: 503, body: openAIError('Shutting down: retry elsewhere.', 'server_error', 'server_shutting_down') });
 * isErrorReply(controller.signal.reason); // true: handleOpenAI answers with it (mid-stream: an error event)
 */
export function isErrorReply(v: unknown): v is OpenAIErrorReply {
  const r = v as Partial<OpenAIErrorReply> | null;
  return typeof r === 'object' && r !== null && typeof r.status === 'number' && typeof r.body?.error?.message === 'string';
}

// ---- the core's own situations ----

/** A path the core does not serve: 404 `unknown_url`. */
export function unknownUrl(method: string, path: string, served: readonly string[]): OpenAIErrorReply {
  const list = served.length > 1 ? `${served.slice(0, -1).join(', ')} and ${served.at(-1)}` : served.join('');
  return { status: 404, body: openAIError(`${method} ${path} is not served here: this endpoint serves ${list}.`, 'invalid_request_error', 'unknown_url') };
}

/** A served path asked with another method: 405 `method_not_allowed`, with the Allow header. */
export function methodNotAllowed(method: string, path: string, allowed: string): OpenAIErrorReply {
  return {
    status: 405,
    body: openAIError(`Method ${method} is not allowed on ${path}: use ${allowed}.`, 'invalid_request_error', 'method_not_allowed'),
    headers: { allow: allowed },
  };
}

/** A body that does not parse as JSON: 400 `invalid_json`. */
export function invalidJson(problem: string): OpenAIErrorReply {
  return { status: 400, body: openAIError(`The request body is not JSON (${problem}): send the request as application/json.`, 'invalid_request_error', 'invalid_json') };
}

/** GET /v1/models/{id} of a model not served: 404 `model_not_found`, as OpenAI answers. */
export function modelNotFound(id: string, served: string): OpenAIErrorReply {
  return { status: 404, body: openAIError(`The model '${id}' does not exist: this endpoint serves '${served}'.`, 'invalid_request_error', 'model_not_found', 'model') };
}

// ---- what the mapping and the engine throw ----

/** The engine's request fields that an OpenAI body spells otherwise (the OpenAI mapping names its own fields already). */
const OPENAI_PARAMS = new Map(Object.entries({
  maxTokens: 'max_tokens', topP: 'top_p', topK: 'top_k', minP: 'min_p', repetitionPenalty: 'repetition_penalty', presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty', logitBias: 'logit_bias', topLogprobs: 'top_logprobs', strictContext: 'strict_context', promptIds: 'prompt',
  responseFormat: 'response_format', 'responseFormat.schema': 'response_format.json_schema.schema', 'responseFormat.strict': 'response_format.json_schema.strict',
  toolChoice: 'tool_choice', parallelToolCalls: 'parallel_tool_calls', topN: 'top_n',
}));

/** The engine's message fields that an OpenAI body spells otherwise ('messages[2].toolCalls[0]' → 'messages[2].tool_calls[0]'). */
const MESSAGE_FIELDS: Readonly<Record<string, string>> = { toolCalls: 'tool_calls', toolCallId: 'tool_call_id' };

/**
 * The OpenAI `param` of an InvalidRequestError's field: the body's own spelling ('logitBias[70000]' → 'logit_bias[70000]',
 * 'promptIds[3]' → 'prompt'); null for the body as a whole, as OpenAI answers.
 */
export function openAiParam(field: string | undefined): string | null {
  if (field === undefined || field === 'request' || field === 'body') return null;
  const whole = OPENAI_PARAMS.get(field);
  if (whole) return whole;
  const root = /^[A-Za-z_]+/.exec(field)?.[0] ?? '';
  if (root === 'messages') return field.replace(/\.(toolCalls|toolCallId)\b/g, (_, k: string) => `.${MESSAGE_FIELDS[k]}`);
  const param = OPENAI_PARAMS.get(root);
  if (!param) return field;
  return root === 'promptIds' ? param : param + field.slice(root.length);
}

/**
 * The HTTP status and OpenAI error body of an error thrown while answering. `endpoint` ['chat'] names the prompt's
 * field of a context exceeded: `messages`, or `prompt` for the legacy completions. `grammarOf` ['response_format']
 * names what a schema the grammar refused came from: 'tools' for a request with tools (it cannot have a JSON format).
 * @example
 * errorResponse(new InvalidRequestError('logitBias[4000]', '4000', 'a token id in [0, 128)'));
 * // { status: 400, body: { error: { message: "Invalid request: ...", type: 'invalid_request_error', param: 'logit_bias[4000]', code: null } } }
 */
export function errorResponse(err: unknown, endpoint: 'chat' | 'completions' | 'embeddings' | 'rerank' = 'chat', grammarOf: 'response_format' | 'tools' = 'response_format'): { status: number; body: OpenAIErrorBody } {
  const e = err as Error & { field?: string; reason?: string };
  if (err instanceof InvalidRequestError || e?.name === 'InvalidRequestError') return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, openAiParam(e.field)) };
  // As OpenAI answers a prompt over the context (and here, with strict_context, a max_tokens past it).
  if (err instanceof ContextLengthExceededError || e?.name === 'ContextLengthExceededError') {
    const param = e.reason === 'max-tokens' ? 'max_tokens' : e.reason === 'input' ? 'input' : e.reason === 'document' ? 'documents' : endpoint === 'completions' ? 'prompt' : 'messages';
    return { status: 400, body: openAIError(e.message, 'invalid_request_error', 'context_length_exceeded', param) };
  }
  // A chat request to an embedding model, or an embeddings request to a chat model: the wrong model for the route.
  if (err instanceof ModelKindError || e?.name === 'ModelKindError') return { status: 400, body: openAIError(e.message, 'invalid_request_error', 'wrong_model_kind', 'model') };
  if (err instanceof EngineClosedError || e?.name === 'EngineClosedError') return { status: 503, body: openAIError(e.message, 'service_unavailable', 'engine_closed') };
  // The parts of an OpenAI body that become a grammar: response_format, or the tools' parameters (never both).
  if (e?.name === 'UnsupportedSchemaError' || e?.name === 'InvalidSchemaError' || e?.name === 'GrammarSyntaxError' || e?.name === 'GrammarBudgetError') {
    return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, grammarOf) };
  }
  // The chat template refused the conversation (its raise_exception: roles out of order...), as vLLM answers it.
  if (e?.name === 'ChatTemplateError' && e.reason === 'failed') return { status: 400, body: openAIError(e.message, 'invalid_request_error', null, 'messages') };
  if (e?.name === 'TokenizerRequiredError' || (e?.name === 'ChatTemplateError' && e.reason === 'missing')) {
    return { status: 400, body: openAIError(e.message, 'invalid_request_error') };
  }
  return { status: 500, body: openAIError(`The engine failed: ${e?.message ?? String(err)}`, 'server_error') };
}
