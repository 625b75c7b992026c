// The ONNX StepRunner on onnxruntime-web's wasm EP in Node, over the graph built from stories260K's GGUF: the
// golden greedy ids through step() (prompt prefill, then one token per step), several sequences in one step,
// a verify entry accepting exactly what greedy decoding would, rewind and fork keeping the K/V right, pages a holder
// (the prefix cache) retained adopted by later sequences that continue as the writer did, and what it refuses (early
// exit, adopting pages nobody retained, a graph in another layout) as typed errors.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { openGguf, pathSource, type LlamaConfig } from '@intab/model';
import { buildLlamaGraph, tensorWeights } from './llama-graph.ts';
import { graphLayout } from './graph-layout.ts';
import { OnnxLayoutError, OnnxUnsupportedError } from './errors.ts';
import { OnnxRunner } from './onnx-runner.ts';
import { createSession } from './session.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');
const golden: { cases: { prompt: number[]; greedy: number[] }[] } = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8'));

let config: LlamaConfig;
let runner: OnnxRunner;

beforeAll(async () => {
  const model = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
  config = model.config;
  const graph = await buildLlamaGraph(config, tensorWeights(model.tensors));
  const onnx = await createSession(graph.model, { backend: 'onnx-wasm' });
  runner = new OnnxRunner(onnx, graphLayout(onnx.session, config, 'stories260K.onnx'), { ...config, eosIds: [] }, { kvBudgetBytes: 4 << 20, maxBatch: 4, batching: 'per-sequence' });
});

/** Greedy ids of one sequence through step(): the prompt in one step, then a token per step. */
async function greedy(seq: number, prompt: number[], n: number): Promise<number[]> {
  runner.alloc(seq);
  const out = await decode(runner, seq, prompt, n);
  runner.free(seq);
  return out;
}

/** n greedy ids of an allocated sequence: `tokens` in one step, then each id fed back. */
async function decode(on: OnnxRunner, seq: number, tokens: number[], n: number): Promise<number[]> {
  const out: number[] = [];
  let next = tokens;
  for (let i = 0; i < n; i++) {
    const [r] = await on.step([{ seq, tokens: next }]);
    out.push(r.id);
    next = [r.id];
  }
  return out;
}

