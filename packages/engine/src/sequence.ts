// One request inside the engine: its validated options, its prompt and generated ids, its own seeded RNG
// (so the same seed gives the same ids alone or batched), the streaming detokenizer and stop matcher that
// turn ids into text, and the bounded queue of step outputs the consumer pulls (backpressure). It knows
// nothing of other requests or of the runner: the scheduler decides when it runs, the engine feeds it results.

import { MAX_HISTORY, NO_TOKEN, mulberry32, type SampleResult, type SamplingParams } from '@intab/gpu';
import { createDetokenizer, type Detokenizer, type Tokenizer } from '@intab/model';
import { REQUEST_LIMITS, type Chunk, type FinishReason, type GenerateRequest, type JsonEvent, type RequestMetrics, type SpeculativeMetrics, type TokenLogprob, type ToolCallDelta } from './contract.ts';
import { InvalidRequestError } from './errors.ts';
import { checkRequest, given } from './request-checks.ts';
import type { Constraint } from './constraint.ts';
import { StopMatcher } from './stop.ts';
import type { ToolCallParser } from './tools/parser.ts';

/** Defaults of GenerationOptions (contract.ts). */
export const DEFAULT_MAX_TOKENS = 256;
/** The sampler returns at most this many alternatives per token. */
export const MAX_TOP_LOGPROBS = REQUEST_LIMITS.topLogprobs;

/** A request's options, checked and with defaults filled in. */
export interface ResolvedOptions {
  maxTokens: number;
  /** Whether maxTokens was given (strictContext refuses a given one that does not fit; a default is always clamped). */
  maxTokensGiven: boolean;
  /** Refuse a maxTokens the context cannot hold instead of clamping it (GenerationOptions.strictContext). */
  strictContext: boolean;
  /** Chat requests: drop the oldest turns to fit (GenerateRequest.truncate). */
  truncate: 'oldest' | 'none';
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repetitionPenalty: number;
  presencePenalty: number;
  frequencyPenalty: number;
  logitBias?: Record<number, number>;
  seed?: number;
  stop: string[];
  stopTokenIds: number[];
  ignoreEos: boolean;
  logprobs: boolean;
  topLogprobs: number;
  /** Use the prefix cache: map cached pages of the prompt, and leave this request's pages to it. */
  cache: boolean;
}

/**
 * Checks every option of a request against the model (vocabulary size, whether a tokenizer exists; see
 * request-checks.ts) and fills in the defaults. Throws InvalidRequestError naming the first bad field. A null field
 * means the default, as an absent one does.
 */
export function resolveOptions(r: GenerateRequest, vocab: number, hasTokenizer: boolean): ResolvedOptions {
  checkRequest(r, vocab, hasTokenizer);
  const topK = r.topK ?? 0;
  return {
    maxTokens: r.maxTokens ?? DEFAULT_MAX_TOKENS,
    maxTokensGiven: given(r.maxTokens),
    strictContext: r.strictContext ?? false,
    truncate: r.truncate ?? 'none',
    temperature: r.temperature ?? 1,
    // top-k of the whole vocabulary or more keeps every token: off (the sampler packs k as a u32).
    topK: topK >= vocab ? 0 : topK,
    topP: r.topP ?? 1,
    minP: r.minP ?? 0,
    repetitionPenalty: r.repetitionPenalty ?? 1,
    presencePenalty: r.presencePenalty ?? 0,
    frequencyPenalty: r.frequencyPenalty ?? 0,
    // Copied: canonical keys only (checked), and nothing the caller changes later reaches the sampler.
    logitBias: given(r.logitBias) ? Object.fromEntries(Object.entries(r.logitBias!)) : undefined,
    seed: r.seed ?? undefined,
    stop: [...(r.stop ?? [])],
    stopTokenIds: [...(r.stopTokenIds ?? [])],
    ignoreEos: r.ignoreEos ?? false,
    logprobs: r.logprobs ?? false,
    topLogprobs: r.topLogprobs ?? 0,
    cache: r.cache ?? true,
  };
}

/** What one step added to a sequence's output queue. */
interface Output {
  text: string;
  ids: number[];
  logprobs?: TokenLogprob[];
  json?: JsonEvent[];
  toolCalls?: ToolCallDelta[];
}

