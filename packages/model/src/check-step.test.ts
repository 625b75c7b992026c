// checkStep's speculative rules, shared by the GPU Runner and the engine's CPU ReferenceRunner: a verify
// list must give one SamplingParams per token, and a step's logits rows (one per plain entry, one per verify
// token) must fit maxRows. A refused step grows nothing.
import { describe, expect, test } from 'vitest';
import { IntabModelError } from './errors.ts';
import { PagePool, checkStep, stepRows } from './page-pool.ts';

const greedy = { temperature: 0, u: 0 };

describe('checkStep with verify entries', () => {
  test('rows count one per plain entry and one per verify token', () => {
    expect(stepRows([{ seq: 0, tokens: [1, 2, 3] }, { seq: 1, tokens: [4, 5], verify: [greedy, greedy] }])).toBe(3);
  });

  test('verify.length must equal tokens.length; rows must fit maxRows; nothing grows on refusal', () => {
    const pool = new PagePool(8, 4);
    pool.alloc(0);
    pool.alloc(1);
    const ok = [{ seq: 0, tokens: [1, 2, 3], verify: [greedy, greedy, greedy] }, { seq: 1, tokens: [9] }];
    expect(() => checkStep(pool, ok, 32, 4, 4)).not.toThrow();
    expect(() => checkStep(pool, ok, 32, 4)).not.toThrow(); // maxRows unchecked when not given
    const short = [{ seq: 0, tokens: [1, 2, 3], verify: [greedy, greedy] }];
    expect(() => checkStep(pool, short, 32, 4, 8)).toThrow(IntabModelError);
    expect(() => checkStep(pool, short, 32, 4, 8)).toThrow(/verify.length === tokens.length/);
    expect(() => checkStep(pool, ok, 32, 4, 3)).toThrow(/4 logits rows .* exceed maxRows = 3/);
    expect(pool.length(0)).toBe(0);
    expect(pool.freePageCount).toBe(8);
  });
});
