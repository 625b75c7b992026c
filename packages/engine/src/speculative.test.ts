// Speculative decoding in the engine, over the CPU reference runner with stories260K's real weights:
// every proposer (prompt lookup, a draft model, the target's first layers) gives exactly the ids of plain
// decoding — greedy against golden.json, seeded sampling id for id — alone and in a batch of 4; sampled
// outputs follow the target's exact distribution (chi-square, with a deliberately bad draft so rejections
// happen); after any mix of accepts and rejects the caches of target and draft hold exactly the text; aborts
// free the draft's pages too; stops and maxTokens are never overrun; a draft with another vocabulary is a
// typed error. Counts (proposed, accepted, steps) are asserted, never time.

import { beforeAll, describe, expect, test } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { loadTokenizer, type LlamaConfig } from '@intab/model';
import { createReferenceModel } from '@intab/model/reference';
import { fixtureWeights } from '@intab/testing/fixtures';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import type { GenerateRequest, SpeculativeOptions } from './contract.ts';
import { Engine } from './engine.ts';
import { checkDraft } from './open-model.ts';
import { DraftMismatchError, InvalidRequestError } from './errors.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { chooseK, expectedTokens, ngramProposals, SequenceSpeculation, Speculator, StepCosts } from './speculator.ts';
import type { Sequence } from './sequence.ts';
import { collect } from './test-streams.ts';
import { stories260K } from './test-models.ts';


interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

let config: LlamaConfig;
let tensors: Map<string, Float32Array>;
let golden: Golden;
/** A bad draft: stories260K with noise on every weight (same vocabulary; its argmax agrees with the target's about 1 time in 5). */
let badTensors: Map<string, Float32Array>;

beforeAll(() => {
  ({ config, tensors, golden } = stories260K());
  const rng = mulberry32(4242);
  badTensors = new Map([...tensors].map(([name, t]) => [name, t.map((x) => x + (rng() - 0.5) * 0.1)]));
});

type Proposer = 'ngram' | 'draft' | 'self' | 'bad-draft';

function setup(proposer: Proposer | 'none', o: { maxBatch?: number; maxTokensPerStep?: number; pages?: number } = {}) {
  const pages = o.pages ?? 64;
  const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages, pageSize: 16, maxBatch: 16, yieldEachStep: false });
  let draft: ReferenceRunner | undefined;
  if (proposer === 'draft') draft = new ReferenceRunner({ ...config, layers: 2 }, (n) => tensors.get(n), { pages, pageSize: 16, maxBatch: 16, yieldEachStep: false });
  if (proposer === 'bad-draft') draft = new ReferenceRunner(config, (n) => badTensors.get(n), { pages, pageSize: 16, maxBatch: 16, yieldEachStep: false });
  const engine = new Engine({ runner, draft, options: { seed: 3, maxBatch: o.maxBatch ?? 8, maxTokensPerStep: o.maxTokensPerStep ?? 256 } });
  return { runner, draft, engine };
}

const methodOf = (p: Proposer) => (p === 'bad-draft' ? 'draft' : p);

async function run(proposer: Proposer | 'none', requests: GenerateRequest[], spec: Partial<SpeculativeOptions> = {}, o: Parameters<typeof setup>[1] = {}) {
  const s = setup(proposer, o);
  const speculative = proposer === 'none' ? false : { method: methodOf(proposer), ...spec };
  const ids = await Promise.all(requests.map((r) => s.engine.start({ ...r, speculative })));
  const out = await Promise.all(ids.map((id) => collect(s.engine, id)));
  return { ...s, out };
}

/**
 * A grounded prompt for this tiny model, which does not copy passages: one whose continuation repeats its
 * own text (golden case 1 settles into a run of one token), so prompt lookup finds the continuation.
 */
const grounded = () => {
  const c = golden.cases[1];
  return [...c.prompt, ...c.greedy.slice(0, 6)];
};

const PROPOSERS: Proposer[] = ['ngram', 'draft', 'self', 'bad-draft'];

