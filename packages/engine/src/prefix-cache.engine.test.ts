// The prefix cache through the engine, over the CPU reference runner (stories260K's real weights; its K/V live in
// pages read through each sequence's page table, so a wrongly shared page changes the ids): the ids with the cache
// on equal the ids with it off — greedy and seeded, turn after turn of a chat, batched requests sharing a prefix in
// one step, speculative requests (ngram, self, draft) and constrained ones over shared pages — while later turns
// prefill only what is new. Preload pins a prefix; eviction under a tiny KV budget never fails a request that fits
// without the cache; random starts, aborts, preloads and releases end with every page back.
import { beforeAll, describe, expect, test } from 'vitest';
import type { LlamaConfig } from '@intab/model';
import type { GenerateRequest, SpeculativeMethod } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { ContextLengthExceededError, EngineStateError } from './errors.ts';
import { ReferenceRunner, type ReferenceRunnerOptions } from './reference/runner.ts';
import { qwen3VocabModel, stories260K } from './test-models.ts';
import { collect, prefixTraffic, runRequest as run, storyWords as words, type Collected } from './test-streams.ts';

let config: LlamaConfig;
let tensors: Map<string, Float32Array>;
let golden: { cases: { prompt: number[]; greedy: number[] }[] };

beforeAll(() => {
  ({ config, tensors, golden } = stories260K());
});

function setup(o: { runner?: ReferenceRunnerOptions; engine?: EngineOptions; draft?: boolean; draftPages?: number } = {}) {
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: 64, pageSize: 16, maxBatch: 8, yieldEachStep: false, ...o.runner });
  const draft = o.draft ? new ReferenceRunner({ ...config, layers: 2 }, (n) => tensors.get(n), { pages: o.draftPages ?? 64, pageSize: 16, maxBatch: 8, yieldEachStep: false }) : undefined;
  const engine = new Engine({ runner, draft, options: { seed: 3, maxBatch: 8, ...o.engine } });
  return { runner, engine };
}

/** A conversation's prompts, turn by turn: each is the previous prompt, the model's reply, then a new message. */
async function chat(engine: Engine, options: GenerateRequest, turns: number, cache = true): Promise<Collected[]> {
  const out: Collected[] = [];
  let prompt = [1, ...words(100, 37)]; // BOS + a "system prompt"
  for (let t = 0; t < turns; t++) {
    prompt = [...prompt, ...words(200 + t, 9 + 3 * t)];
    const r = await run(engine, { ...options, promptIds: prompt, cache });
    out.push(r);
    prompt = [...prompt, ...r.ids];
  }
  return out;
}

