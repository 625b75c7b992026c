// The Engine over the CPU reference runner with stories260K's real weights (and the synthetic vocabulary of
// stories260K-vocab-ud.gguf for text): batching never changes ids, seeds give the same ids alone or batched,
// stop strings hold across token boundaries, backpressure pauses only the slow consumer, aborts free pages
// between chunks and steps, KV exhaustion queues FIFO, impossible requests fail typed, and 1000 abort cycles
// leak nothing. Scheduling is asserted on the runner's step log, never on time.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test, vi } from 'vitest';

// @intab/model's arch/llama.ts reads GPUBufferUsage when the module loads, which Node lacks; nothing here
// touches the GPU, so WebGPU's constant values are enough (reported: that line should read it lazily).
import { configFromGguf, parseGguf, pathSource, tokenizerFromGguf, type LlamaConfig, type Tokenizer } from '@intab/model';
import { readGgufLite } from '@intab/model/reference';
import type { GenerateRequest } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { ContextLengthExceededError, EngineClosedError, InvalidRequestError, TokenizerRequiredError, UnknownStreamError } from './errors.ts';
import { ReferenceRunner, type ReferenceRunnerOptions } from './reference/runner.ts';
import { collect, type Collected } from './test-streams.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

let config: LlamaConfig;
let tensors: Map<string, Float32Array>;
let tokenizer: Tokenizer;
let golden: Golden;

beforeAll(async () => {
  const path = join(STORIES, 'stories260K-vocab-ud.gguf');
  const gguf = readGgufLite(new Uint8Array(readFileSync(path)), path);
  config = configFromGguf(gguf.metadata, path, gguf.tensorInfos);
  tensors = new Map([...gguf.tensors].map(([name, t]) => [name, t.data]));
  const parsed = await parseGguf(await pathSource(path));
  tokenizer = tokenizerFromGguf(parsed.metadata, path);
  golden = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8'));
});

/** A clock that moves one ms per reading: metrics are deterministic and every interval is > 0. */
function tickClock(): () => number {
  let t = 0;
  return () => ++t;
}

function setup(o: { runner?: ReferenceRunnerOptions; engine?: EngineOptions; tokenizer?: boolean } = {}) {
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 64, pageSize: 16, ...o.runner });
  const engine = new Engine({ runner, tokenizer: o.tokenizer === false ? undefined : tokenizer, options: { now: tickClock(), seed: 99, ...o.engine } });
  return { runner, engine };
}

async function alone(request: GenerateRequest, o: Parameters<typeof setup>[0] = {}): Promise<Collected> {
  const { engine } = setup(o);
  const r = await collect(engine, await engine.start(request));
  await engine.destroy();
  return r;
}

const stepsWith = (runner: ReferenceRunner, seq: number) => runner.log.filter((s) => s.some((e) => e.seq === seq));

/** A long valid prompt: golden's second prompt followed by its continuation, repeated. */
const longPrompt = (n: number) => {
  const base = [...golden.cases[1].prompt, ...golden.cases[1].greedy];
  return [1, ...Array.from({ length: n - 1 }, (_, i) => base[1 + (i % (base.length - 1))])];
};

