// Fuzzing the regex compiler: the 441 patterns of JSONSchemaBench (pattern and patternProperties) with characters
// inserted, dropped and spans repeated, and patterns generated from the syntax (classes, escapes, groups, named groups,
// alternation, quantifiers with small and huge counts, anchors, lookaround and backreferences, which are refused).
// Each pattern is compiled as a whole document (compileRegex) and, every fourth case, as a schema's `pattern` (search
// semantics, intersected with a length bound). Every case must compile (then a walk and sometimes a token mask) or end
// in a typed IntabGrammarError; no case may hang.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { IntabGrammarError } from '../errors.ts';
import { compileRegex } from '../regex-grammar.ts';
import { compileJsonSchema } from '../schema-compile.ts';
import { exercise } from './test-exercise.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';
import { mutateText } from './test-text-mutations.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const HANG_MS = 5_000;

/** Every pattern and patternProperties key in the JSONSchemaBench sample. */
function realPatterns(): string[] {
  const out = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'pattern' && typeof x === 'string') out.add(x);
        if (k === 'patternProperties' && x !== null && typeof x === 'object') for (const p of Object.keys(x)) out.add(p);
        walk(x);
      }
    }
  };
  for (const line of readFileSync(join(SHARED, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8').trim().split('\n')) walk((JSON.parse(line) as { schema: unknown }).schema);
  return [...out];
}

const ALPHABET = ['(', ')', '(?:', '(?<n>', '(?=', '(?!', '(?<=', '|', '*', '+', '?', '*?', '{', '}', '{3}', '{2,5}', '{0,}', '{100000}', '{99999999999999999999}', '[', ']', '[^', '-', '\\', '\\d', '\\w', '\\s', '\\b', '\\1', '\\k<n>', '\\p{L}', '\\u{1F600}', '\\uD83D\\uDE00', '\\x4', '\\c', '.', '^', '$', 'a', 'é', '😀', '\u0000'];

function generate(r: Random): string {
  const atom = (d: number): string => {
    if (d <= 0 || r.chance(0.4)) return r.pick(['a', 'b', '.', '\\d', '\\w', '\\S', '[a-z]', '[^"\\\\]', '[\\u0100-\\uffff]', '\\u00e9', '😀', '\\.', '[z-a]', '\\', '(?=a)', '\\2']);
    switch (r.int(4)) {
      case 0: return '(' + alt(d - 1) + ')';
      case 1: return '(?:' + alt(d - 1) + ')';
      case 2: return '[' + (r.chance(0.3) ? '^' : '') + r.pick(['a-z', '0-9A-F', '\\d_', '\\s\\S', '-', ']', 'é-ü']) + ']';
      default: return r.pick(['^', '$']) + atom(d - 1);
    }
  };
  const quant = () => (r.chance(0.6) ? '' : r.pick(['*', '+', '?', '{3}', '{1,4}', '{0,64}', '{2,}', '{1000}', '{5,2}', '*?', '{0,100000}']));
  const seq = (d: number) => Array.from({ length: 1 + r.int(4) }, () => atom(d) + quant()).join('');
  const alt = (d: number): string => Array.from({ length: 1 + r.int(3) }, () => seq(d)).join('|');
  return alt(3);
}

test('fuzz: regexes compile or end in a typed IntabGrammarError, none hangs', async () => {
  const real = realPatterns();
  const report = await fuzz<{ pattern: string; asSchema: boolean; walk: Random }>({
    name: 'regex',
    seed: 0x5eed03,
    generate: (r, i) => ({ pattern: i % 3 === 2 ? generate(r) : r.chance(0.2) ? r.pick(real) : mutateText(r, r.pick(real), ALPHABET, 3), asSchema: i % 4 === 3, walk: r }),
    run: ({ pattern, asSchema, walk }) =>
      exercise(asSchema ? compileJsonSchema({ type: 'string', pattern, maxLength: 64 }) : compileRegex(pattern), walk),
    typed: (e) => e instanceof IntabGrammarError,
    show: ({ pattern, asSchema }) => `${asSchema ? 'schema pattern' : 'regex'} ${JSON.stringify(pattern)}`,
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.compiled ?? 0).toBeGreaterThan(report.cases / 10);
}, fuzzTestTimeout());
