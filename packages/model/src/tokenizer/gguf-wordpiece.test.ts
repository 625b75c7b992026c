// BERT's WordPiece through GGUF ('bert', llama.cpp's phantom-space form): the 30,522-token vocabulary of the synthetic
// encoders (@intab/testing/wordpiece-vocab) written into GGUF metadata as convert_hf_to_gguf.py writes it, parsed back
// with parseGguf and converted into tokenizer.json again, must encode every text as the original does; the stored
// pieces are llama.cpp's ('▁word', 'ing' for '##ing', control tokens as they are), llama.cpp's default ids apply where
// keys are absent, and a vocabulary without [CLS] or [SEP] is a typed error. (That the ids are llama.cpp's own is
// packages/cli/src/embed-llamacpp.test.ts's check.)

import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../errors.ts';
import { parseGguf } from '../formats/gguf.ts';
import { writeGguf, type GgufWriteValue } from '../formats/gguf-writer.ts';
import { bytesSource } from '../source.ts';
import { GGUF_TOKEN_TYPE, tokenizerFromGguf, tokenizerToGgufMetadata } from './gguf-tokenizer.ts';
import { loadTokenizer } from './tokenizer.ts';
import { CORPUS, randomTexts } from '@intab/testing/tokenizer-corpus';
import { WORDPIECE_SPECIALS, WORDPIECE_VOCAB_SIZE, wordPieceTokenizerFiles } from '@intab/testing/wordpiece-vocab';

const TEXTS = [
  ...CORPUS,
  ...randomTexts(100, 11),
  'Tokenization splits unbelievably long words such as internationalization into subword pieces.',
  'Café, naïve, RÉSUMÉ — façade; 東京 2024!',
  'x'.repeat(101), // past max_input_chars_per_word: one [UNK]
];

describe('WordPiece (BERT) tokenizers in GGUF', () => {
  const original = loadTokenizer(wordPieceTokenizerFiles());

  it('the synthetic vocabulary has BERT\'s size and layout', () => {
    expect(original.kind).toBe('wordpiece');
    expect(original.vocabSize).toBe(WORDPIECE_VOCAB_SIZE);
    for (const [text, id] of Object.entries(WORDPIECE_SPECIALS)) expect(original.tokenToId(text)).toBe(id);
    // English cut into real subwords, as bert-base-uncased would (lowercased, accents gone, punctuation apart).
    expect(original.encode('The unbelievable Café!').map((id) => original.idToToken(id))).toEqual(['[CLS]', 'the', 'un', '##bel', '##iev', '##able', 'cafe', '!', '[SEP]']);
  });

  it('round-trips through GGUF bytes: every text encodes as the original does', async () => {
    const metadata = tokenizerToGgufMetadata(original);
    const tokens = metadata['tokenizer.ggml.tokens'] as string[];
    // llama.cpp's phantom-space form.
    expect(tokens[original.tokenToId('the')!]).toBe('\u2581the');
    expect(tokens[original.tokenToId('##ing')!]).toBe('ing');
    expect(tokens[101]).toBe('[CLS]');
    expect(metadata).toMatchObject({
      'tokenizer.ggml.model': 'bert',
      'tokenizer.ggml.bos_token_id': { type: 'u32', value: 101 },
      'tokenizer.ggml.seperator_token_id': { type: 'u32', value: 102 },
      'tokenizer.ggml.unknown_token_id': { type: 'u32', value: 100 },
      'tokenizer.ggml.padding_token_id': { type: 'u32', value: 0 },
      'tokenizer.ggml.mask_token_id': { type: 'u32', value: 103 },
      'tokenizer.ggml.normalizer.lowercase': true,
    });
    const types = (metadata['tokenizer.ggml.token_type'] as unknown as { value: { value: number }[] }).value.map((t) => t.value);
    expect(types[101]).toBe(GGUF_TOKEN_TYPE.control);
    expect(types[original.tokenToId('the')!]).toBe(GGUF_TOKEN_TYPE.normal);

    const bytes = writeGguf({ metadata: { 'general.architecture': 'bert', ...metadata } });
    const gguf = await parseGguf(bytesSource('wordpiece.gguf', bytes));
    const back = tokenizerFromGguf(gguf.metadata, 'wordpiece.gguf');
    expect(back.kind).toBe('wordpiece');
    expect(back.vocabSize).toBe(WORDPIECE_VOCAB_SIZE);
    expect([back.bosId, back.eosId, back.unkId, back.padId]).toEqual([101, 102, 100, 0]);
    for (const text of TEXTS) expect(back.encode(text), JSON.stringify(text)).toEqual(original.encode(text));
    expect(back.encode('x'.repeat(101))).toEqual([101, 100, 102]);
    // [SEP] is special: the engine keeps it last when it cuts a text.
    expect(back.isSpecial(102)).toBe(true);
    expect(back.decode(back.encode('hello world'), { skipSpecialTokens: true })).toBe('hello world');
  });

  /** A hand-made phantom-space vocabulary: the keys llama.cpp needs, or fewer. */
  const tiny = (): Record<string, GgufWriteValue> => ({
    'tokenizer.ggml.model': 'bert',
    'tokenizer.ggml.tokens': ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '\u2581play', 'ing', '\u2581a', 'ed'],
    'tokenizer.ggml.token_type': [3, 3, 3, 3, 1, 1, 1, 1],
  });

  it('uses the ids a GGUF states, and llama.cpp\'s defaults only where a key is absent', () => {
    const m = { ...tiny(), 'tokenizer.ggml.bos_token_id': 2, 'tokenizer.ggml.seperator_token_id': 3, 'tokenizer.ggml.unknown_token_id': 1 };
    const tok = tokenizerFromGguf(m, 'tiny.gguf');
    expect(tok.encode('Playing a PLAYED x')).toEqual([2, 4, 5, 6, 4, 7, 1, 3]);
    expect(tok.encode('playing', { addSpecialTokens: false })).toEqual([4, 5]);
    // Without the keys, llama.cpp's bert-base defaults (101, 102) are outside this vocabulary: a typed error, not a guess.
    const e = (() => {
      try {
        tokenizerFromGguf(tiny(), 'tiny.gguf');
      } catch (err) {
        return err;
      }
    })() as ModelFormatError;
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.field).toBe('tokenizer.ggml.bos_token_id');
    // A cased vocabulary (normalizer.lowercase false) keeps case.
    const cased = tokenizerFromGguf({ ...m, 'tokenizer.ggml.normalizer.lowercase': false }, 'tiny.gguf');
    expect(cased.encode('play Play')).toEqual([2, 4, 1, 3]);
  });
});
