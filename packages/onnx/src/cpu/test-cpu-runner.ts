// What the CpuRunner's tests share between the node tier (V8 in Node: the relaxed16 or i16 kernels) and the browser
// (Chromium: the relaxed kernel): the check that a token's logits do not depend on how its step is put together (one
// prefill chunk or token by token, batched with other sequences' chunks, decodes and verify rows, after a fork, a
// rewind over a page boundary, pages copied on write or written back by pageIO), bit for bit: what lets the prefix
// cache give exactly the ids recomputing gives. Test-only.

import { expect } from 'vitest';
import type { WeightDtype } from '@intab/gpu';
import { bytesSource, openGguf, type StepEntry } from '@intab/model';
import { syntheticGguf } from '@intab/testing/synthetic';
import { loadCpuRunner } from './load-cpu.ts';

const GREEDY = { temperature: 0, u: 0 };

/** Gemma 3's layer (window 8: the text outgrows it), 6 layers, sharp attention, pages of 4 tokens. */
export async function checkStepInvariance(dtype: WeightDtype): Promise<void> {
  const shape = { hidden: 64, ffn: 128, layers: 6, heads: 2, kvHeads: 1, headDim: 32, vocab: 384, ropeTheta: 10000, context: 256, arch: 'gemma3' as const, window: 8 };
  const model = await openGguf(bytesSource('model.gguf', syntheticGguf(shape, dtype, 5, { qkScale: 4 })));
  const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 1 << 20, maxBatch: 8, pageSize: 4 });
  const V = model.config.vocab;
  const all = [...Array.from({ length: 21 }, (_, i) => (i * 37 + 11) % 384), 7, 300, 12];
  const rowsOf = async (seq: number, tokens: number[]) => (await runner.step([{ seq, tokens, verify: tokens.map(() => GREEDY) }], { logits: true }))[0].logits!;
  // The reference run: the whole text as one chunk.
  runner.alloc(0);
  const whole = await rowsOf(0, all);
  const row = (t: number) => whole.subarray(t * V, (t + 1) * V);
  // Token by token.
  runner.alloc(1);
  for (let t = 0; t < all.length; t++) {
    const [r] = await runner.step([{ seq: 1, tokens: [all[t]] }], { logits: true });
    expect(r.logits, `token ${t}`).toEqual(row(t));
  }
  // Batched: a prefill chunk of one sequence beside a decode of another and a verify entry of a third.
  runner.alloc(2);
  runner.alloc(3);
  await runner.step([{ seq: 2, tokens: all.slice(0, 10) }]);
  const entries: StepEntry[] = [
    { seq: 3, tokens: all.slice(0, 17) },
    { seq: 2, tokens: all.slice(10, 13), verify: [GREEDY, GREEDY, GREEDY] },
    { seq: 1, tokens: [5] },
  ];
  const [a, b] = await runner.step(entries, { logits: true });
  expect(a.logits).toEqual(row(16));
  expect(b.logits!.subarray(0, 3 * V)).toEqual(whole.subarray(10 * V, 13 * V));
  // Forked after 17 tokens (pages shared, the partial last page copied on write), then each appends.
  runner.fork(3, 4);
  const [c, d] = await runner.step([{ seq: 3, tokens: [all[17]] }, { seq: 4, tokens: [all[17]] }], { logits: true });
  expect(c.logits).toEqual(row(17));
  expect(d.logits).toEqual(row(17));
  // Rewound over a page boundary, then the same tokens again.
  runner.rewind(4, 6);
  expect(runner.kv.length(4)).toBe(12);
  const again = await rowsOf(4, all.slice(12, 20));
  expect(again).toEqual(whole.subarray(12 * V, 20 * V));
  // The K/V of seq 0's pages read, overwritten with zeros, then written back: its next token is as if recomputed.
  const pages = [...runner.kv.pagesOf(0)];
  const bytes = await runner.pageIO.read(pages);
  await runner.pageIO.write(pages, new Uint8Array(bytes.byteLength));
  await runner.pageIO.write(pages, bytes);
  const [e] = await runner.step([{ seq: 0, tokens: [9] }], { logits: true });
  runner.alloc(5);
  const fresh = await rowsOf(5, [...all, 9]);
  expect(e.logits).toEqual(fresh.subarray(all.length * V));
  expect(new Set(runner.kv.pagesOf(0)).size).toBe(runner.kv.pagesOf(0).length);
  runner.destroy();
}

/**
 * The forward on `threads` threads gives one thread's logits, bit for bit: a 40-token prefill chunk (every row), then
 * a step batching a decode of that sequence with another's chunk, on a shape whose matrices and attention are past
 * the sizes from which they are split (Gemma 3's window too). Returns how many attention calls ran split.
 */
export async function checkThreadsForward(dtype: WeightDtype, threads: number): Promise<number> {
  const shape = { hidden: 256, ffn: 512, layers: 3, heads: 4, kvHeads: 2, headDim: 64, vocab: 384, ropeTheta: 10000, context: 256, arch: 'gemma3' as const, window: 16 };
  const model = await openGguf(bytesSource('model.gguf', syntheticGguf(shape, dtype, 9, { qkScale: 4 })));
  const load = (n: number) => loadCpuRunner(model, { kvBudgetBytes: 4 << 20, maxBatch: 16, pageSize: 8, threads: n });
  const [one, many] = [(await load(1)).runner, (await load(threads)).runner];
  // the attention's calls that ran on the threads
  const pool = (many as unknown as { forward: { cpu: { threadPool?: { run: (fn: number, ...rest: unknown[]) => void; fn: (m: WebAssembly.Module, n: string) => number } } } }).forward.cpu.threadPool;
  expect(pool).toBeDefined();
  let split = 0;
  const run = pool!.run.bind(pool);
  const attnTasks = pool!.fn((many as unknown as { forward: { kernels: { attentionModule: WebAssembly.Module } } }).forward.kernels.attentionModule, 'attn_tasks');
  pool!.run = (fn, ...rest) => {
    if (fn === attnTasks) split++;
    run(fn, ...rest);
  };
  const prompt = Array.from({ length: 40 }, (_, i) => (i * 53 + 7) % 384);
  try {
    for (const runner of [one, many]) [0, 1].forEach((s) => runner.alloc(s));
    const steps: StepEntry[][] = [
      [{ seq: 0, tokens: prompt, verify: prompt.map(() => GREEDY) }],
      [{ seq: 0, tokens: [17] }, { seq: 1, tokens: prompt.slice(0, 23), verify: prompt.slice(0, 23).map(() => GREEDY) }],
      [{ seq: 1, tokens: [5, 6, 7], verify: [GREEDY, GREEDY, GREEDY] }, { seq: 0, tokens: [99] }],
    ];
    for (const [i, entries] of steps.entries()) {
      const [a, b] = [await one.step(entries, { logits: true }), await many.step(entries, { logits: true })];
      a.forEach((r, e) => expect(b[e].logits, `step ${i} entry ${e} on ${threads} threads`).toEqual(r.logits));
    }
  } finally {
    one.destroy();
    many.destroy();
  }
  return split;
}
