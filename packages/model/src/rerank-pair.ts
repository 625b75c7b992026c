// A reranker's input: one (query, document) pair as the ids a cross-encoder was trained on, the way the tokenizer's own
// pair template (tokenizer.json's post_processor) wraps two texts — BERT's [CLS] q [SEP] d [SEP] with "d [SEP]" of
// token type 1, RoBERTa / XLM-R's <s> q </s></s> d </s> (bge-reranker; its processor marks "</s> d </s>" type 1, which
// a one-type model never reads) — and where the type-1 segment starts, for EncoderRunner.encode's typeSplits; the
// types are the tokenizer library's own (rerank-pair.test.ts checks them against @huggingface/tokenizers' pair encoding). llama.cpp's server formats a pair the same way for these
// vocabularies (BOS, query, EOS, SEP where add_sep, document, EOS); node-llama-cpp's rank() always puts both EOS and SEP
// between the texts, which is the RoBERTa form. Too long a pair loses the end of its document, never of its query
// (transformers' truncation 'only_second').

import { RerankInputError } from './errors.ts';
import type { Tokenizer } from './tokenizer/tokenizer.ts';

/** A pair template: the special ids around and between the two texts, and where token type 1 starts. */
export interface PairTemplate {
  /** Before the query ([CLS] / <s>). */
  first: readonly number[];
  /** Between query and document ([SEP], or </s></s>). */
  middle: readonly number[];
  /** After the document ([SEP] / </s>). */
  last: readonly number[];
  /**
   * Where token type 1 starts, as the template's type ids say: at `at` within `middle` (RoBERTa's processor: the second
   * </s>), at the document (`at` 0: BERT), or within `last`; null when every token is type 0. Types never go back to 0.
   */
  type1: { part: 'middle' | 'document' | 'last'; at: number } | null;
}

/** A pair's ids and where its type-1 segment starts. */
export interface RerankPair {
  /** first + query + middle + document + last. */
  ids: number[];
  /** Index of the first type-1 token (the document's first), or ids.length when every token is type 0. */
  typeSplit: number;
  /** Document tokens cut off its end to fit `maxTokens` (0 when it fit). */
  truncated: number;
}

type Json = Record<string, unknown>;

/** The id of a template's special token name (TemplateProcessing's special_tokens map, else the vocabulary). */
function specialId(tok: Tokenizer, specials: Json | undefined, name: string): number {
  const entry = specials?.[name] as { ids?: unknown } | undefined;
  if (entry && Array.isArray(entry.ids) && entry.ids.length === 1 && typeof entry.ids[0] === 'number') return entry.ids[0];
  const id = tok.tokenToId(name);
  if (id === undefined) throw new RerankInputError(`${tok.file}: the pair template names '${name}', which is not in the vocabulary: the tokenizer cannot format a rerank pair.`);
  return id;
}

/** The pair template of one post-processor (TemplateProcessing, BertProcessing, RobertaProcessing), or undefined. */
function templateOf(tok: Tokenizer, pp: Json): PairTemplate | undefined {
  const pairOf = (key: string) => (Array.isArray(pp[key]) && typeof (pp[key] as unknown[])[0] === 'string' ? (pp[key] as [string, number])[1] : undefined);
  if (pp.type === 'BertProcessing' || pp.type === 'RobertaProcessing') {
    const cls = pairOf('cls');
    const sep = pairOf('sep');
    if (cls === undefined || sep === undefined) return undefined;
    // transformers' processors: BERT's second segment is "B [SEP]", RoBERTa's "</s> B </s>" (type 1; RoBERTa models
    // have one type row, so it is never read).
    return pp.type === 'BertProcessing'
      ? { first: [cls], middle: [sep], last: [sep], type1: { part: 'document', at: 0 } }
      : { first: [cls], middle: [sep, sep], last: [sep], type1: { part: 'middle', at: 1 } };
  }
  if (pp.type !== 'TemplateProcessing' || !Array.isArray(pp.pair)) return undefined;
  const specials = pp.special_tokens as Json | undefined;
  const parts: number[][] = [[], [], []];
  const names = ['middle', 'document', 'last'] as const;
  let part = 0;
  let seen = 0;
  let type1: PairTemplate['type1'] = null;
  for (const item of pp.pair as Json[]) {
    const seq = item.Sequence as { id?: string; type_id?: number } | undefined;
    const special = item.SpecialToken as { id?: string; type_id?: number } | undefined;
    const type = (seq ?? special)?.type_id ?? 0;
    if (type !== 0 && type !== 1) throw new RerankInputError(`${tok.file}: the pair template gives a token type ${type}; a cross-encoder's pair has types 0 and 1.`);
    if (type === 0 && type1) throw new RerankInputError(`${tok.file}: the pair template goes back to token type 0 after type 1, which one split cannot say.`);
    if (seq) {
      if (seq.id !== (seen === 0 ? 'A' : 'B')) return undefined;
      if (type === 1) {
        if (seen === 0) throw new RerankInputError(`${tok.file}: the pair template makes the query type 1; the document is the second segment.`);
        type1 ??= { part: 'document', at: 0 };
      }
      seen++;
      part = seen;
    } else if (special && typeof special.id === 'string') {
      if (type === 1 && !type1) {
        if (part === 0) throw new RerankInputError(`${tok.file}: the pair template makes the query's first tokens type 1; the document is the second segment.`);
        type1 = { part: names[part === 1 ? 0 : 2], at: parts[part].length };
      }
      parts[part].push(specialId(tok, specials, special.id));
    } else return undefined;
  }
  if (seen !== 2) return undefined;
  return { first: parts[0], middle: parts[1], last: parts[2], type1 };
}

