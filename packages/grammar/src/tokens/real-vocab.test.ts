// Token masks over real vocabularies (Qwen3 151k and Llama 3 128k byte-level BPE, Mistral's 32k and Gemma 3's 262k SentencePiece): random
// walks under the mask of a hand-written JSON grammar give JSON that parses; masks at sampled states equal the
// brute-force reference; forced tokens decode, through the real tokenizer, to the forced text.

import { beforeAll, describe, expect, it } from 'vitest';
import { realVocabulary, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { advance } from '../grammar.ts';
import { compileJsonSchema } from '../index.ts';
import { computeMask } from './compute-mask.ts';
import { MaskCache } from './mask-cache.ts';
import { TokenMatcher } from './matcher.ts';
import { choiceGrammar, jsonGrammar, maskIds, randomWalk, referenceMask } from '@intab/testing/grammars';
import { mulberry32 } from '@intab/testing/random';
import { schemaValidator } from '@intab/testing/schema-validator';
import { TokenVocabulary } from './vocabulary.ts';

const fatal = new TextDecoder('utf-8', { fatal: true });

describe.each<RealTokenizerName>(['qwen3', 'llama3', 'llama2', 'gemma3'])('real vocabulary: %s', (name) => {
  let tok: ReturnType<typeof realVocabulary>['tokenizer'];
  let bytes: (Uint8Array | null)[];
  let vocab: TokenVocabulary;
  beforeAll(() => {
    ({ tokenizer: tok, bytes } = realVocabulary(name));
    vocab = TokenVocabulary.from(bytes, { eos: tok.stopIds });
  }, 60_000);

  it('random walks under the mask give JSON; sampled masks equal the reference', () => {
    const g = jsonGrammar(3);
    const cache = new MaskCache();
    let compared = 0;
    let walks = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const m = new TokenMatcher(g, vocab, { maskCache: cache });
      const r = mulberry32(seed * 7919);
      let step = 0;
      const walk = randomWalk(m, bytes, vocab.eos, r, {
        budget: 40,
        maxTokens: 600,
        onMask: (mask) => {
          const got = mask();
          // Every 7th mask of the first walks against the brute-force reference (~1M grammar steps each).
          if (seed <= 4 && step++ % 7 === 0) {
            const want = referenceMask(g, bytes, vocab.eos, m.state, vocab.words);
            expect(maskIds(got), `${name} seed ${seed} at ${g.key(m.state)}`).toEqual(maskIds(want));
            compared++;
          }
          return got;
        },
      });
      expect(walk.finished, `seed ${seed}`).toBe(true);
      const text = fatal.decode(walk.bytes);
      expect(() => JSON.parse(text), text).not.toThrow();
      // The tokenizer decodes the ids to the same text (SentencePiece drops the leading space of a text).
      const decoded = tok.decode(walk.ids, { skipSpecialTokens: true });
      expect(decoded).toBe(name === 'llama2' && text.startsWith(' ') ? text.slice(1) : text);
      walks++;
    }
    expect(walks).toBe(12);
    expect(compared).toBeGreaterThan(8);
  }, 120_000);

  it('loop walks and plain walks agree on string states of every kind', () => {
    const g = jsonGrammar(3);
    const utf8 = (text: string, ...more: number[]) => Uint8Array.from([...new TextEncoder().encode(text), ...more]);
    const paths = new Set<string>();
    // The last two end inside a character (the first bytes of 你, E4 BD A0): a lead into the string's loop.
    for (const prefix of ['{"a":"', '{"a":"x\\', '{"a":"\u00e9', '{"a":["\u4f60', '{"a":{"b":"\\u00', '{"', '{"a":1', '{"a":[', utf8('{"a":"', 0xe4), utf8('{"a":"x', 0xe4, 0xbd)]) {
      const s = advance(g, g.initial, prefix)!;
      const want = referenceMask(g, bytes, vocab.eos, s, vocab.words);
      const got = computeMask(g, vocab, s);
      paths.add(got.path);
      expect(maskIds(got.mask), String(prefix)).toEqual(maskIds(want));
      expect(maskIds(computeMask(g, vocab, s, 'walk').mask), String(prefix)).toEqual(maskIds(want));
    }
    expect(paths).toContain('lead');
  }, 60_000);

  it('compiled schemas: string masks at every length equal the reference (loops, counted strings, chains, chain ends)', () => {
    const counted = { type: 'string', maxLength: 8 };
    const cases: [unknown, string[]][] = [
      [{ type: 'object', properties: { s: { type: 'string', minLength: 3, maxLength: 24 } }, required: ['s'] }, ['x', '\u00e9', '\u4f60', 'a\\n', '\\u00e9']],
      [{ type: 'object', properties: { s: { type: 'string', maxLength: 300 } }, required: ['s'] }, ['ab']],
      [{ type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]{2,30}$' } }, required: ['s'] }, ['q']],
      [{ type: 'object', properties: { s: { type: 'string', pattern: '^[a-z0-9]+$', minLength: 4, maxLength: 12 } }, required: ['s'] }, ['q', '7']],
      // Not one class counted: the regex automaton's states go one by one (a chain).
      [{ type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]{2,30}-?$' } }, required: ['s'] }, ['q']],
      // Two strings at one place (either branch), the same bound, different reserves (0, and 3 for \S+@\S+).
      [{ anyOf: [{ type: 'object', properties: { s: { type: 'string', maxLength: 40, pattern: '^\\S+@\\S+$' }, b: { type: 'boolean' } }, required: ['s', 'b'] }, { type: 'object', properties: { s: { type: 'string', maxLength: 40, pattern: '^[a-z]+$' }, a: { type: 'integer' } }, required: ['s', 'a'] }] }, ['x', 'x@']],
      // No upper bound, and a format whose reserve is not known (too many states to look through).
      [{ type: 'object', properties: { s: { type: 'string', format: 'uri', minLength: 3 } }, required: ['s'] }, ['h']],
      // A first letter, then anything: a lead whose first byte most tokens fail.
      [{ type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]' } }, required: ['s'] }, ['q']],
      // The string on two stacks (either branch may go on after it).
      [{ anyOf: [{ type: 'object', properties: { s: counted, a: { type: 'integer' } }, required: ['s', 'a'] }, { type: 'object', properties: { s: counted, b: { type: 'boolean' } }, required: ['s', 'b'] }] }, ['x']],
      [{ type: 'object', properties: { s: { type: 'string' }, n: { type: 'integer', minimum: 10, maximum: 999 } }, required: ['s', 'n'] }, ['a\\n']],
    ];
    const paths = new Set<string>();
    for (const [schema, units] of cases) {
      const g = compileJsonSchema(schema);
      for (const unit of units) {
        // (every length for SentencePiece's one-byte pieces; Gemma 3's 262k ids make each reference mask dear)
        for (let k = 0; k <= 26; k += name === 'llama2' ? 1 : name === 'gemma3' ? 9 : 3) {
          const prefix = `{"s":"${JSON.parse(`"${unit}"`).repeat(k)}`;
          const s = advance(g, g.initial, prefix);
          if (s === null) continue;
          const got = computeMask(g, vocab, s);
          paths.add(got.path);
          expect(maskIds(got.mask), `${JSON.stringify(schema)} ${prefix} (${got.path})`).toEqual(maskIds(referenceMask(g, bytes, vocab.eos, s, vocab.words)));
        }
      }
    }
    expect(paths).toContain('counted');
    expect(paths).toContain('chain');
    expect(paths).toContain('loop');
  }, 120_000);

  it('counted strings under random walks: every counted mask equals the reference', () => {
    // Length bounds over rest machines that loop on one state (any string, one class) and that do not (\S+@\S+, a
    // word pattern: tokens near the bound are refused unless the pattern can still end), a string on several stacks
    // (array items), and the closing quote at every count.
    const schema = {
      type: 'object',
      properties: {
        a: { type: 'string', minLength: 2, maxLength: 6 },
        b: { type: 'string', pattern: '^\\S+@\\S+$', maxLength: 20 },
        c: { type: 'string', pattern: '^[a-z0-9_]{3,8}$' },
        d: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 3 },
        e: { type: 'string', pattern: '^[a-z]+( [a-z]+)*$', maxLength: 20 },
      },
      required: ['a', 'b', 'c', 'd', 'e'],
      additionalProperties: false,
    };
    const g = compileJsonSchema(schema);
    const validate = schemaValidator(schema);
    const want = name === 'llama2' ? 60 : 24;
    let compared = 0;
    for (let seed = 1; seed <= 40 && compared < want; seed++) {
      const m = new TokenMatcher(g, vocab, { maskCache: new MaskCache() });
      const walk = randomWalk(m, bytes, vocab.eos, mulberry32(seed * 104729), {
        budget: 60,
        maxTokens: 200,
        forcedRate: 1,
        onMask: (mask) => {
          const got = mask();
          if (m.lastPath === 'counted' && compared < want) {
            expect(maskIds(got), `${name} seed ${seed} after ${JSON.stringify(fatal.decode(Uint8Array.from(m.accepted.flatMap((id) => [...(bytes[id] ?? [])]))))}`).toEqual(maskIds(referenceMask(g, bytes, vocab.eos, m.state, vocab.words)));
            compared++;
          }
          return got;
        },
      });
      expect(walk.finished).toBe(true);
      const doc = JSON.parse(fatal.decode(walk.bytes));
      expect(validate!(doc).valid, JSON.stringify(doc)).toBe(true);
    }
    expect(compared).toBe(want);
  }, 120_000);

  it('object keys beside declared names (a lead into the key loop) equal the reference', () => {
    // Declared names with a shared initial, a multi-byte initial and an escaped quote; any other key is allowed, with
    // a value of another type than the declared ones' (so `split":1` is right for the loop's keys and wrong here).
    const schema = { type: 'object', properties: { split: { type: 'string' }, spam: { type: 'boolean' }, avg: { type: 'integer' }, été: { type: 'null' }, 'a"b': { type: 'string' } }, additionalProperties: { type: 'integer' } };
    const g = compileJsonSchema(schema);
    const paths = new Set<string>();
    for (const prefix of ['{"', '{"avg":1,"', '{"avg":1,"s', '{"avg":1,"sp', '{"avg":1,"spl', '{"avg":1,"split', '{"avg":1,"spam', '{"avg":1,"\\u00e9', '{"avg":1,"\u00e9', '{"avg":1,"a', '{"avg":1,"a\\', '{"avg":1,"x']) {
      const s = advance(g, g.initial, prefix);
      expect(s, prefix).not.toBeNull();
      const got = computeMask(g, vocab, s!);
      paths.add(got.path);
      expect(maskIds(got.mask), `${prefix} (${got.path})`).toEqual(maskIds(referenceMask(g, bytes, vocab.eos, s!, vocab.words)));
    }
    expect(paths).toContain('lead');
  }, 120_000);

  it('forced tokens decode to the forced text', () => {
    const fixed = '{"name":"';
    const g = choiceGrammar([`${fixed}Ann","age":3}`, `${fixed}Bob","age":4}`]);
    const m = new TokenMatcher(g, vocab);
    const forced = m.forced();
    expect(forced.length).toBeGreaterThan(0);
    expect(forced.length).toBeLessThanOrEqual(tok.encode(fixed, { addSpecialTokens: false }).length);
    const text = tok.decode(forced);
    expect(name === 'llama2' ? text.replace(/^ /, '') : text).toBe(fixed);
    expect(m.acceptTokens(forced)).toBe(forced.length);
    expect(m.forced()).toEqual([]);
    const b = 'B'.charCodeAt(0);
    const bId = vocab.longestPrefix(Uint8Array.of(b))![0];
    expect(m.accept(bId)).toBe(true);
    expect(tok.decode(m.forced())).toBe('ob","age":4}');
  });
});