describe('lossless greedy', () => {
  for (const p of PROPOSERS) {
    test(`${p}: every golden case alone, then all of them in one batch, equal golden.json`, async () => {
      const requests = golden.cases.map((c) => ({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true }));
      for (const [i, r] of requests.entries()) {
        const { out } = await run(p, [r], { adaptive: false, k: 4 });
        expect(out[0].ids, `case ${i}`).toEqual(golden.cases[i].greedy);
        expect(out[0].last.metrics!.speculative!.verifySteps).toBeGreaterThan(0);
      }
      const batch = [...requests, ...requests].slice(0, 4);
      const { out, engine } = await run(p, batch, { adaptive: false, k: 3 }, { maxBatch: 4 });
      out.forEach((o, i) => expect(o.ids, `batched ${i}`).toEqual(golden.cases[i % golden.cases.length].greedy));
      expect(engine.stats()).toMatchObject({ availablePages: 64, streams: 0 });
    });
  }

  test('a grounded prompt: n-gram lookup makes several tokens per target step, ids unchanged', async () => {
    const prompt = grounded();
    const plain = await run('none', [{ promptIds: prompt, maxTokens: 24, temperature: 0, ignoreEos: true }]);
    const spec = await run('ngram', [{ promptIds: prompt, maxTokens: 24, temperature: 0, ignoreEos: true }], { adaptive: false });
    expect(spec.out[0].ids).toEqual(plain.out[0].ids);
    const m = spec.out[0].last.metrics!.speculative!;
    expect(m.method).toBe('ngram');
    expect(m.accepted).toBeGreaterThan(10);
    // completion tokens after the first (which prefill made) per target step
    expect((24 - 1) / m.targetSteps).toBeGreaterThan(1.5);
  });
});

describe('lossless greedy on generated models (every architecture variant)', () => {
  for (const variant of ['llama3', 'qwen2', 'qwen3', 'mistral', 'phi3', 'gelu'] as const) {
    test(`${variant}: ngram, self and a draft of another seed give plain decoding's ids, alone and batched`, async () => {
      const target = fixtureWeights(variant, 5);
      const other = fixtureWeights(variant, 6);
      const rng = mulberry32(77);
      // Repetitive prompts, so n-gram lookup finds matches.
      const prompts = Array.from({ length: 4 }, () => {
        const motif = Array.from({ length: 5 }, () => 3 + Math.floor(rng() * 120));
        return [1, ...motif, ...motif, ...motif.slice(0, 2)];
      });
      const make = (proposer: 'none' | 'ngram' | 'self' | 'draft') => {
        const runner = new ReferenceRunner(target.config, (n) => target.tensors.get(n), { pages: 64, pageSize: 16, yieldEachStep: false });
        const draft = proposer === 'draft' ? new ReferenceRunner(other.config, (n) => other.tensors.get(n), { pages: 64, pageSize: 16, yieldEachStep: false }) : undefined;
        return new Engine({ runner, draft, options: { seed: 1, maxBatch: 4 } });
      };
      const requests = prompts.map((p) => ({ promptIds: p, maxTokens: 20, temperature: 0, ignoreEos: true }));
      const plainEngine = make('none');
      const plain: number[][] = [];
      for (const r of requests) plain.push((await collect(plainEngine, await plainEngine.start(r))).ids);
      for (const proposer of ['ngram', 'self', 'draft'] as const) {
        const engine = make(proposer);
        const speculative = { method: proposer, k: 3, adaptive: false };
        const alone = await collect(engine, await engine.start({ ...requests[0], speculative }));
        expect(alone.ids, `${proposer} alone`).toEqual(plain[0]);
        const ids = await Promise.all(requests.map((r) => engine.start({ ...r, speculative })));
        const outs = await Promise.all(ids.map((id) => collect(engine, id)));
        outs.forEach((o, i) => expect(o.ids, `${proposer} batched ${i}`).toEqual(plain[i]));
        expect(outs.reduce((n, o) => n + o.last.metrics!.speculative!.verifySteps, 0), proposer).toBeGreaterThan(0);
        expect(engine.stats().availablePages).toBe(64);
      }
    });
  }
});

