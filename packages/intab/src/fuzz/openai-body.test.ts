// Fuzzing OpenAI request bodies (chat completions and legacy completions, test-openai-bodies.ts) through what every
// surface runs: the mapping (toGenerateRequest / toCompletionRequest), the engine's checks (resolveOptions against the
// test model's 128-token vocabulary), and for a sample of the bodies a real in-thread Engine on the CPU reference runner
// (start, one pull, cancel) and the Service Worker endpoint's page half (answerRelayed over a real MessageChannel,
// JSON text in, HTTP status and OpenAI body out). The oracle: every body is accepted — and then holds what the sampler
// and the stop matcher need — or refused with a typed intab error whose errorResponse is a 4xx, an InvalidRequestError's
// param naming a field of that endpoint as the body spells it; the endpoint never answers 5xx. Anything else (a
// TypeError, a RangeError, a 500, a case over its time bound) is a crash, printed with its case.
//
//   npx vitest run --project node packages/intab/src/fuzz      10,000 bodies per endpoint (~2 s of CPU each)
//   INTAB_FUZZ_CASES=100000 / INTAB_FUZZ_SEED=7 / INTAB_FUZZ_TRACE=/tmp/case …   (see the grammar's test-harness.ts)

import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { resolveOptions } from '@intab/engine';
import { IntabEngineError, InvalidRequestError } from '@intab/engine/errors';
import { IntabGrammarError } from '@intab/grammar/errors';
import { IntabModelError } from '@intab/model/errors';
import { fuzz, fuzzTestTimeout } from '@intab/testing/fuzz';
import { wrapEngineApi } from '../engine.ts';
import { CHAT_FIELDS, toGenerateRequest } from '../openai.ts';
import { COMPLETION_FIELDS, toCompletionRequest } from '../openai-completions.ts';
import { answerRelayed, errorResponse } from '../openai-server.ts';
import { referenceEngine, relayChannel } from '../test-fixture.ts';
import { FUZZ_VOCAB, bodyCase, showCase, type BodyCase, type Endpoint } from './test-openai-bodies.ts';

const HANG_MS = 5_000;
/**
 * Of the bodies the checks accept, one in this many runs on the engine (start, one pull, cancel): enough that over 1%
 * of the cases run, with a margin, now that bad message roles are refused too, and tool results without their call,
 * and chats with tools outgrow the fixture's 256-token context (the generic format writes them into the prompt).
 */
const ENGINE_EVERY = 12;
/** Of the chat bodies sent as JSON text, one in this many goes through the endpoint's page half too. */
const RELAY_EVERY = 100;
/** Prompts past this many characters are checked but not tokenized (the context refuses them: ContextLengthExceededError). */
const ENGINE_MAX_CHARS = 20_000;

const fixture = referenceEngine();
const engine = fixture.engine;
const api = wrapEngineApi(engine, fixture.info, { name: 'tiny-llama' });

// chat.completions.create warns once per new set of fields it ignores; random bodies bring thousands of sets.
beforeAll(() => void vi.spyOn(console, 'warn').mockImplementation(() => {}));
afterAll(() => vi.restoreAllMocks());

const typedError = (e: unknown) => e instanceof IntabEngineError || e instanceof IntabGrammarError || e instanceof IntabModelError;

/** A refusal as the oracle wants it, else a plain Error that the harness counts as a crash. */
function checked(c: BodyCase, e: unknown): unknown {
  if (!typedError(e)) return e;
  const err = e as Error;
  const { status, body } = errorResponse(err);
  if (status < 400 || status >= 500) return new Error(`${err.name} is answered with ${status}: ${err.message}`);
  if (err.message.length > 2_000) return new Error(`${err.name}'s message is ${err.message.length} characters long`);
  if (err instanceof InvalidRequestError) {
    const param = body.error.param;
    const root = /^[a-z_]+/.exec(param ?? '')?.[0];
    const fields = c.endpoint === 'chat' ? CHAT_FIELDS : COMPLETION_FIELDS;
    const ok = err.field === 'request' ? param === null : root !== undefined && fields.includes(root);
    if (!ok) return new Error(`InvalidRequestError field '${err.field}' is answered with param ${JSON.stringify(param)}, not a ${c.endpoint} field as the body spells it`);
  }
  return e;
}

/**
 * What an accepted request must hold for the sampler (f32 arithmetic on the GPU, a u32 top-k) and the stop matcher,
 * stated apart from the checks: a violation is a crash even though nothing threw.
 */
function insane(o: ReturnType<typeof resolveOptions>): string | undefined {
  const f32 = (x: number) => Number.isFinite(Math.fround(x));
  const id = (x: unknown) => Number.isInteger(x) && (x as number) >= 0 && (x as number) < FUZZ_VOCAB;
  if (!(Number.isSafeInteger(o.maxTokens) && o.maxTokens >= 1)) return 'maxTokens';
  if (!(o.temperature >= 0 && f32(o.temperature))) return 'temperature';
  if (!(Number.isInteger(o.topK) && o.topK >= 0 && o.topK <= 0xffffffff)) return 'topK';
  if (!(o.topP > 0 && o.topP <= 1) || !(o.minP >= 0 && o.minP <= 1)) return 'topP/minP';
  // Any logit (|x| < 1e4) divided or multiplied by the penalty, less the penalties over the whole history, stays finite.
  if (!(o.repetitionPenalty > 0 && f32(1e4 / o.repetitionPenalty) && f32(1e4 * o.repetitionPenalty))) return 'repetitionPenalty';
  if (!f32(o.presencePenalty + o.frequencyPenalty * 64 + 1e4) || !f32(o.presencePenalty - o.frequencyPenalty * 64 - 1e4)) return 'penalties';
  for (const [k, v] of Object.entries(o.logitBias ?? {})) if (!id(Number(k)) || !(f32(v + 1e4) || v === -Infinity)) return `logitBias[${k}]`;
  if (!o.stop.every((s) => typeof s === 'string' && s.length > 0)) return 'stop';
  if (!o.stopTokenIds.every(id)) return 'stopTokenIds';
  if (!(Number.isInteger(o.topLogprobs) && o.topLogprobs >= 0 && o.topLogprobs <= 20)) return 'topLogprobs';
  if (o.seed !== undefined && !Number.isSafeInteger(o.seed)) return 'seed';
  return undefined;
}