describe('greedy ids', () => {
  test('one request equals golden.json (chunked prefill of 2 tokens per step)', async () => {
    for (const c of golden.cases) {
      const r = await alone({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true }, { engine: { maxTokensPerStep: 2 } });
      expect(r.ids).toEqual(c.greedy);
      expect(r.last.finishReason).toBe('length');
      expect(r.last.metrics).toMatchObject({ promptTokens: c.prompt.length, completionTokens: c.greedy.length });
    }
  });

  test('N concurrent requests (different prompts and lengths, joining at different steps) equal each alone', async () => {
    const requests: GenerateRequest[] = [
      { promptIds: golden.cases[0].prompt, maxTokens: 40 },
      { promptIds: longPrompt(45), maxTokens: 25 },
      { promptIds: golden.cases[1].prompt, maxTokens: 33 },
      { promptIds: longPrompt(70).slice(0, 30), maxTokens: 12 },
      { promptIds: [1, 300, 301, 302], maxTokens: 20 },
    ].map((r) => ({ ...r, temperature: 0, ignoreEos: true }));
    const expected = [];
    for (const r of requests) expected.push((await alone(r)).ids);
    expect(expected[0]).toEqual(golden.cases[0].greedy.slice(0, 40));

    const { engine, runner } = setup({ engine: { maxTokensPerStep: 12, maxBatch: 4 } });
    const results: Promise<Collected>[] = [];
    // Request i+1 starts once request i has produced 3 + i tokens: each joins a batch already decoding.
    const launch = async (i: number): Promise<void> => {
      const id = await engine.start(requests[i]);
      let next = i + 1 < requests.length;
      results[i] = collect(engine, id, async (_, ids) => {
        if (next && ids.length >= 3 + i) {
          next = false;
          await launch(i + 1);
        }
      });
    };
    await launch(0);
    for (let i = 0; i < requests.length; i++) {
      while (!results[i]) await new Promise((r) => setTimeout(r, 1));
      expect((await results[i]).ids, `request ${i}`).toEqual(expected[i]);
    }
    // It really batched: steps with several sequences, prefill chunks beside decodes, maxBatch and the token budget held.
    expect(runner.log.some((s) => s.length >= 3)).toBe(true);
    expect(runner.log.some((s) => s.some((e) => e.tokens > 1) && s.some((e) => e.tokens === 1))).toBe(true);
    expect(stepsWith(runner, 1).filter((s) => s.find((e) => e.seq === 1)!.tokens > 1).length).toBeGreaterThan(3); // 45 tokens in chunks
    expect(runner.log.every((s) => s.length <= 4 && s.reduce((n, e) => n + e.tokens, 0) <= 12)).toBe(true);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await engine.destroy();
  });
});

describe('sampling', () => {
  const sampled = (seed: number, promptIds: number[]): GenerateRequest => ({
    promptIds,
    seed,
    maxTokens: 30,
    temperature: 0.9,
    topK: 40,
    topP: 0.95,
    repetitionPenalty: 1.1,
    presencePenalty: 0.2,
    frequencyPenalty: 0.1,
    ignoreEos: true,
  });

  test('the same seed gives the same ids alone and batched; other seeds differ', async () => {
    const a = sampled(7, golden.cases[1].prompt);
    const ref = (await alone(a)).ids;
    const { engine } = setup({ engine: { maxTokensPerStep: 6 } });
    const ids = await Promise.all(
      [a, sampled(8, golden.cases[1].prompt), sampled(7, longPrompt(20)), a].map(async (r) => (await collect(engine, await engine.start(r))).ids),
    );
    expect(ids[0]).toEqual(ref);
    expect(ids[3]).toEqual(ref);
    expect(ids[1]).not.toEqual(ref);
    expect(ref).not.toEqual((await alone({ ...a, temperature: 0 })).ids);
    await engine.destroy();
  });

  test('logprobs and topLogprobs come from the sampler, with token text', async () => {
    const r = await alone({ prompt: '<t403><t261><t310><t263>', maxTokens: 6, temperature: 0, ignoreEos: true, logprobs: true, topLogprobs: 3 });
    expect(r.ids).toEqual(golden.cases[1].greedy.slice(0, 6));
    const lps = r.chunks.flatMap((c) => c.logprobs ?? []);
    expect(lps.map((l) => l.id)).toEqual(r.ids);
    for (const l of lps) {
      expect(l.text).toBe(tokenizer.decode([l.id]));
      expect(l.top).toHaveLength(3);
      expect(l.top![0].id).toBe(l.id); // greedy: the chosen token is the most likely
      expect(l.logprob).toBeCloseTo(l.top![0].logprob, 6);
      expect(l.logprob).toBeLessThanOrEqual(0);
      expect(l.top![1].logprob).toBeLessThanOrEqual(l.top![0].logprob);
    }
  });

  test('logitBias bans a token the model would pick', async () => {
    const banned = golden.cases[1].greedy[0];
    const r = await alone({ promptIds: golden.cases[1].prompt, maxTokens: 1, temperature: 0, logitBias: { [banned]: -Infinity } });
    expect(r.ids).toHaveLength(1);
    expect(r.ids[0]).not.toBe(banned);
  });
});

