// Token masks on a small hand-made vocabulary: the byte trie's layout, masks against the brute-force reference (every
// token's bytes stepped through the grammar) for every state of several grammars and by every method, EOS only where
// the grammar accepts, accept/rollback round trips, forced tokens, the LRU mask cache.

import { describe, expect, it } from 'vitest';
import { advance, type Grammar, type GrammarState } from '../grammar.ts';
import { computeMask } from './compute-mask.ts';
import { MaskCache, sharedMaskCache } from './mask-cache.ts';
import { forcedBytes, TokenMatcher } from './matcher.ts';
import { boundedString, choiceGrammar, jsonGrammar, literalGrammar, maskIds, randomWalk, referenceMask } from '@intab/testing/grammars';
import { mulberry32 } from '@intab/testing/random';
import { buildByteTrie, TokenVocabulary, type PackedEntries } from './vocabulary.ts';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Packs (bytes, id) pairs for buildByteTrie, as TokenVocabulary does inline. */
function packEntries(entries: readonly { bytes: Uint8Array; id: number }[]): PackedEntries {
  let total = 0;
  for (const e of entries) total += e.bytes.length;
  const data = new Uint8Array(total);
  const offset = new Uint32Array(entries.length + 1);
  const ids = new Int32Array(entries.length);
  let at = 0;
  entries.forEach((e, k) => {
    offset[k] = at;
    data.set(e.bytes, at);
    at += e.bytes.length;
    ids[k] = e.id;
  });
  offset[entries.length] = at;
  return { data, offset, ids };
}

// A small byte-level vocabulary: every single byte, then pieces of JSON, words, UTF-8 fragments and duplicates.
const PIECES = [
  '{"', '"}', '":', '":"', '","', '"]', '"}]', '}}', '{}', '[]', '[{"', 'name', 'na', 'me', '"name', ' world', 'hello', 'he',
  'true', 'tr', 'ue', 'null', 'false', '0', '12', '123', '-1', '1.5', 'e+', 'é', 'ü', '你好', '\\"', '\\n', '\\u', '00e9',
  'abc"', 'x"}', '"a"', 'a":1}', '{"a":"', '"}}', ',"', ':[', ']}', 'aé"', '😀', 'name"', 'Ġ',
];
const EOS = 256 + PIECES.length + 2;
function smallVocab(): (Uint8Array | null)[] {
  const tokens: (Uint8Array | null)[] = [];
  for (let b = 0; b < 256; b++) tokens.push(Uint8Array.of(b));
  for (const p of PIECES) tokens.push(enc.encode(p));
  tokens.push(Uint8Array.of(0xe4, 0xbd)); // a character's first two bytes
  tokens.push(enc.encode('hello')); // the same bytes as another id
  tokens.push(null); // EOS
  tokens.push(null); // another special token
  tokens.push(new Uint8Array(0)); // decodes to nothing
  return tokens;
}

const TOKENS = smallVocab();
const VOCAB = TokenVocabulary.from(TOKENS, { eos: [EOS] });

function expectSameMask(got: Uint32Array, want: Uint32Array, what: string): void {
  if (got.length !== want.length || got.some((x, i) => x !== want[i])) {
    const g = new Set(maskIds(got));
    const w = new Set(maskIds(want));
    const extra = [...g].filter((id) => !w.has(id)).slice(0, 10);
    const missing = [...w].filter((id) => !g.has(id)).slice(0, 10);
    throw new Error(`${what}: extra ${extra.map((id) => `${id}:${JSON.stringify(dec.decode(TOKENS[id] ?? new Uint8Array()))}`)} missing ${missing.map((id) => `${id}:${JSON.stringify(dec.decode(TOKENS[id] ?? new Uint8Array()))}`)}`);
  }
}

/** Every state reached by a prefix of one of the texts. */
function statesOf(g: Grammar, texts: readonly string[]): GrammarState[] {
  const out = new Map<string, GrammarState>();
  for (const text of texts) {
    const bytes = enc.encode(text);
    let s: GrammarState | null = g.initial;
    out.set(g.key(s), s);
    for (let i = 0; i < bytes.length && s !== null; i++) {
      s = g.step(s, bytes[i]);
      if (s !== null) out.set(g.key(s), s);
    }
    expect(s, text).not.toBeNull();
  }
  return [...out.values()];
}

