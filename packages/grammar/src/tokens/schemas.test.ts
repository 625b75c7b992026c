// The end-to-end promise on real tokenizers: for JSONSchemaBench schemas (a subset per subset, to keep the test
// under a minute) compiled in strict mode, random generation under the token mask (uniform among the allowed tokens,
// forced tokens taken half the time, steered to the end after a budget) with Qwen3's and Llama 3's vocabularies gives
// documents that parse and that ajv (+ ajv-formats) validates. Any failure fails the test. Along the way, a sample of
// the masks (every loop and chain mask of the first schemas, and every 9th other) is compared with the brute-force
// reference (every token's bytes stepped through the grammar).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { realVocabulary, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import type { Grammar } from '../grammar.ts';
import { compileJsonSchema } from '../index.ts';
import { MaskCache } from './mask-cache.ts';
import { TokenMatcher } from './matcher.ts';
import { maskIds, randomWalk, referenceMask } from '@intab/testing/grammars';
import { mulberry32 } from '@intab/testing/random';
import { schemaValidator } from '@intab/testing/schema-validator';
import { TokenVocabulary } from './vocabulary.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
/** Schemas taken from each of the 10 subsets (the first that compile and that ajv compiles; compiling all 1,000
 * with both the grammar compiler and ajv takes about a minute). */
const PER_SUBSET = 15;

interface BenchSchema {
  id: string;
  subset: string;
  schema: unknown;
}

interface Compiled extends BenchSchema {
  grammar: Grammar;
  validate: NonNullable<ReturnType<typeof schemaValidator>>;
}

let sampled: Compiled[] | undefined;

/** Compiled once for both vocabularies (grammars are immutable; each matcher gets its own mask cache). */
function sample(): Compiled[] {
  if (sampled) return sampled;
  const lines = readFileSync(join(SHARED, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8').trim().split('\n');
  const taken = new Map<string, number>();
  const out: Compiled[] = [];
  for (const line of lines) {
    const s = JSON.parse(line) as BenchSchema;
    if ((taken.get(s.subset) ?? 0) >= PER_SUBSET) continue;
    let grammar: Grammar;
    try {
      grammar = compileJsonSchema(s.schema);
    } catch {
      continue; // not compiled in strict mode: coverage is the core's test
    }
    const validate = schemaValidator(s.schema);
    if (!validate) continue;
    taken.set(s.subset, (taken.get(s.subset) ?? 0) + 1);
    out.push({ ...s, grammar, validate });
  }
  return (sampled = out);
}

describe.each<RealTokenizerName>(['qwen3', 'llama3'])('JSONSchemaBench generation under the mask: %s', (name) => {
  let bytes: (Uint8Array | null)[];
  let vocab: TokenVocabulary;
  let schemas: Compiled[];
  beforeAll(() => {
    const real = realVocabulary(name);
    bytes = real.bytes;
    vocab = TokenVocabulary.from(bytes, { eos: real.tokenizer.stopIds });
    schemas = sample();
  }, 300_000); // ~60 s alone on 2 cores; more beside the other schema tests

  it('every document parses and validates', () => {
    const failures: string[] = [];
    const perSubset = new Map<string, number>();
    let tokens = 0;
    let forced = 0;
    let compared = 0;
    const paths = new Map<string, number>();
    for (const [i, s] of schemas.entries()) {
      const m = new TokenMatcher(s.grammar, vocab, { maskCache: new MaskCache() });
      let walk: ReturnType<typeof randomWalk>;
      try {
        let n = 0;
        walk = randomWalk(m, bytes, vocab.eos, mulberry32(1000 + i), {
          budget: 24,
          finishRate: 0.3,
          maxTokens: 3000,
          onMask: (mask) => {
            const got = mask();
            const path = m.lastPath!;
            paths.set(path, (paths.get(path) ?? 0) + 1);
            if (i < 40 && (path === 'loop' || path === 'chain' || n++ % 9 === 0)) {
              const want = referenceMask(s.grammar, bytes, vocab.eos, m.state, vocab.words);
              if (got.some((x, w) => x !== want[w])) {
                const g = new Set(maskIds(got));
                const r = new Set(maskIds(want));
                failures.push(`${s.id}: ${path} mask differs from the reference at ${JSON.stringify(s.grammar.key(m.state))}: extra ${[...g].filter((x) => !r.has(x)).slice(0, 5)} missing ${[...r].filter((x) => !g.has(x)).slice(0, 5)}`);
              }
              compared++;
            }
            return got;
          },
        });
      } catch (e) {
        failures.push(`${s.id}: ${(e as Error).message}`);
        continue;
      }
      tokens += walk.ids.length;
      forced += walk.forcedUsed;
      if (!walk.finished) {
        failures.push(`${s.id}: not finished after ${walk.ids.length} tokens`);
        continue;
      }
      let value: unknown;
      const text = new TextDecoder().decode(walk.bytes);
      try {
        value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(walk.bytes));
      } catch (e) {
        failures.push(`${s.id}: does not parse (${(e as Error).message}): ${text.slice(0, 300)}`);
        continue;
      }
      const { valid, errors } = s.validate(value);
      if (!valid) failures.push(`${s.id}: invalid ${JSON.stringify(errors).slice(0, 300)}: ${text.slice(0, 300)}`);
      perSubset.set(s.subset, (perSubset.get(s.subset) ?? 0) + 1);
    }
    console.log(`[grammar tokens] ${name}: ${schemas.length} schemas, ${tokens} tokens (${forced} forced), masks by method ${JSON.stringify(Object.fromEntries(paths))}, ${compared} compared with the reference, per subset ${JSON.stringify(Object.fromEntries(perSubset))}`);
    expect(failures).toEqual([]);
    expect(schemas.length).toBeGreaterThanOrEqual(100);
    expect(compared).toBeGreaterThan(100);
    expect(paths.get('chain') ?? 0).toBeGreaterThan(10);
  }, 300_000); // ~60 s alone on 2 cores; more beside the other schema tests
});
