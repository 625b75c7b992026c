// The GPU sampler against its CPU twin: for the same logits, params and u it must pick the same id and
// report the same logprobs, across every option, ties, masks, a ragged and a large vocabulary.
import { describe, expect, test } from 'vitest';
import { createSampler, NO_TOKEN, packSamplingBatch, unpackSamples, type Sampler, type SampleResult, type SamplingParams } from './sample.ts';
import { sampleReference } from '../reference/sampling.ts';
import type { Gpu } from '../device.ts';
import { expectClose, expectEqual, mulberry32, randomF32, readU32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

/** `passes`: the adjust and candidate flags as the Runner passes them (packed's), or forced. */
async function sampleOnGpu(
  gpu: Gpu,
  sampler: Sampler,
  logits: Float32Array,
  seqs: SamplingParams[],
  passes?: 'packed' | { adjust: boolean; candidates: boolean },
): Promise<SampleResult[]> {
  const packed = packSamplingBatch(sampler.vocab, seqs, { maxTopLogprobs: sampler.maxTopLogprobs });
  const flags = passes === 'packed' ? { adjust: packed.adjust, candidates: packed.candidates } : passes;
  const out = scratch(gpu, seqs.length * sampler.outStride * 4);
  await run(gpu, (pass) =>
    sampler.encode(pass, {
      logits: upload(gpu, logits),
      params: upload(gpu, packed.params),
      history: upload(gpu, packed.history),
      bias: upload(gpu, packed.bias),
      mask: upload(gpu, packed.mask),
      out,
      batch: seqs.length,
      ...flags,
    }),
  );
  return unpackSamples(await readU32(gpu, out), sampler.outStride, seqs.map((s) => s.topLogprobs ?? 0));
}

function expectSame(got: SampleResult[], want: SampleResult[], label: string): void {
  expectEqual(got.map((r) => r.id), want.map((r) => r.id), `${label}: ids`);
  expectClose(got.map((r) => r.logprob), want.map((r) => r.logprob), { atol: 1e-4, rtol: 0, label: `${label}: logprob` });
  got.forEach((g, b) => {
    expectEqual(g.top.map((t) => t.id), want[b].top.map((t) => t.id), `${label}: seq ${b} top ids`);
    expectClose(g.top.map((t) => t.logprob), want[b].top.map((t) => t.logprob), { atol: 1e-4, rtol: 0, label: `${label}: seq ${b} top logprobs` });
  });
}

/** Rows of logits: plain normal, coarsely quantized (many ties), and one with large outliers. */
function logitRows(batch: number, vocab: number, seed: number): Float32Array {
  const x = randomF32(batch * vocab, seed, 3);
  for (let b = 0; b < batch; b++) {
    const r = x.subarray(b * vocab, (b + 1) * vocab);
    if (b % 3 === 1) r.forEach((v, i) => (r[i] = Math.round(v * 2) / 2));
    if (b % 3 === 2) {
      r[(b * 37) % vocab] = 25;
      r[(b * 91 + 5) % vocab] = -1e4;
      r[vocab - 1] = 24.5;
    }
  }
  return x;
}

function randomMask(vocab: number, rng: () => number, density: number): Uint32Array {
  const m = new Uint32Array(Math.ceil(vocab / 32));
  for (let t = 0; t < vocab; t++) if (rng() < density) m[t >>> 5] |= 1 << (t & 31);
  return m;
}

/** Sequence i of a sweep: options cycle with co-prime periods so the batches mix every combination. */
function sweepSeq(i: number, vocab: number, rng: () => number): SamplingParams {
  const at = <T>(xs: T[]) => xs[i % xs.length];
  const histLen = at([0, 7, 60, 300, 3]);
  const history = Array.from({ length: histLen }, () => Math.floor(rng() * (rng() < 0.5 ? 16 : vocab)));
  const biasCount = at([0, 3, 0, 12]);
  const logitBias: [number, number][] = Array.from({ length: biasCount }, (_, j) => [
    Math.floor(rng() * vocab),
    j === 0 ? -Infinity : (rng() - 0.3) * 8,
  ]);
  return {
    temperature: at([0.8, 0, 1, 1.7, 0.3, 1, 0.6]),
    topK: at([0, 5, 0, 50, 1, 2000]),
    topP: at([1, 0.9, 1, 0.5, 0.97, 1, 1, 0.7]),
    minP: at([0, 0, 0.05, 0, 0.2, 0, 0, 0, 0.01]),
    repetitionPenalty: at([1, 1.3, 1, 0.8, 1.1]),
    presencePenalty: at([0, 0.5, 0, 0, -0.3, 0, 1]),
    frequencyPenalty: at([0, 0, 0.25, 0, 0.1, 0, 0, 0.5]),
    u: rng(),
    history,
    logitBias,
    allowed: i % 4 === 3 ? randomMask(vocab, rng, 0.5) : undefined,
    topLogprobs: at([0, 3, 20, 1, 0, 7, 13]),
  };
}

describe('sample', () => {
  test('greedy equals the CPU argmax, ties to the lowest id (V = 1000)', async () => {
    const gpu = await testGpu();
    const [B, V] = [4, 1000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const logits = logitRows(B, V, 11);
    for (let b = 0; b < B; b++) {
      logits[b * V + 500 + b] = 40;
      logits[b * V + 900 - b] = 40; // a tie for the max: the lower id wins
    }
    logits[3 * V + 999] = 41; // the last (ragged) token
    const seqs: SamplingParams[] = Array.from({ length: B }, (_, b) => ({ temperature: 0, u: 0.99, topLogprobs: 5 + b }));
    const got = await sampleOnGpu(gpu, sampler, logits, seqs);
    expect(got.map((r) => r.id)).toEqual([500, 501, 502, 999]);
    expectSame(got, sampleReference(logits, V, seqs), 'greedy');
    expect(got[0].top.slice(0, 2).map((t) => t.id)).toEqual([500, 900]);
    sampler.destroy();
  });

  test('a batch with neither truncation nor top logprobs runs the lean build (no candidate arrays), as the twin', async () => {
    const gpu = await testGpu();
    const [B, V] = [6, 1000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const logits = logitRows(B, V, 23);
    logits[2 * V + 7] = logits[2 * V + 700] = 60; // a tie: the lower id wins
    const rng = mulberry32(5);
    const seqs: SamplingParams[] = [
      { temperature: 0, u: rng() },
      { temperature: 1, u: rng() },
      { temperature: 0, u: rng() },
      { temperature: 0.7, u: rng(), history: [3, 3, 9], repetitionPenalty: 1.3 },
      { temperature: 0, u: rng(), logitBias: [[11, 80]] },
      { temperature: 1.5, u: rng(), topK: V, topP: 1 }, // top_k = V truncates nothing
    ];
    const packed = packSamplingBatch(V, seqs);
    expect([packed.adjust, packed.candidates]).toEqual([true, false]);
    const got = await sampleOnGpu(gpu, sampler, logits, seqs, 'packed');
    expect(got[2].id).toBe(7);
    expect(got[4].id).toBe(11);
    expectSame(got, sampleReference(logits, V, seqs), 'lean');
    // Greedy without any adjustment: the pick reads the logits directly.
    const plain = seqs.filter((q) => q.temperature === 0 && !q.logitBias);
    expect(packSamplingBatch(V, plain).adjust).toBe(false);
    const rows = new Float32Array([...logits.subarray(0, V), ...logits.subarray(2 * V, 3 * V)]);
    expectSame(await sampleOnGpu(gpu, sampler, rows, plain, 'packed'), sampleReference(rows, V, plain), 'lean, no adjust');
    // A sequence that needs candidates never gets a guessed token from the lean build.
    const needs: SamplingParams[] = [{ temperature: 0, u: 0.5, topLogprobs: 2 }, { temperature: 1, u: 0.5, topK: 5 }];
    expect(packSamplingBatch(V, needs).candidates).toBe(true);
    const forced = await sampleOnGpu(gpu, sampler, logits.subarray(0, 2 * V), needs, { adjust: true, candidates: false });
    expect(forced.map((r) => r.id)).toEqual([NO_TOKEN, NO_TOKEN]);
    sampler.destroy();
  });

  test('random params and u, every option, different params in one dispatch (V = 1000)', async () => {
    const gpu = await testGpu();
    const [B, V, rounds] = [8, 1000, 7];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const rng = mulberry32(2024);
    for (let r = 0; r < rounds; r++) {
      const logits = logitRows(B, V, 100 + r);
      const seqs = Array.from({ length: B }, (_, b) => sweepSeq(r * B + b, V, rng));
      expectSame(await sampleOnGpu(gpu, sampler, logits, seqs), sampleReference(logits, V, seqs), `round ${r}`);
    }
    sampler.destroy();
  });

  test('workgroups of 32 and 256 beside the default: lib/\'s reductions, scans and broadcasts give the twin\'s picks', async () => {
    const gpu = await testGpu();
    const [B, V] = [8, 1000];
    const rng = mulberry32(31);
    for (const workgroupSize of [32, 256]) {
      const sampler = createSampler(gpu, { vocab: V, maxBatch: B, workgroupSize });
      const logits = logitRows(B, V, 300 + workgroupSize);
      const seqs = Array.from({ length: B }, (_, b) => sweepSeq(b + workgroupSize, V, rng));
      expectSame(await sampleOnGpu(gpu, sampler, logits, seqs), sampleReference(logits, V, seqs), `workgroup ${workgroupSize}`);
      const greedy = seqs.map((q) => ({ temperature: 0, u: q.u }));
      expectSame(await sampleOnGpu(gpu, sampler, logits, greedy, 'packed'), sampleReference(logits, V, greedy), `workgroup ${workgroupSize}, lean greedy`);
      sampler.destroy();
    }
  });

  test('many u for one row: pure temperature and truncated picks follow the twin exactly', async () => {
    const gpu = await testGpu();
    const [B, V] = [16, 1000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const row = randomF32(V, 77, 2);
    const logits = new Float32Array(B * V);
    for (let b = 0; b < B; b++) logits.set(row, b * V);
    const rng = mulberry32(78);
    for (const base of [{ temperature: 1.3 }, { temperature: 0.9, topK: 40, topP: 0.9 }, { temperature: 2, minP: 0.02 }]) {
      const seqs = Array.from({ length: B }, () => ({ ...base, u: rng(), topLogprobs: 2 }));
      const got = await sampleOnGpu(gpu, sampler, logits, seqs);
      expectSame(got, sampleReference(logits, V, seqs), JSON.stringify(base));
      expect(new Set(got.map((r) => r.id)).size).toBeGreaterThan(3); // u really moves the pick
    }
    sampler.destroy();
  });

  test('large vocabulary (V = 32000): every mode matches the twin', async () => {
    const gpu = await testGpu();
    const [B, V] = [4, 32000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const logits = logitRows(B, V, 5);
    const rng = mulberry32(6);
    const seqs: SamplingParams[] = [
      { temperature: 1, u: rng(), topLogprobs: 20, history: [1, 2, 2, 31999], repetitionPenalty: 1.2 },
      { temperature: 0.7, topK: 40, topP: 0.95, u: rng(), topLogprobs: 4, logitBias: { 7: 5, 31000: -3 } },
      { temperature: 1.1, minP: 0.05, u: rng(), allowed: randomMask(V, rng, 0.3), frequencyPenalty: 0.4, history: [3, 3, 3] },
      { temperature: 0, u: rng(), topLogprobs: 20, presencePenalty: 2, history: Array.from({ length: 500 }, (_, i) => (i * 7919) % V) },
    ];
    expectSame(await sampleOnGpu(gpu, sampler, logits, seqs), sampleReference(logits, V, seqs), 'V=32000');
    sampler.destroy();
  });

  test("Gemma 3's vocabulary (V = 262,144): top-k/top-p, min-p with a mask, and greedy with top logprobs match the twin", async () => {
    const gpu = await testGpu();
    const [B, V] = [3, 262_144];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const logits = logitRows(B, V, 8);
    const rng = mulberry32(9);
    const seqs: SamplingParams[] = [
      { temperature: 0.8, topK: 64, topP: 0.95, u: rng(), topLogprobs: 5, history: [5, 262_143], repetitionPenalty: 1.1 },
      { temperature: 1, minP: 0.05, u: rng(), allowed: randomMask(V, rng, 0.2) },
      { temperature: 0, u: rng(), topLogprobs: 20 },
    ];
    expectSame(await sampleOnGpu(gpu, sampler, logits, seqs), sampleReference(logits, V, seqs), 'V=262144');
    sampler.destroy();
  });

  test('the bitmask forbids tokens, whatever their logits and biases', async () => {
    const gpu = await testGpu();
    const [B, V] = [9, 1000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B });
    const allowedIds = [3, 64, 65, 511, 997];
    const allowed = new Uint32Array(Math.ceil(V / 32));
    for (const t of allowedIds) allowed[t >>> 5] |= 1 << (t & 31);
    const logits = logitRows(B, V, 21);
    for (let b = 0; b < B; b++) {
      logits[b * V + 100] = 50; // disallowed, and the largest
      logits[b * V + 999] = 60;
    }
    const rng = mulberry32(22);
    const seqs: SamplingParams[] = Array.from({ length: B - 1 }, (_, b) => ({
      temperature: [0, 1, 5][b % 3],
      topK: [0, 2, 0, 100][b % 4],
      u: rng(),
      allowed, // one shared mask row
      logitBias: [[100, 10], [4, 1e3]],
      topLogprobs: 8,
    }));
    seqs.push({ temperature: 1, u: 0.5, allowed: new Uint32Array(allowed.length), topLogprobs: 2 }); // nothing allowed
    const got = await sampleOnGpu(gpu, sampler, logits, seqs);
    for (const r of got.slice(0, B - 1)) {
      expect(allowedIds).toContain(r.id);
      expect(r.top.slice(0, 5).every((t) => allowedIds.includes(t.id))).toBe(true);
      expect(r.top.slice(5).every((t) => t.logprob === -Infinity)).toBe(true);
    }
    expect(got[B - 1]).toEqual({ id: NO_TOKEN, logprob: -Infinity, top: [{ id: NO_TOKEN, logprob: -Infinity }, { id: NO_TOKEN, logprob: -Infinity }] });
    expectSame(got, sampleReference(logits, V, seqs), 'mask');
    sampler.destroy();
  });

  test('truncation is capped at the candidate count (candidates 64, workgroup 64)', async () => {
    const gpu = await testGpu();
    const [B, V] = [6, 1000];
    const sampler = createSampler(gpu, { vocab: V, maxBatch: B, candidates: 64, workgroupSize: 64 });
    const logits = new Float32Array(B * V);
    for (let i = 0; i < logits.length; i++) logits[i] = Math.floor(i / 7) % 3; // wide ties: only 3 values
    const rng = mulberry32(9);
    const seqs: SamplingParams[] = Array.from({ length: B }, (_, b) => ({
      temperature: 1, topP: [0.999, 0.5, 1][b % 3], topK: [0, 0, 100][b % 3], u: rng(), topLogprobs: 20,
    }));
    const got = await sampleOnGpu(gpu, sampler, logits, seqs);
    expectSame(got, sampleReference(logits, V, seqs, 64), 'capped');
    sampler.destroy();
  });

  test('bad shapes and bad params throw ShapeError', async () => {
    const gpu = await testGpu();
    const sampler = createSampler(gpu, { vocab: 1000, maxBatch: 2 });
    const small = scratch(gpu, 16);
    const logits = scratch(gpu, 2 * 1000 * 4);
    const params = upload(gpu, packSamplingBatch(1000, [{ temperature: 1, u: 0 }, { temperature: 0, u: 0 }]).params);
    await expect(
      run(gpu, (pass) => sampler.encode(pass, { logits, params, out: small, batch: 2 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'out' });
    await expect(
      run(gpu, (pass) => sampler.encode(pass, { logits, params, out: logits, batch: 3 })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'batch' });
    expect(() => packSamplingBatch(1000, [{ temperature: 1, topP: 0, u: 0.5 }])).toThrow(/seqs\[0\]\.topP/);
    expect(() => packSamplingBatch(1000, [{ temperature: 1, u: 0.5, allowed: new Uint32Array(4) }])).toThrow(/allowed\.length/);
    expect(() => createSampler(gpu, { vocab: 1000, maxBatch: 1, candidates: 100 })).toThrow(/candidates/);
    sampler.destroy();
  });
});