describe('stopping', () => {
  test('stop strings match across token boundaries, are never emitted, and the stream ends with "stop"', async () => {
    const request: GenerateRequest = { prompt: '<t403><t261><t310><t263>', maxTokens: 40, temperature: 0, ignoreEos: true };
    const full = await alone(request);
    expect(full.text).toBe(tokenizer.decode(full.ids, { skipSpecialTokens: true }));
    // Stop strings that straddle the boundary between generated tokens 3|4 and 6|7 (3 chars before, 2 after).
    const ends = full.ids.map((_, j) => tokenizer.decode(full.ids.slice(0, j + 1), { skipSpecialTokens: true }).length);
    for (const k of [3, 6]) {
      const stop = full.text.slice(ends[k - 1] - 3, ends[k - 1] + 2);
      const at = full.text.indexOf(stop);
      const last = ends.findIndex((e) => e >= at + stop.length); // the token that completes the match
      const r = await alone({ ...request, stop: ['never-there', stop] });
      expect(r.text).toBe(full.text.slice(0, at));
      expect(r.ids).toEqual(full.ids.slice(0, last + 1));
      expect(r.last.finishReason).toBe('stop');
      for (const c of r.chunks) expect(c.text.includes(stop)).toBe(false);
    }
  });

  test('stopTokenIds end the stream with the id reported and its text withheld', async () => {
    const greedy = golden.cases[1].greedy;
    const stopId = greedy[4];
    const first = greedy.indexOf(stopId);
    const r = await alone({ promptIds: golden.cases[1].prompt, maxTokens: 40, temperature: 0, stopTokenIds: [stopId] });
    expect(r.ids).toEqual(greedy.slice(0, first + 1));
    expect(r.text).toBe(tokenizer.decode(greedy.slice(0, first), { skipSpecialTokens: true }));
    expect(r.last.finishReason).toBe('stop');
  });
});

describe('backpressure', () => {
  test('a consumer that stops pulling stops costing steps; later it gets everything, coalesced', async () => {
    const { engine, runner } = setup({ engine: { maxQueuedChunks: 2 } });
    const slowReq: GenerateRequest = { promptIds: golden.cases[1].prompt, maxTokens: 30, temperature: 0, ignoreEos: true };
    const slow = await engine.start(slowReq);
    const fast = await engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 40, temperature: 0, ignoreEos: true });
    const fastOut = await collect(engine, fast);
    expect(fastOut.ids).toEqual(golden.cases[0].greedy.slice(0, 40));
    // The slow sequence ran two sampling steps (prompt, one decode) and then sat out while the other decoded 40.
    expect(stepsWith(runner, slow)).toHaveLength(2);
    expect(stepsWith(runner, fast)).toHaveLength(40);
    expect(engine.stats()).toMatchObject({ paused: 1, running: 1 });
    const first = await engine.next(slow);
    expect(first.ids).toEqual(golden.cases[1].greedy.slice(0, 2)); // both queued outputs in one chunk
    expect(first.text).toBe(tokenizer.decode(first.ids, { skipSpecialTokens: true }));
    const rest = await collect(engine, slow);
    const ids = [...first.ids, ...rest.ids];
    expect(ids).toEqual(golden.cases[1].greedy.slice(0, 30));
    expect(first.text + rest.text).toBe(tokenizer.decode(ids, { skipSpecialTokens: true }));
    expect(rest.last.metrics!.pausedMs).toBeGreaterThan(0);
    expect(fastOut.last.metrics!.pausedMs).toBe(0);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await engine.destroy();
  });
});

