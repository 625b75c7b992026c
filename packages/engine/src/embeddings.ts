// Embeddings (EngineApi.embed) on an encoder: a request's inputs are checked and tokenized here, then queued with the
// inputs of every other request in flight, and packed into the encoder's passes (whole sequences, no padding: a pass
// costs what its tokens cost, whatever their lengths). Passes are filled round-robin between requests, one input of
// each in turn, so a request of 2,048 inputs does not hold a one-input request back until all of its own are done.
// One pass runs at a time. Matryoshka cuts and the final normalisation are done here, per request. A reranker's
// (query, document) pairs (rerank.ts) take the same queue and passes, with each pair's token-type split.

import type { EncoderFacts, EncoderRunner, Tokenizer } from '@intab/model';
import { EMBED_LIMITS, type EmbedRequest, type EmbedResult, type RerankRequest, type RerankResult } from './contract.ts';
import { ContextLengthExceededError, InvalidRequestError, TokenizerRequiredError } from './errors.ts';
import { EMBED_FIELDS, checkKnownFields } from './field-checks.ts';
import { rankedResults, rerankInputs } from './rerank.ts';

/**
 * Characters of one text input tokenized at most with `truncate: true`: past this many, no tokenizer's tokens could
 * all fit in the context anyway (no vocabulary has tokens this long on average), so the rest is not tokenized.
 */
const CHARS_PER_TOKEN_BOUND = 64;
/** Characters of all text inputs of one request together (bounds the tokenizer's time). */
const MAX_CHARS = 16_000_000;

/** A request in the queue: its inputs' ids, the vectors back so far, and how it ends. */
interface Job {
  inputs: number[][];
  /** Per input, where its token type 1 starts (a rerank pair's document); absent: all type 0. */
  splits?: number[];
  /** The next input to put in a pass. */
  next: number;
  vectors: (Float32Array | undefined)[];
  left: number;
  resolve: (v: Float32Array[]) => void;
  reject: (err: unknown) => void;
  dropped: boolean;
}

/**
 * Checks an embeddings request against the model: what the inputs are, `dimensions`, `truncate`; tokenizes text. Returns
 * each input's ids (cut to the context with truncate) and which were cut. Throws InvalidRequestError or
 * ContextLengthExceededError naming the input.
 */
export function embedInputs(request: EmbedRequest, facts: EncoderFacts, tokenizer: Tokenizer | undefined, limit: number): { ids: number[][]; truncated: number[] } {
  if (typeof request !== 'object' || request === null) throw new InvalidRequestError('request', request, 'an object with `input`');
  checkKnownFields(request, EMBED_FIELDS, 'embed()');
  const { input, truncate = false, dimensions } = request;
  if (typeof truncate !== 'boolean') throw new InvalidRequestError('truncate', truncate, 'true or false');
  if (dimensions !== undefined) checkDimensions(dimensions, facts);
  const list = listOf(input, facts.vocab);
  const ids: number[][] = [];
  const truncated: number[] = [];
  let chars = 0;
  for (let i = 0; i < list.length; i++) {
    const one = list[i];
    let seq: number[];
    let closing: number | undefined;
    if (typeof one === 'string') {
      if (!tokenizer) throw new TokenizerRequiredError('tokenizer');
      chars += one.length;
      if (chars > MAX_CHARS) throw new InvalidRequestError('input', `${list.length} texts`, `at most ${MAX_CHARS} characters in all texts of one request: send the rest in another request`);
      // With truncate, text past what the context could hold is not tokenized (its tokens would be cut anyway).
      const text = truncate && one.length > limit * CHARS_PER_TOKEN_BOUND ? one.slice(0, limit * CHARS_PER_TOKEN_BOUND) : one;
      seq = tokenizer.encode(text);
      // The tokenizer's closing token (BERT's [SEP], an EOS the model expects last) stays last when the text is cut.
      const last = seq.at(-1);
      if (last !== undefined && tokenizer.isSpecial(last) && seq.length > 1) closing = last;
      if (seq.length === 0) throw new InvalidRequestError(list.length > 1 || Array.isArray(input) ? `input[${i}]` : 'input', one, 'text that encodes to at least one token');
    } else seq = one;
    if (seq.length > limit) {
      if (!truncate) throw new ContextLengthExceededError({ promptTokens: seq.length, maxTokens: 0, limit, limitedBy: 'context', reason: 'input', input: i });
      seq = closing === undefined ? seq.slice(0, limit) : [...seq.slice(0, limit - 1), closing];
      truncated.push(i);
    }
    ids.push(seq);
  }
  const tokens = ids.reduce((n, s) => n + s.length, 0);
  if (tokens > EMBED_LIMITS.tokens) throw new InvalidRequestError('input', `${tokens} tokens`, `at most ${EMBED_LIMITS.tokens} tokens in all inputs of one request: send the rest in another request`);
  return { ids, truncated };
}

