// One request to a remote OpenAI-compatible server as the engine's pull-based stream: open() sends it (retrying what
// may be retried), a pump reads the SSE body into a bounded queue (so a consumer that does not pull stops the reads,
// and TCP pushes back on the server), and next() hands out everything queued as one coalesced Chunk. Before the first
// token a broken or silent stream is reopened (nothing was delivered, so nothing is duplicated); after it, a break
// ends the stream with finishReason 'error' and a RemoteStreamError holding what was delivered. JSON formats stream
// partial-JSON events and the finished document is checked against the schema here, whatever the server enforced.
// Tool calls the server streams (delta.tool_calls) become the engine's Chunk.toolCalls: a call's first delta carries its
// id, type and name with arguments '', then its arguments arrive in fragments, with their partial-JSON events.

import type { Chunk, FinishReason, JsonEvent, RequestMetrics, ResponseFormat, TokenLogprob, ToolCallDelta } from '@intab/engine/contract';
import { PartialJsonParser } from '@intab/grammar/partial';
import { SseParser } from '../sse.ts';
import { RemoteError, RemoteFormatError, RemoteHttpError, RemoteProtocolError, RemoteStreamError, RemoteTimeoutError } from './errors.ts';
import { errorBody, send, type Opened, type RemoteConfig } from './http.ts';

/** What one stream sends, and how to read its answer. */
export interface RemoteCall {
  /** '/chat/completions' (messages) or '/completions' (a prompt or ids). */
  path: '/chat/completions' | '/completions';
  body: Record<string, unknown>;
  format?: ResponseFormat;
  logprobs: boolean;
  /** json_schema formats: what checks the finished document. */
  validator?: JsonValidator;
}

/** A compiled JSON Schema (@cfworker/json-schema's Validator). */
export interface JsonValidator {
  validate(value: unknown): { valid: boolean; errors: { instanceLocation: string; error: string }[] };
}

/** Text queued past this many characters stops the reads until the consumer pulls. */
const QUEUE_CHARS = 16_384;