describe('cancellation', () => {
  test('abort mid-prefill stops between chunks and frees the pages; the next request is correct', async () => {
    const { engine, runner } = setup({ engine: { maxTokensPerStep: 8 } });
    const controller = new AbortController();
    const step = runner.step.bind(runner);
    runner.step = async (entries) => {
      const out = await step(entries);
      if (runner.log.length === 3) controller.abort();
      return out;
    };
    const id = await engine.start({ promptIds: longPrompt(100), maxTokens: 10 }, controller.signal);
    const c = await engine.next(id);
    expect(c).toMatchObject({ finishReason: 'abort', ids: [], text: '' });
    expect(stepsWith(runner, id)).toHaveLength(3); // 3 chunks of 8, then nothing
    expect(runner.kv.has(id)).toBe(false);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    runner.step = step;
    const after = await collect(engine, await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 20, temperature: 0, ignoreEos: true }));
    expect(after.ids).toEqual(golden.cases[1].greedy.slice(0, 20));
    await expect(engine.next(id)).rejects.toBeInstanceOf(UnknownStreamError);
    await engine.destroy();
  });

  test('abort mid-decode takes effect within one step, frees pages before the last chunk, others go on', async () => {
    const { engine, runner } = setup();
    const controller = new AbortController();
    const other = await engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 30, temperature: 0, ignoreEos: true });
    const otherOut = collect(engine, other);
    const id = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 40, temperature: 0, ignoreEos: true }, controller.signal);
    let logAtAbort = -1;
    const r = await collect(engine, id, (_, ids) => {
      if (ids.length >= 5 && logAtAbort < 0) {
        logAtAbort = runner.log.length;
        controller.abort();
      }
    });
    expect(r.last.finishReason).toBe('abort');
    expect(runner.kv.has(id)).toBe(false); // freed before the abort chunk was delivered
    expect(r.ids).toEqual(golden.cases[1].greedy.slice(0, r.ids.length));
    expect(runner.log.slice(logAtAbort).some((s) => s.some((e) => e.seq === id))).toBe(false);
    expect(r.last.metrics?.completionTokens).toBe(r.ids.length);
    expect((await otherOut).ids).toEqual(golden.cases[0].greedy.slice(0, 30));
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await engine.destroy();
  });

  test('cancel() (break out of for-await) resolves after the pages are freed', async () => {
    const { engine, runner } = setup();
    const id = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 40, ignoreEos: true });
    expect((await engine.next(id)).finishReason).toBeNull();
    await engine.cancel(id);
    expect(runner.kv.has(id)).toBe(false);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await expect(engine.next(id)).rejects.toBeInstanceOf(UnknownStreamError);
    await engine.cancel(id); // idempotent
    await engine.destroy();
  });

  test.each([false, true])('1000 abort cycles (signal before start, while queued, mid-prefill, mid-decode, cancel) leak no pages (prefix cache %s)', async (prefixCache) => {
    const { engine, runner } = setup({ runner: { pages: 6 }, engine: { maxTokensPerStep: 4, prefixCache } });
    // A holder reserves 5 of the 6 pages (1 + 64 tokens), so during the first 100 cycles every request waits in the queue.
    const holder = await engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 64, temperature: 0, ignoreEos: true });
    const holderFirst = await engine.next(holder); // admitted and decoding: its pages are reserved from here on
    const reasons = new Map<string, number>();
    let queuedAborts = 0;
    for (let i = 0; i < 1000; i++) {
      const controller = new AbortController();
      const kind = i <= 100 ? i % 3 : i % 5;
      if (kind === 0) controller.abort();
      const id = await engine.start({ promptIds: longPrompt(6 + (i % 7)), maxTokens: 12, seed: i, ignoreEos: true }, controller.signal);
      if (i <= 100 && kind !== 0) {
        expect(engine.stats().waiting).toBe(1);
        queuedAborts++;
      }
      if (kind === 4 || (i <= 100 && kind === 2)) {
        if (i > 100) await engine.next(id);
        await engine.cancel(id);
        reasons.set('cancel', (reasons.get('cancel') ?? 0) + 1);
      } else {
        if (kind === 2) await Promise.resolve(); // wherever the loop is: prefilling in chunks of 4
        if (kind === 3) await engine.next(id); // first token out: mid-decode
        controller.abort();
        const c = await collect(engine, id);
        reasons.set(c.last.finishReason!, (reasons.get(c.last.finishReason!) ?? 0) + 1);
      }
      if (i === 100) {
        // The holder stays correct through the churn, and its end lets the next cycles run.
        expect([...holderFirst.ids, ...(await collect(engine, holder)).ids]).toEqual(golden.cases[0].greedy);
      }
    }
    expect(reasons.get('abort')! + reasons.get('cancel')!).toBe(1000);
    expect(queuedAborts).toBe(67);
    // Cycles after the holder really ran steps (fewer with the cache: its 7 prompts are mostly cached).
    expect(runner.log.length).toBeGreaterThan(prefixCache ? 700 : 1000);
    expect(engine.stats()).toMatchObject({ streams: 0, waiting: 0, running: 0 });
    if (prefixCache) expect(engine.stats().prefixCache!.hitTokens).toBeGreaterThan(1000);
    expect(runner.kv.sequences).toBe(0);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    const after = await collect(engine, await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 48, temperature: 0, ignoreEos: true }));
    expect(after.ids).toEqual(golden.cases[1].greedy);
    await engine.destroy();
  });
});

