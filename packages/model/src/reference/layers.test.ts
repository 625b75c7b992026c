// The CPU reference's `layers` option (self-speculative drafts with the first L' layers): all layers equal a
// plain forward bit for bit; L' layers equal a model truncated to L' layers; a partial forward writes only
// its layers' K/V, so rewinding over it and running the full model again gives the unrewound logits.
import { describe, expect, test } from 'vitest';
import { IntabModelError } from '../errors.ts';
import { createReferenceModel } from './llama.ts';
import { fixtureWeights } from '@intab/testing/fixtures';

const { config, tensors } = fixtureWeights('llama', 7);
const model = (layers = config.layers) => createReferenceModel({ ...config, layers }, (n) => tensors.get(n));
const PROMPT = [1, 17, 93, 4, 55, 120];

describe('reference layers', () => {
  test('layers = L is the plain forward; layers = 1 is a one-layer model (forward and logitsAll)', () => {
    expect(config.layers).toBeGreaterThan(1);
    expect(model().forward(PROMPT, 0, config.layers)).toEqual(model().forward(PROMPT, 0));
    expect(model().forward(PROMPT, 0, 1)).toEqual(model(1).forward(PROMPT, 0));
    expect(model().logitsAll(PROMPT, 0, 1)).toEqual(model(1).logitsAll(PROMPT, 0));
    expect(model().forward(PROMPT, 0, 1)).not.toEqual(model().forward(PROMPT, 0));
  });

  test('a partial-layer draft, rewound, leaves the full model as if it never ran', () => {
    const m = model();
    m.forward(PROMPT, 0);
    const n = PROMPT.length;
    m.forward([8, 31, 64], n, 1); // draft 3 tokens with one layer
    expect(m.length).toBe(n + 3);
    const after = m.logitsAll([8, 31], n); // rewind to n, then verify with all layers
    const fresh = model().logitsAll([...PROMPT, 8, 31], 0).slice(n * config.vocab);
    expect(after).toEqual(fresh);
  });

  test('layers outside 1..L is a typed error saying what to pass', () => {
    for (const layers of [0, config.layers + 1, 1.5]) {
      expect(() => model().forward(PROMPT, 0, layers)).toThrow(IntabModelError);
    }
    expect(() => model().forward(PROMPT, 0, 0)).toThrow(/from 1 .* to \d+/);
  });
});
