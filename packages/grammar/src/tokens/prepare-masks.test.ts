// prepareMasks on Qwen3's real vocabulary: the masks it computes ahead are the ones a matcher would compute (checked
// against the plain trie walk along seeded walks), a grammar prepared whole leaves no segment mask (loop, chain, lead)
// to compute while generating, its limits hold, and work past the mask budget stops it instead of throwing.

import { describe, expect, it } from 'vitest';
import { BUDGETS } from '../budget.ts';
import type { GrammarBudgetName } from '../errors.ts';
import { compileJsonSchema } from '../schema-compile.ts';
import { maskIds, randomWalk } from '@intab/testing/grammars';
import { mulberry32 } from '@intab/testing/random';
import { realVocabulary } from '@intab/testing/tokenizer-corpus';
import { computeMask } from './compute-mask.ts';
import { MaskCache } from './mask-cache.ts';
import { TokenMatcher } from './matcher.ts';
import { prepareMasks } from './prepare-masks.ts';
import { TokenVocabulary } from './vocabulary.ts';

const { tokenizer, bytes } = realVocabulary('qwen3');
const VOCAB = TokenVocabulary.from(bytes, { eos: tokenizer.stopIds });

/** Strings (a loop), keys beside declared names (a lead), a counting pattern (a chain), a bounded string (counted). */
const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    code: { type: 'string', pattern: '^[a-z]{2,4}-[0-9]{3}$' },
    note: { type: 'string', maxLength: 12 },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
    size: { type: 'integer' },
  },
  required: ['name', 'code'],
  additionalProperties: { type: 'boolean' },
};

/** Limits past what SCHEMA needs (its 2,019 states and 578 masks: keys and strings hold many), so it is prepared whole. */
const WHOLE = { maxStates: 4096, maxMasks: 1024 };

describe('prepareMasks', () => {
  it('computes ahead the masks a matcher would compute: along seeded walks every mask equals the plain walk, and none is a segment mask made while generating', () => {
    const grammar = compileJsonSchema(SCHEMA);
    const cache = new MaskCache();
    const prepared = prepareMasks(grammar, VOCAB, cache, WHOLE);
    expect(prepared.complete).toBe(true);
    expect(prepared.masks).toBeGreaterThan(5);
    const paths = new Set<string>();
    for (let seed = 1; seed <= 4; seed++) {
      const m = new TokenMatcher(grammar, VOCAB, { maskCache: cache });
      const walk = randomWalk(m, VOCAB.tokens, VOCAB.eos, mulberry32(seed), {
        budget: 48,
        maxTokens: 400,
        onMask: (mask) => {
          const got = mask();
          paths.add(m.lastPath ?? 'none');
          const want = computeMask(grammar, VOCAB, m.state, 'walk').mask;
          if (got.some((w, i) => w !== want[i])) expect(maskIds(got)).toEqual(maskIds(want));
          return got;
        },
      });
      expect(walk.finished).toBe(true);
    }
    expect(paths.has('cached')).toBe(true);
    for (const path of ['loop', 'chain', 'lead']) expect(paths.has(path)).toBe(false);
  });

  it('stops at its limits, and prepares nothing twice', () => {
    const grammar = compileJsonSchema(SCHEMA);
    const cache = new MaskCache();
    expect(prepareMasks(grammar, VOCAB, cache, { maxMasks: 2 })).toMatchObject({ masks: 2, complete: false });
    expect(prepareMasks(grammar, VOCAB, cache, { maxStates: 3 })).toMatchObject({ states: 3, complete: false });
    expect(prepareMasks(grammar, VOCAB, cache, WHOLE).complete).toBe(true);
    expect(prepareMasks(grammar, VOCAB, cache, WHOLE).masks).toBe(0);
    // A cache smaller than the limit bounds it: masks prepared past its size would only push each other out.
    expect(prepareMasks(compileJsonSchema(SCHEMA), VOCAB, new MaskCache({ maxEntries: 3 })).masks).toBeLessThanOrEqual(3);
  });

  it('stops when its work passes one mask\'s budget, instead of throwing, and leaves the rest to the matcher', () => {
    const grammar = compileJsonSchema(SCHEMA);
    const saved = BUDGETS.maskWork;
    (BUDGETS as Record<GrammarBudgetName, number>).maskWork = 1_000;
    let prepared;
    try {
      prepared = prepareMasks(grammar, VOCAB, new MaskCache());
    } finally {
      (BUDGETS as Record<GrammarBudgetName, number>).maskWork = saved;
    }
    expect(prepared.complete).toBe(false);
    const m = new TokenMatcher(grammar, VOCAB);
    expect(maskIds(m.mask()).length).toBeGreaterThan(0);
  });
});