describe('OnnxRunner on ORT wasm', () => {
  test('reproduces the golden greedy ids of stories260K', async () => {
    for (const c of golden.cases) expect(await greedy(1, c.prompt, c.greedy.length)).toEqual(c.greedy);
  });

  test('sequences batched in one step decode as they do alone', async () => {
    const [a, b] = golden.cases;
    runner.alloc(1);
    runner.alloc(2);
    const got: number[][] = [[], []];
    let next = [a.prompt, b.prompt];
    for (let i = 0; i < 20; i++) {
      const r = await runner.step([
        { seq: 1, tokens: next[0] },
        { seq: 2, tokens: next[1] },
      ]);
      got[0].push(r[0].id);
      got[1].push(r[1].id);
      next = [[r[0].id], [r[1].id]];
    }
    runner.free(1);
    runner.free(2);
    expect(got[0]).toEqual(a.greedy.slice(0, 20));
    expect(got[1]).toEqual(b.greedy.slice(0, 20));
  });

  test("batching 'batched': decode steps of sequences of different lengths run as one left-padded call, with the same ids", async () => {
    const model = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
    const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors));
    const onnx = await createSession(graph.model, { backend: 'onnx-wasm' });
    const batched = new OnnxRunner(onnx, graphLayout(onnx.session, config, 'stories260K.onnx'), { ...config, eosIds: [] }, { kvBudgetBytes: 4 << 20, maxBatch: 4, batching: 'batched' });
    let calls = 0;
    const run = onnx.session.run.bind(onnx.session);
    onnx.session.run = ((feeds: never) => (calls++, run(feeds))) as typeof onnx.session.run;
    const [a, b] = golden.cases;
    batched.alloc(1);
    batched.alloc(2);
    const got: number[][] = [[], []];
    let next = [a.prompt, b.prompt];
    for (let i = 0; i < 20; i++) {
      const before = calls;
      const r = await batched.step([{ seq: 1, tokens: next[0] }, { seq: 2, tokens: next[1] }]);
      // The prompts (several tokens) run one call each; every decode step after them is one call for both.
      expect(calls - before).toBe(i === 0 ? 2 : 1);
      got[0].push(r[0].id);
      got[1].push(r[1].id);
      next = [[r[0].id], [r[1].id]];
    }
    expect(got[0]).toEqual(a.greedy.slice(0, 20));
    expect(got[1]).toEqual(b.greedy.slice(0, 20));
    expect(batched.kv.length(1)).toBe(a.prompt.length + 19);
    batched.destroy();
  });

  test('a verify entry accepts the greedy continuation, and rewind drops the rejected tail', async () => {
    const c = golden.cases[1];
    runner.alloc(3);
    await runner.step([{ seq: 3, tokens: c.prompt }]);
    // Proposals: 3 right greedy tokens, then a wrong one.
    const wrong = (c.greedy[4] + 1) % config.vocab;
    const tokens = [c.greedy[0], c.greedy[1], c.greedy[2], c.greedy[3], wrong];
    const [r] = await runner.step([{ seq: 3, tokens, verify: tokens.map(() => ({ temperature: 0, u: 0 })), rows: true }]);
    expect(r.accepted).toBe(3);
    expect(r.id).toBe(c.greedy[4]);
    expect(r.acceptedRows?.map((x) => x.id)).toEqual(c.greedy.slice(1, 4));
    // The cache holds the prompt and all 5 tokens: drop the one rejected proposal, then continue.
    expect(runner.kv.length(3)).toBe(c.prompt.length + 5);
    runner.rewind(3, 1);
    const rest = await decode(runner, 3, [c.greedy[4]], 10);
    runner.free(3);
    expect(rest).toEqual(c.greedy.slice(5, 15));
  });

  test('a fork continues from the same cache as its source, and each goes its own way', async () => {
    const c = golden.cases[0];
    runner.alloc(4);
    const [first] = await runner.step([{ seq: 4, tokens: c.prompt }]);
    runner.fork(4, 5);
    const [a, b] = await runner.step([
      { seq: 4, tokens: [first.id] },
      { seq: 5, tokens: [first.id] },
    ]);
    expect([a.id, b.id]).toEqual([c.greedy[1], c.greedy[1]]);
    // The fork takes another token: its source must not see it.
    const [x] = await runner.step([{ seq: 5, tokens: [(c.greedy[2] + 7) % config.vocab] }]);
    const [y] = await runner.step([{ seq: 4, tokens: [c.greedy[2]] }]);
    expect(y.id).toBe(c.greedy[3]);
    expect(x.id).not.toBeUndefined();
    runner.free(4);
    runner.free(5);
  });

  test('pages a holder retained keep their K/V: sequences adopting them (whole pages, a partial one) continue as the writer did', async () => {
    const c = golden.cases[0];
    const P = runner.kv.pageSize;
    // The writer: its prompt, then tokens up to 2.5 pages, every page retained by a holder as the prefix cache does.
    runner.alloc(8);
    const ids = await (async () => {
      const out: number[] = [];
      let next = c.prompt;
      while (c.prompt.length + out.length < 2.5 * P) {
        const [r] = await runner.step([{ seq: 8, tokens: next }]);
        out.push(r.id);
        next = [r.id];
      }
      return out;
    })();
    const length = runner.kv.length(8);
    const pages = [...runner.kv.pagesOf(8)];
    for (const p of pages) runner.kv.retain(p);
    // The writer goes on a few tokens (into its partial page: a private copy) and ends.
    const [more] = await runner.step([{ seq: 8, tokens: [ids.at(-1)!] }], { logits: true });
    expect(more.id).toBe(c.greedy[ids.length]);
    runner.free(8);
    // What the writer fed: the prompt, then each sampled id (the last one after the pages were retained).
    const fed = [...c.prompt, ...ids];
    const continueFrom = async (seq: number, tokens: number) => {
      runner.adopt(seq, pages.slice(0, Math.ceil(tokens / P)), tokens);
      const [first] = await runner.step([{ seq, tokens: fed.slice(tokens) }], { logits: true });
      // Its logits are the writer's last ones, to float rounding (ORT's kernels differ by the number of tokens fed).
      for (let v = 0; v < config.vocab; v++) expect(Math.abs(first.logits![v] - more.logits![v])).toBeLessThan(1e-4);
      const out = [first.id, ...(await decode(runner, seq, [first.id], 5))];
      runner.free(seq);
      return out;
    };
    // Adopting every cached token (the partial page too), then two whole pages, then 20 tokens (a page and part of
    // one); what was not adopted is fed again.
    for (const tokens of [length, 2 * P, 20]) {
      const got = await continueFrom(9, tokens);
      expect(got, `adopting ${tokens} tokens`).toEqual(c.greedy.slice(ids.length, ids.length + 6));
    }
    // A fork of an adopted sequence, before either ran, reads the same pages.
    runner.adopt(10, pages.slice(0, 2), 2 * P);
    runner.fork(10, 11);
    const rest = fed.slice(2 * P);
    const [a, b] = await runner.step([
      { seq: 10, tokens: rest },
      { seq: 11, tokens: rest },
    ]);
    expect([a.id, b.id]).toEqual([c.greedy[ids.length], c.greedy[ids.length]]);
    runner.free(10);
    runner.free(11);
    // The holder lets the pages go: every page is free again.
    for (const p of pages) runner.kv.release(p);
    expect(runner.kv.freePageCount).toBe(runner.kv.pages);
    expect(() => runner.adopt(12, [pages[0]], 1)).toThrow(OnnxUnsupportedError);
  });

  test('pageIO: kept pages read out, written into another runner\'s acquired pages, and adopted there decode the same', async () => {
    expect(runner.pageIO).toBeUndefined(); // no weights hash given: nothing to key a saved cache by
    const model = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
    const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors));
    const make = async () => {
      const onnx = await createSession(graph.model, { backend: 'onnx-wasm' });
      return new OnnxRunner(onnx, graphLayout(onnx.session, config, 'stories260K.onnx'), { ...config, eosIds: [] }, { kvBudgetBytes: 4 << 20, maxBatch: 4, weightsHash: 'xxh128:test' });
    };
    const [a, b] = [await make(), await make()];
    expect(await a.pageIO!.key()).toEqual(await b.pageIO!.key());
    expect(a.pageIO!.pageBytes).toBe(2 * config.layers * config.kvHeads * config.headDim * 4 * a.kv.pageSize);
    const c = golden.cases[1];
    const fed = [...c.prompt, ...c.greedy.slice(0, 30)]; // 35 tokens: two pages and part of a third
    a.alloc(1);
    await a.step([{ seq: 1, tokens: fed }]);
    const pages = [...a.kv.pagesOf(1)];
    for (const p of pages) a.kv.retain(p);
    a.free(1);
    const bytes = await a.pageIO!.read(pages);
    expect(bytes.byteLength).toBe(pages.length * a.pageIO!.pageBytes);
    // The other runner: pages acquired as a restoring cache does, the bytes written, then a sequence adopting them.
    const restored = pages.map(() => b.kv.acquire());
    await b.pageIO!.write(restored, bytes);
    expect(await b.pageIO!.read(restored)).toEqual(bytes);
    b.adopt(2, restored, fed.length);
    expect(await decode(b, 2, [c.greedy[30]], 8)).toEqual(c.greedy.slice(31, 39));
    b.free(2);
    for (const p of restored) b.kv.release(p);
    expect(b.keptPages).toEqual([]);
    a.destroy();
    b.destroy();
  });

  test('logits come back when asked, and logprobs are log-softmax of them', async () => {
    runner.alloc(6);
    const [r] = await runner.step([{ seq: 6, tokens: [1], sampling: { temperature: 0, u: 0, topLogprobs: 3 } }], { logits: true });
    runner.free(6);
    const z = r.logits!;
    expect(z.length).toBe(config.vocab);
    const m = Math.max(...z);
    const logZ = m + Math.log(z.reduce((s, x) => s + Math.exp(x - m), 0));
    expect(r.logprob).toBeCloseTo(z[r.id] - logZ, 5);
    expect(r.top.map((t) => t.id)[0]).toBe(r.id);
  });

  test('what it cannot do is a typed error', async () => {
    expect(runner.capabilities).toEqual({ sharedPages: true, earlyExit: false });
    runner.alloc(7);
    await expect(runner.step([{ seq: 7, tokens: [1] }], { layers: 2 })).rejects.toThrow(OnnxUnsupportedError);
    runner.free(7);
    expect(() => graphLayout({ inputNames: ['input_ids', 'pixel_values'], outputNames: ['logits'] }, config, 'vision.onnx')).toThrow(OnnxLayoutError);
    expect(() => graphLayout({ inputNames: ['input_ids', 'attention_mask'], outputNames: ['logits'] }, config, 'nokv.onnx')).toThrow(/past_key_values/);
  });
});