/** A request with tools: the reader of its calls, and the special tokens of the call syntax (kept in its text). */
export interface SequenceTools {
  /** Absent with toolChoice 'none': the reply is all content. */
  parser?: ToolCallParser;
  /** Special tokens whose text belongs to the call syntax (the detokenizer drops special tokens). */
  keep: ReadonlyMap<number, string>;
}

export interface SequenceInit {
  id: number;
  prompt: number[];
  options: ResolvedOptions;
  /** Seed used when the request gives none (from the engine's own seeded source). */
  defaultSeed: number;
  /** The model's end-of-generation ids (EOS, end-of-turn). */
  eosIds: readonly number[];
  tokenizer?: Tokenizer;
  /** Step outputs a sequence may have queued before it is paused. */
  maxQueued: number;
  /** When generate() was called (the engine's clock). */
  startedAt: number;
  /** Constrained decoding (responseFormat, grammar, regex). */
  constraint?: Constraint;
  /** Only fill the KV-cache with the prompt, sample nothing (a preloaded prefix): done once prefilled. */
  prefillOnly?: boolean;
  /** Tools (GenerateRequest.tools): calls read out of the text as toolCalls deltas. */
  tools?: SequenceTools;
  /** What `truncate: 'oldest'` dropped from the chat to fit (reported on the last chunk). */
  truncated?: { messages: number; tokens: number };
  /** The session (a tab of a shared engine) the request came from: admission is fair between sessions. */
  session?: string;
}

export type SequenceState = 'waiting' | 'running' | 'finished';

export class Sequence {
  readonly id: number;
  readonly prompt: readonly number[];
  readonly options: ResolvedOptions;
  state: SequenceState = 'waiting';
  /** Prompt tokens already in the KV-cache. */
  prefilled = 0;
  /** Generated tokens already in the KV-cache; the others are the next step's input (the last sample, forced tokens). */
  fed = 0;
  readonly generated: number[] = [];
  finishReason: FinishReason | null = null;
  /** Set when a step failed: next() rejects with it. */
  error?: unknown;
  /** Abort asked for (signal or cancel); the engine frees the pages and ends the stream. */
  abortRequested = false;
  /** A preload: the prompt goes into the KV-cache and nothing is sampled (see SequenceInit.prefillOnly). */
  readonly prefillOnly: boolean;
  /** SequenceInit.session: the tab of a shared engine that asked for it (undefined: the engine's only user). */
  readonly session: string | undefined;
  /** Prompt tokens the prefix cache held at admission (their prefill was skipped). */
  cachedTokens = 0;
  /** Full prompt pages already handed to the prefix cache while the sequence runs. */
  cachedPages = 0;
  /** What `truncate: 'oldest'` dropped to make the prompt fit. */
  readonly truncated?: { messages: number; tokens: number };

  private readonly rng: () => number;
  /** Uniform draws of the next tokens (index 0 = the next token), drawn ahead by speculative rows. */
  private uniforms: number[] = [];
  /** Set by the engine when the request speculates; reported in the metrics. */
  speculative?: SpeculativeMetrics;
  private readonly stopIds: Set<number>;
  private readonly detok?: Detokenizer;
  private readonly stopper: StopMatcher;
  private readonly tokenizer?: Tokenizer;
  /** Constrained decoding: masks, forced tokens, JSON events. */
  readonly constraint?: Constraint;
  private readonly tools?: SequenceTools;
  private readonly maxQueued: number;
  private readonly penalties: boolean;
  private queue: Output[] = [];
  private metrics?: RequestMetrics;
  // metric timestamps (engine clock, ms)
  private readonly startedAt: number;
  private firstStepAt?: number;
  private firstTokenAt?: number;
  private lastTokenAt?: number;
  private pausedSince?: number;
  private pausedTotal = 0;