describe('seeded sampling gives the same ids with and without speculation', () => {
  for (const p of PROPOSERS) {
    test(`${p}: temperature, top-p, top-k, penalties and bias; alone and batched`, async () => {
      const base = { temperature: 0.9, topP: 0.95, topK: 40, repetitionPenalty: 1.1, presencePenalty: 0.2, logitBias: { 300: 1.5 }, ignoreEos: true };
      const requests = golden.cases.slice(0, 4).map((c, i) => ({ ...base, promptIds: i === 0 ? grounded() : c.prompt, maxTokens: 20, seed: 11 + i }));
      while (requests.length < 4) requests.push({ ...requests[0], seed: 50 + requests.length });
      const plain = await run('none', requests);
      const spec = await run(p, requests, { adaptive: false, k: 3 }, { maxBatch: 4 });
      spec.out.forEach((o, i) => expect(o.ids, `request ${i}`).toEqual(plain.out[i].ids));
      const m = spec.out.map((o) => o.last.metrics!.speculative!);
      expect(m.reduce((n, x) => n + x.verifySteps, 0)).toBeGreaterThan(0);
    });
  }

  test('logprobs of accepted tokens equal plain decoding', async () => {
    const r = { promptIds: grounded(), maxTokens: 16, temperature: 0.7, seed: 5, logprobs: true, topLogprobs: 2, ignoreEos: true };
    const plain = await run('none', [r]);
    const spec = await run('ngram', [r], { adaptive: false });
    const lp = (o: (typeof plain.out)[0]) => o.chunks.flatMap((c) => c.logprobs ?? []);
    expect(spec.out[0].ids).toEqual(plain.out[0].ids);
    expect(spec.out[0].last.metrics!.speculative!.accepted).toBeGreaterThan(0);
    const a = lp(spec.out[0]);
    const b = lp(plain.out[0]);
    expect(a.map((x) => x.id)).toEqual(b.map((x) => x.id));
    a.forEach((x, i) => {
      expect(x.logprob).toBeCloseTo(b[i].logprob, 5);
      expect(x.top!.map((t) => t.id)).toEqual(b[i].top!.map((t) => t.id));
    });
  });
});

/** The target's exact sampling distribution (temperature 1, top-k) after a prefix. */
function exactNext(prefix: number[], topK: number): Map<number, number> {
  const model = createReferenceModel(config, (n) => tensors.get(n));
  const z = model.forward(prefix, 0);
  const order = Array.from(z.keys()).sort((a, b) => z[b] - z[a] || a - b).slice(0, topK);
  const m = Math.max(...order.map((i) => z[i]));
  const e = order.map((i) => Math.exp(z[i] - m));
  const s = e.reduce((a, b) => a + b, 0);
  return new Map(order.map((id, j) => [id, e[j] / s]));
}

/** Upper tail quantile of chi-square with `df` degrees of freedom at z standard deviations (Wilson–Hilferty). */
const chiSquareCritical = (df: number, z: number) => df * (1 - 2 / (9 * df) + z * Math.sqrt(2 / (9 * df))) ** 3;

describe('distribution', () => {
  test('speculative sampling with a bad draft matches the target distribution of 3-token continuations (chi-square)', async () => {
    const prompt = golden.cases[0].prompt.slice(0, 4);
    const topK = 4;
    const trials = 3000;
    // exact probabilities of every (t1, t2, t3)
    const exact = new Map<string, number>();
    for (const [t1, p1] of exactNext(prompt, topK)) {
      for (const [t2, p2] of exactNext([...prompt, t1], topK)) {
        for (const [t3, p3] of exactNext([...prompt, t1, t2], topK)) exact.set(`${t1},${t2},${t3}`, p1 * p2 * p3);
      }
    }
    const s = setup('bad-draft', { maxBatch: 16, pages: 256 });
    const request = { promptIds: prompt, maxTokens: 3, temperature: 1, topK, ignoreEos: true, speculative: { method: 'draft' as const, k: 2, adaptive: false } };
    const counts = new Map<string, number>();
    let proposed = 0;
    let accepted = 0;
    for (let start = 0; start < trials; start += 200) {
      const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => s.engine.start({ ...request, seed: 1_000_003 * (start + i) + 17 })));
      for (const o of await Promise.all(ids.map((id) => collect(s.engine, id)))) {
        const key = o.ids.join(',');
        counts.set(key, (counts.get(key) ?? 0) + 1);
        proposed += o.last.metrics!.speculative!.proposed;
        accepted += o.last.metrics!.speculative!.accepted;
      }
    }
    // The bad draft is rejected often, and accepted sometimes: both branches of the rule are exercised.
    expect(accepted / proposed).toBeGreaterThan(0.05);
    expect(accepted / proposed).toBeLessThan(0.8);
    for (const key of counts.keys()) expect(exact.has(key), `sampled ${key} outside the top-${topK} support`).toBe(true);
    // Pool cells expected below 5 into one.
    let chi = 0;
    let df = -1;
    let pooledExpected = 0;
    let pooledObserved = 0;
    for (const [key, p] of exact) {
      const e = p * trials;
      const n = counts.get(key) ?? 0;
      if (e < 5) {
        pooledExpected += e;
        pooledObserved += n;
        continue;
      }
      chi += (n - e) ** 2 / e;
      df++;
    }
    if (pooledExpected > 0) {
      chi += (pooledObserved - pooledExpected) ** 2 / pooledExpected;
      df++;
    }
    expect(df).toBeGreaterThan(10);
    // p < 1e-4 rejects: a wrong rule (accepting drafts too often) moves mass by far more than this.
    expect(chi).toBeLessThan(chiSquareCritical(df, 3.72));
  }, 120_000);
});

