// The budgets against the inputs they exist for: each hostile schema, GBNF grammar or pattern below is refused with a
// GrammarBudgetError naming its budget, the limit and what it asked for (instead of a stack overflow, minutes of
// work or gigabytes of automaton), and inputs at the limits still compile. The limits' headroom over real schemas is
// what schema-coverage.test.ts and schema-suite.test.ts keep: their pass counts.

import { describe, expect, test } from 'vitest';
import { BUDGETS, PEAKS } from './budget.ts';
import { GRAMMAR_ERRORS, GrammarBudgetError, IntabGrammarError, type GrammarBudgetName } from './errors.ts';
import { compileGbnf, compileJsonSchema, compileRegex, matches } from './index.ts';
import { computeMask } from './tokens/compute-mask.ts';
import { forcedBytes } from './tokens/matcher.ts';
import { TokenVocabulary } from './tokens/vocabulary.ts';

function refusal(fn: () => unknown): GrammarBudgetError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GrammarBudgetError) return e;
    throw new Error(`expected a GrammarBudgetError, got ${(e as Error)?.name}: ${(e as Error)?.message}`);
  }
  throw new Error('expected a GrammarBudgetError, but it compiled');
}

/** `levels` schemas nested through `properties`. */
function nested(levels: number): unknown {
  let s: unknown = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'object', properties: { a: s }, required: ['a'] };
  return s;
}

/** $defs a0 … an where each is anyOf [a(i+1), a(i+1)]: 2^n branches if expanded naively. */
function fanOut(n: number): unknown {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) defs[`a${i}`] = { anyOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
  defs[`a${n}`] = { type: 'string' };
  return { $defs: defs, $ref: '#/$defs/a0' };
}

const HOSTILE: [string, GrammarBudgetName, () => unknown][] = [
  ['regex: 20,000 nested groups', 'nesting', () => compileRegex('('.repeat(20_000) + 'a' + ')'.repeat(20_000))],
  ['regex: 5,000 stacked quantifiers', 'nesting', () => compileRegex('a' + '?'.repeat(5_000))],
  ['regex: a{1000000}', 'count', () => compileRegex('a{1000000}')],
  ['regex: a count of 10^20', 'count', () => compileRegex('x(a{99999999999999999999})')],
  ['regex: (a{1000}){1000} unrolled', 'patternStates', () => compileRegex('(a{1000}){1000}')],
  ['regex: .*a.{20} (2^21 automaton states)', 'automatonStates', () => compileRegex('.*a.{20}')],
  ['GBNF: 20,000 nested groups', 'nesting', () => compileGbnf(`root ::= ${'('.repeat(20_000)}"a"${')'.repeat(20_000)}`)],
  ['GBNF: ("a"{10000}){10000} (10^8 copies)', 'graphNodes', () => compileGbnf('root ::= ("a"{10000}){10000}')],
  ['GBNF: a repetition count of 10^6', 'count', () => compileGbnf('root ::= "a"{1000000}')],
  ['GBNF: an ambiguous recursion (4^n parses of n letters)', 'closure', () => matches(compileGbnf('root ::= ("a" root){0,4}'), 'a'.repeat(40))],
  ['schema: 5,000 levels of properties', 'nesting', () => compileJsonSchema(nested(5_000))],
  ['schema: a const nested 100,000 deep', 'nesting', () => compileJsonSchema({ const: JSON.parse('['.repeat(100_000) + ']'.repeat(100_000)) })],
  ['schema: an object that contains itself', 'nesting', () => {
    const s: Record<string, unknown> = { type: 'object' };
    s.properties = { self: s };
    return compileJsonSchema(s);
  }],
  ['schema: a chain of 2,000 $refs', 'nesting', () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 2_000; i++) defs[`a${i}`] = { type: 'object', properties: { x: { $ref: `#/$defs/a${i + 1}` } } };
    defs.a2000 = { type: 'string' };
    return compileJsonSchema({ $defs: defs, $ref: '#/$defs/a0' });
  }],
  ['schema: anyOf doubling through 30 $refs (2^30 branches)', 'compileWork', () => compileJsonSchema(fanOut(30))],
  ['schema: oneOf of 300 overlapping objects', 'compileWork', () => compileJsonSchema({ oneOf: Array.from({ length: 300 }, (_, i) => ({ type: 'object', properties: { [`p${i}`]: { type: 'string' } } })) })],
  ['schema: minLength 10^7', 'count', () => compileJsonSchema({ type: 'string', minLength: 1e7 })],
  ['schema: minItems 10^6', 'count', () => compileJsonSchema({ type: 'array', minItems: 1e6 })],
  ['schema: minProperties 10^6', 'count', () => compileJsonSchema({ type: 'object', minProperties: 1e6 })],
  ['schema: a pattern a{1000000}', 'count', () => compileJsonSchema({ type: 'string', pattern: 'xa{1000000}' })],
  ['schema: 40 patterns on one string', 'automatonStates', () => compileJsonSchema({ type: 'string', allOf: Array.from({ length: 40 }, (_, i) => ({ pattern: `.*${String.fromCharCode(97 + (i % 26))}.{${i}}` })) })],
];