  constructor(init: SequenceInit) {
    this.id = init.id;
    this.prompt = init.prompt;
    this.options = init.options;
    this.tokenizer = init.tokenizer;
    this.constraint = init.constraint;
    this.tools = init.tools;
    this.prefillOnly = init.prefillOnly ?? false;
    this.session = init.session;
    this.truncated = init.truncated;
    this.maxQueued = init.maxQueued;
    this.startedAt = init.startedAt;
    this.rng = mulberry32(init.options.seed ?? init.defaultSeed);
    this.stopIds = new Set([...(init.options.ignoreEos ? [] : init.eosIds), ...init.options.stopTokenIds]);
    this.detok = init.tokenizer ? createDetokenizer(init.tokenizer, { skipSpecialTokens: true }) : undefined;
    this.stopper = new StopMatcher(init.options.stop);
    const o = init.options;
    this.penalties = o.repetitionPenalty !== 1 || o.presencePenalty !== 0 || o.frequencyPenalty !== 0;
  }

  get finished(): boolean {
    return this.state === 'finished';
  }

  /** Prompt tokens not yet in the KV-cache. */
  get prefillLeft(): number {
    return this.prompt.length - this.prefilled;
  }

  /** Backpressure: the consumer has not pulled maxQueued step outputs; the sequence sits out of steps. */
  get paused(): boolean {
    return !this.finished && this.queue.length >= this.maxQueued;
  }

  /** Tokens still allowed by maxTokens. */
  get remaining(): number {
    return this.options.maxTokens - this.generated.length;
  }

  /** Every token of the sequence so far: the prompt, then the generated ids. */
  get text(): number[] {
    return [...this.prompt, ...this.generated];
  }

  /** Tokens the sequence may hold in the KV-cache at most (what admission reserves pages for). */
  get reserveLength(): number {
    return this.prompt.length + this.options.maxTokens;
  }

  /**
   * The tokens of this sequence's next step, at most `budget`: a prompt chunk, or the pending generated tokens.
   * The step samples the next token only when it takes all of them (see samplesAfter).
   */
  nextTokens(budget: number): number[] {
    if (this.prefillLeft > 0) return this.prompt.slice(this.prefilled, this.prefilled + Math.min(budget, this.prefillLeft));
    return this.generated.slice(this.fed, this.fed + Math.max(1, budget));
  }

  /** Whether a step that feeds `tokens` (from nextTokens) ends at the sequence's last token, so it samples the next. */
  samplesAfter(tokens: readonly number[]): boolean {
    if (this.prefillOnly) return false;
    return tokens.length === (this.prefillLeft > 0 ? this.prefillLeft + this.generated.length - this.fed : this.generated.length - this.fed);
  }

  /**
   * Sampling of the token `offset` places after the last generated one, after `proposals` (speculative
   * rows: the proposals before that row, which the penalties count). The uniform number is tied to the
   * token's index, drawn in order from the sequence's RNG: whether a token comes from a plain step or a
   * verify row, and however many proposals were rejected, token i always uses draw i — so a seeded request
   * gives the same ids with or without speculation. `mask: false` leaves a grammar's mask out (the engine
   * hands it to the runner lazily, see StepEntry.masks).
   */
  sampling(offset = 0, proposals: readonly number[] = [], mask = true): SamplingParams {
    const o = this.options;
    while (this.uniforms.length <= offset) this.uniforms.push(this.rng());
    const p: SamplingParams = { temperature: o.temperature, u: this.uniforms[offset] };
    if (o.topK) p.topK = o.topK;
    if (o.topP !== 1) p.topP = o.topP;
    if (o.minP) p.minP = o.minP;
    if (this.penalties) {
      p.repetitionPenalty = o.repetitionPenalty;
      p.presencePenalty = o.presencePenalty;
      p.frequencyPenalty = o.frequencyPenalty;
      const all = [...this.prompt, ...this.generated, ...proposals.slice(0, offset)];
      p.history = all.slice(Math.max(0, all.length - MAX_HISTORY));
    }
    if (o.logitBias) p.logitBias = o.logitBias;
    if (o.logprobs) p.topLogprobs = o.topLogprobs;
    if (this.constraint && mask) p.allowed = this.constraint.mask(proposals.slice(0, offset));
    return p;
  }

  /** Admitted with `tokens` of the prompt already in the KV-cache (the prefix cache's): their prefill is skipped. */
  admitted(cachedTokens: number): void {
    this.cachedTokens = cachedTokens;
    this.prefilled = cachedTokens;
  }

  /** The step that included this sequence started (queue time ends at the first). */
  scheduled(now: number): void {
    this.firstStepAt ??= now;
  }

