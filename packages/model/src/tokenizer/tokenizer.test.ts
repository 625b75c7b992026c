// loadTokenizer on real tokenizer.json files (Qwen3 byte-level BPE, Mistral-vocabulary SentencePiece BPE) with known
// ids, and the promise that a damaged tokenizer.json is always a typed error naming the file and field: a table of
// hand-made damages, then seeded byte flips, truncations and value swaps of a small tokenizer.json.

import { beforeAll, describe, expect, it } from 'vitest';
import { IntabModelError, ModelFormatError, UnsupportedModelError } from '../errors.ts';
import { mulberry32 } from '@intab/testing/random';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { loadTokenizer, type Tokenizer } from './tokenizer.ts';

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe('real tokenizers', () => {
  let qwen: Tokenizer;
  beforeAll(() => {
    qwen = loadTokenizer({ ...realTokenizerFiles('qwen3'), generationConfig: { eos_token_id: [151645, 151643] } });
  });

  it('Qwen3: byte-level BPE, no BOS, <|im_end|> ends a turn', () => {
    const tok = qwen;
    expect(tok.kind).toBe('byte-level-bpe');
    expect(tok.vocabSize).toBe(151669);
    expect([tok.bosId, tok.eosId, tok.padId, tok.addBos, tok.addEos]).toEqual([undefined, 151645, 151643, false, false]);
    expect([tok.bosToken, tok.eosToken]).toEqual([undefined, '<|im_end|>']);
    expect(tok.stopIds).toEqual([151645, 151643]);
    expect(tok.encode('Hello world')).toEqual([9707, 1879]);
    expect(tok.encode('<|im_start|>user\n你好<|im_end|>')).toEqual([151644, 872, 198, 108386, 151645]);
    expect(tok.idToToken(9707)).toBe('Hello');
    expect(tok.tokenToId('<|im_start|>')).toBe(151644);
    expect(tok.tokenToId('<think>')).toBe(151667);
    expect(tok.addedTokens.length).toBe(26);
    expect([tok.isSpecial(151644), tok.isSpecial(151667), tok.isSpecial(9707)]).toEqual([true, false, false]);
    expect(tok.decode([151644, 872, 198, 108386, 151645])).toBe('<|im_start|>user\n你好<|im_end|>');
    expect(tok.decode([151644, 872, 198, 108386, 151645], { skipSpecialTokens: true })).toBe('user\n你好');
    expect(typeof tok.chatTemplate).toBe('string');
  });

  it('SentencePiece BPE: BOS added, ▁ spaces, byte fallback, legacy space after special tokens', () => {
    const tok = loadTokenizer(realTokenizerFiles('llama2'));
    expect(tok.kind).toBe('sentencepiece-bpe');
    expect(tok.vocabSize).toBe(32000);
    expect([tok.bosId, tok.eosId, tok.unkId, tok.addBos, tok.addEos]).toEqual([1, 2, 0, true, false]);
    expect(tok.encode('Hello world')).toEqual([1, 22557, 1526]);
    expect(tok.encode('Hello world', { addSpecialTokens: false })).toEqual([22557, 1526]);
    expect(tok.encode('👨', { addSpecialTokens: false })).toEqual([28705, 243, 162, 148, 171]); // ▁ + <0xF0><0x9F><0x91><0xA8>
    expect(tok.encode('a</s>b', { addSpecialTokens: false })).toEqual([264, 2, 287]); // '▁a', '</s>', '▁b'
    expect(tok.decode([1, 22557, 1526])).toBe('<s> Hello world');
    expect(tok.decode([1, 22557, 1526], { skipSpecialTokens: true })).toBe('Hello world');
    expect(tok.decode([28705, 243, 162, 148, 171])).toBe('👨');
    expect(tok.idToToken(243)).toBe('<0xF0>');
    expect(tok.chatTemplate).toBeUndefined();
  });

  it('takes bytes, text or an object; without a config, BOS comes from the post-processor', () => {
    const tok = loadTokenizer({ tokenizerJson: new TextEncoder().encode(JSON.stringify(realTokenizerFiles('llama2').tokenizerJson)) });
    expect([tok.bosId, tok.eosId, tok.addBos]).toEqual([1, undefined, true]);
    expect(tok.encode('Hi')).toEqual([1, 15359]);
    const text = JSON.stringify(TINY);
    for (const input of [text, new TextEncoder().encode(text).buffer, JSON.parse(text)]) {
      expect(loadTokenizer({ tokenizerJson: input }).encode('ab b')).toEqual([2, 3, 1]);
    }
  });

  it('decode: nothing for ids without a token, an error for ids that are not ids', () => {
    const tok = qwen;
    expect(tok.decode([])).toBe('');
    expect(tok.decode([9707, 151900, 200000, 1879])).toBe('Hello world'); // padded embedding rows decode to nothing
    expect(tok.idToToken(151900)).toBeUndefined();
    expect(() => tok.decode([-1])).toThrow(RangeError);
    expect(() => tok.decode([1.5])).toThrow(RangeError);
  });

  it('cleanUpSpaces is off unless asked (streaming needs decode to be prefix-stable)', () => {
    const tok = loadTokenizer(realTokenizerFiles('llama2'));
    const ids = tok.encode('a . b', { addSpecialTokens: false });
    expect(tok.decode(ids)).toBe('a . b');
    expect(tok.decode(ids, { cleanUpSpaces: true })).toBe('a. b');
  });
});