describe('KV budget', () => {
  test('a request that does not fit now waits (FIFO) and runs once pages are free', async () => {
    // 8 pages of 16 tokens: each request reserves ceil((5 + 60) / 16) = 5 pages, so only one runs at a time.
    const { engine, runner } = setup({ runner: { pages: 8 } });
    const req = (p: number[]): GenerateRequest => ({ promptIds: p, maxTokens: 60, temperature: 0, ignoreEos: true });
    const a = await engine.start(req(golden.cases[1].prompt));
    const b = await engine.start(req(golden.cases[0].prompt));
    let waitingSeen = 0;
    const outA = await collect(engine, a, () => {
      if (engine.stats().waiting === 1) waitingSeen++;
    });
    const outB = await collect(engine, b);
    expect(waitingSeen).toBeGreaterThan(0);
    expect(outA.ids).toEqual((await alone(req(golden.cases[1].prompt))).ids);
    expect(outA.ids.slice(0, 48)).toEqual(golden.cases[1].greedy);
    expect(outB.ids).toEqual(golden.cases[0].greedy.slice(0, 60));
    // b never shared a step with a: it was admitted after a finished.
    const lastA = runner.log.findLastIndex((s) => s.some((e) => e.seq === a));
    const firstB = runner.log.findIndex((s) => s.some((e) => e.seq === b));
    expect(firstB).toBeGreaterThan(lastA);
    expect(outB.last.metrics!.queueMs).toBeGreaterThan(outA.last.metrics!.queueMs);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await engine.destroy();
  });

  test('a prompt that alone cannot fit the KV-cache is refused with its counts; a maxTokens past it is clamped', async () => {
    // 8 pages of 16 tokens: one sequence holds at most 128 tokens (stories260K's context is 512).
    const { engine, runner } = setup({ runner: { pages: 8 } });
    const err = await engine.start({ promptIds: longPrompt(128), maxTokens: 4 }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ name: 'ContextLengthExceededError', reason: 'prompt', promptTokens: 128, maxTokens: 4, limit: 128, limitedBy: 'kv-cache', pinnedPages: 0 });
    expect(err.message).toMatch(/kvBudgetBytes/);
    expect(runner.log).toHaveLength(0); // refused before any work
    // Given or default, maxTokens shrinks to what the pages can ever hold: the stream ends with 'length' at 128. The
    // second run's prompt partly matches a page the first left in the prefix cache: it is admitted all the same.
    const req = { promptIds: golden.cases[1].prompt, temperature: 0, ignoreEos: true };
    for (const maxTokens of [200, undefined]) {
      const r = await collect(engine, await engine.start({ ...req, maxTokens }));
      expect(r.ids).toHaveLength(123); // 128 - 5
      expect(r.last.finishReason).toBe('length');
      expect(r.last.metrics!.promptTokens + r.last.metrics!.completionTokens).toBe(128);
      expect(r.ids.slice(0, golden.cases[1].greedy.length)).toEqual(golden.cases[1].greedy);
    }
    // strictContext refuses a given maxTokens that does not fit, before any work; one that fits runs as asked.
    const steps = runner.log.length;
    const strict = await engine.start({ ...req, maxTokens: 200, strictContext: true }).catch((e) => e);
    expect(strict).toBeInstanceOf(ContextLengthExceededError);
    expect(strict).toMatchObject({ reason: 'max-tokens', promptTokens: 5, maxTokens: 200, limit: 128, limitedBy: 'kv-cache' });
    expect(strict.message).toMatch(/lower maxTokens to 123 or less.*kvBudgetBytes.*leave strictContext out/);
    expect(runner.log).toHaveLength(steps);
    expect((await collect(engine, await engine.start({ ...req, maxTokens: 123, strictContext: true }))).ids).toHaveLength(123);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    await engine.destroy();
  });

  test("the model's context: a prompt over it is refused; prompt + maxTokens over it ends with 'length' exactly at it", async () => {
    const { engine } = setup({ runner: { pages: 1000 } }); // the KV-cache holds more than stories260K's 512 positions
    const err = await engine.start({ promptIds: longPrompt(600), maxTokens: 16 }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'prompt', promptTokens: 600, limit: 512, limitedBy: 'context' });
    expect(err.message).toMatch(/The prompt is 600 tokens.*context length holds at most 512.*shorten the prompt/);
    expect(err.message).not.toMatch(/kvBudgetBytes/);
    // Exactly the context is refused too: it leaves no room for one new token.
    await expect(engine.start({ promptIds: longPrompt(512) })).rejects.toMatchObject({ reason: 'prompt', promptTokens: 512 });
    // The chat default of 512 new tokens on a short prompt: clamped, not refused.
    const r = await collect(engine, await engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 512, temperature: 0, ignoreEos: true }));
    expect(r.last.finishReason).toBe('length');
    expect(golden.cases[0].prompt.length + r.ids.length).toBe(512);
    expect(r.ids.slice(0, golden.cases[0].greedy.length)).toEqual(golden.cases[0].greedy);
    // A long prompt with a little room left gets exactly that room.
    const near = await collect(engine, await engine.start({ promptIds: longPrompt(509), maxTokens: 100, temperature: 0, ignoreEos: true }));
    expect([near.ids.length, near.last.finishReason]).toEqual([3, 'length']);
    await expect(engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 600, strictContext: true })).rejects.toMatchObject({ reason: 'max-tokens', limit: 512, limitedBy: 'context' });
    await engine.destroy();
  });
});

