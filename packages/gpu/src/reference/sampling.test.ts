// Hand-checkable cases for the sampling twin: penalty semantics, bias/mask, top-k/top-p/min-p on tiny
// vocabularies, the two pick orders and the logprobs (taken before temperature and truncation).
import { describe, expect, test } from 'vitest';
import { NO_TOKEN, type SamplingParams } from '../sampling-params.ts';
import { processLogits, sampleRow } from './sampling.ts';

const row = (...x: number[]) => Float32Array.from(x);
const logs = (...p: number[]) => Float32Array.from(p, Math.log);
const logSoftmax = (z: number[]) => {
  const m = Math.max(...z);
  const lse = m + Math.log(z.reduce((s, x) => s + Math.exp(x - m), 0));
  return z.map((x) => x - lse);
};
const ids = (logits: Float32Array, p: Omit<SamplingParams, 'u'>, us: number[], kmax?: number) =>
  us.map((u) => sampleRow(logits, { ...p, u }, kmax).id);

describe('sampling twin: logits processing', () => {
  test('repetition penalty divides positive and multiplies negative logits, once per distinct token', () => {
    const z = processLogits(row(2, -2, 1, 3), { temperature: 1, u: 0, repetitionPenalty: 2, history: [0, 1, 0, 0] });
    expect(Array.from(z)).toEqual([1, -4, 1, 3]);
  });

  test('presence and frequency penalties follow OpenAI (presence once, frequency per occurrence)', () => {
    const z = processLogits(row(1, 1, 1, 1), { temperature: 1, u: 0, presencePenalty: 0.5, frequencyPenalty: 0.25, history: [1, 1, 2] });
    expect(Array.from(z)).toEqual([1, 0, 0.25, 1]);
  });

  test('penalties, then bias, then the mask (which nothing undoes)', () => {
    const allowed = new Uint32Array([0b1011]); // token 2 disallowed
    const z = processLogits(row(4, 4, 4, 4), {
      temperature: 1, u: 0, repetitionPenalty: 2, history: [0], allowed,
      logitBias: [[0, 1], [2, 100], [3, -Infinity], [0, 0.5]],
    });
    // token 0: 4 / 2 + (1 + 0.5); token 2 masked despite +100; token 3 banned by bias.
    expect(Array.from(z)).toEqual([3.5, 4, -Infinity, -Infinity]);
  });
});

describe('sampling twin: picks', () => {
  test('greedy takes the argmax, ties to the lowest id, after penalties', () => {
    expect(sampleRow(row(1, 5, 5, 2), { temperature: 0, u: 0.99 }).id).toBe(1);
    expect(sampleRow(row(1, 5, 5, 2), { temperature: 0, u: 0, history: [1], presencePenalty: 0.1 }).id).toBe(2);
  });

  test('pure temperature picks in token-id order over the whole vocabulary', () => {
    // p = [0.2, 0.3, 0.5] in id order: cumulative 0.2, 0.5, 1.0
    const l = logs(0.2, 0.3, 0.5);
    expect(ids(l, { temperature: 1 }, [0, 0.19, 0.21, 0.49, 0.51, 0.999])).toEqual([0, 0, 1, 1, 2, 2]);
  });

  test('truncated picks walk descending probability: top-k = V keeps everything but reorders', () => {
    const l = logs(0.2, 0.3, 0.5);
    // topK 2 of 3 → keep 2 (0.5) and 1 (0.3): cumulative 0.625, 1.0
    expect(ids(l, { temperature: 1, topK: 2 }, [0, 0.6, 0.65, 0.99])).toEqual([2, 2, 1, 1]);
    // topK ≥ V truncates nothing: id order again
    expect(ids(l, { temperature: 1, topK: 3 }, [0.1, 0.4])).toEqual([0, 1]);
  });

  test('temperature divides the logits before truncation', () => {
    // logits [0, ln 4] at T = 2 → p ∝ [1, 2]: descending cumulative 2/3, 1
    const l = row(0, Math.log(4));
    expect(ids(l, { temperature: 2, topK: 1 }, [0.9])).toEqual([1]);
    expect(ids(l, { temperature: 2, minP: 0.01 }, [0.6, 0.7])).toEqual([1, 0]);
  });

  test('top-p keeps the smallest prefix whose mass reaches p', () => {
    const l = logs(0.05, 0.15, 0.5, 0.3); // descending: 2 (0.5), 3 (0.3), 1 (0.15), 0 (0.05)
    // p = 0.75: 0.5 + 0.3 reaches it → keep {2, 3}, renormalized: 0.625, 1.0
    expect(ids(l, { temperature: 1, topP: 0.75 }, [0.6, 0.65, 0.999])).toEqual([2, 3, 3]);
    // p = 0.85 needs the third token: keep {2, 3, 1}, cumulative 0.5/0.95, 0.8/0.95, 1.0
    expect(ids(l, { temperature: 1, topP: 0.85 }, [0.5, 0.8, 0.999])).toEqual([2, 3, 1]);
    // a tiny p keeps only the most likely token
    expect(ids(l, { temperature: 1, topP: 0.01 }, [0.999])).toEqual([2]);
  });

  test('min-p keeps tokens with p ≥ min_p · p_max', () => {
    const l = logs(0.05, 0.15, 0.5, 0.3);
    // min_p 0.2 → p ≥ 0.1: {2, 3, 1}; min_p 0.5 → p ≥ 0.25: {2, 3}
    expect(ids(l, { temperature: 1, minP: 0.2 }, [0.999])).toEqual([1]);
    expect(ids(l, { temperature: 1, minP: 0.5 }, [0.999])).toEqual([3]);
    // top-k then top-p then min-p: topK 3 → {2,3,1} (mass 0.95); topP 0.9 → all three; minP 0.5 → {2, 3}
    expect(ids(l, { temperature: 1, topK: 3, topP: 0.9, minP: 0.5 }, [0.999])).toEqual([3]);
  });

  test('truncation considers at most kmax candidates', () => {
    const flat = new Float32Array(10);
    // topP 0.99 of a flat distribution would keep 10 tokens; kmax 4 keeps ids 0..3 (ties → lower id first)
    expect(ids(flat, { temperature: 1, topP: 0.99 }, [0.99], 4)).toEqual([3]);
    expect(ids(flat, { temperature: 1, topP: 0.99 }, [0.99])).toEqual([9]);
  });

  test('logprobs come from the processed logits before temperature and truncation', () => {
    const l = row(1, 3, 2, 0);
    const r = sampleRow(l, { temperature: 2, topK: 1, u: 0.5, topLogprobs: 3, history: [3], frequencyPenalty: 1 });
    const lp = logSoftmax([1, 3, 2, -1]);
    expect(r.id).toBe(1);
    expect(r.logprob).toBeCloseTo(lp[1], 12);
    expect(r.top.map((t) => t.id)).toEqual([1, 2, 0]);
    r.top.forEach((t) => expect(t.logprob).toBeCloseTo(lp[t.id], 12));
  });

  test('a disallowed token is never picked, and all disallowed gives NO_TOKEN', () => {
    const allowed = new Uint32Array([0b0100]);
    expect(ids(row(9, 9, 0, 9), { temperature: 1, allowed }, [0, 0.5, 0.99])).toEqual([2, 2, 2]);
    expect(sampleRow(row(1, 2), { temperature: 1, u: 0.5, allowed: new Uint32Array(1) }).id).toBe(NO_TOKEN);
  });
});
