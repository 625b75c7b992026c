// errorResponse, the one mapping of thrown errors to HTTP statuses and OpenAI error bodies (the Service Worker endpoint
// and `intab serve` both use it): a request's fault is a 4xx whose param names the field as an OpenAI body spells it,
// whichever side refused it (the OpenAI mapping, or the engine with its own field names).
import { describe, expect, test } from 'vitest';

import { ContextLengthExceededError, EngineClosedError, InvalidRequestError, deserializeError, serializeError } from '@intab/engine/errors';
import { GrammarBudgetError } from '@intab/grammar/errors';
import { ChatTemplateError } from '@intab/model/errors';
import { errorResponse, openAiParam } from './openai-server.ts';

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
    expect(errorResponse(context)).toMatchObject({ status: 400, body: { error: { code: 'context_length_exceeded' } } });
    expect(errorResponse(new EngineClosedError('destroyed')).status).toBe(503);
    expect(errorResponse(new TypeError('x is undefined')).status).toBe(500);
  });
});