/** The request's inputs as a list: texts, or token-id lists. */
function listOf(input: EmbedRequest['input'], vocab: number): (string | number[])[] {
  const expected = 'a non-empty string, a list of them, a list of token ids, or a list of such lists';
  if (typeof input === 'string') {
    if (input.length === 0) throw new InvalidRequestError('input', input, 'a non-empty string (an empty text has nothing to embed)');
    return [input];
  }
  if (!Array.isArray(input)) throw new InvalidRequestError('input', input, expected);
  if (input.length === 0) throw new InvalidRequestError('input', input, 'at least one input (an empty list has nothing to embed)');
  if (input.length > EMBED_LIMITS.inputs) throw new InvalidRequestError('input', `a list of ${input.length}`, `at most ${EMBED_LIMITS.inputs} inputs per request: send the rest in more requests`);
  if (input.every((x) => typeof x === 'number')) return [checkIds(input as number[], 'input', vocab)];
  return input.map((x, i) => {
    if (typeof x === 'string') {
      if (x.length === 0) throw new InvalidRequestError(`input[${i}]`, x, 'a non-empty string (an empty text has nothing to embed)');
      return x;
    }
    if (Array.isArray(x)) return checkIds(x, `input[${i}]`, vocab);
    throw new InvalidRequestError(`input[${i}]`, x, 'a string or a list of token ids (all inputs of one kind)');
  });
}

function checkIds(ids: unknown[], field: string, vocab: number): number[] {
  if (ids.length === 0) throw new InvalidRequestError(field, ids, 'at least one token id');
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocab) throw new InvalidRequestError(`${field}[${i}]`, id, `a token id in [0, ${vocab})`);
  }
  return ids as number[];
}

function checkDimensions(d: unknown, facts: EncoderFacts): void {
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 1 || d > facts.dimensions) throw new InvalidRequestError('dimensions', d, `a whole number in [1, ${facts.dimensions}] (the model's vectors have ${facts.dimensions} values)`);
  if (d < facts.dimensions && !facts.matryoshka) {
    throw new InvalidRequestError('dimensions', d, `absent or ${facts.dimensions}: this ${facts.arch} model was not trained for shorter vectors (Matryoshka), so its first ${d} values are no embedding of their own`);
  }
}

/** The first `d` values of a vector, normalised again where the model's vectors are. */
export function cutVector(v: Float32Array, d: number, normalized: boolean): Float32Array {
  if (d >= v.length) return v;
  const out = v.slice(0, d);
  if (normalized) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += out[i] * out[i];
    const scale = ss > 0 ? 1 / Math.sqrt(ss) : 0;
    for (let i = 0; i < d; i++) out[i] *= scale;
  }
  return out;
}

/**
 * The queue of inputs in flight and the loop that runs the encoder's passes.
 * @example
 * const embedder = new Embedder(encoder, tokenizer, () => performance.now());
 * const { embeddings } = await embedder.embed({ input: ['a note', 'another'] });
 */
export class Embedder {
  private readonly jobs: Job[] = [];
  /** The loop's current run, while passes are running. */
  private running?: Promise<void>;
  private closed?: Error;

  constructor(
    readonly encoder: EncoderRunner,
    private readonly tokenizer: Tokenizer | undefined,
    private readonly now: () => number,
  ) {}

  /** Most tokens of one input: the model's context, and what one pass can hold. */
  get limit(): number {
    return Math.min(this.encoder.facts.contextLength, this.encoder.maxTokensPerPass);
  }

  /** Inputs waiting for a pass, across requests. */
  get queued(): number {
    return this.jobs.reduce((n, j) => n + j.inputs.length - j.next, 0);
  }

  async embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult> {
    const started = this.now();
    if (this.closed) throw this.closed;
    signal?.throwIfAborted();
    const { facts } = this.encoder;
    const { ids, truncated } = embedInputs(request, facts, this.tokenizer, this.limit);
    const vectors = await this.queue(ids, undefined, signal);
    const d = request.dimensions ?? facts.dimensions;
    return {
      embeddings: vectors.map((v) => cutVector(v, d, facts.normalized)),
      promptTokens: ids.reduce((n, s) => n + s.length, 0),
      tokens: ids.map((s) => s.length),
      truncated,
      ms: this.now() - started,
    };
  }