/**
 * How `tok` wraps a pair of texts, from its tokenizer.json post_processor (a Sequence's template processor included).
 * @throws RerankInputError when the tokenizer has no pair template (a decoder's tokenizer: rerank with a cross-encoder).
 * @example
 * pairTemplate(bertTokenizer); // { first: [101], middle: [102], last: [102], type1: { part: 'document', at: 0 } }
 */
export function pairTemplate(tok: Tokenizer): PairTemplate {
  const pp = (tok.json as Json).post_processor as Json | null | undefined;
  const candidates = pp && pp.type === 'Sequence' && Array.isArray(pp.processors) ? (pp.processors as Json[]) : pp ? [pp] : [];
  for (const c of candidates) {
    const t = templateOf(tok, c);
    if (t) return t;
  }
  throw new RerankInputError(`${tok.file}: the tokenizer has no pair template (post_processor ${pp ? String(pp.type) : 'none'}), so it cannot format a (query, document) pair: rerank with a cross-encoder's tokenizer (BERT, RoBERTa, XLM-R).`);
}

/**
 * The ids of one rerank pair, with the split encode() needs for token types. `maxTokens` (the model's context, or
 * less) cuts the document's end so the pair fits; a query too long to leave room for one document token is refused.
 * `template` and `queryIds` (the query's tokens without special tokens) spare a caller with many documents their work.
 * @example
 * const { ids, typeSplit } = rerankPair(tok, 'what is a cat?', 'A cat is a small feline.', { maxTokens: 512 });
 * const [logits] = await runner.encode([ids], { typeSplits: [typeSplit] });
 */
export function rerankPair(tok: Tokenizer, query: string, document: string, options: { maxTokens?: number; template?: PairTemplate; queryIds?: readonly number[] } = {}): RerankPair {
  const t = options.template ?? pairTemplate(tok);
  // A caller pairing one query with many documents passes its tokens (queryIds) and template once.
  const q = options.queryIds ?? tok.encode(query, { addSpecialTokens: false });
  let d = tok.encode(document, { addSpecialTokens: false });
  const fixed = t.first.length + q.length + t.middle.length + t.last.length;
  let truncated = 0;
  const max = options.maxTokens;
  if (max !== undefined) {
    if (!Number.isInteger(max) || max < 1) throw new RerankInputError(`rerankPair: maxTokens = ${max} must be a positive integer.`);
    if (fixed + 1 > max) throw new RerankInputError(`The query is ${q.length} tokens; with the pair's ${fixed - q.length} special tokens and at least one document token it needs ${fixed + 1}, more than the ${max} the model takes: shorten the query.`);
    if (fixed + d.length > max) {
      truncated = fixed + d.length - max;
      d = d.slice(0, d.length - truncated);
    }
  }
  const ids = [...t.first, ...q, ...t.middle, ...d, ...t.last];
  const middle = t.first.length + q.length;
  const doc = middle + t.middle.length;
  const typeSplit = !t.type1 ? ids.length : t.type1.part === 'middle' ? middle + t.type1.at : t.type1.part === 'document' ? doc : doc + d.length + t.type1.at;
  return { ids, typeSplit, truncated };
}