// ---- damaged files ----

const TINY = {
  version: '1.0',
  added_tokens: [{ id: 4, content: '<eos>', special: true, normalized: false, lstrip: false, rstrip: false, single_word: false }],
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }] },
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: null,
  decoder: { type: 'ByteLevel' },
  model: { type: 'BPE', unk_token: null, vocab: { a: 0, b: 1, ab: 2, 'Ġ': 3 }, merges: ['a b'] },
};
const tiny = (): Record<string, any> => structuredClone(TINY);

describe('damaged tokenizer.json', () => {
  it('the tiny fixture itself loads', () => {
    const tok = loadTokenizer({ tokenizerJson: tiny() });
    expect(tok.encode('ab<eos>')).toEqual([2, 4]);
    expect(tok.decode([2, 4])).toBe('ab<eos>');
  });

  const cases: [string, LoadInput, string, typeof ModelFormatError | typeof UnsupportedModelError][] = [
    ['bytes that are not UTF-8', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 'tokenizer.json', ModelFormatError],
    ['JSON cut short', JSON.stringify(TINY).slice(0, 50), 'tokenizer.json', ModelFormatError],
    ['a JSON array', '[]', 'tokenizer.json', ModelFormatError],
    ['no model', (() => { const t = tiny(); delete t.model; return t; })(), 'model', ModelFormatError],
    ['a model that is a number', { ...tiny(), model: 5 }, 'model', ModelFormatError],
    ['an unknown model type', { ...tiny(), model: { type: 'SentencePieceMagic', vocab: {} } }, 'model.type', UnsupportedModelError],
    ['a model type that is not a string', { ...tiny(), model: { ...TINY.model, type: 7 } }, 'model.type', ModelFormatError],
    ['no vocab', { ...tiny(), model: { type: 'BPE', merges: [] } }, 'model.vocab', ModelFormatError],
    ['a vocab that is an array', { ...tiny(), model: { ...TINY.model, vocab: ['a'] } }, 'model.vocab', ModelFormatError],
    ['a negative id', { ...tiny(), model: { ...TINY.model, vocab: { a: -1 } } }, 'model.vocab["a"]', ModelFormatError],
    ['an absurd id', { ...tiny(), model: { ...TINY.model, vocab: { a: 2 ** 40 } } }, 'model.vocab["a"]', ModelFormatError],
    ['merges that are not a list', { ...tiny(), model: { ...TINY.model, merges: 3 } }, 'model.merges', ModelFormatError],
    ['a merge without a space', { ...tiny(), model: { ...TINY.model, merges: ['ab'] } }, 'model.merges[0]', ModelFormatError],
    ['mixed merge formats', { ...tiny(), model: { ...TINY.model, merges: ['a b', ['a', 'b']] } }, 'model.merges[1]', ModelFormatError],
    ['byte_fallback as a string', { ...tiny(), model: { ...TINY.model, byte_fallback: 'yes' } }, 'model.byte_fallback', ModelFormatError],
    ['Unigram pieces without scores', { ...tiny(), model: { type: 'Unigram', vocab: [['a']] } }, 'model.vocab[0]', ModelFormatError],
    ['added_tokens not a list', { ...tiny(), added_tokens: {} }, 'added_tokens', ModelFormatError],
    ['an added token without an id', { ...tiny(), added_tokens: [{ content: 'x' }] }, 'added_tokens[0].id', ModelFormatError],
    ['an added token with empty content', { ...tiny(), added_tokens: [{ id: 1, content: '' }] }, 'added_tokens[0].content', ModelFormatError],
    ['a decoder that is a string', { ...tiny(), decoder: 'ByteLevel' }, 'decoder', ModelFormatError],
    ['a normalizer without a type', { ...tiny(), normalizer: {} }, 'normalizer.type', ModelFormatError],
    ['an unknown normalizer inside a sequence', { ...tiny(), normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, { type: 'Klingon' }] } }, 'normalizer.normalizers[1].type', UnsupportedModelError],
    ['an unknown pre-tokenizer', { ...tiny(), pre_tokenizer: { type: 'Telepathy' } }, 'pre_tokenizer.type', UnsupportedModelError],
    // (a+)+ and (a|aa)+ backtrack exponentially: 40 a's and a '!' would hold the tab for minutes
    ['a split regex with nested repetition', { ...tiny(), pre_tokenizer: { type: 'Split', pattern: { Regex: '(a+)+$' }, behavior: 'Isolated', invert: false } }, 'pre_tokenizer.pattern.Regex', UnsupportedModelError],
    ['a normalizer regex repeating alternatives', { ...tiny(), normalizer: { type: 'Sequence', normalizers: [{ type: 'Replace', pattern: { Regex: '(a|aa)+' }, content: 'x' }] } }, 'normalizer.normalizers[0].pattern.Regex', UnsupportedModelError],
    ['a pattern that is neither Regex nor String', { ...tiny(), pre_tokenizer: { type: 'Split', pattern: {}, behavior: 'Isolated', invert: false } }, 'pre_tokenizer.pattern', ModelFormatError],
  ];
  type LoadInput = Uint8Array | string | Record<string, unknown>;

  it.each(cases)('%s → typed error naming the field', (_, input, field, type) => {
    const e = thrown(() => loadTokenizer({ tokenizerJson: input, file: 'models/x/tokenizer.json' })) as ModelFormatError;
    expect(e).toBeInstanceOf(type);
    expect(e.file).toBe('models/x/tokenizer.json');
    expect(e.field).toBe(field);
    expect(e.message).toContain('models/x/tokenizer.json');
  });

  it('a config naming a BOS the vocabulary lacks names tokenizer_config.json and bos_token', () => {
    const e = thrown(() => loadTokenizer({ tokenizerJson: tiny(), tokenizerConfig: { bos_token: '<s>' } })) as ModelFormatError;
    expect([e.name, e.file, e.field]).toEqual(['ModelFormatError', 'tokenizer_config.json', 'bos_token']);
    const chat = thrown(() => loadTokenizer({ tokenizerJson: tiny(), tokenizerConfig: { chat_template: 3 } })) as ModelFormatError;
    expect([chat.name, chat.field]).toEqual(['ModelFormatError', 'chat_template']);
  });

  /** Loading must end in a working tokenizer or an IntabModelError: never a raw exception. */
  function loadsOrTyped(input: LoadInput): 'loaded' | 'typed' {
    try {
      const tok = loadTokenizer({ tokenizerJson: input });
      tok.decode(tok.encode('ab a<eos> 12'));
      return 'loaded';
    } catch (e) {
      if (e instanceof IntabModelError) return 'typed';
      throw new Error(`untyped ${(e as Error)?.name}: ${(e as Error)?.message} for ${(typeof input === 'string' ? input : input instanceof Uint8Array ? new TextDecoder().decode(input) : JSON.stringify(input)).slice(0, 300)}`);
    }
  }

  it('600 byte flips and truncations of the text each end in a load or a typed error', () => {
    const text = new TextEncoder().encode(JSON.stringify(TINY));
    const r = mulberry32(11);
    const seen = { loaded: 0, typed: 0 };
    for (let i = 0; i < 600; i++) {
      const bytes = i % 5 === 0 ? text.slice(0, Math.floor(r() * text.length)) : text.slice();
      if (i % 5 !== 0) for (let k = 0; k < 1 + (i % 3); k++) bytes[Math.floor(r() * bytes.length)] = Math.floor(r() * 256);
      seen[loadsOrTyped(bytes)]++;
    }
    expect(seen.typed).toBeGreaterThan(100);
  });

  it('400 structural swaps (any value replaced by null, a number, a string, a list or an object) are handled', () => {
    const r = mulberry32(5);
    const junk = [null, 0, -3, 1e300, 'x', '', [], [1, 'a'], {}, { type: 'BPE' }, true];
    const paths: (string | number)[][] = [];
    const walk = (v: unknown, path: (string | number)[]) => {
      paths.push(path);
      if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...path, i]));
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
    };
    walk(TINY, []);
    const seen = { loaded: 0, typed: 0 };
    for (let i = 0; i < 400; i++) {
      const t = tiny();
      const path = paths[1 + Math.floor(r() * (paths.length - 1))];
      let parent: any = t;
      for (const k of path.slice(0, -1)) parent = parent[k];
      parent[path[path.length - 1]] = junk[Math.floor(r() * junk.length)];
      seen[loadsOrTyped(t)]++;
    }
    expect(seen.loaded).toBeGreaterThan(0);
    expect(seen.typed).toBeGreaterThan(0);
  });
});
