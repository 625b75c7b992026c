// The streaming detokenizer on real tokenizers of both kinds: characters split across byte-fallback tokens
// (SentencePiece) and across byte-level BPE pieces (Qwen3) are held back until whole, SentencePiece's leading space
// is stripped exactly as decode() does, and — property-style over many random id slices, including random byte
// tokens that never form valid UTF-8 — the deltas plus flush() always equal decode(all ids).

import { beforeAll, describe, expect, it } from 'vitest';
import { createDetokenizer } from './detokenizer.ts';
import { mulberry32 } from '@intab/testing/random';
import { CORPUS, randomTexts, realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { loadTokenizer, type Tokenizer } from './tokenizer.ts';

/** Every delta the detokenizer gives for `ids`, flush last. */
function stream(tok: Tokenizer, ids: readonly number[], skipSpecialTokens = false): string[] {
  const detok = createDetokenizer(tok, { skipSpecialTokens });
  const out = ids.map((id) => detok.push(id));
  out.push(detok.flush());
  return out;
}

const tokenizers = new Map<RealTokenizerName, Tokenizer>();
beforeAll(() => {
  for (const name of ['qwen3', 'llama2'] as const) tokenizers.set(name, loadTokenizer(realTokenizerFiles(name)));
});

describe('characters split across tokens are held back until whole', () => {
  it('SentencePiece byte fallback: 👨 is ▁ + four <0xNN> tokens', () => {
    const tok = tokenizers.get('llama2')!;
    const ids = tok.encode('👨 ok', { addSpecialTokens: false });
    expect(ids.slice(0, 5)).toEqual([28705, 243, 162, 148, 171]);
    expect(stream(tok, ids)).toEqual(['', '', '', '', '👨', ' ok', '']);
  });

  it('byte-level BPE: the ZWJ between 👨 and 👩 is split over two pieces', () => {
    const tok = tokenizers.get('qwen3')!;
    const ids = tok.encode('👨‍👩');
    expect(ids.map((id) => tok.idToToken(id))).toEqual(['ðŁĳ¨', 'âĢ', 'į', 'ðŁĳ©']);
    expect(stream(tok, ids)).toEqual(['👨', '', '\u200D', '👩', '']);
  });

  it('SentencePiece leading space: stripped at the start only, as decode() does', () => {
    const tok = tokenizers.get('llama2')!;
    const ids = tok.encode('Hello  world', { addSpecialTokens: false }); // ▁Hello ▁ ▁world
    expect(stream(tok, ids)).toEqual(['Hello', ' ', ' world', '']);
    expect(stream(tok, tok.encode('Hi')).join('')).toBe('<s> Hi');
    expect(stream(tok, tok.encode('Hi'), true)).toEqual(['', 'Hi', '']);
  });

  it('an unfinished character at the end comes out of flush() as decode() has it', () => {
    const tok = tokenizers.get('llama2')!;
    expect(stream(tok, [243, 162])).toEqual(['', '', tok.decode([243, 162])]);
    expect(tok.decode([243, 162])).toContain('\uFFFD');
  });

  it('flush() ends the sequence: the next push starts a new text', () => {
    const tok = tokenizers.get('llama2')!;
    const detok = createDetokenizer(tok);
    const [hello, world] = tok.encode('Hello world', { addSpecialTokens: false });
    expect(detok.push(hello)).toBe('Hello');
    expect(detok.flush()).toBe('');
    expect(detok.push(world)).toBe('world'); // a first token again: its space is stripped
  });
});

describe.each<RealTokenizerName>(['qwen3', 'llama2'])('%s: deltas + flush() === decode(ids)', (name) => {
  it('whole encodings of the corpus stream back to the text, never with a U+FFFD from a split', () => {
    const tok = tokenizers.get(name)!;
    for (const text of [...CORPUS, ...randomTexts(60, 3)]) {
      if (/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) continue; // lone surrogates
      const ids = tok.encode(text);
      const deltas = stream(tok, ids);
      expect(deltas.join('')).toBe(tok.decode(ids));
      for (const d of deltas) expect({ text, d, bad: d.includes('\uFFFD') }).toEqual({ text, d, bad: false });
    }
  });

  it('400 random slices of encoded text (cut anywhere, even inside a character)', () => {
    const tok = tokenizers.get(name)!;
    const all = CORPUS.flatMap((t) => tok.encode(t));
    const r = mulberry32(name === 'qwen3' ? 21 : 22);
    for (let i = 0; i < 400; i++) {
      const a = Math.floor(r() * all.length);
      const ids = all.slice(a, a + 1 + Math.floor(r() * 40));
      const skip = i % 2 === 1;
      expect({ ids, text: stream(tok, ids, skip).join('') }).toEqual({ ids, text: tok.decode(ids, { skipSpecialTokens: skip }) });
    }
  });

  it('400 random id sequences, half of them raw byte tokens and some special tokens', () => {
    const tok = tokenizers.get(name)!;
    // Byte pieces: llama2's <0x00>..<0xFF> are ids 3..258; Qwen's single-byte pieces are ids 0..255.
    const byteId = (x: number) => (name === 'llama2' ? 3 + x : x);
    const specials = tok.addedTokens.map((t) => t.id);
    const r = mulberry32(name === 'qwen3' ? 31 : 32);
    for (let i = 0; i < 400; i++) {
      const ids = Array.from({ length: 1 + Math.floor(r() * 30) }, () => {
        const p = r();
        if (p < 0.5) return byteId(Math.floor(r() * 256));
        if (p < 0.55) return specials[Math.floor(r() * specials.length)];
        return Math.floor(r() * tok.vocabSize);
      });
      const skip = i % 2 === 1;
      expect({ ids, text: stream(tok, ids, skip).join('') }).toEqual({ ids, text: tok.decode(ids, { skipSpecialTokens: skip }) });
    }
  });

  it('a long stream of invalid bytes keeps the window short and still matches', () => {
    const tok = tokenizers.get(name)!;
    const r = mulberry32(41);
    const base = name === 'llama2' ? 3 : 0;
    // Continuation bytes and lead bytes only: hardly ever a valid character.
    const ids = Array.from({ length: 2000 }, () => base + 0x80 + Math.floor(r() * 0x7f));
    expect(stream(tok, ids).join('')).toBe(tok.decode(ids));
  });
});