  /** `tokens` of this sequence went into the KV-cache in a finished step (for a verify step: its input and the accepted proposals). */
  advanced(tokens: number): void {
    if (this.prefillLeft > 0) this.prefilled += tokens;
    else this.fed += tokens;
  }

  /**
   * A sampled token: stop checks, text, queue. May finish the sequence. Under a grammar, the tokens it then
   * forces (e.g. the `","name":"` between two fields) follow at once, without sampling.
   */
  accept(result: SampleResult, now: number): void {
    if (this.finished) return;
    if (result.id === NO_TOKEN) {
      // logitBias / masks banned every token: nothing can be sampled.
      if (this.constraint) {
        const field = this.constraint.format.type === 'tools' ? 'tools' : 'responseFormat';
        this.error = new InvalidRequestError(field, this.constraint.format.type, "a format this model's vocabulary can spell: no token of it can continue the output here");
      }
      this.finish('error', now);
      return;
    }
    this.firstTokenAt ??= now;
    this.lastTokenAt = now;
    this.push(result, now);
    const c = this.constraint;
    while (c && !this.finished) {
      const forced = c.forced();
      if (forced.length === 0) break;
      for (const id of forced) if (!this.finished) this.push({ id, logprob: 0, top: [] }, now); // forced: probability 1 under the grammar
    }
  }

  /** One generated token (sampled or forced) into the text, the stop checks and the queue. */
  private push(result: SampleResult, now: number): void {
    const id = result.id;
    if (this.constraint && !this.constraint.accept(id)) {
      this.error = new InvalidRequestError('responseFormat', id, 'tokens the grammar allows (the sampler was given its mask; please report this)');
      this.finish('error', now);
      return;
    }
    this.generated.push(id);
    this.uniforms.shift();
    const out: Output = { text: '', ids: [id] };
    if (this.options.logprobs) out.logprobs = [this.logprobOf(result)];
    let reason: FinishReason | null = null;
    if (this.stopIds.has(id)) {
      reason = 'stop'; // the stop id is reported, its text is not
    } else if (this.detok) {
      const r = this.stopper.push(this.detok.push(id) + (this.tools?.keep.get(id) ?? ''));
      out.text = r.text;
      if (r.stopped) reason = 'stop';
    }
    if (this.tools?.parser && out.text) {
      try {
        const read = this.tools.parser.push(out.text);
        out.text = read.text;
        if (read.calls.length) out.toolCalls = read.calls;
      } catch (err) {
        this.error = err; // ToolCallParseError: a call broke its syntax after part of it streamed
        this.finish('error', now);
        return;
      }
    }
    if (this.constraint?.json) {
      try {
        out.json = this.constraint.events(out.text);
      } catch (err) {
        // Text the grammar allowed but JSON does not: a grammar bug, reported rather than streamed.
        this.error = err;
        this.finish('error', now);
        return;
      }
    }
    if (!reason && this.constraint?.done) reason = 'stop'; // the grammar allows nothing more
    if (!reason && this.generated.length >= this.options.maxTokens) reason = 'length';
    this.queue.push(out);
    if (reason) this.finish(reason, now);
    else if (this.paused) this.pausedSince ??= now;
  }