describe('rewind', () => {
  for (const p of PROPOSERS) {
    test(`${p}: after every step the target and draft caches hold exactly the text, and plain decoding continues correctly`, async () => {
      const s = setup(p);
      const checks: string[] = [];
      // Whenever a sequence is freed, its caches must hold the prompt and every generated token but the last.
      const freeTarget = s.runner.free.bind(s.runner);
      const seen = new Map<number, number[]>();
      s.runner.free = (seq: number) => {
        seen.set(seq, s.runner.cachedTokens(seq));
        if (s.draft?.kv.has(seq)) seen.set(-1 - seq, s.draft.cachedTokens(seq));
        freeTarget(seq);
      };
      // And before every target step, each sequence's cache is its text so far (no leftovers of rejects).
      const step = s.runner.step.bind(s.runner);
      s.runner.step = async (entries, options) => {
        if (!options?.layers) {
          for (const e of entries) {
            const cached = s.runner.cachedTokens(e.seq);
            if (s.runner.kv.length(e.seq) !== cached.length) checks.push(`seq ${e.seq}: kv length ${s.runner.kv.length(e.seq)} != ${cached.length}`);
          }
        }
        return step(entries, options);
      };
      const c = golden.cases[0];
      const id = await s.engine.start({ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true, speculative: { method: methodOf(p), k: 5, adaptive: false } });
      const o = await collect(s.engine, id);
      expect(o.ids).toEqual(c.greedy);
      expect(checks).toEqual([]);
      const m = o.last.metrics!.speculative!;
      expect(m.verifySteps).toBeGreaterThan(0);
      expect(seen.get(id)).toEqual([...c.prompt, ...c.greedy.slice(0, -1)]);
      const draftCache = seen.get(-1 - id);
      if (draftCache) expect(draftCache).toEqual([...c.prompt, ...c.greedy].slice(0, draftCache.length));
      expect(s.engine.stats().availablePages).toBe(64);
      if (s.draft) expect(s.draft.kv.availablePageCount).toBe(64);
    });
  }

  test('bad draft: rejections happen mid-run, and the ids after them still equal golden', async () => {
    const c = golden.cases[1];
    const { out } = await run('bad-draft', [{ promptIds: c.prompt, maxTokens: c.greedy.length, temperature: 0, ignoreEos: true }], { adaptive: false, k: 4 });
    const m = out[0].last.metrics!.speculative!;
    expect(m.accepted).toBeLessThan(m.proposed);
    expect(m.accepted).toBeGreaterThan(0);
    expect(out[0].ids).toEqual(c.greedy);
  });
});

