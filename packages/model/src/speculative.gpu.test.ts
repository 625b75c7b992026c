// Speculative decoding on the Runner with stories260K: verify entries (every token's logits row sampled,
// the accept kernel picks the longest matching prefix) must reproduce golden.json's greedy ids whatever
// the proposals, alone and mixed with plain decode and prefill entries in one step; `layers` runs a draft
// with the first layers only, whose K/V writes are rewound; sampled rows follow the CPU sampler and the
// acceptance twin exactly.
import { beforeAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu, type SamplingParams } from '@intab/gpu';
import { acceptReference, sampleRow } from '@intab/gpu/reference';
import { fetchShared } from '@intab/testing/gpu';
import { Runner } from './runner.ts';
import { openGguf } from './load.ts';
import { bytesSource } from './source.ts';
import { createReferenceModel } from './reference/llama.ts';
import { readGgufLite } from './reference/safetensors-lite.ts';

const GREEDY: SamplingParams = { temperature: 0, u: 0 };

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const fetchBytes = (name: string) => fetchShared(`models/stories260K/${name}`);

let runner: Runner;
let gpu: Gpu;
let warmPipelines = 0;
let golden: Golden;
let ggufBytes: Uint8Array;
let nextSeq = 0;

beforeAll(async () => {
  golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
  ggufBytes = await fetchBytes('stories260K.gguf');
  const model = await openGguf(bytesSource('stories260K.gguf', ggufBytes));
  gpu = await requestGpu();
  runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 4 << 20, maxBatch: 4 });
  const free = runner.kv.freePageCount;
  await runner.warmup(); // compiles the prefill, verify (accept kernel) and decode paths here, not in the tests
  expect(runner.kv.freePageCount).toBe(free);
  warmPipelines = gpu.pipelines.size;
  return () => runner.destroy();
});

/** A fresh sequence holding `prompt`; resolves with the first sampled (greedy) id. */
async function prefill(prompt: readonly number[]): Promise<{ seq: number; first: number }> {
  const seq = nextSeq++;
  runner.alloc(seq);
  const [r] = await runner.step([{ seq, tokens: prompt }]);
  return { seq, first: r.id };
}

/** Plain greedy decoding from `last` until `out` has n ids. */
async function decodeTo(seq: number, out: number[], n: number): Promise<void> {
  while (out.length < n) out.push((await runner.step([{ seq, tokens: [out.at(-1)!] }]))[0].id);
}

const wrong = (id: number) => (id + 1) % runner.config.vocab;

