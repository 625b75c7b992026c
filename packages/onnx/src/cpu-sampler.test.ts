// The CPU sampler against the GPU sampler's CPU twin (sampleRow): for seeded random rows and every kind of
// parameter (greedy, temperature, top-k/p, min-p, penalties, bias, masks, ties, a fully masked row, top
// logprobs), the same id and the same logprobs.

import { describe, expect, test } from 'vitest';
import { mulberry32, NO_TOKEN, type SamplingParams } from '@intab/gpu';
import { sampleRow } from '@intab/gpu/reference';
import { sampleLogits } from './cpu-sampler.ts';

function row(rand: () => number, vocab: number, ties = false): Float32Array {
  return Float32Array.from({ length: vocab }, () => (ties ? Math.floor(rand() * 4) : (rand() - 0.5) * 12));
}

function mask(rand: () => number, vocab: number, share: number): Uint32Array {
  const m = new Uint32Array(Math.ceil(vocab / 32));
  for (let t = 0; t < vocab; t++) if (rand() < share) m[t >>> 5] |= 1 << (t & 31);
  return m;
}

const CASES: [string, (rand: () => number, vocab: number) => Omit<SamplingParams, 'u'>][] = [
  ['greedy', () => ({ temperature: 0 })],
  ['temperature', () => ({ temperature: 0.8 })],
  ['top-k', () => ({ temperature: 1, topK: 40 })],
  ['top-p', () => ({ temperature: 0.7, topP: 0.9 })],
  ['min-p', () => ({ temperature: 1.2, minP: 0.05 })],
  ['all truncations', () => ({ temperature: 0.9, topK: 100, topP: 0.8, minP: 0.02 })],
  ['penalties', (rand, V) => ({ temperature: 0.7, repetitionPenalty: 1.3, presencePenalty: 0.5, frequencyPenalty: 0.2, history: Array.from({ length: 30 }, () => Math.floor(rand() * V)) })],
  // (ids within the vocabulary: the twin refuses others, as the GPU sampler does)
  ['bias', (_, V) => ({ temperature: 0, logitBias: Object.fromEntries(Object.entries({ 3: 50, 7: -Infinity, 9: 2, [V - 1]: 1 }).filter(([id]) => Number(id) < V)) })],
  ['mask', (rand, V) => ({ temperature: 0.8, topK: 20, allowed: mask(rand, V, 0.3) })],
  ['top logprobs', () => ({ temperature: 0.5, topLogprobs: 20 })],
];

describe('sampleLogits matches the GPU sampler twin', () => {
  for (const [name, params] of CASES) {
    for (const vocab of [7, 512, 5000]) {
      test(`${name}, V=${vocab}`, () => {
        const rand = mulberry32(vocab * 31 + name.length);
        for (let i = 0; i < 25; i++) {
          const z = row(rand, vocab, i % 5 === 0);
          const p: SamplingParams = { ...params(rand, vocab), u: rand(), topLogprobs: 5 };
          const want = sampleRow(z, p);
          const got = sampleLogits(z, p);
          expect(got.id, `case ${i}`).toBe(want.id);
          expect(got.logprob).toBeCloseTo(want.logprob, 9);
          expect(got.top.map((t) => t.id)).toEqual(want.top.map((t) => t.id));
          got.top.forEach((t, j) => expect(t.logprob).toBeCloseTo(want.top[j].logprob, 9));
        }
      });
    }
  }

  test('a row with every token masked gives NO_TOKEN', () => {
    const z = Float32Array.from([1, 2, 3]);
    const got = sampleLogits(z, { temperature: 0.5, u: 0.3, allowed: new Uint32Array(1), topLogprobs: 2 });
    expect(got.id).toBe(NO_TOKEN);
    expect(got.logprob).toBe(-Infinity);
    expect(got.top).toEqual([{ id: NO_TOKEN, logprob: -Infinity }, { id: NO_TOKEN, logprob: -Infinity }]);
  });

  test('greedy ties go to the lowest id, and the input row is not modified', () => {
    const z = Float32Array.from([1, 5, 5, 2]);
    expect(sampleLogits(z, { temperature: 0, u: 0 }).id).toBe(1);
    const copy = Float32Array.from(z);
    sampleLogits(z, { temperature: 0.5, u: 0.5, logitBias: { 0: 9 }, history: [1] , repetitionPenalty: 2 });
    expect(z).toEqual(copy);
  });
});
