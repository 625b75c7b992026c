// The acceptance kernel against its CPU twin, word for word: random sampler rows with proposals that match
// for a random prefix, plain one-row entries, NO_TOKEN rows, spans past the ends (clamped), a batch not
// divisible by the workgroup; and the sampler → accept chain in one pass against sampleReference + twin.
import { describe, expect, test } from 'vitest';
import { createAccept, packAcceptSpans, unpackAcceptance, ACCEPT_OUT_WORDS, type AcceptSpan } from './accept.ts';
import { createSampler, NO_TOKEN, packSamplingBatch, type SamplingParams } from './sample.ts';
import { acceptReference } from '../reference/accept.ts';
import { sampleReference } from '../reference/sampling.ts';
import type { Gpu } from '../device.ts';
import { expectEqual, mulberry32, randomF32, readU32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

interface Case {
  samples: Uint32Array; // (R, stride)
  stride: number;
  tokens: Uint32Array; // (T)
  spans: AcceptSpan[];
}

async function acceptOnGpu(gpu: Gpu, c: Case, workgroupSize?: number): Promise<Uint32Array> {
  const accept = createAccept(gpu, { workgroupSize });
  const out = scratch(gpu, c.spans.length * ACCEPT_OUT_WORDS * 4);
  await run(gpu, (pass) =>
    accept.encode(pass, {
      samples: upload(gpu, c.samples),
      outStride: c.stride,
      rows: c.samples.length / c.stride,
      tokens: upload(gpu, c.tokens),
      tokenCount: c.tokens.length,
      spans: upload(gpu, packAcceptSpans(c.spans)),
      out,
      batch: c.spans.length,
    }),
  );
  return (await readU32(gpu, out)).slice(0, c.spans.length * ACCEPT_OUT_WORDS);
}

/**
 * B entries of 1..maxRows rows; entry b's proposals equal its rows' samples for a random prefix, then differ
 * (or not at all). Some rows are NO_TOKEN (everything masked) with NO_TOKEN proposals in the token stream.
 */
function randomCase(B: number, maxRows: number, stride: number, seed: number): Case {
  const rng = mulberry32(seed);
  const V = 1000;
  const spans: AcceptSpan[] = [];
  const tokens: number[] = [];
  const ids: number[] = [];
  for (let b = 0; b < B; b++) {
    const n = 1 + Math.floor(rng() * maxRows);
    const match = Math.floor(rng() * (n + 1)); // proposals equal to the samples before row `match`
    spans.push({ firstRow: ids.length, rowCount: n, firstToken: tokens.length });
    tokens.push(Math.floor(rng() * V));
    const rowIds = Array.from({ length: n }, () => Math.floor(rng() * V));
    if (b % 7 === 3) rowIds[Math.min(match, n - 1)] = NO_TOKEN;
    for (let i = 1; i < n; i++) {
      const sampled = rowIds[i - 1];
      tokens.push(i - 1 < match ? sampled : (sampled + 1 + Math.floor(rng() * (V - 1))) % V);
    }
    ids.push(...rowIds);
  }
  const samples = new Uint32Array(ids.length * stride);
  const f = new Float32Array(samples.buffer);
  ids.forEach((id, r) => {
    samples[r * stride] = id;
    f[r * stride + 1] = id === NO_TOKEN ? -Infinity : -rng() * 8;
    for (let j = 2; j < stride; j++) samples[r * stride + j] = Math.floor(rng() * 2 ** 32);
  });
  return { samples, stride, tokens: Uint32Array.from(tokens), spans };
}

describe('accept', () => {
  test('random spans match the twin word for word; plain entries pass their row through', async () => {
    const gpu = await testGpu();
    for (const [B, maxRows, stride, seed] of [
      [5, 6, 2, 1],
      [70, 9, 42, 2], // more entries than one workgroup (64), the sampler's default stride
      [33, 1, 4, 3], // plain entries only
    ]) {
      const c = randomCase(B, maxRows, stride, seed);
      const got = await acceptOnGpu(gpu, c);
      const want = acceptReference(c.samples, c.stride, c.tokens, c.spans);
      expectEqual(got, want, `B=${B} rows≤${maxRows} stride ${stride}`);
      const acc = unpackAcceptance(got, B);
      // Independent of the twin: plain entries accept 0 and return their row; others stop at a mismatch.
      c.spans.forEach((s, b) => {
        const { accepted, id, row } = acc[b];
        expect(row).toBe(s.firstRow + accepted);
        expect(id).toBe(c.samples[row * stride]);
        if (s.rowCount === 1) expect(accepted).toBe(0);
        for (let i = 0; i < accepted; i++) expect(c.samples[(s.firstRow + i) * stride]).toBe(c.tokens[s.firstToken + i + 1]);
        if (accepted < s.rowCount - 1) {
          const sampled = c.samples[(s.firstRow + accepted) * stride];
          expect(sampled === NO_TOKEN || sampled !== c.tokens[s.firstToken + accepted + 1]).toBe(true);
        }
      });
      expect(acc.some((a) => a.accepted > 0) || maxRows === 1).toBe(true);
    }
  });

  test('adversarial: NO_TOKEN never equals a NO_TOKEN proposal, spans past the ends are clamped', async () => {
    const gpu = await testGpu();
    const stride = 2;
    const f = new Float32Array(1);
    const lp = (x: number) => ((f[0] = x), new Uint32Array(f.buffer)[0]);
    // rows: 0..3 [7, NO_TOKEN, 9, 9]; tokens [1, 7, NO_TOKEN, 5, 9]
    const samples = Uint32Array.from([7, lp(-0.5), NO_TOKEN, lp(-Infinity), 9, lp(-1), 9, lp(-2)]);
    const tokens = Uint32Array.from([1, 7, NO_TOKEN, 5, 9]);
    const spans: AcceptSpan[] = [
      { firstRow: 0, rowCount: 4, firstToken: 0 }, // 7 == 7, then NO_TOKEN vs NO_TOKEN: rejected → a = 1, NO_TOKEN
      { firstRow: 2, rowCount: 9, firstToken: 3 }, // clamped to min(9, 4 − 2, 5 − 3) = 2 rows: 9 == 9 → a = 1
      { firstRow: 4, rowCount: 1, firstToken: 0 }, // no row left → (0, NO_TOKEN, −inf, 4)
      { firstRow: 3, rowCount: 3, firstToken: 5 }, // no token left → the same
    ];
    const c = { samples, stride, tokens, spans };
    const got = await acceptOnGpu(gpu, c, 3);
    expectEqual(got, acceptReference(samples, stride, tokens, spans), 'adversarial');
    const acc = unpackAcceptance(got, spans.length);
    expect(acc.map((a) => [a.accepted, a.id, a.row])).toEqual([
      [1, NO_TOKEN, 1],
      [1, 9, 3],
      [0, NO_TOKEN, 4],
      [0, NO_TOKEN, 3],
    ]);
    expect(acc[1].logprob).toBe(-2);
    expect(acc[2].logprob).toBe(-Infinity);
  });

  test('sampler then accept in one pass equals sampleReference then the twin (temperature 1, fixed u)', async () => {
    const gpu = await testGpu();
    const V = 300;
    const rowsPer = [4, 1, 3];
    const R = rowsPer.reduce((a, b) => a + b, 0);
    const sampler = createSampler(gpu, { vocab: V, maxBatch: R, maxTopLogprobs: 2 });
    const accept = createAccept(gpu);
    // Peaked rows, so a proposal equal to the likely token is usually accepted and the chain goes deep.
    const logits = randomF32(R * V, 9, 1);
    for (let r = 0; r < R; r++) logits[r * V + ((r * 17) % V)] += 6;
    const rng = mulberry32(10);
    const params: SamplingParams[] = Array.from({ length: R }, (_, r) => ({ temperature: r % 2 ? 1 : 0.7, topK: r % 3 ? 0 : 50, u: rng() }));
    const want = sampleReference(logits, V, params);
    // Proposals: each entry's tokens are [anything, sample of row 0, sample of row 1, ...] but the last
    // proposal of entry 0 is wrong, so it accepts 2 of 3.
    const tokens: number[] = [];
    const spans: AcceptSpan[] = [];
    let row = 0;
    rowsPer.forEach((n, b) => {
      spans.push({ firstRow: row, rowCount: n, firstToken: tokens.length });
      tokens.push(b);
      for (let i = 1; i < n; i++) tokens.push(b === 0 && i === n - 1 ? (want[row + i - 1].id + 1) % V : want[row + i - 1].id);
      row += n;
    });
    const packed = packSamplingBatch(V, params, { maxTopLogprobs: 2 });
    const rows = scratch(gpu, R * sampler.outStride * 4);
    const out = scratch(gpu, spans.length * ACCEPT_OUT_WORDS * 4);
    await run(gpu, (pass) => {
      sampler.encode(pass, { logits: upload(gpu, logits), params: upload(gpu, packed.params), out: rows, batch: R });
      accept.encode(pass, {
        samples: rows,
        outStride: sampler.outStride,
        rows: R,
        tokens: upload(gpu, Uint32Array.from(tokens)),
        tokenCount: tokens.length,
        spans: upload(gpu, packAcceptSpans(spans)),
        out,
        batch: spans.length,
      });
    });
    const sampled = await readU32(gpu, rows);
    expectEqual(Array.from({ length: R }, (_, r) => sampled[r * sampler.outStride]), want.map((w) => w.id), 'sampled ids');
    const got = (await readU32(gpu, out)).slice(0, spans.length * ACCEPT_OUT_WORDS);
    expectEqual(got, acceptReference(sampled, sampler.outStride, tokens, spans), 'accept');
    const acc = unpackAcceptance(got, spans.length);
    expect(acc.map((a) => a.accepted)).toEqual([2, 0, 2]);
    expect(acc.map((a) => a.id)).toEqual([want[2].id, want[4].id, want[7].id]);
    sampler.destroy();
  });

  test('bad arguments are ShapeErrors', async () => {
    const gpu = await testGpu();
    const accept = createAccept(gpu);
    const small = scratch(gpu, 16);
    const args = { samples: small, outStride: 2, rows: 2, tokens: small, tokenCount: 2, spans: small, out: small, batch: 1 };
    await expect(run(gpu, (pass) => accept.encode(pass, { ...args, rows: 3 }))).rejects.toMatchObject({ name: 'ShapeError' });
    await expect(run(gpu, (pass) => accept.encode(pass, { ...args, outStride: 1 }))).rejects.toMatchObject({ name: 'ShapeError' });
    await expect(run(gpu, (pass) => accept.encode(pass, { ...args, batch: 2 }))).rejects.toMatchObject({ name: 'ShapeError' });
  });
});