describe('greedy verify reproduces golden ids', () => {
  test('plain decoding gives golden; correct proposals are all accepted; a wrong one at j accepts j', async () => {
    const K = 3;
    for (const [c, { prompt, greedy: g }] of golden.cases.entries()) {
      // Plain: the ids to expect.
      const plain = await prefill(prompt);
      const ids = [plain.first];
      await decodeTo(plain.seq, ids, g.length);
      runner.free(plain.seq);
      expect(ids, `case ${c} plain`).toEqual(g);

      // Speculative: step s proposes up to K golden ids after the last accepted one and corrupts proposal
      // j = s mod (K + 1) (j = K: none), so every acceptance length 0..K occurs.
      const { seq, first } = await prefill(prompt);
      const out = [first];
      for (let s = 0; out.length < g.length; s++) {
        const i = out.length - 1; // out[i] = g[i] is the last accepted token, already sampled, not yet cached
        const k = Math.min(K, g.length - 2 - i);
        const j = s % (K + 1);
        const proposals = g.slice(i + 1, i + 1 + k).map((id, p) => (p === j ? wrong(id) : id));
        const tokens = [out[i], ...proposals];
        const before = runner.kv.length(seq);
        const [r] = await runner.step([{ seq, tokens, verify: tokens.map(() => GREEDY) }]);
        const want = Math.min(j, k);
        expect(r.accepted, `case ${c} step ${s}: accepted`).toBe(want);
        expect(r.id, `case ${c} step ${s}: id`).toBe(g[i + 1 + want]);
        expect(runner.kv.length(seq)).toBe(before + k + 1); // the cache holds every verified token
        runner.rewind(seq, k - r.accepted!);
        out.push(...proposals.slice(0, r.accepted), r.id);
        if (s === 1) {
          // After a rejection, plain decoding continues on golden to the end (the rewound K/V is overwritten).
          const rest = [...out];
          const fork = nextSeq++;
          runner.fork(seq, fork);
          await decodeTo(fork, rest, g.length);
          runner.free(fork);
          expect(rest, `case ${c}: plain after verify`).toEqual(g);
        }
      }
      expect(out.slice(0, g.length), `case ${c} speculative`).toEqual(g);
      runner.free(seq);
    }
  });

  test('one step mixing two verify entries, a plain decode and a prefill; then all continue on golden', async () => {
    const [c0, c1] = golden.cases;
    const g0 = c0.greedy;
    const g1 = c1.greedy;
    const a = await prefill(c0.prompt);
    const b = await prefill(c1.prompt);
    const d = await prefill(c0.prompt);
    const cSeq = nextSeq++;
    runner.alloc(cSeq);
    const aTokens = [g0[0], g0[1], g0[2], wrong(g0[3])]; // rejects the third proposal
    const dTokens = [g0[0], g0[1], g0[2], g0[3]]; // accepts all three
    const results = await runner.step([
      { seq: a.seq, tokens: aTokens, verify: aTokens.map(() => ({ ...GREEDY, topLogprobs: 2 })), rows: true },
      { seq: b.seq, tokens: [g1[0]] },
      { seq: cSeq, tokens: c1.prompt },
      { seq: d.seq, tokens: dTokens, verify: dTokens.map(() => GREEDY) },
    ]);
    expect(results.map((r) => r.id)).toEqual([g0[3], g1[1], g1[0], g0[4]]);
    expect(results.map((r) => r.accepted)).toEqual([2, undefined, undefined, 3]);
    expect(results[0].acceptedRows!.map((r) => r.id)).toEqual([g0[1], g0[2]]);
    for (const r of results[0].acceptedRows!) {
      expect(r.logprob).toBeLessThanOrEqual(0);
      expect(r.top[0].id).toBe(r.id); // greedy: the sample is the top token
      expect(r.top[0].logprob).toBe(r.logprob);
    }
    expect(results[0].top).toHaveLength(2);
    expect(results[0].top[0].id).toBe(g0[3]);
    expect(results[3].acceptedRows).toBeUndefined();
    expect(results[1].top).toEqual([]);
    runner.rewind(a.seq, 3 - results[0].accepted!);
    // Continue all four plainly, batched, to the end of their golden ids.
    const outs = new Map([
      [a.seq, [...g0.slice(0, 3), results[0].id]],
      [b.seq, [g1[0], results[1].id]],
      [cSeq, [results[2].id]],
      [d.seq, [...g0.slice(0, 4), results[3].id]],
    ]);
    const want = new Map([[a.seq, g0], [b.seq, g1], [cSeq, g1], [d.seq, g0]]);
    for (;;) {
      const entries = [...outs].filter(([s, o]) => o.length < want.get(s)!.length).map(([seq, o]) => ({ seq, tokens: [o.at(-1)!] }));
      if (!entries.length) break;
      (await runner.step(entries)).forEach((r, i) => outs.get(entries[i].seq)!.push(r.id));
    }
    for (const [s, o] of outs) expect(o, `seq ${s}`).toEqual(want.get(s));
    for (const s of outs.keys()) runner.free(s);
    expect(gpu.pipelines.size, 'pipelines compiled after warmup').toBe(warmPipelines);
  });
});

