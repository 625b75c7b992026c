// BERT's WordPiece vocabulary as llama.cpp stores it (`tokenizer.ggml.model` = 'bert'): convert_hf_to_gguf.py rewrites
// every piece into a "phantom space" form — a word-initial piece 'play' becomes '▁play', a continuation '##ing' becomes
// 'ing', control tokens ([CLS], [SEP], ...) stay as they are — and llama.cpp's WPM tokenizer prefixes each word with '▁'
// and takes the longest known piece, again and again. Both forms name the same pieces, so the conversion is lossless
// both ways. llama.cpp's normalization is BERT's (lowercase, strip accents, split off punctuation and CJK characters,
// drop controls), with `tokenizer.ggml.normalizer.lowercase` / `.strip_accents` for cased models; it always wraps a
// text in [CLS] (the BOS id) ... [SEP] (the separator id), whatever add_bos / add_eos say. A pair (a reranker's query and
// document) is BERT's [CLS] A [SEP] B [SEP] with B's part of type 1, or, where the file sets add_sep_token (a converted
// RoBERTa / XLM-R reranker such as bge-reranker), [CLS] A [SEP] [SEP] B [SEP] all of type 0, as llama.cpp's server
// formats a rerank pair (BOS, query, EOS, SEP if add_sep, document, EOS).

import { ModelFormatError } from '../errors.ts';
import { ggufTyped, type GgufWriteValue } from '../formats/gguf-writer.ts';
import type { Tokenizer } from './tokenizer.ts';

/** llama.cpp's token types (also in gguf-tokenizer.ts's GGUF_TOKEN_TYPE; repeated to keep this file free of a cycle). */
const CONTROL = 3;
const NORMAL = 1;
const USER_DEFINED = 4;
const UNUSED = 5;
const SPACE = '\u2581';

/**
 * llama.cpp's default ids for a 'bert' vocabulary (llama_vocab::impl::load), used where a key is absent: bert-base's
 * layout ([PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103).
 */
export const BERT_DEFAULT_IDS = { bos: 101, unk: 100, sep: 102, pad: 0, mask: 103 } as const;

/** The WordPiece pieces of a phantom-space vocabulary: '▁play' → 'play', 'ing' → '##ing', control tokens as they are. */
export function wordPiecesFromPhantom(tokens: readonly string[], types: readonly number[]): string[] {
  return tokens.map((t, i) => (types[i] === CONTROL ? t : t.startsWith(SPACE) ? t.slice(SPACE.length) : `##${t}`));
}

/** What a 'bert' GGUF says of its tokenizer beyond the pieces. */
export interface BertVocabFacts {
  /** [CLS] (llama.cpp's BOS) and [SEP]: the ids every text is wrapped in. */
  cls: number;
  sep: number;
  unk: number | undefined;
  /** BertNormalizer's options (tokenizer.ggml.normalizer.*; llama.cpp's defaults: both true). */
  lowercase: boolean;
  stripAccents: boolean;
  /** `tokenizer.ggml.add_sep_token`: a pair has two separators between its texts, and one token type (RoBERTa's pair). */
  doubleSep?: boolean;
}

/**
 * The tokenizer.json sections of a 'bert' GGUF vocabulary: BertNormalizer, BertPreTokenizer, WordPiece over the
 * converted pieces, [CLS] $A [SEP]. `max_input_chars_per_word` stays BERT's 100 (a longer word is [UNK], as transformers
 * has it; llama.cpp has no such limit), which also bounds the WordPiece search's time.
 */
export function bertTokenizerSections(pieces: readonly string[], facts: BertVocabFacts, vocab: Record<string, number>): Record<string, unknown> {
  const cls = pieces[facts.cls];
  const sep = pieces[facts.sep];
  return {
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: facts.stripAccents, lowercase: facts.lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } }],
      pair: facts.doubleSep
        ? [
          { SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } },
          { SpecialToken: { id: sep, type_id: 0 } }, { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } },
        ]
        : [
          { SpecialToken: { id: cls, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: sep, type_id: 0 } },
          { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: sep, type_id: 1 } },
        ],
      special_tokens: {
        [cls]: { id: cls, ids: [facts.cls], tokens: [cls] },
        [sep]: { id: sep, ids: [facts.sep], tokens: [sep] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: facts.unk !== undefined ? pieces[facts.unk] : '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab,
    },
  };
}