  /** Ends the sequence: flushes held-back text (unless a stop string matched) and fixes the metrics. */
  finish(reason: FinishReason, now: number): void {
    if (this.finished) return;
    this.state = 'finished';
    this.finishReason = reason;
    if (this.detok) {
      const tail = this.stopper.push(this.detok.flush());
      const text = tail.text + (tail.stopped ? '' : this.stopper.flush());
      if (tail.stopped && reason !== 'abort' && reason !== 'error') this.finishReason = 'stop';
      const c = this.constraint;
      const json = c?.json && reason !== 'error' ? [...c.events(text), ...c.end()] : undefined;
      let toolCalls: ToolCallDelta[] | undefined;
      let content = text;
      const parser = this.tools?.parser;
      if (parser && reason !== 'error') {
        try {
          const a = parser.push(text);
          const b = parser.end();
          content = a.text + b.text;
          toolCalls = [...a.calls, ...b.calls];
        } catch (err) {
          this.error = err;
          this.finishReason = 'error';
        }
        // A reply that made calls ends with them (OpenAI's finish_reason), unless maxTokens or an abort cut it.
        if (parser.count > 0 && this.finishReason === 'stop') this.finishReason = 'tool_calls';
      }
      if (content || json?.length || toolCalls?.length) this.queue.push({ text: content, ids: [], ...(json ? { json } : {}), ...(toolCalls?.length ? { toolCalls } : {}) });
    }
    if (this.pausedSince !== undefined) {
      this.pausedTotal += now - this.pausedSince;
      this.pausedSince = undefined;
    }
    const firstStep = this.firstStepAt ?? now;
    const firstToken = this.firstTokenAt;
    const prefillMs = firstToken !== undefined ? firstToken - firstStep : 0;
    const decoded = this.generated.length - 1;
    const decodeMs = firstToken !== undefined && this.lastTokenAt !== undefined ? this.lastTokenAt - firstToken : 0;
    this.metrics = {
      queueMs: firstStep - this.startedAt,
      ttftMs: firstToken !== undefined ? firstToken - this.startedAt : now - this.startedAt,
      promptTokens: this.prompt.length,
      cachedTokens: this.cachedTokens,
      completionTokens: this.generated.length,
      prefillTokensPerSecond: firstToken !== undefined && prefillMs > 0 ? ((this.prompt.length - this.cachedTokens) / prefillMs) * 1000 : 0,
      decodeTokensPerSecond: decoded > 0 && decodeMs > 0 ? (decoded / decodeMs) * 1000 : 0,
      pausedMs: this.pausedTotal,
      ...(this.speculative ? { speculative: { ...this.speculative } } : {}),
    };
  }

  /** Whether next() has something to return right now. */
  get ready(): boolean {
    return this.queue.length > 0 || this.finished;
  }

  /** Everything queued, coalesced into one chunk; the last one carries finishReason and metrics. */
  take(now: number): Chunk {
    const chunk: Chunk = { text: '', ids: [], finishReason: null };
    const logprobs: TokenLogprob[] = [];
    const json: JsonEvent[] = [];
    const toolCalls: ToolCallDelta[] = [];
    for (const o of this.queue) {
      chunk.text += o.text;
      chunk.ids.push(...o.ids);
      if (o.logprobs) logprobs.push(...o.logprobs);
      if (o.json) json.push(...o.json);
      for (const d of o.toolCalls ?? []) mergeDelta(toolCalls, d);
    }
    if (toolCalls.length) chunk.toolCalls = toolCalls;
    if (this.options.logprobs) chunk.logprobs = logprobs;
    if (this.constraint?.json) {
      chunk.json = json;
      chunk.partial = this.constraint.partial;
    }
    this.queue = [];
    if (this.pausedSince !== undefined) {
      this.pausedTotal += now - this.pausedSince;
      this.pausedSince = undefined;
    }
    if (this.finished) {
      chunk.finishReason = this.finishReason;
      chunk.metrics = this.metrics;
      if (this.truncated) chunk.truncated = { ...this.truncated };
      const warnings = this.constraint?.warnings;
      if (warnings?.length) chunk.warnings = warnings.map((w) => ({ path: w.path, keyword: w.keyword, reason: w.reason }));
    }
    return chunk;
  }

  /** Calls the reply has begun (their first delta streamed). */
  get toolCallCount(): number {
    return this.tools?.parser?.count ?? 0;
  }

  private logprobOf(r: SampleResult): TokenLogprob {
    const text = (id: number) => (this.tokenizer && id !== NO_TOKEN ? this.tokenizer.decode([id]) : '');
    const lp: TokenLogprob = { id: r.id, text: text(r.id), logprob: r.logprob };
    if (this.options.topLogprobs > 0) lp.top = r.top.map((t) => ({ id: t.id, text: text(t.id), logprob: t.logprob }));
    return lp;
  }
}

/** Appends a delta to a chunk's list: a fragment of the call the list ends with joins it (one delta per call and chunk). */
function mergeDelta(list: ToolCallDelta[], d: ToolCallDelta): void {
  const prev = list[list.length - 1];
  if (prev && prev.index === d.index && prev.id === undefined && d.id === undefined) {
    prev.function.arguments += d.function.arguments;
    if (d.json) prev.json = [...(prev.json ?? []), ...d.json];
    return;
  }
  list.push({ ...d, function: { ...d.function }, ...(d.json ? { json: [...d.json] } : {}) });
}