describe('layers (self-speculative drafts)', () => {
  test('layers = L equals a full step; layers = 1 equals the one-layer CPU reference and rewinds cleanly', async () => {
    const { prompt, greedy: g } = golden.cases[1];
    const L = runner.config.layers;
    const x = await prefill(prompt);
    const y = await prefill(prompt);
    const [full] = await runner.step([{ seq: x.seq, tokens: [g[0], g[1]], verify: [GREEDY, GREEDY] }], { logits: true });
    const [all] = await runner.step([{ seq: y.seq, tokens: [g[0], g[1]], verify: [GREEDY, GREEDY] }], { layers: L, logits: true });
    expect(all.id).toBe(full.id);
    expect(all.accepted).toBe(full.accepted);
    expect(all.logits).toEqual(full.logits);
    runner.free(x.seq);
    runner.free(y.seq);

    // Draft 3 tokens with one layer (one token per step, as a drafter does), rewind them, decode plainly.
    const lite = readGgufLite(ggufBytes, 'stories260K.gguf');
    const ref = createReferenceModel(runner.config, (n) => lite.tensors.get(n)?.data);
    ref.forward(prompt, 0);
    const { seq, first } = await prefill(prompt);
    let last = first;
    const drafted: number[] = [];
    for (let i = 0; i < 3; i++) {
      const [r] = await runner.step([{ seq, tokens: [last] }], { layers: 1, logits: true });
      const want = ref.forward([last], prompt.length + i, 1);
      const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      const err = r.logits!.reduce((m, v, t) => Math.max(m, Math.abs(v - want[t])), 0);
      expect(err / scale, `draft ${i}: one-layer logits vs the CPU reference`).toBeLessThan(1e-3);
      drafted.push((last = r.id));
    }
    runner.rewind(seq, 3);
    const out = [first];
    await decodeTo(seq, out, g.length);
    expect(out).toEqual(g);
    runner.free(seq);
  });

  test('layers outside 1..L is a typed error and the step grows nothing', async () => {
    const { seq, first } = await prefill([1]);
    const length = runner.kv.length(seq);
    for (const layers of [0, runner.config.layers + 1, 2.5]) {
      await expect(runner.step([{ seq, tokens: [first] }], { layers })).rejects.toMatchObject({ name: 'IntabModelError' });
    }
    await expect(runner.step([{ seq, tokens: [first, 5], verify: [GREEDY] }])).rejects.toThrow(/verify.length === tokens.length/);
    await expect(runner.step([{ seq, tokens: Array(runner.maxRows + 1).fill(5), verify: Array(runner.maxRows + 1).fill(GREEDY) }])).rejects.toThrow(
      /maxRows/,
    );
    expect(runner.kv.length(seq)).toBe(length);
    runner.free(seq);
  });
});

describe('sampled verify rows', () => {
  test('temperature 1 with a fixed u per row: each row is the CPU sampleRow of its logits; acceptance is the twin', async () => {
    const { prompt, greedy: g } = golden.cases[0];
    const us = [0.31, 0.77, 0.52, 0.09];
    const params: SamplingParams[] = us.map((u) => ({ temperature: 1, u, topLogprobs: 1 }));
    const { seq, first } = await prefill(prompt);
    const V = runner.config.vocab;

    /** Verify `proposals` after `first`, check every row against the CPU sampler and the twin, rewind. */
    const verify = async (proposals: number[]) => {
      const tokens = [first, ...proposals];
      const [r] = await runner.step([{ seq, tokens, verify: params, rows: true }], { logits: true });
      runner.rewind(seq, tokens.length);
      const cpu = params.map((p, i) => sampleRow(r.logits!.subarray(i * V, (i + 1) * V), p));
      // The sampler's rows as the accept kernel reads them (stride 2: id, logprob bits).
      const words = new Uint32Array(2 * cpu.length);
      const f = new Float32Array(words.buffer);
      cpu.forEach((s, i) => ((words[2 * i] = s.id), (f[2 * i + 1] = s.logprob)));
      const [accepted, id, , row] = acceptReference(words, 2, tokens, [{ firstRow: 0, rowCount: tokens.length, firstToken: 0 }]);
      expect(r.accepted).toBe(accepted);
      expect(r.id).toBe(id);
      expect(row).toBe(accepted);
      expect(r.logprob).toBeCloseTo(cpu[accepted].logprob, 4);
      expect(r.top[0].id).toBe(cpu[accepted].top[0].id);
      expect(r.acceptedRows!.map((x) => x.id)).toEqual(cpu.slice(0, accepted).map((x) => x.id));
      return { r, cpu };
    };

    // Golden proposals: whatever is accepted must follow the twin.
    const { cpu: first0 } = await verify(g.slice(1, 4));
    // Proposals built from the rows' own samples, one row at a time, are then all accepted.
    const chain = [first0[0].id];
    while (chain.length < 3) {
      const { cpu } = await verify([...chain, ...g.slice(1 + chain.length, 4)]);
      chain.push(cpu[chain.length].id);
    }
    const { r, cpu } = await verify(chain);
    expect(r.accepted).toBe(3);
    expect(r.id).toBe(cpu[3].id);
    // A wrong second proposal stops the chain there.
    const { r: cut } = await verify([chain[0], wrong(chain[1]), chain[2]]);
    expect(cut.accepted).toBe(1);
    expect(cut.id).toBe(chain[1]);
    runner.free(seq);
  });
});