function promptChars(r: ReturnType<typeof toGenerateRequest>): number {
  return (r.prompt?.length ?? 0) + (r.promptIds?.length ?? 0) + (r.messages ?? []).reduce((n, m) => n + (m.content?.length ?? 0), 0);
}

/** start, one pull, cancel: what the engine makes of an accepted request. */
async function runEngine(request: ReturnType<typeof toGenerateRequest>): Promise<string> {
  const id = await engine.start(request);
  const chunk = await engine.next(id);
  if (chunk.finishReason === null) await engine.cancel(id);
  return 'ran';
}

/** The endpoint's page half: the JSON text in, the status out; a 5xx or an error event after a 200 is a crash. */
async function relay(text: string): Promise<string> {
  const sw = relayChannel();
  await answerRelayed(api, { type: 'intab:request', method: 'POST', path: '/v1/chat/completions', body: text }, sw.port);
  await sw.ended;
  sw.close();
  const head = sw.replies.find((r) => r.type === 'head');
  const body = sw.body();
  if (head?.type !== 'head') throw new Error('the endpoint answered without a head');
  if (head.status >= 500) throw new Error(`the endpoint answered ${head.status}: ${body.slice(0, 300)}`);
  if (head.status === 200) {
    const events = head.headers['content-type']!.startsWith('text/event-stream') ? body.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6))) : [JSON.parse(body)];
    const error = events.find((e: { error?: unknown }) => e.error !== undefined);
    if (error) throw new Error(`the endpoint answered 200, then an error: ${JSON.stringify(error).slice(0, 300)}`);
  } else if (JSON.parse(body).error?.type !== 'invalid_request_error') throw new Error(`a ${head.status} without an OpenAI error body: ${body.slice(0, 300)}`);
  return `${head.status}`;
}

/**
 * The JSON text the endpoint gets: the case's, with a valid max_tokens / max_completion_tokens lowered to 2 (or
 * max_tokens 2 when neither is sent), so that what it decodes stays small; an invalid one is kept, to be refused.
 */
function relayText(c: BodyCase): string {
  const v = c.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return c.text!;
  const body = { ...(v as Record<string, unknown>) };
  const fields = ['max_tokens', 'max_completion_tokens'] as const;
  for (const f of fields) if (Number.isSafeInteger(body[f]) && (body[f] as number) >= 1) body[f] = Math.min(body[f] as number, 2);
  if (fields.every((f) => body[f] === undefined || body[f] === null)) body.max_tokens = 2;
  try {
    return JSON.stringify(body);
  } catch {
    return c.text!; // nested past JSON.stringify's recursion: the deep-text cases, which send max_tokens 2 already
  }
}

function target(endpoint: Endpoint, seed: number) {
  let accepted = 0;
  let texts = 0;
  return {
    name: `openai-${endpoint}-body`,
    seed,
    generate: (r: Parameters<typeof bodyCase>[0]) => bodyCase(r, endpoint),
    run: async (c: BodyCase) => {
      const relayed = c.mode === 'json' && endpoint === 'chat' && c.text!.length <= 2 * ENGINE_MAX_CHARS && ++texts % RELAY_EVERY === 0;
      let outcome: string;
      try {
        const request = endpoint === 'chat' ? toGenerateRequest(c.value as never) : toCompletionRequest(c.value as never);
        const bad = insane(resolveOptions(request, FUZZ_VOCAB, true));
        if (bad) throw new Error(`accepted a request the sampler cannot run: ${bad}`);
        outcome = 'accepted';
        if (++accepted % ENGINE_EVERY === 0 && promptChars(request) <= ENGINE_MAX_CHARS) outcome = await runEngine(request);
      } catch (e) {
        const refusal = checked(c, e);
        if (refusal !== e || !relayed) throw refusal;
        outcome = (e as Error).name;
      }
      return relayed ? `${outcome}, relayed: ${await relay(relayText(c))}` : outcome;
    },
    typed: (e: unknown) => typedError(e),
    show: showCase,
  };
}

for (const [endpoint, seed] of [['chat', 0x0a1b0d1], ['completions', 0x0a1b0d2]] as const) {
  test(`fuzz: ${endpoint} bodies are accepted or refused with a typed 4xx naming the field, never a crash`, async () => {
    const report = await fuzz(target(endpoint, seed));
    expect(report.crashes).toEqual([]);
    expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
    // Both sides of the oracle are exercised: bodies run, bodies refused by the mapping and by the engine's checks.
    expect(report.outcomes.ran ?? 0).toBeGreaterThan(report.cases / 100);
    expect(report.outcomes.InvalidRequestError ?? 0).toBeGreaterThan(report.cases / 10);
    // Nothing the engine started is left behind.
    const stats = await engine.stats();
    expect([stats.streams, stats.running, stats.waiting]).toEqual([0, 0, 0]);
  }, fuzzTestTimeout());
}