describe('requests and errors', () => {
  test('bad options are InvalidRequestError naming the field', async () => {
    const { engine } = setup();
    const cases: [GenerateRequest, string][] = [
      [{ promptIds: [1], maxTokens: -1 }, 'maxTokens'],
      [{ promptIds: [1], topLogprobs: 21, logprobs: true }, 'topLogprobs'],
      [{ promptIds: [1], topLogprobs: 2 }, 'topLogprobs'],
      [{ prompt: 'a', messages: [{ role: 'user', content: 'a' }] }, 'prompt'],
      [{}, 'prompt'],
      [{ promptIds: [1, 512] }, 'promptIds[1]'],
      [{ promptIds: [1], temperature: -0.5 }, 'temperature'],
      [{ promptIds: [1], topP: 0 }, 'topP'],
      [{ promptIds: [1], logitBias: { 9999: 1 } }, 'logitBias[9999]'],
      [{ promptIds: [1], stop: [''] }, 'stop[0]'],
    ];
    for (const [req, field] of cases) {
      const err = await engine.start(req).catch((e) => e);
      expect(err, field).toBeInstanceOf(InvalidRequestError);
      expect(err.field).toBe(field);
    }
    await expect(engine.start({ messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ name: 'ChatTemplateError', code: 'chat_template_error', reason: 'missing' });
    await engine.destroy();
    await expect(engine.start({ promptIds: [1] })).rejects.toBeInstanceOf(EngineClosedError);
    const bare = setup({ tokenizer: false });
    await expect(bare.engine.start({ prompt: 'hello' })).rejects.toBeInstanceOf(TokenizerRequiredError);
    await expect(bare.engine.start({ promptIds: [1], stop: ['x'] })).rejects.toMatchObject({ field: 'stop' });
    await bare.engine.destroy();
    await expect(new Engine().start({ promptIds: [1] })).rejects.toMatchObject({ name: 'EngineClosedError', reason: 'not-loaded' });
  });

  test('a failing step ends the streams in it with a last chunk carrying the error, frees their pages, and the engine goes on', async () => {
    const { engine, runner } = setup();
    const step = runner.step.bind(runner);
    let failed = false;
    runner.step = async (entries) => {
      if (runner.log.length === 2 && !failed) {
        failed = true;
        throw new Error('device lost (simulated)');
      }
      return step(entries);
    };
    const id = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 10 });
    const failed1 = await collect(engine, id);
    expect(failed1.last.finishReason).toBe('error');
    expect(failed1.last.error?.message).toBe('device lost (simulated)');
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
    const r = await collect(engine, await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 10, temperature: 0, ignoreEos: true }));
    expect(r.ids).toEqual(golden.cases[1].greedy.slice(0, 10));
    await engine.destroy();
  });

  test('destroy() ends running streams with abort and frees everything', async () => {
    const { engine, runner } = setup();
    const id = await engine.start({ promptIds: golden.cases[1].prompt, maxTokens: 40, ignoreEos: true });
    await engine.next(id);
    const pending = engine.next(id);
    await engine.destroy();
    const c = await pending;
    expect(['abort', null]).toContain(c.finishReason);
    expect(runner.kv.availablePageCount).toBe(runner.kv.pages);
  });
});

test('requests started in one burst share their first step (no request prefills alone ahead of the others)', async () => {
  const { engine, runner } = setup();
  const ids = [];
  for (const p of [golden.cases[0].prompt, golden.cases[1].prompt, [1, 300, 301]]) {
    ids.push(await engine.start({ promptIds: p, maxTokens: 3, temperature: 0, ignoreEos: true }));
  }
  await Promise.all(ids.map((id) => collect(engine, id)));
  expect(runner.log[0].map((e) => e.seq).sort()).toEqual([...ids].sort());
  await engine.destroy();
});