describe('hostile inputs are refused with the budget, its limit and what they asked for', () => {
  test.each(HOSTILE)('%s', (_, budget, fn) => {
    const e = refusal(fn);
    expect(e).toBeInstanceOf(IntabGrammarError);
    expect([e.name, e.budget, e.limit]).toEqual(['GrammarBudgetError', budget, BUDGETS[budget]]);
    expect(e.requested).toBeGreaterThan(e.limit);
    expect(e.message).toContain(`${budget} budget of ${BUDGETS[budget].toLocaleString('en-US')}`);
  });

  test('the error is plain data that crosses the worker (its own fields, registered by name)', () => {
    const e = refusal(() => compileRegex('a{1000000}'));
    expect(GRAMMAR_ERRORS.GrammarBudgetError).toBe(GrammarBudgetError);
    expect({ ...e }).toEqual({ name: 'GrammarBudgetError', code: 'grammar_budget_exceeded', budget: 'count', limit: BUDGETS.count, requested: 1_000_000, where: 'position 1' });
    expect(e.message).toBe(
      'a {m,n} repetition of the pattern asks for m copies (at position 1): 1,000,000 is over the count budget of 100,000. ' +
        'Lower the count: no model writes that much within its context, so bound the output by maxTokens instead.',
    );
  });
});

describe('inputs at the limits compile', () => {
  test('nesting: a pattern, a grammar and a schema just under the limit', () => {
    const n = BUDGETS.nesting;
    expect(matches(compileRegex('('.repeat(n) + 'a' + ')'.repeat(n)), 'a')).toBe(true);
    expect(matches(compileGbnf(`root ::= ${'('.repeat(n)}"a"${')'.repeat(n)}`), 'a')).toBe(true);
    // each level of properties is two levels of JSON ({"properties":{"a":…}})
    const levels = Math.floor((n - 1) / 2);
    expect(matches(compileJsonSchema(nested(levels)), '{"a":'.repeat(levels) + '"x"' + '}'.repeat(levels))).toBe(true);
  });

  test('counts: exactly the limit, and lazily counted upper bounds far above it', () => {
    expect(matches(compileRegex(`x{${BUDGETS.count}}`), 'x'.repeat(BUDGETS.count))).toBe(true);
    const g = compileJsonSchema({ type: 'string', maxLength: 1e9, minLength: 2 });
    expect([matches(g, '"ab"'), matches(g, '"a"')]).toEqual([true, false]);
  });

  test('a 200,000-value enum (under the graph budget)', () => {
    const g = compileJsonSchema({ enum: Array.from({ length: 200_000 }, (_, i) => `v${i}`) });
    expect([matches(g, '"v199999"'), matches(g, '"v200000"')]).toEqual([true, false]);
  });

  test('a $ref cycle that consumes input is a recursive rule, not a budget', () => {
    const g = compileJsonSchema({ $defs: { n: { type: 'object', properties: { next: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' });
    expect(matches(g, '{"next":{"next":{}}}')).toBe(true);
    expect(PEAKS.nesting).toBeLessThanOrEqual(BUDGETS.nesting);
  });
});

describe('token masks are metered', () => {
  const enc = new TextEncoder();
  const vocab = TokenVocabulary.from(['a', 'b', 'ab', 'aab', 'ba', '!', ' '].map((t) => enc.encode(t)), { eos: [] });

  test('past the maskWork limit, computeMask and forcedBytes throw the budget error (and the next call starts afresh)', () => {
    const g = compileGbnf('root ::= ([ab]? [ab]?){2000} "!"');
    const saved = BUDGETS.maskWork;
    (BUDGETS as Record<GrammarBudgetName, number>).maskWork = 1_000;
    try {
      const e = refusal(() => computeMask(g, vocab, g.initial));
      expect([e.budget, e.limit]).toEqual(['maskWork', 1_000]);
      expect(refusal(() => forcedBytes(g, g.initial)).budget).toBe('maskWork');
    } finally {
      (BUDGETS as Record<GrammarBudgetName, number>).maskWork = saved;
    }
    expect(computeMask(g, vocab, g.initial).mask.length).toBe(vocab.words);
  });
});