/** The normalizer's lowercase / strip_accents flags of a tokenizer.json (BertNormalizer, Lowercase, StripAccents, Sequence). */
function normalizerFlags(normalizer: unknown): { lowercase?: boolean; stripAccents?: boolean } {
  const out: { lowercase?: boolean; stripAccents?: boolean } = {};
  const visit = (n: unknown) => {
    if (typeof n !== 'object' || n === null) return;
    const o = n as Record<string, unknown>;
    if (o.type === 'Lowercase') out.lowercase = true;
    else if (o.type === 'StripAccents') out.stripAccents = true;
    else if (o.type === 'BertNormalizer') {
      if (typeof o.lowercase === 'boolean') out.lowercase = o.lowercase;
      if (typeof o.strip_accents === 'boolean') out.stripAccents = o.strip_accents;
    } else if (o.type === 'Sequence' && Array.isArray(o.normalizers)) o.normalizers.forEach(visit);
  };
  visit(normalizer);
  return out;
}

/**
 * GGUF `tokenizer.*` metadata of a WordPiece tokenizer, as convert_hf_to_gguf.py's BertModel.set_vocab writes it: the
 * phantom-space pieces, special tokens as control tokens, [CLS] as BOS (and cls_token_id), [SEP] as EOS and separator,
 * the normalizer's lowercase flag (strip_accents only where the tokenizer sets it). The model's token type count
 * (`tokenizer.ggml.token_type_count`) belongs to the model and is written with it.
 */
export function wordPieceToGgufMetadata(tok: Tokenizer): Record<string, GgufWriteValue> {
  const wrap = tok.encode('', { addSpecialTokens: true });
  if (wrap.length !== 2) throw new ModelFormatError(tok.file, 'post_processor', `wraps a text in ${wrap.length} tokens; a BERT tokenizer wraps it in [CLS] ... [SEP]`);
  const [cls, sep] = wrap;
  const added = new Map(tok.addedTokens.map((t) => [t.id, t]));
  const tokens: string[] = [];
  const types: number[] = [];
  for (let id = 0; id < tok.vocabSize; id++) {
    const t = tok.idToToken(id);
    const a = added.get(id);
    if (t === undefined) {
      tokens.push(`${SPACE}[PAD${id}]`);
      types.push(UNUSED);
    } else if (a?.special) {
      tokens.push(t);
      types.push(CONTROL);
    } else {
      tokens.push(t.startsWith('##') ? t.slice(2) : SPACE + t);
      types.push(a ? USER_DEFINED : NORMAL);
    }
  }
  const out: Record<string, GgufWriteValue> = {
    'tokenizer.ggml.model': 'bert',
    // llama.cpp reads no pre-tokenizer name for 'bert' (its WPM tokenizer has one way to split).
    'tokenizer.ggml.pre': 'default',
    'tokenizer.ggml.tokens': tokens,
    'tokenizer.ggml.token_type': ggufTyped('array', types.map((t) => ggufTyped('i32', t)), 'i32'),
  };
  const mask = tok.tokenToId('[MASK]');
  const ids: [string, number | undefined][] = [
    ['tokenizer.ggml.bos_token_id', cls], ['tokenizer.ggml.eos_token_id', sep], ['tokenizer.ggml.unknown_token_id', tok.unkId],
    ['tokenizer.ggml.seperator_token_id', sep], ['tokenizer.ggml.padding_token_id', tok.padId], ['tokenizer.ggml.cls_token_id', cls],
    ['tokenizer.ggml.mask_token_id', mask !== undefined && tok.isSpecial(mask) ? mask : undefined],
  ];
  for (const [key, id] of ids) if (id !== undefined) out[key] = ggufTyped('u32', id);
  out['tokenizer.ggml.add_bos_token'] = true;
  out['tokenizer.ggml.add_eos_token'] = true;
  const flags = normalizerFlags((tok.json as Record<string, unknown>).normalizer);
  if (flags.lowercase !== undefined) out['tokenizer.ggml.normalizer.lowercase'] = flags.lowercase;
  if (flags.stripAccents !== undefined) out['tokenizer.ggml.normalizer.strip_accents'] = flags.stripAccents;
  return out;
}
