// The OpenAI error of each situation (openai-errors.ts, what the HTTP core answers on the Service Worker endpoint and in
// `intab serve`): errorResponse maps thrown errors to statuses and bodies, a request's fault a 4xx whose param names the
// field as an OpenAI body spells it, whichever side refused it (the OpenAI mapping, or the engine with its own field
// names); the core's own situations have one status, type, code and param each; isErrorReply tells a reply from an error.
import { describe, expect, test } from 'vitest';

import { ContextLengthExceededError, EngineClosedError, InvalidRequestError, deserializeError, serializeError } from '@intab/engine/errors';
import { GrammarBudgetError } from '@intab/grammar/errors';
import { ChatTemplateError } from '@intab/model/errors';
import { errorResponse, invalidJson, isErrorReply, methodNotAllowed, modelNotFound, openAIError, openAiParam, unknownUrl } from './openai-errors.ts';

describe('errorResponse', () => {
  test("an engine field is answered with the OpenAI body's spelling of it", () => {
    const cases: [string, string | null][] = [
      ['logitBias[4000]', 'logit_bias[4000]'],
      ['topLogprobs', 'top_logprobs'],
      ['promptIds[3]', 'prompt'],
      ['maxTokens', 'max_tokens'],
      ['repetitionPenalty', 'repetition_penalty'],
      ['responseFormat.schema', 'response_format.json_schema.schema'],
      ['stop[2]', 'stop[2]'],
      ['messages[1].content', 'messages[1].content'],
      ['logit_bias["abc"]', 'logit_bias["abc"]'], // the OpenAI mapping's own, unchanged
      ['request', null],
      ['constructor', 'constructor'], // not read off Object.prototype
    ];
    for (const [field, param] of cases) expect(openAiParam(field), field).toBe(param);
    const e = new InvalidRequestError('logitBias[4000]', '4000', 'a key that is a token id in [0, 128)');
    expect(errorResponse(e)).toEqual({ status: 400, body: { error: { message: e.message, type: 'invalid_request_error', param: 'logit_bias[4000]', code: null } } });
    // As it arrives from the worker (or `intab serve`'s page): rebuilt from plain data.
    expect(errorResponse(deserializeError(serializeError(e))).body.error.param).toBe('logit_bias[4000]');
  });

  test("the request's other faults are 400s; the engine's own state is not", () => {
    const template = new ChatTemplateError('tokenizer_config.json', 'chat_template', "rendering failed: Conversation roles must alternate user/assistant/user/assistant/...");
    expect(errorResponse(template)).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', param: 'messages' } } });
    const budget = new GrammarBudgetError('nesting', 128, 200, 'the schema nests subschemas');
    expect(errorResponse(budget)).toMatchObject({ status: 400, body: { error: { param: 'response_format' } } });
    const context = new ContextLengthExceededError({ promptTokens: 600, maxTokens: 10, limit: 512, limitedBy: 'context', reason: 'prompt' });
    expect(errorResponse(context)).toMatchObject({ status: 400, body: { error: { code: 'context_length_exceeded', param: 'messages' } } });
    // The field at fault: the prompt of the endpoint, or max_tokens when strict_context refused it.
    expect(errorResponse(context, 'completions').body.error.param).toBe('prompt');
    const strict = new ContextLengthExceededError({ promptTokens: 6, maxTokens: 600, limit: 512, limitedBy: 'context', reason: 'max-tokens' });
    expect(errorResponse(strict, 'completions').body.error).toMatchObject({ code: 'context_length_exceeded', param: 'max_tokens' });
    expect(errorResponse(new EngineClosedError('destroyed')).status).toBe(503);
    expect(errorResponse(new TypeError('x is undefined')).status).toBe(500);
  });
});

describe("the core's own situations", () => {
  test('one status, type, code and param each; the message says what to do', () => {
    expect(unknownUrl('GET', '/v1/x', ['POST /v1/a', 'GET /v1/b'])).toEqual({ status: 404, body: openAIError('GET /v1/x is not served here: this endpoint serves POST /v1/a and GET /v1/b.', 'invalid_request_error', 'unknown_url') });
    expect(methodNotAllowed('PUT', '/v1/models', 'GET')).toEqual({ status: 405, body: openAIError('Method PUT is not allowed on /v1/models: use GET.', 'invalid_request_error', 'method_not_allowed'), headers: { allow: 'GET' } });
    expect(invalidJson('Unexpected end of JSON input')).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', code: 'invalid_json', param: null } } });
    expect(modelNotFound('gpt-4o', 'tiny')).toMatchObject({ status: 404, body: { error: { code: 'model_not_found', param: 'model', message: expect.stringMatching(/serves 'tiny'/) } } });
  });

  test('isErrorReply: a status with an OpenAI body, not an error or a DOMException', () => {
    expect(isErrorReply({ status: 503, body: openAIError('shutting down', 'server_error') })).toBe(true);
    for (const v of [new DOMException('gone', 'AbortError'), new Error('x'), { status: 503 }, { status: '503', body: openAIError('x', 'y') }, null, undefined, 'x']) expect(isErrorReply(v)).toBe(false);
  });
});