describe('stops, max_tokens, abort', () => {
  test('a stop id inside an accepted run ends the stream there: nothing past it is emitted', async () => {
    const prompt = grounded();
    const plain = await run('none', [{ promptIds: prompt, maxTokens: 30, temperature: 0, ignoreEos: true }]);
    const stopId = plain.out[0].ids[7];
    const first = plain.out[0].ids.indexOf(stopId);
    for (const p of PROPOSERS) {
      const { out } = await run(p, [{ promptIds: prompt, maxTokens: 30, temperature: 0, ignoreEos: true, stopTokenIds: [stopId] }], { adaptive: false, k: 8 });
      expect(out[0].ids, p).toEqual(plain.out[0].ids.slice(0, first + 1));
      expect(out[0].last.finishReason).toBe('stop');
    }
  });

  test('maxTokens is met exactly, never overrun by accepted proposals', async () => {
    for (const max of [1, 2, 5, 9]) {
      const { out, engine } = await run('ngram', [{ promptIds: grounded(), maxTokens: max, temperature: 0, ignoreEos: true }], { adaptive: false, k: 8 });
      expect(out[0].ids).toHaveLength(max);
      expect(out[0].last.finishReason).toBe('length');
      expect(engine.stats().availablePages).toBe(64);
    }
  });

  test('abort between verify steps frees the pages of target and draft', async () => {
    const s = setup('draft');
    const controller = new AbortController();
    const id = await s.engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 60, temperature: 0, ignoreEos: true, speculative: { method: 'draft', adaptive: false } }, controller.signal);
    const ids: number[] = [];
    for (;;) {
      const c = await s.engine.next(id);
      ids.push(...c.ids);
      if (c.finishReason) {
        expect(c.finishReason).toBe('abort');
        break;
      }
      if (ids.length >= 6) controller.abort();
    }
    expect(ids.length).toBeLessThan(60);
    expect(s.runner.kv.has(id)).toBe(false);
    expect(s.draft!.kv.has(id)).toBe(false);
    expect(s.runner.kv.availablePageCount).toBe(64);
    expect(s.draft!.kv.availablePageCount).toBe(64);
  });
});