describe('prefix cache: the same ids, less prefill', () => {
  for (const [name, options] of [
    ['greedy', { maxTokens: 14, temperature: 0, ignoreEos: true }],
    ['seeded sampling', { maxTokens: 14, temperature: 0.9, topP: 0.95, seed: 11, ignoreEos: true }],
  ] as const) {
    test(`${name}: a 6-turn chat gives the same ids with the cache on and off; later turns prefill only the new tokens`, async () => {
      const off = setup({ engine: { prefixCache: false } });
      const on = setup();
      const a = await chat(off.engine, options, 6);
      const b = await chat(on.engine, options, 6);
      expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
      const m = b.map((r) => r.last.metrics!);
      expect(m[0].cachedTokens).toBe(0);
      for (let t = 1; t < 6; t++) {
        // Everything before the new message is cached but the last reply token (it was never fed back).
        expect(m[t].cachedTokens, `turn ${t}`).toBe(m[t - 1].promptTokens + m[t - 1].completionTokens - 1);
      }
      expect(a.every((r) => r.last.metrics!.cachedTokens === 0)).toBe(true);
      expect(off.engine.stats().prefixCache).toBeUndefined();
      const s = on.engine.stats();
      expect(s.prefixCache!.hitTokens).toBe(m.reduce((n, x) => n + x.cachedTokens, 0));
      expect(s.availablePages).toBe(s.totalPages);
      // Steps: the cached run prefilled far fewer tokens.
      const tokens = (r: ReferenceRunner) => r.log.flat().reduce((n, e) => n + e.tokens, 0);
      expect(tokens(on.runner)).toBeLessThan(tokens(off.runner) / 2);
      await Promise.all([off.engine.destroy(), on.engine.destroy()]);
    });
  }

  test('batched: requests sharing a prefix in one step, then a wave that maps the pages of the first while it runs', async () => {
    const prefix = [1, ...words(7, 44)];
    const requests = [0, 1, 2, 3].map((i): GenerateRequest => ({ promptIds: [...prefix, ...words(300 + i, 3 + i)], maxTokens: 10 + i, temperature: 0, ignoreEos: true }));
    const off = setup({ engine: { prefixCache: false } });
    const expected: number[][] = [];
    for (const r of requests) expected.push((await run(off.engine, r)).ids);
    const { engine, runner } = setup({ engine: { maxTokensPerStep: 32 } });
    // Wave 1: all four at once (they share steps; nothing is cached yet).
    const wave1 = await Promise.all(requests.map((r) => run(engine, r)));
    expect(wave1.map((r) => r.ids)).toEqual(expected);
    expect(runner.log.some((s) => s.length === 4)).toBe(true);
    // Wave 2: a long request, and the others once its prompt is prefilled: they map its running pages.
    const fresh = [1, ...words(8, 60)];
    const second = [0, 1, 2].map((i): GenerateRequest => ({ promptIds: [...fresh, ...words(400 + i, 2)], maxTokens: 6, temperature: 0, ignoreEos: true }));
    const secondExpected: number[][] = [];
    for (const r of second) secondExpected.push((await run(off.engine, r)).ids);
    const later: number[] = [];
    const first = engine.start(second[0]).then((id) =>
      collect(engine, id, async (_c, ids) => {
        if (ids.length === 1) later.push(...(await Promise.all(second.slice(1).map((r) => engine.start(r)))));
      }),
    );
    const firstOut = await first;
    const laterOut = await Promise.all(later.map((id) => collect(engine, id)));
    expect([firstOut, ...laterOut].map((r) => r.ids)).toEqual(secondExpected);
    for (const r of laterOut) expect(r.last.metrics!.cachedTokens).toBe(48); // three full pages of the running prompt
    expect(engine.stats().availablePages).toBe(64);
    await Promise.all([off.engine.destroy(), engine.destroy()]);
  });

  for (const method of ['ngram', 'self', 'draft'] as SpeculativeMethod[]) {
    test(`speculative (${method}) over shared pages: golden ids, and plain decoding's ids on a cached chat`, async () => {
      const { engine, runner } = setup({ draft: method === 'draft' });
      const speculative = { method, k: 4, adaptive: false };
      const c = golden.cases[1];
      // Cache the prompt and its continuation, then ask again: the second run verifies over mapped pages.
      for (let i = 0; i < 2; i++) {
        const r = await run(engine, { promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true, speculative });
        expect(r.ids, `run ${i}`).toEqual(c.greedy);
        expect(r.last.metrics!.speculative!.verifySteps).toBeGreaterThan(0);
      }
      const grounded = [...c.prompt, ...c.greedy.slice(0, 20), ...c.prompt.slice(1)];
      const plain = await run(setup({ engine: { prefixCache: false } }).engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true });
      const spec = await run(engine, { promptIds: grounded, maxTokens: 24, temperature: 0, ignoreEos: true, speculative });
      expect(spec.last.metrics!.cachedTokens).toBeGreaterThanOrEqual(c.prompt.length + 20);
      expect(spec.ids).toEqual(plain.ids);
      expect(engine.stats().availablePages).toBe(runner.kv.pages);
      // A draft model keeps a prefix cache of its own: the later runs' drafts did not read the cached text again.
      if (method === 'draft') expect(engine.stats().draftPrefixCache!.hitTokens).toBeGreaterThanOrEqual(c.prompt.length + 20);
      await engine.destroy();
    });
  }

  test('a draft model short of pages (the target shares pages it cannot) proposes less, and the ids stay plain decoding\'s', async () => {
    // 6 draft pages (96 tokens) under a target of 64: the target holds four requests sharing a 60-token prefix, the draft one or two.
    const prefix = [1, ...words(31, 59)];
    const requests = [0, 1, 2, 3].map((i): GenerateRequest => ({ promptIds: [...prefix, ...words(40 + i, 3)], maxTokens: 12, temperature: 0, ignoreEos: true }));
    const off = setup({ engine: { prefixCache: false } });
    const expected: number[][] = [];
    for (const r of requests) expected.push((await run(off.engine, r)).ids);
    const { engine } = setup({ draft: true, draftPages: 6 });
    const speculative = { method: 'draft' as const, k: 4, adaptive: false };
    await run(engine, { ...requests[0], speculative });
    const out = await Promise.all(requests.map((r) => run(engine, { ...r, speculative })));
    expect(out.map((r) => r.ids)).toEqual(expected);
    expect(out.every((r) => r.last.finishReason === 'length')).toBe(true);
    expect(out.some((r) => r.last.metrics!.speculative!.verifySteps > 0)).toBe(true);
    await Promise.all([off.engine.destroy(), engine.destroy()]);
  });

  test('constrained: a JSON schema request over a cached prompt gives the same document as without the cache', { timeout: 120_000 }, async () => {
    const { tokenizer, config: qc, tensors: qt } = qwen3VocabModel();
    const engineOf = (prefixCache: boolean) =>
      new Engine({ runner: new ReferenceRunner(qc, (n) => qt.get(n), { pages: 64, pageSize: 16, maxBatch: 8, yieldEachStep: false }), tokenizer, options: { seed: 5, prefixCache } });
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, n: { type: 'integer' } }, required: ['name', 'n'], additionalProperties: false };
    const request = (prompt: string): GenerateRequest => ({ prompt, maxTokens: 80, temperature: 1, seed: 2, responseFormat: { type: 'json_schema', schema } });
    const base = 'A long shared instruction that every request of this test starts with, so that its pages are cached: ';
    const off = engineOf(false);
    const on = engineOf(true);
    for (const tail of ['first', 'second', 'first']) {
      const a = await run(off, request(base + tail));
      const b = await run(on, request(base + tail));
      expect(b.text, tail).toBe(a.text);
      expect(b.ids).toEqual(a.ids);
      if (b.last.finishReason === 'stop') JSON.parse(b.text);
    }
    expect(on.stats().prefixCache!.hitTokens).toBeGreaterThan(32);
    await Promise.all([off.destroy(), on.destroy()]);
  });

  test('cache: false neither maps nor fills the cache; the ids are the same', async () => {
    const { engine } = setup();
    const r = { promptIds: golden.cases[0].prompt, maxTokens: 40, temperature: 0, ignoreEos: true };
    const a = await run(engine, { ...r, cache: false });
    expect(engine.stats().prefixCache!.cachedPages).toBe(0);
    const b = await run(engine, r);
    const c = await run(engine, { ...r, cache: false });
    const d = await run(engine, r);
    expect([a, b, c, d].map((x) => x.last.metrics!.cachedTokens)).toEqual([0, 0, 0, r.promptIds.length - 1]);
    for (const x of [b, c, d]) expect(x.ids).toEqual(a.ids);
    expect(a.ids).toEqual(golden.cases[0].greedy.slice(0, 40));
    await expect(engine.start({ ...r, cache: 'no' as never })).rejects.toMatchObject({ name: 'InvalidRequestError', field: 'cache' });
    await engine.destroy();
  });
});

