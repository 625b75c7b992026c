// A rerank request (EngineApi.rerank) checked and turned into the reranker's input: each (query, document) pair in its
// tokenizer's pair template (the model layer's rerankPair: BERT's [CLS] q [SEP] d [SEP], with the document's part of
// token type 1; RoBERTa's <s> q </s></s> d </s>), its document cut to fit the context with truncate (the default, as
// Cohere's and Jina's rerank APIs do). The pairs then run in the embeddings queue's passes (embeddings.ts), and each
// pair's first head output is its score.

import { RerankInputError, pairTemplate, rerankPair, type PairTemplate, type Tokenizer } from '@intab/model';
import { EMBED_LIMITS, type RerankRequest } from './contract.ts';
import { ContextLengthExceededError, InvalidRequestError, TokenizerRequiredError } from './errors.ts';
import { RERANK_FIELDS, checkKnownFields } from './field-checks.ts';

/** Characters of a document tokenized at most with truncate: past this many per token of context, the rest would be cut anyway. */
const CHARS_PER_TOKEN_BOUND = 64;
/** Characters of the query and all documents together (bounds the tokenizer's time). */
const MAX_CHARS = 16_000_000;

/**
 * Checks a rerank request and tokenizes its pairs: each pair's ids, where its type-1 segment starts, and which
 * documents were cut. Throws InvalidRequestError naming the field, or ContextLengthExceededError (reason 'document')
 * for a pair past `limit` tokens with truncate: false.
 */
export function rerankInputs(request: RerankRequest, tokenizer: Tokenizer | undefined, limit: number): { ids: number[][]; splits: number[]; truncated: number[] } {
  if (typeof request !== 'object' || request === null) throw new InvalidRequestError('request', request, 'an object with `query` and `documents`');
  checkKnownFields(request, RERANK_FIELDS, 'rerank()');
  const { query, documents, topN, truncate = true } = request;
  if (typeof query !== 'string' || query.length === 0) throw new InvalidRequestError('query', query, 'a non-empty string');
  if (!Array.isArray(documents) || documents.length === 0) throw new InvalidRequestError('documents', documents, 'a non-empty list of non-empty strings (nothing to rank otherwise)');
  if (documents.length > EMBED_LIMITS.inputs) throw new InvalidRequestError('documents', `a list of ${documents.length}`, `at most ${EMBED_LIMITS.inputs} documents per request: rerank the rest in more requests`);
  if (topN !== undefined && (typeof topN !== 'number' || !Number.isInteger(topN) || topN < 1)) throw new InvalidRequestError('topN', topN, 'a whole number ≥ 1 (how many of the best documents to return)');
  if (typeof truncate !== 'boolean') throw new InvalidRequestError('truncate', truncate, 'true or false');
  if (!tokenizer) throw new TokenizerRequiredError('tokenizer');
  let chars = query.length;
  for (let i = 0; i < documents.length; i++) {
    const d = documents[i];
    if (typeof d !== 'string' || d.length === 0) throw new InvalidRequestError(`documents[${i}]`, d, 'a non-empty string');
    chars += d.length;
  }
  if (chars > MAX_CHARS) throw new InvalidRequestError('documents', `${chars} characters`, `at most ${MAX_CHARS} characters in the query and documents of one request: rerank the rest in another request`);
  let template: PairTemplate;
  try {
    template = pairTemplate(tokenizer);
  } catch (err) {
    if (err instanceof RerankInputError) throw new InvalidRequestError('model', tokenizer.file, err.message);
    throw err;
  }
  const queryIds = tokenizer.encode(query, { addSpecialTokens: false }); // once, not once per document
  const ids: number[][] = [];
  const splits: number[] = [];
  const truncated: number[] = [];
  let tokens = 0;
  for (let i = 0; i < documents.length; i++) {
    const text = truncate && documents[i].length > limit * CHARS_PER_TOKEN_BOUND ? documents[i].slice(0, limit * CHARS_PER_TOKEN_BOUND) : documents[i];
    let pair;
    try {
      pair = rerankPair(tokenizer, query, text, { template, queryIds, ...(truncate ? { maxTokens: limit } : {}) });
    } catch (err) {
      // The only refusal with a limit: a query that leaves no room for a document.
      if (err instanceof RerankInputError) throw new InvalidRequestError('query', `${query.length} characters`, `a shorter query: ${err.message}`);
      throw err;
    }
    if (pair.ids.length > limit) throw new ContextLengthExceededError({ promptTokens: pair.ids.length, maxTokens: 0, limit, limitedBy: 'context', reason: 'document', input: i });
    if (pair.truncated > 0 || text.length < documents[i].length) truncated.push(i);
    ids.push(pair.ids);
    splits.push(pair.typeSplit);
    tokens += pair.ids.length;
  }
  if (tokens > EMBED_LIMITS.tokens) throw new InvalidRequestError('documents', `${tokens} tokens`, `at most ${EMBED_LIMITS.tokens} tokens in all pairs of one request: rerank the rest in another request`);
  return { ids, splits, truncated };
}

/**
 * The documents best first from each pair's head outputs (its first is the score), the first `topN` of them; equal
 * scores keep the request's order.
 */
export function rankedResults(outputs: readonly Float32Array[], topN?: number): { index: number; score: number }[] {
  const ranked = outputs.map((o, index) => ({ index, score: o[0] }));
  ranked.sort((a, b) => b.score - a.score || a.index - b.index);
  return topN === undefined ? ranked : ranked.slice(0, topN);
}
