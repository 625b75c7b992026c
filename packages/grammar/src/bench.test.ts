// The measurements `intab bench grammar` calls (bench.ts) do what they say, checked by their counts, never by their
// times: the repeat pass generates the cold pass's documents again and every mask is then a cache hit; every mask is
// filed under one path; the step cost feeds the documents it names.
import { describe, expect, test } from 'vitest';
import { measureStepCost, profileMasks } from './bench.ts';
import { compileJsonSchema } from './index.ts';
import { mulberry32 } from '@intab/testing/random';
import { TokenVocabulary } from './tokens/vocabulary.ts';

const enc = new TextEncoder();
const PIECES = ['{"', '"}', '":', '":"', '","', '"]', '}}', '[]', '[{"', 'name', 'true', 'false', 'null', '12', '-1', '1.5', 'é', '😀', '\\"', 'abc"', ':[', ']}'];

/** Every single byte, some pieces of JSON, then EOS. */
function vocabulary(): { vocab: TokenVocabulary; eos: number } {
  const tokens: (Uint8Array | null)[] = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  for (const p of PIECES) tokens.push(enc.encode(p));
  tokens.push(null);
  return { vocab: TokenVocabulary.from(tokens, { eos: [tokens.length - 1] }), eos: tokens.length - 1 };
}

const SCHEMAS = [
  { type: 'object', properties: { name: { type: 'string', maxLength: 12 }, ok: { type: 'boolean' } }, required: ['name', 'ok'], additionalProperties: false },
  { type: 'array', items: { type: 'integer', minimum: -5, maximum: 500 }, maxItems: 6 },
  { enum: ['red', 'green', { hex: '#00ff00' }] },
];

describe('profileMasks', () => {
  test('three passes over every grammar: repeat replays cold from the caches, every mask under one path', () => {
    const { vocab } = vocabulary();
    const grammars = SCHEMAS.map((s) => compileJsonSchema(s));
    const p = profileMasks(vocab, grammars, { random: mulberry32, seed: 3, documents: 2, minTokens: 4, maxTokens: 200 });
    expect(p).toMatchObject({ vocab: vocab.size, trie_nodes: vocab.trie.nodeCount, grammars: 3, walk_cache_entries: vocab.walkCache.size });
    for (const pass of [p.cold, p.warm, p.repeat]) {
      expect(pass.documents).toBe(6);
      expect(pass.masks).toBeGreaterThanOrEqual(6); // at least one mask per document
      expect(pass.tokens).toBeGreaterThanOrEqual(pass.masks); // one sampled token per mask, forced tokens besides
      expect(Object.values(pass.by_path).reduce((n, t) => n + t.masks, 0)).toBe(pass.masks);
    }
    expect(p.repeat.tokens).toBe(p.cold.tokens);
    expect(p.repeat.masks).toBe(p.cold.masks);
    expect(Object.keys(p.repeat.by_path)).toEqual(['cached']);
    expect(Object.keys(p.cold.by_path).filter((k) => k !== 'cached').length).toBeGreaterThan(0); // cold computes masks
  });

  test('the same seed gives the same documents; another seed other ones', () => {
    const grammars = SCHEMAS.map((s) => compileJsonSchema(s));
    const run = (seed: number) => profileMasks(vocabulary().vocab, grammars, { random: mulberry32, seed, minTokens: 4, maxTokens: 200 });
    const [a, b, c] = [run(9), run(9), run(10)];
    expect([b.cold.tokens, b.cold.masks]).toEqual([a.cold.tokens, a.cold.masks]);
    expect([c.cold.tokens, c.cold.masks]).not.toEqual([a.cold.tokens, a.cold.masks]);
  });

  test('a grammar that allows no token of the vocabulary is an error, not an endless loop', () => {
    const tokens: (Uint8Array | null)[] = [enc.encode('x'), null];
    const vocab = TokenVocabulary.from(tokens, { eos: [1] });
    expect(() => profileMasks(vocab, [compileJsonSchema({ type: 'integer' })], { random: mulberry32, seed: 1 })).toThrow(/allows no token after 0 tokens/);
  });
});

describe('measureStepCost', () => {
  test('steps the count it was given and feeds its twenty fixed documents through a fresh grammar', () => {
    const c = measureStepCost({ warmSteps: 1000 });
    expect(c.warm_steps).toBe(1000);
    // {"a":[0],"b":"2024-01-10T00:30:00Z"} ... {"a":[19,56.25,93.5,130.75,168,205.25],"b":"2024-08-19T09:31:00Z"}
    expect(c.fresh_bytes).toBe(1058);
  });
});