describe('eviction', () => {
  test('under a tiny KV budget every request that fits without the cache runs, with the same ids', async () => {
    // 10 pages of 16 tokens; each request reserves 4-5 of them, and the cache keeps what finished.
    const requests = Array.from({ length: 12 }, (_, i): GenerateRequest => ({ promptIds: [1, ...words(500 + (i % 5), 20 + (i % 3) * 7)], maxTokens: 30 + (i % 4) * 5, temperature: 0, ignoreEos: true }));
    const off = setup({ runner: { pages: 10 }, engine: { prefixCache: false } });
    const on = setup({ runner: { pages: 10 } });
    const a = await Promise.all(requests.map((r) => run(off.engine, r)));
    const b = await Promise.all(requests.map((r) => run(on.engine, r)));
    expect(b.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
    expect(b.every((r) => r.last.finishReason === 'length')).toBe(true);
    const s = on.engine.stats().prefixCache!;
    expect(s.evictions).toBeGreaterThan(5);
    expect(s.hitTokens).toBeGreaterThan(0); // repeated prompts (i % 5) still hit
    expect(on.engine.stats().availablePages).toBe(10);
    on.runner.kv.audit(on.engine.prefixCache!.heldPages());
    await Promise.all([off.engine.destroy(), on.engine.destroy()]);
  });
});

describe('preload', () => {
  test('pins a prefix; requests that start with it skip its prefill; release lets it be evicted', async () => {
    const { engine, runner } = setup({ runner: { pages: 12 } });
    const system = [1, ...words(9, 40)]; // 41 tokens: two full pages and a partial one
    const p = await engine.preload({ promptIds: system });
    expect(p).toMatchObject({ tokens: 41, cachedTokens: 0 });
    expect(p.ms).toBeGreaterThan(0);
    expect(engine.stats().prefixCache).toMatchObject({ cachedPages: 3, pinnedPages: 3 });
    const request = { promptIds: [...system, ...words(10, 5)], maxTokens: 12, temperature: 0, ignoreEos: true };
    const r = await run(engine, request);
    expect(r.last.metrics!.cachedTokens).toBe(41); // the partial page too, copied on write
    expect(r.ids).toEqual((await run(setup({ engine: { prefixCache: false } }).engine, request)).ids);
    // The pins hold under pressure: a request that needs every unpinned page evicts only unpinned ones.
    const big = await run(engine, { promptIds: [1, ...words(11, 100)], maxTokens: 40, temperature: 0, ignoreEos: true });
    expect(big.last.finishReason).toBe('length');
    expect(engine.stats().prefixCache!.pinnedPages).toBe(3);
    expect((await engine.preload({ promptIds: system })).cachedTokens).toBe(41); // already there: nothing to prefill
    // Pinned pages count against what a request can hold: its maxTokens is clamped to them (refused when strict).
    const err = await engine.start({ promptIds: [1, ...words(12, 130)], maxTokens: 30, strictContext: true }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthExceededError);
    expect(err).toMatchObject({ reason: 'max-tokens', limitedBy: 'kv-cache', pinnedPages: 3, limit: (12 - 3) * 16 });
    expect(err.message).toMatch(/release\(\)/);
    const tooLong = await engine.start({ promptIds: [1, ...words(12, 150)], maxTokens: 1 }).catch((e) => e);
    expect(tooLong).toMatchObject({ name: 'ContextLengthExceededError', reason: 'prompt', promptTokens: 151, limitedBy: 'kv-cache', pinnedPages: 3, limit: 144 });
    const clamped = await run(engine, { promptIds: [1, ...words(13, 130)], maxTokens: 30, temperature: 0, ignoreEos: true });
    expect([clamped.ids.length, clamped.last.finishReason]).toEqual([144 - 131, 'length']);
    await engine.release(p.id);
    await engine.release(p.id); // idempotent
    expect(engine.stats().prefixCache!.pinnedPages).toBe(3); // the second preload's pin
    await engine.release(p.id + 1);
    expect(engine.stats()).toMatchObject({ prefixCache: { pinnedPages: 0 }, availablePages: 12 });
    expect(runner.kv.sequences).toBe(0);
    await engine.destroy();
  });

  test('chat messages are rendered up to their end; an aborted preload pins nothing; the cache off refuses', async () => {
    const { tokenizer, config: qc, tensors: qt } = qwen3VocabModel();
    const engine = new Engine({ runner: new ReferenceRunner(qc, (n) => qt.get(n), { pages: 64, pageSize: 16, yieldEachStep: false }), tokenizer, options: { seed: 1 } });
    const system = { role: 'system', content: 'You are a helpful assistant who answers in one short sentence, politely.' };
    const p = await engine.preload({ messages: [system] });
    const r = await run(engine, { messages: [system, { role: 'user', content: 'Hi there!' }], maxTokens: 4, temperature: 0 });
    expect(r.last.metrics!.cachedTokens).toBe(p.tokens);
    const controller = new AbortController();
    const aborted = engine.preload({ promptIds: [1, ...words(3, 200).map((w) => w % 1000)] }, controller.signal);
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(engine.stats().prefixCache!.pinnedPages).toBe(Math.ceil(p.tokens / 16));
    await expect(engine.preload({ prompt: 'x', promptIds: [1] } as never)).rejects.toMatchObject({ name: 'InvalidRequestError', field: 'preload' });
    await engine.destroy();
    const off = setup({ engine: { prefixCache: false } });
    await expect(off.engine.preload({ promptIds: [1, 2, 3] })).rejects.toBeInstanceOf(EngineStateError);
    await off.engine.destroy();
  });
});

describe('random traffic', () => {
  test('400 seeded starts, aborts at any point, preloads and releases: ids equal the cache-off ids, every page comes back', { timeout: 120_000 }, async () => {
    const stems = [[1, ...words(21, 50)], [1, ...words(22, 30)], [1, ...words(21, 20), ...words(23, 30)]];
    const methods: (SpeculativeMethod | false)[] = [false, false, 'ngram', 'self'];
    const requests: GenerateRequest[] = Array.from({ length: 16 }, (_, i) => {
      const stem = stems[i % 3];
      return { promptIds: [...stem.slice(0, 10 + ((i * 7) % (stem.length - 10))), ...words(600 + i, 1 + (i % 4))], maxTokens: 6 + (i % 5) * 3, temperature: 0, ignoreEos: true };
    });
    const off = setup({ engine: { prefixCache: false } });
    const expected: number[][] = [];
    for (const r of requests) expected.push((await run(off.engine, r)).ids);
    await off.engine.destroy();

    const { engine, runner } = setup({ runner: { pages: 24, maxBatch: 4 }, engine: { maxBatch: 4, maxTokensPerStep: 24 } });
    const step = runner.step.bind(runner);
    let audits = 0;
    // Before and after every step: each page's count is its sequences plus the cache, and free pages are free.
    runner.step = async (entries, o) => {
      runner.kv.audit(engine.prefixCache!.heldPages());
      const out = await step(entries, o);
      runner.kv.audit(engine.prefixCache!.heldPages());
      audits++;
      return out;
    };
    const finished = await prefixTraffic(engine, { seed: 77, ops: 400, stems, requests, expected, methods });
    expect(finished).toBeGreaterThan(150);
    expect(audits).toBeGreaterThan(100);
    const s = engine.stats();
    expect(s).toMatchObject({ streams: 0, running: 0, waiting: 0, availablePages: 24, prefixCache: { pinnedPages: 0 } });
    expect(s.prefixCache!.hitTokens).toBeGreaterThan(s.prefixCache!.missTokens);
    expect(runner.kv.sequences).toBe(0);
    await engine.destroy();
  });
});