  /**
   * A reranker's scores of documents against a query (see RerankRequest): the pairs run in the queue's passes as
   * embedding inputs do, and each pair's first head output is its score.
   */
  async rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult> {
    const started = this.now();
    if (this.closed) throw this.closed;
    signal?.throwIfAborted();
    const { ids, splits, truncated } = rerankInputs(request, this.tokenizer, this.limit);
    const logits = await this.queue(ids, splits, signal);
    return { results: rankedResults(logits, request.topN), promptTokens: ids.reduce((n, s) => n + s.length, 0), truncated, ms: this.now() - started };
  }

  /** Puts a request's sequences in the queue; resolves with their outputs in order once the last pass that holds one ran. */
  private queue(inputs: number[][], splits: number[] | undefined, signal: AbortSignal | undefined): Promise<Float32Array[]> {
    return new Promise<Float32Array[]>((resolve, reject) => {
      const job: Job = { inputs, ...(splits ? { splits } : {}), next: 0, vectors: new Array(inputs.length), left: inputs.length, resolve, reject, dropped: false };
      const onAbort = () => this.drop(job, signal!.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      job.resolve = (v) => (signal?.removeEventListener('abort', onAbort), resolve(v));
      job.reject = (e) => (signal?.removeEventListener('abort', onAbort), reject(e));
      this.jobs.push(job);
      this.running ??= this.run();
    });
  }

  /** Ends every request in the queue with `err`, and refuses later ones; waits for the pass in flight. */
  async close(err: Error): Promise<void> {
    this.closed = err;
    for (const job of [...this.jobs]) this.drop(job, err);
    await this.running;
  }

  private drop(job: Job, reason: unknown): void {
    if (job.dropped) return;
    job.dropped = true;
    const at = this.jobs.indexOf(job);
    if (at >= 0) this.jobs.splice(at, 1);
    job.reject(reason);
  }

  /** Runs passes while inputs wait. */
  private async run(): Promise<void> {
    try {
      while (this.jobs.length) {
        const pass = this.fill();
        if (pass.length === 0) {
          // (Cannot happen: every input was checked against the pass's size. Never spin.)
          for (const job of [...this.jobs]) this.drop(job, new Error('An input is longer than one encoder pass holds: embed it with truncate: true.'));
          break;
        }
        let out: Float32Array[];
        try {
          const sequences = pass.map((p) => p.job.inputs[p.index]);
          // Token types only for a pass that holds a pair (an embedding input's tokens are all type 0).
          const typed = pass.some((p) => p.job.splits);
          out = await this.encoder.encode(sequences, typed ? { typeSplits: pass.map((p) => p.job.splits?.[p.index] ?? p.job.inputs[p.index].length) } : undefined);
        } catch (err) {
          for (const job of new Set(pass.map((p) => p.job))) this.drop(job, err);
          continue;
        }
        pass.forEach((p, k) => {
          const { job } = p;
          if (job.dropped) return;
          job.vectors[p.index] = out[k];
          if (--job.left === 0) {
            job.dropped = true; // done: nothing more to drop
            job.resolve(job.vectors as Float32Array[]);
          }
        });
      }
    } finally {
      this.running = undefined;
    }
  }

  /** The next pass: one input of each waiting request in turn while they fit. Requests all of whose inputs are taken leave the queue. */
  private fill(): { job: Job; index: number }[] {
    const { maxTokensPerPass, maxSequencesPerPass } = this.encoder;
    const pass: { job: Job; index: number }[] = [];
    let tokens = 0;
    for (let progress = true; progress && pass.length < maxSequencesPerPass; ) {
      progress = false;
      for (const job of this.jobs) {
        if (job.next >= job.inputs.length || pass.length >= maxSequencesPerPass) continue;
        const n = job.inputs[job.next].length;
        if (tokens + n > maxTokensPerPass) continue;
        pass.push({ job, index: job.next++ });
        tokens += n;
        progress = true;
      }
    }
    for (let i = this.jobs.length - 1; i >= 0; i--) if (this.jobs[i].next >= this.jobs[i].inputs.length) this.jobs.splice(i, 1);
    return pass;
  }
}