describe('TokenVocabulary', () => {
  it('lays the trie out in preorder with subtree ends, depths and ids', () => {
    const { trie } = VOCAB;
    expect(trie.nodeCount).toBeGreaterThan(256);
    expect(trie.next[0]).toBe(trie.nodeCount);
    for (let i = 1; i < trie.nodeCount; i++) {
      expect(trie.next[i]).toBeGreaterThan(i);
      // Children sit right after their parent, one level deeper; a subtree ends before the parent's does.
      if (i + 1 < trie.next[i]) expect(trie.depth[i + 1]).toBe(trie.depth[i] + 1);
    }
    // Every token with bytes sits at the node its bytes lead to; EOS and empty tokens nowhere.
    const seen = new Map<number, string>();
    const path: number[] = [];
    for (let i = 1; i < trie.nodeCount; i++) {
      path.length = trie.depth[i] - 1;
      path.push(trie.byte[i]);
      for (let k = trie.tokStart[i]; k < trie.tokStart[i + 1]; k++) seen.set(trie.tokIds[k], path.join(','));
    }
    TOKENS.forEach((b, id) => {
      if (b && b.length > 0 && id !== EOS) expect(seen.get(id), `${id}`).toBe([...b].join(','));
      else expect(seen.has(id)).toBe(false);
    });
    expect(seen.size).toBe(trie.tokIds.length);
  });

  it('is cached by the bytes array and options; size pads the mask', () => {
    expect(TokenVocabulary.from(TOKENS, { eos: [EOS] })).toBe(VOCAB);
    expect(TokenVocabulary.from([...TOKENS], { eos: [EOS] })).not.toBe(VOCAB);
    const padded = TokenVocabulary.from(TOKENS, { eos: [EOS], size: 1000 });
    expect(padded.size).toBe(1000);
    expect(padded.words).toBe(32);
    expect(VOCAB.words).toBe(Math.ceil(TOKENS.length / 32));
    expect(() => TokenVocabulary.from(TOKENS, { eos: [5000] })).toThrow(RangeError);
  });

  it('longestPrefix: the longest token spelling the start of the bytes, lowest id among equals', () => {
    const hello = enc.encode('hello world');
    const [id, len] = VOCAB.longestPrefix(hello)!;
    expect(len).toBe(5);
    expect(id).toBe(256 + PIECES.indexOf('hello'));
    expect(VOCAB.longestPrefix(hello, 5)).toEqual([256 + PIECES.indexOf(' world'), 6]);
    expect(VOCAB.longestPrefix(enc.encode('{"a":"b'))).toEqual([256 + PIECES.indexOf('{"a":"'), 6]);
    expect(TokenVocabulary.from([enc.encode('ab')]).longestPrefix(enc.encode('ac'))).toBeUndefined();
  });

  it('buildByteTrie handles repeated bytes and a root id', () => {
    const t = buildByteTrie(packEntries([
      { bytes: enc.encode('b'), id: 7 }, { bytes: enc.encode('ab'), id: 3 }, { bytes: new Uint8Array(0), id: 9 },
      { bytes: enc.encode('a'), id: 1 }, { bytes: enc.encode('ab'), id: 2 },
    ]));
    // root(9) → a(1) → b(3, 2); root → b(7)
    expect(t.nodeCount).toBe(4);
    expect([...t.byte]).toEqual([0, 97, 98, 98]);
    expect([...t.depth]).toEqual([0, 1, 2, 1]);
    expect([...t.next]).toEqual([4, 3, 3, 4]);
    expect([...t.tokIds.subarray(t.tokStart[0], t.tokStart[1])]).toEqual([9]);
    expect([...t.tokIds.subarray(t.tokStart[2], t.tokStart[3])]).toEqual([3, 2]);
  });
});

const DOCS = [
  '{"name":"hello world","a":[1,2.5e+3,-0.5,true,false,null],"b":{"c":"é你好😀\\n\\"\\u00e9"}}',
  '{}',
  '{"a":{},"b":[],"c":[{"d":"x"}]}',
  '{"x":"aé","y":""}',
];

