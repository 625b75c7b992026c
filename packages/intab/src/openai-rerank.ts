// The rerank API over an engine, in the shape llama.cpp's server, Jina and Cohere share: `POST /v1/rerank` bodies
// ({ query, documents, top_n, return_documents }) mapped to a RerankRequest, and the engine's ranking written back as
// { results: [{ index, relevance_score, document? }], usage }. The score is the reranker's raw logit, as llama.cpp's
// server gives it (Cohere and Jina put it through a sigmoid: sigmoid(relevance_score) is their number).

import type { RerankRequest, RerankResult } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';

/** The body of `POST /v1/rerank`. */
export interface RerankCreateParams {
  query: string;
  /** The texts to rank: strings, or Jina's and Cohere's `{ text }` objects. */
  documents: (string | { text: string })[];
  /** Answers echo it; the engine's own model runs whatever it names. */
  model?: string;
  /** Return the `top_n` best only [all]. */
  top_n?: number;
  /** Each result carries its document as `{ text }` [false]. */
  return_documents?: boolean;
  /** Cut a document that does not fit beside the query (true), or refuse it (false) [true]. */
  truncate?: boolean;
}

export interface RerankResponse {
  object: 'list';
  model: string;
  /** Best first. */
  results: { index: number; relevance_score: number; document?: { text: string } }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

/** The body fields intab reads. */
export const RERANK_BODY_FIELDS: readonly string[] = ['query', 'documents', 'model', 'top_n', 'return_documents', 'truncate'];

/**
 * The engine's request for a rerank body (checked: a wrong field is an InvalidRequestError naming it as the body
 * spells it), and whether documents go back with the results.
 * @example
 * toRerankRequest({ query: 'q', documents: ['a', { text: 'b' }], top_n: 1 }); // { request: { query: 'q', documents: ['a', 'b'], topN: 1 }, returnDocuments: false }
 */
export function toRerankRequest(body: unknown): { request: RerankRequest; returnDocuments: boolean; model?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequestError('body', body, 'a JSON object with `query` and `documents`');
  const b = body as Record<string, unknown>;
  if (typeof b.query !== 'string') throw new InvalidRequestError('query', b.query, 'a non-empty string');
  if (!Array.isArray(b.documents)) throw new InvalidRequestError('documents', b.documents, 'a list of strings (or of { text } objects)');
  const documents = b.documents.map((d, i) => {
    if (typeof d === 'string') return d;
    const text = typeof d === 'object' && d !== null ? (d as { text?: unknown }).text : undefined;
    if (typeof text === 'string') return text;
    throw new InvalidRequestError(`documents[${i}]`, d, 'a string, or an object with a string `text`');
  });
  if (b.model !== undefined && typeof b.model !== 'string') throw new InvalidRequestError('model', b.model, 'a string');
  const returnDocuments = b.return_documents ?? false;
  if (typeof returnDocuments !== 'boolean') throw new InvalidRequestError('return_documents', returnDocuments, 'true or false');
  const request: RerankRequest = { query: b.query, documents };
  if (b.top_n !== undefined && b.top_n !== null) request.topN = b.top_n as number;
  if (b.truncate !== undefined && b.truncate !== null) request.truncate = b.truncate as boolean;
  return { request, returnDocuments, ...(typeof b.model === 'string' ? { model: b.model } : {}) };
}

/** The engine's ranking as the API's answer. */
export function toRerankResponse(result: RerankResult, model: string, documents: readonly string[], returnDocuments: boolean): RerankResponse {
  return {
    object: 'list',
    model,
    results: result.results.map((r) => ({ index: r.index, relevance_score: r.score, ...(returnDocuments ? { document: { text: documents[r.index] } } : {}) })),
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}

/** What a rerank request may cost in tokens before it is tokenized (~4 characters a token; the query once per pair). */
export function rerankEstimate(request: RerankRequest): number {
  const q = typeof request.query === 'string' ? Math.ceil(request.query.length / 4) : 0;
  return (Array.isArray(request.documents) ? request.documents : []).reduce<number>((n, d) => n + q + 4 + Math.ceil(String(d).length / 4), 0);
}