interface Part {
  text: string;
  ids: number[];
  logprobs?: TokenLogprob[];
  json?: JsonEvent[];
  toolCalls?: ToolCallDelta[];
}

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export class RemoteStream {
  readonly url: string;
  private readonly controller = new AbortController();
  private opened?: Opened;
  private readonly startedAt = performance.now();
  private firstTokenAt?: number;
  private lastTokenAt?: number;
  private pausedMs = 0;
  private parts: Part[] = [];
  private queuedChars = 0;
  private final?: Chunk;
  /** The server's finish_reason, once sent. */
  private finishReason?: FinishReason;
  private usage?: Usage;
  /** What the server sent so far (delivered or queued): a RemoteStreamError carries it. */
  private readonly received = { text: '', ids: [] as number[], events: 0 };
  private readonly parser?: PartialJsonParser;
  /** Per call index: the partial-JSON parser of its arguments (null once they stopped parsing: no more events). */
  private readonly argParsers = new Map<number, PartialJsonParser | null>();
  private wake?: () => void;
  private room?: () => void;

  constructor(
    private readonly config: RemoteConfig,
    private readonly call: RemoteCall,
    signal?: AbortSignal,
  ) {
    this.url = `${config.baseURL}${call.path}`;
    const t = call.format?.type;
    if (t === 'json_schema' || t === 'json_object') this.parser = new PartialJsonParser({ snapshots: 'none' });
    const onAbort = () => this.end({ finishReason: 'abort' });
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  }

  /**
   * Sends the request; resolves once the server has accepted it (a 2xx head that is an event stream or JSON), and
   * rejects with the typed error of a request that never started (after the retries).
   */
  async open(): Promise<void> {
    if (this.final) return; // aborted before it was sent
    try {
      this.opened = await send(this.config, this.call.path, { method: 'POST', body: this.call.body }, this.controller.signal);
      await this.checkHead(this.opened);
    } catch (err) {
      if (this.final) return; // aborted: the stream ends with 'abort'
      this.controller.abort(err);
      throw err;
    }
    void this.pump();
  }

  /** Everything produced since the last pull, waiting when nothing is; the stream is over after a chunk with a finishReason. */
  async next(): Promise<Chunk> {
    while (this.parts.length === 0 && !this.final) await new Promise<void>((r) => (this.wake = r));
    const chunk: Chunk = { text: '', ids: [], finishReason: null };
    const logprobs: TokenLogprob[] = [];
    const json: JsonEvent[] = [];
    const toolCalls: ToolCallDelta[] = [];
    for (const p of this.parts) {
      chunk.text += p.text;
      chunk.ids.push(...p.ids);
      if (p.logprobs) logprobs.push(...p.logprobs);
      if (p.json) json.push(...p.json);
      if (p.toolCalls) toolCalls.push(...p.toolCalls);
    }
    if (toolCalls.length) chunk.toolCalls = toolCalls;
    this.parts = [];
    this.queuedChars = 0;
    this.room?.();
    const last = this.final;
    if (last?.json) json.push(...last.json);
    if (this.call.logprobs) chunk.logprobs = logprobs;
    if (this.parser) {
      chunk.json = json;
      chunk.partial = last?.partial !== undefined ? last.partial : this.parser.snapshot;
    }
    if (last) {
      chunk.finishReason = last.finishReason;
      if (last.metrics) chunk.metrics = last.metrics;
      if (last.error) chunk.error = last.error;
    }
    return chunk;
  }

  /** Ends the stream now (what `break` does): the request is aborted, so the server stops generating. */
  cancel(): void {
    this.end({ finishReason: 'abort' });
  }

  get finished(): boolean {
    return this.final !== undefined;
  }

  get paused(): boolean {
    return this.room !== undefined;
  }

  // ---- reading ----

  /** A 2xx head must be an event stream (or a whole JSON answer from a server that ignored `stream`), never a page. */
  private async checkHead(o: Opened): Promise<void> {
    const type = (o.response.headers.get('content-type') ?? '').toLowerCase();
    if (type.includes('text/event-stream') || type.includes('application/json') || type === '') return;
    const text = await o.response.text().catch(() => '');
    const what = type.includes('html') ? 'the server answered with an HTML page, not an OpenAI-compatible event stream' : `the server answered with ${type}, not an event stream`;
    throw new RemoteProtocolError(this.url, what, text, { status: o.response.status });
  }

  /** Reads the answer, reopening it while nothing was received and a retry is allowed; ends the stream either way. */
  private async pump(): Promise<void> {
    let o = this.opened!;
    for (;;) {
      try {
        await this.read(o);
        return;
      } catch (err) {
        if (this.final) return; // aborted or cancelled
        const retryable = !(err instanceof RemoteFormatError || err instanceof RemoteProtocolError || err instanceof RemoteHttpError);
        if (this.received.events > 0 || !retryable || o.attempts > this.config.maxRetries) return this.fail(err, o);
        o.controller.abort(err);
        try {
          o = this.opened = await send(this.config, this.call.path, { method: 'POST', body: this.call.body }, this.controller.signal, o.attempts, { error: err, retryable: true });
          await this.checkHead(o);
        } catch (again) {
          if (this.final) return;
          return this.fail(again, o);
        }
      }
    }
  }

  /** One response body to its end. */
  private async read(o: Opened): Promise<void> {
    const body = o.response.body;
    if (!body) throw new RemoteProtocolError(this.url, 'the server answered without a body', '', { status: o.response.status });
    const reader = body.getReader();
    const type = (o.response.headers.get('content-type') ?? '').toLowerCase();
    const sse = !type.includes('application/json');
    const parser = new SseParser();
    const decoder = new TextDecoder();
    let json = '';
    try {
      for (;;) {
        const r = await this.timed(reader, o);
        if (this.final) return;
        if (r.done) break;
        if (!sse) {
          json += decoder.decode(r.value, { stream: true });
          continue;
        }
        for (const v of this.parse(() => parser.push(r.value), o)) this.event(v, o);
        if (parser.done) return this.succeed();
        await this.backpressure();
      }
      if (!sse) return this.whole(json + decoder.decode(), o);
      for (const v of this.parse(() => parser.end(), o)) this.event(v, o);
      if (parser.done || this.finishReason) return this.succeed();
      throw new Error('the connection closed before the answer ended (no finish_reason, no data: [DONE])');
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /** The events of one piece of the body; data that is not JSON is a RemoteProtocolError. */
  private parse(take: () => unknown[], o: Opened): unknown[] {
    try {
      return take();
    } catch (err) {
      throw new RemoteProtocolError(this.url, 'the server sent an event that is not JSON', (err as { data?: string }).data ?? '', { status: o.response.status, cause: err });
    }
  }

  /** One read, bounded by the first-byte deadline (before any token) or the idle timeout (after). */
  private async timed(reader: ReadableStreamDefaultReader<Uint8Array>, o: Opened): Promise<ReadableStreamReadResult<Uint8Array>> {
    const first = this.received.events === 0;
    const ms = first ? Math.max(0, this.startedAt + this.config.firstByteMs - performance.now()) : this.config.idleMs;
    const timeout = new RemoteTimeoutError(this.url, first ? 'first-byte' : 'idle', first ? this.config.firstByteMs : this.config.idleMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        o.controller.abort(timeout);
        reject(timeout);
      }, ms);
    });
    try {
      return await Promise.race([reader.read(), expired]);
    } catch (err) {
      throw o.controller.signal.reason instanceof RemoteTimeoutError ? o.controller.signal.reason : err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits while the consumer has not taken what is queued (the reads stop, so TCP pushes back on the server). */
  private async backpressure(): Promise<void> {
    if (this.queuedChars < QUEUE_CHARS || this.final) return;
    const since = performance.now();
    await new Promise<void>((r) => (this.room = r));
    this.room = undefined;
    this.pausedMs += performance.now() - since;
  }

  /** One SSE event's JSON (a chat.completion.chunk or a text_completion chunk). */
  private event(v: unknown, o: Opened): void {
    const ev = v as { error?: unknown; choices?: unknown; usage?: Usage | null };
    if (ev === null || typeof ev !== 'object') throw new RemoteProtocolError(this.url, 'the server sent an event that is not an object', JSON.stringify(v) ?? '', { status: o.response.status });
    if (ev.error !== undefined) {
      const body = errorBody(JSON.stringify(ev));
      throw new RemoteError(`the server sent an error event: ${body.message ?? JSON.stringify(ev.error)}`, this.url, { status: o.response.status });
    }
    if (!Array.isArray(ev.choices)) throw new RemoteProtocolError(this.url, 'the server sent an event without choices (not a completion chunk)', JSON.stringify(v), { status: o.response.status });
    if (ev.usage) this.usage = ev.usage;
    const choice = ev.choices[0] as Choice | undefined;
    if (!choice) return;
    const text = this.call.path === '/chat/completions' ? (choice.delta?.content ?? choice.message?.content) : choice.text;
    const calls = this.call.path === '/chat/completions' ? this.toolCallsOf(choice, o) : undefined;
    this.take(typeof text === 'string' ? text : '', Array.isArray(choice.token_ids) ? choice.token_ids.filter((n) => Number.isInteger(n)) : [], this.logprobsOf(choice), calls);
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason === 'length' ? 'length' : choice.finish_reason === 'tool_calls' ? 'tool_calls' : 'stop';
  }

  /**
   * A choice's tool calls as the engine's deltas: a server delta with the call's id or name opens the call (arguments
   * '', as the engine's first delta), and its arguments, there or later, are fragments; a whole answer's
   * message.tool_calls are the same, each call opened and its arguments given at once.
   */
  private toolCallsOf(choice: Choice, o: Opened): ToolCallDelta[] | undefined {
    const given = choice.delta?.tool_calls ?? choice.message?.tool_calls;
    if (given === undefined || given === null) return undefined;
    if (!Array.isArray(given)) throw new RemoteProtocolError(this.url, 'the server sent tool_calls that are not an array', JSON.stringify(given) ?? '', { status: o.response.status });
    const out: ToolCallDelta[] = [];
    given.forEach((c, position) => {
      // A whole message's calls carry no index: their position is it.
      const index = typeof c?.index === 'number' && Number.isInteger(c.index) && c.index >= 0 ? c.index : position;
      const name = c?.function?.name;
      const args = typeof c?.function?.arguments === 'string' ? c.function.arguments : '';
      // Opened once: a server that repeats the id on every delta of a call does not open it again.
      if ((typeof c?.id === 'string' || typeof name === 'string') && !this.argParsers.has(index)) {
        out.push({ index, id: typeof c?.id === 'string' ? c.id : `call_${index}`, type: 'function', function: { name: typeof name === 'string' ? name : '', arguments: '' } });
        this.argParsers.set(index, new PartialJsonParser({ snapshots: 'none' }));
      }
      if (args !== '') out.push({ index, function: { arguments: args }, json: this.argEvents(index, args) });
    });
    return out;
  }

  /** The partial-JSON events of one fragment of a call's arguments; none once they stop parsing (the text still goes on). */
  private argEvents(index: number, fragment: string): JsonEvent[] {
    const parser = this.argParsers.get(index);
    if (!parser) return [];
    try {
      return parser.push(fragment);
    } catch {
      this.argParsers.set(index, null);
      return [];
    }
  }

  /** A whole JSON answer (a server that ignored `stream: true`). */
  private whole(text: string, o: Opened): void {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw new RemoteProtocolError(this.url, 'the server answered with JSON that does not parse', text, { status: o.response.status });
    }
    this.event(v, o);
    this.finishReason ??= 'stop';
    this.succeed();
  }

  private logprobsOf(choice: Choice): TokenLogprob[] | undefined {
    if (!this.call.logprobs || !choice.logprobs) return undefined;
    const ids = Array.isArray(choice.token_ids) ? choice.token_ids : [];
    const lp = choice.logprobs;
    if (Array.isArray(lp.content)) {
      return lp.content.map((t, i) => ({
        id: ids[i] ?? -1,
        text: t.token,
        logprob: t.logprob,
        top: (t.top_logprobs ?? []).map((a) => ({ id: -1, text: a.token, logprob: a.logprob })),
      }));
    }
    if (Array.isArray(lp.tokens)) {
      // The legacy completions shape: parallel arrays, alternatives as { token: logprob } maps.
      return lp.tokens.map((token, i) => ({
        id: ids[i] ?? -1,
        text: token,
        logprob: lp.token_logprobs?.[i] ?? 0,
        top: Object.entries(lp.top_logprobs?.[i] ?? {}).map(([t, l]) => ({ id: -1, text: t, logprob: l })),
      }));
    }
    return undefined;
  }

  /** Text (and ids, logprobs, tool calls) the server sent: queued for the consumer, through the JSON parser for JSON formats. */
  private take(text: string, ids: number[], logprobs: TokenLogprob[] | undefined, toolCalls?: ToolCallDelta[]): void {
    if (!text && ids.length === 0 && !logprobs?.length && !toolCalls?.length) return;
    const now = performance.now();
    this.firstTokenAt ??= now;
    this.lastTokenAt = now;
    this.received.events++;
    this.received.text += text;
    this.received.ids.push(...ids);
    const part: Part = { text, ids, ...(logprobs ? { logprobs } : {}), ...(toolCalls?.length ? { toolCalls } : {}) };
    if (this.parser && text) {
      try {
        part.json = this.parser.push(text);
      } catch (err) {
        throw new RemoteFormatError(this.url, this.received.text, [{ path: '', message: (err as Error).message }]);
      }
    }
    this.parts.push(part);
    this.queuedChars += text.length + (toolCalls ?? []).reduce((n, d) => n + d.function.arguments.length, 0);
    this.wake?.();
  }

  // ---- the end ----

  /** The server finished: JSON formats end their document and check it. */
  private succeed(): void {
    const reason = this.finishReason ?? 'stop';
    if (this.parser && reason === 'stop') {
      let json: JsonEvent[];
      try {
        json = this.parser.end();
      } catch (err) {
        return this.fail(new RemoteFormatError(this.url, this.received.text, [{ path: '', message: (err as Error).message }]), this.opened!);
      }
      const value = this.parser.snapshot;
      const problems = this.check(value);
      if (problems.length > 0) return this.fail(new RemoteFormatError(this.url, this.received.text, problems), this.opened!);
      return this.end({ finishReason: 'stop', json, partial: value });
    }
    this.end({ finishReason: reason });
  }

  /** What is wrong with a finished JSON document under the request's format (empty when it matches). */
  private check(value: unknown): { path: string; message: string }[] {
    const f = this.call.format;
    if (f?.type === 'json_object') {
      return value !== null && typeof value === 'object' && !Array.isArray(value) ? [] : [{ path: '', message: 'json_object asks for an object at the top' }];
    }
    if (f?.type !== 'json_schema') return [];
    const result = this.call.validator!.validate(value);
    return result.valid ? [] : result.errors.map((e) => ({ path: e.instanceLocation.replace(/^#/, ''), message: e.error }));
  }

  private fail(err: unknown, o: Opened): void {
    const error = err instanceof RemoteFormatError ? err : new RemoteStreamError(this.url, { text: this.received.text, ids: [...this.received.ids] }, err, o.response.status);
    this.end({ finishReason: 'error', error });
  }

  /** The stream's last chunk (its text and ids were queued before): metrics, and the request stops on the wire. */
  private end(last: Omit<Chunk, 'text' | 'ids' | 'metrics'>): void {
    if (this.final) return;
    this.final = { text: '', ids: [], ...last, metrics: this.metrics() };
    this.controller.abort(new DOMException('The stream is over.', 'AbortError'));
    this.opened?.controller.abort(new DOMException('The stream is over.', 'AbortError'));
    this.room?.();
    this.wake?.();
  }

  private metrics(): RequestMetrics {
    const now = performance.now();
    const u = this.usage;
    const promptTokens = u?.prompt_tokens ?? 0;
    const completionTokens = u?.completion_tokens ?? (this.received.ids.length || this.received.events);
    const ttft = (this.firstTokenAt ?? now) - this.startedAt;
    const decodeMs = this.firstTokenAt !== undefined && this.lastTokenAt !== undefined ? this.lastTokenAt - this.firstTokenAt : 0;
    return {
      queueMs: this.opened?.headMs ?? now - this.startedAt,
      ttftMs: ttft,
      promptTokens,
      cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? 0,
      completionTokens,
      prefillTokensPerSecond: ttft > 0 ? (promptTokens * 1000) / ttft : 0,
      decodeTokensPerSecond: decodeMs > 0 ? ((completionTokens - 1) * 1000) / decodeMs : 0,
      pausedMs: this.pausedMs,
    };
  }
}

/** A call as a server sends it: streamed (index, then id/type/name on its first delta) or whole (a message's). */
interface WireToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

/** The fields of a choice this reader looks at (chat.completion.chunk, text_completion, vLLM's token_ids). */
interface Choice {
  delta?: { content?: string | null; tool_calls?: WireToolCall[] | null };
  message?: { content?: string | null; tool_calls?: WireToolCall[] | null };
  text?: string;
  token_ids?: number[];
  finish_reason?: string | null;
  logprobs?: {
    content?: { token: string; logprob: number; top_logprobs?: { token: string; logprob: number }[] }[] | null;
    tokens?: string[];
    token_logprobs?: number[];
    top_logprobs?: Record<string, number>[];
  } | null;
}