describe('masks equal the brute-force reference', () => {
  const cases: [string, Grammar, string[]][] = [
    ['bounded string 40', boundedString(40), ['{"s":"' + 'abcdefghij'.repeat(4) + '"}', '{"s":"a"}']],
    ['literal', literalGrammar('{"name":"hello"}'), ['{"name":"hello"}']],
    ['choice', choiceGrammar(['true', 'tr', 'false', 'null', '{"a":1}']), ['true', 'false', 'null', '{"a":1}']],
    ['json', jsonGrammar(3), DOCS],
    ['bounded string', boundedString(7), ['{"s":"abcdefg"}', '{"s":"a"}']],
  ];
  for (const [name, g, texts] of cases) {
    it(name, () => {
      const paths = new Set<string>();
      for (const s of statesOf(g, texts)) {
        const want = referenceMask(g, TOKENS, [EOS], s, VOCAB.words);
        const auto = computeMask(g, VOCAB, s);
        paths.add(auto.path);
        expectSameMask(auto.mask, want, `${name} ${g.key(s)} (${auto.path})`);
        expectSameMask(computeMask(g, VOCAB, s, 'walk').mask, want, `${name} ${g.key(s)} (walk)`);
        expectSameMask(new TokenMatcher(g, VOCAB, { maskCache: new MaskCache() }).mask(), referenceMask(g, TOKENS, [EOS], g.initial, VOCAB.words), `${name} initial`);
      }
      if (name === 'json') expect(paths).toEqual(new Set(['walk', 'loop', 'lead', 'chain', 'finished'])); // lead: a UTF-8 continuation, then the string's loop
      if (name === 'bounded string 40') expect(paths.has('chain')).toBe(true);
    });
  }

  it('a loop walk is reused by another string with the same loop, and stays right', () => {
    const g = jsonGrammar(3);
    const a = advance(g, g.initial, '{"a":"x')!;
    const b = advance(g, g.initial, '{"a":[{"b":"')!; // another stack: another key, the same loop
    expect(g.key(a)).not.toBe(g.key(b));
    expect(computeMask(g, VOCAB, a).path).toBe('loop');
    const before = VOCAB.walkCache.size;
    const m = computeMask(g, VOCAB, b);
    expect(m.path).toBe('loop');
    expect(VOCAB.walkCache.size).toBe(before);
    expectSameMask(m.mask, referenceMask(g, TOKENS, [EOS], b, VOCAB.words), 'nested string');
  });
});