describe('adaptive k', () => {
  test('expected tokens per round and the choice of k follow α and the cost ratio', () => {
    expect(expectedTokens(0, 4)).toBe(1);
    expect(expectedTokens(1, 4)).toBe(5);
    expect(expectedTokens(0.5, 1)).toBeCloseTo(1.5);
    const cheap = new StepCosts();
    for (let t = 1; t <= 17; t++) cheap.record(t, 10 + 0.1 * t); // verify almost free (a real GPU)
    const dear = new StepCosts();
    for (let t = 1; t <= 17; t++) dear.record(t, 10 * t); // verify costs k+1 decodes (a CPU adapter)
    expect(chooseK(0.8, 8, 1, cheap, () => 0)).toBeGreaterThanOrEqual(6);
    expect(chooseK(0.2, 8, 1, cheap, () => 0)).toBeGreaterThanOrEqual(1);
    expect(chooseK(0.8, 8, 1, dear, () => 0)).toBe(0);
    expect(chooseK(0.8, 8, 1, cheap, (k) => 10 * k)).toBe(0); // a draft as dear as the target never pays
  });

  test('one slow sample does not rule a k out for good: unmeasured for 64 steps, its cost is capped and measured again', () => {
    // A CPU: a verify step of 5 tokens costs 1.2 decode steps, but its one sample came while the machine was busy.
    const costs = new StepCosts();
    costs.record(1, 100);
    costs.record(5, 600);
    expect(costs.cost(5)).toBe(600);
    expect(chooseK(0.95, 4, 1, costs, () => 0)).toBe(0);
    for (let i = 0; i < 63; i++) costs.record(1, 100);
    expect(costs.cost(5)).toBe(600); // 63 steps later: still trusted
    costs.record(1, 100);
    // Stale: no more than the prior's 15% a token beyond the count measured since.
    expect(costs.cost(5)).toBeCloseTo(160);
    expect(costs.cost(3)).toBeCloseTo(100 + (160 - 100) / 2); // interpolated from what is trusted
    expect(chooseK(0.95, 4, 1, costs, () => 0)).toBe(4);
    // Its next sample replaces the stale one instead of averaging with it.
    costs.record(5, 120);
    expect(costs.cost(5)).toBe(120);
    costs.record(5, 130);
    expect(costs.cost(5)).toBeCloseTo(122);
    // A stale count with no smaller count measured since keeps its measurement (a GPU speculating every step
    // measures only its verify steps: plain decoding's cost must not be guessed down from them).
    const gpu = new StepCosts();
    gpu.record(1, 10);
    for (let i = 0; i < 100; i++) gpu.record(7, 11);
    expect(gpu.cost(1)).toBe(10);
  });

  test('switched off, a sequence probes after its back-off and resumes when the probe is accepted', () => {
    const runner = new ReferenceRunner(config, (n) => tensors.get(n));
    const speculator = new Speculator(runner, undefined, () => 0);
    for (let t = 1; t <= 17; t++) speculator.targetCosts.record(t, 10 * (1 + 0.3 * (t - 1))); // verify at k=2 costs 1.6 decodes
    const state = new SequenceSpeculation({ method: 'ngram', k: 8, adaptive: true, ngramMax: 3, ngramMin: 1, layers: 1 });
    for (let i = 0; i < 6; i++) state.observe(4, 0); // all rejected: α ≈ 0.1
    const seq = { remaining: 100, generated: [] as number[] } as unknown as Sequence;
    expect(speculator.want(seq, state, 1, 100)).toBe(0);
    // Off until a probe (2 proposals: 0.6 decode steps of extra cost) costs at most 1.5% of the time: ~40 tokens.
    expect(state.offUntil).toBeGreaterThanOrEqual(40);
    expect(state.offUntil).toBeLessThanOrEqual(41);
    expect(speculator.want({ ...seq, generated: Array(39).fill(0) } as unknown as Sequence, state, 1, 100)).toBe(0);
    seq.generated.push(...Array(state.offUntil).fill(0));
    expect(speculator.want(seq, state, 1, 100)).toBe(2); // the probe
    for (let i = 0; i < 8; i++) state.observe(2, 2); // probes accepted: α rises
    expect(speculator.want(seq, state, 1, 100)).toBeGreaterThan(0);
  });

  test('where even every proposal accepted would lose to plain decoding, a sequence backs off without probing', () => {
    const runner = new ReferenceRunner(config, (n) => tensors.get(n));
    const speculator = new Speculator(runner, undefined, () => 0);
    // A software adapter: fixed per-step costs dominate, so a self-draft step of 3 of 5 layers costs 0.85 of a
    // full step and a verify step of 3 tokens 1.3 of one. No α ≤ 1 makes k proposals (k draft steps) pay.
    for (let t = 1; t <= 17; t++) speculator.targetCosts.record(t, 10 * (1 + 0.15 * (t - 1)));
    speculator.selfCosts.record(1, 8.5);
    const state = new SequenceSpeculation({ method: 'self', k: 4, adaptive: true, ngramMax: 3, ngramMin: 1, layers: 3 });
    const seq = { remaining: 100, generated: [] as number[] } as unknown as Sequence;
    expect(state.probe).toBe(true);
    expect(speculator.want(seq, state, 1, 100)).toBe(0); // no probe: nothing to learn
    expect(state.offUntil).toBeGreaterThan(0);
    // With a cheap draft (a real GPU: 0.2 of a target step) the same sequence probes after its back-off.
    speculator.selfCosts.record(1, 2);
    for (let i = 0; i < 20; i++) speculator.selfCosts.record(1, 2);
    seq.generated.push(...Array(state.offUntil).fill(0));
    expect(speculator.want(seq, state, 1, 100)).toBeGreaterThan(0);
  });

  test('an open prompt: n-gram speculation switches itself off when its proposals are rejected', async () => {
    // Make verify steps measurably dear, as on a CPU adapter: the step costs are what adaptive k reads.
    const s = setup('none');
    let clock = 0;
    const engine = new Engine({ runner: s.runner, options: { seed: 3, now: () => clock } });
    const step = s.runner.step.bind(s.runner);
    s.runner.step = async (entries, options) => {
      clock += entries.reduce((n, e) => n + e.tokens.length, 0) * 10;
      return step(entries, options);
    };
    const c = golden.cases[2] ?? golden.cases[0];
    const id = await engine.start({ promptIds: c.prompt, maxTokens: 120, temperature: 1, seed: 9, ignoreEos: true, speculative: 'ngram' });
    const o = await collect(engine, id);
    const m = o.last.metrics!.speculative!;
    // Some lookups happen at first; the verify cost then keeps speculation mostly off.
    expect(m.verifySteps).toBeLessThan(0.3 * m.targetSteps);
  });
});

