// OpenAI's embeddings API over an engine: `POST /v1/embeddings` bodies (and the tab's engine.embeddings.create) mapped
// to an EmbedRequest, and the engine's vectors written back as OpenAI's list — floats, or base64 of their
// little-endian f32 bytes (what the official `openai` client asks for by default, and decodes itself).

import type { EmbedRequest, EmbedResult } from '@intab/engine/contract';
import { InvalidRequestError } from '@intab/engine/errors';

/** The body of `POST /v1/embeddings` (OpenAI's, with intab's `truncate`). */
export interface EmbeddingCreateParams {
  /** A text, a list of texts, a list of token ids, or a list of such lists (at most 2,048 inputs). */
  input: string | string[] | number[] | number[][];
  /** Answers echo it; the engine's own model runs whatever it names. */
  model?: string;
  /** Matryoshka truncation: the first `dimensions` values, normalised again (models trained for it only). */
  dimensions?: number;
  /** 'float' [default]: lists of numbers; 'base64': each vector's little-endian f32 bytes in base64 (4× smaller). */
  encoding_format?: 'float' | 'base64';
  /** intab's: cut inputs longer than the model's context instead of refusing them [false]. */
  truncate?: boolean;
  /** OpenAI's end-user id: read by nothing here. */
  user?: string;
}

export interface Embedding {
  object: 'embedding';
  index: number;
  embedding: number[] | string;
}

export interface CreateEmbeddingResponse {
  object: 'list';
  data: Embedding[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** The body fields intab reads. */
export const EMBEDDING_FIELDS: readonly string[] = ['input', 'model', 'dimensions', 'encoding_format', 'truncate', 'user'];

/**
 * The engine's request for an embeddings body (checked: a wrong field is an InvalidRequestError naming it as the body
 * spells it), and how vectors are to be written back.
 * @example
 * toEmbedRequest({ input: ['a', 'b'], encoding_format: 'base64' }); // { request: { input: ['a', 'b'] }, format: 'base64' }
 */
export function toEmbedRequest(body: unknown): { request: EmbedRequest; format: 'float' | 'base64'; model?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequestError('body', body, 'a JSON object with `input`');
  const b = body as Record<string, unknown>;
  if (b.input === undefined) throw new InvalidRequestError('input', undefined, 'a string, a list of strings, a list of token ids, or a list of such lists');
  const format = b.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') throw new InvalidRequestError('encoding_format', format, "'float' or 'base64'");
  if (b.model !== undefined && typeof b.model !== 'string') throw new InvalidRequestError('model', b.model, 'a string');
  const request: EmbedRequest = { input: b.input as EmbedRequest['input'] };
  if (b.dimensions !== undefined && b.dimensions !== null) request.dimensions = b.dimensions as number;
  if (b.truncate !== undefined && b.truncate !== null) request.truncate = b.truncate as boolean;
  return { request, format, ...(typeof b.model === 'string' ? { model: b.model } : {}) };
}

/** What an embeddings request may cost in tokens before it is tokenized (~4 characters a token, +2 for the model's marks), for admission. */
export function embedEstimate(request: EmbedRequest): number {
  const one = (x: unknown): number => (typeof x === 'string' ? Math.ceil(x.length / 4) + 2 : Array.isArray(x) ? x.length : 1);
  const { input } = request;
  if (!Array.isArray(input)) return one(input);
  if (input.every((x) => typeof x === 'number')) return input.length;
  return (input as unknown[]).reduce<number>((n, x) => n + one(x), 0);
}

/** The engine's vectors as OpenAI's list. */
export function toEmbeddingResponse(result: EmbedResult, model: string, format: 'float' | 'base64'): CreateEmbeddingResponse {
  return {
    object: 'list',
    data: result.embeddings.map((v, index) => ({ object: 'embedding', index, embedding: format === 'base64' ? vectorToBase64(v) : Array.from(v) })),
    model,
    usage: { prompt_tokens: result.promptTokens, total_tokens: result.promptTokens },
  };
}

/** A vector's little-endian f32 bytes in base64 (OpenAI's `encoding_format: 'base64'`). */
export function vectorToBase64(v: Float32Array): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i], true);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The vector of a base64 `embedding` (little-endian f32 bytes); a length that is not whole floats is an error. */
export function base64ToVector(text: string): Float32Array {
  const raw = atob(text);
  if (raw.length % 4 !== 0) throw new RangeError(`a base64 embedding of ${raw.length} bytes is not a list of 4-byte floats`);
  const view = new DataView(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) view.setUint8(i, raw.charCodeAt(i));
  const out = new Float32Array(raw.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