describe('TokenMatcher', () => {
  it('accept follows the grammar; a refused token changes nothing', () => {
    const g = jsonGrammar(3);
    const m = new TokenMatcher(g, VOCAB);
    const id = (p: string) => 256 + PIECES.indexOf(p);
    expect(m.accept(id('"}'))).toBe(false);
    expect(m.accepted).toEqual([]);
    expect(m.accept(id('{"'))).toBe(true);
    expect(m.accept(id('name'))).toBe(true);
    expect(m.accept(id('":"'))).toBe(true);
    expect(m.accept(EOS)).toBe(false); // not accepting inside a string
    expect(m.accept(EOS + 1)).toBe(false); // a special token without bytes
    expect(m.accept(EOS + 2)).toBe(false); // an empty token
    expect(m.accept(id('"}'))).toBe(true);
    expect(m.canEnd).toBe(true);
    expect(m.done).toBe(true); // the grammar is finished: nothing may follow
    const mask = m.mask();
    expect(maskIds(mask)).toEqual([EOS]);
    expect(m.accept(EOS)).toBe(true);
    expect(m.done).toBe(true);
    expect(m.canEnd).toBe(false);
    expect(maskIds(m.mask())).toEqual([]);
    expect(m.accept(EOS)).toBe(false);
    m.rollback(1); // the EOS
    expect(m.canEnd).toBe(true);
    expect(maskIds(m.mask())).toEqual([EOS]);
    expect(m.accepted.map((t) => dec.decode(TOKENS[t]!))).toEqual(['{"', 'name', '":"', '"}']);
  });

  it('rollback restores the state and the mask, any number of times', () => {
    const g = jsonGrammar(3);
    const m = new TokenMatcher(g, VOCAB);
    const r = mulberry32(3);
    for (let round = 0; round < 20; round++) {
      const keys = [g.key(m.state)];
      const masks = [maskIds(m.mask())];
      let n = 0;
      for (let k = 0; k < 8 && !m.done; k++) {
        const allowed = maskIds(m.mask()).filter((id) => id !== EOS);
        if (allowed.length === 0) break;
        expect(m.accept(allowed[Math.floor(r() * allowed.length)])).toBe(true);
        keys.push(g.key(m.state));
        masks.push(maskIds(m.mask()));
        n++;
      }
      const back = Math.floor(r() * (n + 1));
      m.rollback(back);
      expect(g.key(m.state)).toBe(keys[n - back]);
      expect(maskIds(m.mask())).toEqual(masks[n - back]);
    }
    expect(() => m.rollback(m.accepted.length + 1)).toThrow(RangeError);
    expect(() => m.rollback(-1)).toThrow(RangeError);
    m.rollback(m.accepted.length);
    expect(g.key(m.state)).toBe(g.key(g.initial));
  });

  it('accept() takes exactly the tokens of the mask', () => {
    const g = jsonGrammar(3);
    const m = new TokenMatcher(g, VOCAB);
    m.acceptTokens([256 + PIECES.indexOf('{"a":"')]);
    const allowed = new Set(maskIds(m.mask()));
    for (let id = 0; id < TOKENS.length; id++) {
      const took = m.accept(id);
      if (took) m.rollback(1);
      expect(took, `${id}`).toBe(allowed.has(id));
    }
  });

  it('EOS only where the grammar accepts', () => {
    const g = choiceGrammar(['ab', 'abcd']);
    const m = new TokenMatcher(g, VOCAB);
    const a = 'a'.charCodeAt(0);
    expect(maskIds(m.mask())).toEqual([a]);
    m.accept(a);
    expect(m.canEnd).toBe(false);
    m.accept(a + 1);
    expect(m.canEnd).toBe(true);
    expect(m.done).toBe(false); // 'abcd' may still follow
    expect(maskIds(m.mask())).toEqual([a + 2, EOS]);
  });

  it('forced(): the fixed text in the fewest tokens (longest first on ties); [] at a branch', () => {
    const text = '{"name":"';
    const g = choiceGrammar([`${text}a"}`, `${text}b"}`]);
    const m = new TokenMatcher(g, VOCAB);
    expect(dec.decode(forcedBytes(g, m.state))).toBe(text);
    const forced = m.forced();
    expect(forced.map((id) => dec.decode(TOKENS[id]!)).join('')).toBe(text);
    // Not the greedy '{"' 'name"' ':' '"': the fewest tokens, and among those the longest first token.
    expect(forced.map((id) => dec.decode(TOKENS[id]!))).toEqual(['{"', 'name', '":"']);
    expect(m.acceptTokens(forced)).toBe(forced.length);
    expect(m.forced()).toEqual([]);
    m.accept('a'.charCodeAt(0));
    expect(m.forced().map((id) => dec.decode(TOKENS[id]!))).toEqual(['"}']);
    // Forced text stops where the document may end.
    const h = choiceGrammar(['ab', 'abcd']);
    expect(dec.decode(forcedBytes(h, h.initial))).toBe('ab');
  });

  it('forced() on a vocabulary without single-byte tokens stops where no token fits', () => {
    const tokens = ['ab', 'c'].map((t) => enc.encode(t));
    const v = TokenVocabulary.from(tokens);
    const g = literalGrammar('abxc');
    const m = new TokenMatcher(g, v);
    expect(dec.decode(forcedBytes(g, m.state))).toBe('abxc');
    expect(m.forced()).toEqual([0]);
  });

  it('shares masks through the cache; the LRU bound holds', () => {
    const g = jsonGrammar(3);
    const shared = sharedMaskCache(g, VOCAB);
    expect(sharedMaskCache(g, VOCAB)).toBe(shared);
    const a = new TokenMatcher(g, VOCAB);
    const b = new TokenMatcher(g, VOCAB);
    expect(a.maskCache).toBe(shared);
    const m1 = a.mask();
    expect(b.mask()).toBe(m1);
    expect(b.lastPath).toBe('cached');
    const small = new MaskCache({ maxEntries: 2 });
    const c = new TokenMatcher(g, VOCAB, { maskCache: small });
    const id = (p: string) => 256 + PIECES.indexOf(p);
    c.mask();
    expect(c.accept(id('{"a":"'))).toBe(true);
    c.mask();
    expect(c.accept(id('x"}'))).toBe(true);
    c.mask();
    expect(c.lastPath).not.toBe('cached');
    c.rollback(2);
    c.mask(); // the first was evicted
    expect(c.lastPath).not.toBe('cached');
    expect(c.accept(id('{"a":"'))).toBe(true);
    c.mask(); // the second was evicted by the first
    expect(c.lastPath).not.toBe('cached');
    c.rollback(1);
    c.mask(); // the two most recent are kept
    expect(c.lastPath).toBe('cached');
  });

  it('a random walk over the small vocabulary gives JSON', () => {
    const g = jsonGrammar(3);
    for (let seed = 1; seed <= 30; seed++) {
      const m = new TokenMatcher(g, VOCAB);
      const walk = randomWalk(m, TOKENS, [EOS], mulberry32(seed), { budget: 30, maxTokens: 400 });
      expect(walk.finished, `seed ${seed}`).toBe(true);
      const text = new TextDecoder('utf-8', { fatal: true }).decode(walk.bytes);
      expect(() => JSON.parse(text), text).not.toThrow();
    }
  });
});