describe('options and errors', () => {
  test('n-gram lookup takes the latest, longest match', () => {
    expect(ngramProposals([5, 6, 7, 8, 5, 6], 3, 1, 3)).toEqual([7, 8, 5]);
    expect(ngramProposals([1, 2, 9, 1, 2, 3, 4, 1, 2], 2, 1, 2)).toEqual([3, 4]);
    expect(ngramProposals([1, 2, 3], 3, 1, 4)).toEqual([]);
  });

  test('n-gram lookup copies on over its own proposals when the match is near the end (a loop gets k proposals)', () => {
    // A run of one token: the latest match is one back, and the copy repeats it k times.
    expect(ngramProposals([4, 4], 3, 1, 4)).toEqual([4, 4, 4, 4]);
    // Period 2: [4, 9] matched at 0, then 4, 9 and the copy goes on with the period.
    expect(ngramProposals([4, 9, 4, 9], 3, 1, 5)).toEqual([4, 9, 4, 9, 4]);
    // Period 4 (7, 8, 5, 6), matched on its last two tokens: the proposals run through the period and on.
    expect(ngramProposals([5, 6, 7, 8, 5, 6], 3, 1, 6)).toEqual([7, 8, 5, 6, 7, 8]);
    // Far enough back, only the text is copied, as before.
    expect(ngramProposals([1, 2, 3, 4, 5, 6, 1, 2], 2, 1, 3)).toEqual([3, 4, 5]);
  });

  test('bad speculative options are InvalidRequestErrors that say what to send', async () => {
    const { engine } = setup('none');
    const start = (speculative: unknown) => engine.start({ promptIds: [1, 2], speculative: speculative as never });
    await expect(start('draft')).rejects.toThrow(/no draft model is loaded/);
    await expect(start({ method: 'ngram', k: 0 })).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(start({ method: 'self', layers: 99 })).rejects.toThrow(/\[1, 5\]/);
    await expect(start('fast')).rejects.toThrow(/'ngram', 'draft', 'self' or 'auto'/);
    await engine.destroy();
  });

  test("'auto' picks the draft when one is loaded, else n-gram lookup; a draft engine speculates by default", async () => {
    const withDraft = setup('draft');
    const a = await collect(withDraft.engine, await withDraft.engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 8, temperature: 0 }));
    expect(a.last.metrics!.speculative!.method).toBe('draft');
    const none = setup('none');
    const b = await collect(none.engine, await none.engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 8, temperature: 0, speculative: 'auto' }));
    expect(b.last.metrics!.speculative!.method).toBe('ngram');
    const c = await collect(none.engine, await none.engine.start({ promptIds: golden.cases[0].prompt, maxTokens: 8, temperature: 0 }));
    expect(c.last.metrics!.speculative).toBeUndefined();
  });

  test('a draft with another vocabulary is a DraftMismatchError at load, not garbage at run time', () => {
    const runner = new ReferenceRunner(config, (n) => tensors.get(n));
    const other = new ReferenceRunner({ ...config, vocab: 256 }, (n) => tensors.get(n));
    expect(() => new Engine({ runner, draft: other })).toThrow(DraftMismatchError);
    const qwen = loadTokenizer({ ...realTokenizerFiles('qwen3'), file: 'qwen3/tokenizer.json' });
    const llama = loadTokenizer({ ...realTokenizerFiles('llama3'), file: 'llama3/tokenizer.json' });
    const files = (vocab: number) => ({ config: { ...config, vocab } }) as never;
    expect(() => checkDraft(files(qwen.vocabSize), qwen, files(qwen.vocabSize), llama)).toThrow(/tokenizer vocabulary/);
    expect(() => checkDraft(files(qwen.vocabSize), qwen, files(qwen.vocabSize), qwen)).not.toThrow();
    expect(() => checkDraft(files(512), undefined, files(1024), undefined)).toThrow(/vocabulary size/);
  }, 60_000);
});
