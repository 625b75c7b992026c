// One completion request of `intab serve`, whatever carries it (HTTP/1.1, HTTP/2 or a WebSocket): checked and mapped
// (serve-openai.ts), charged to its key's rate limits, admitted (a bounded number run or wait in the engine at once),
// run through the engine bridge and written to its transport's sink one object at a time. The next
// chunk is pulled from the engine only after the sink took the previous one (its `write` resolves when the socket
// drained), which is the whole of the backpressure: the engine pauses a sequence nobody pulls. A client that goes away
// (the sink's signal) or a shutdown past its grace period aborts the request, which frees its KV pages in the engine.
// Every running request is in `ctx.active` (GET /v1/stats lists them).
import type { EngineStats } from '@intab/engine/contract';
import type { EngineBridge } from './serve-bridge.ts';
import { QueueFullError, retryAfterSeconds, type AdmissionGate, type RateLimit, type RateLimiter, type Verdict } from './serve-limits.ts';
import type { Endpoint, Prepared, Tally } from './serve-openai.ts';

export interface ErrorFields {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}
export interface ErrorBody {
  error: ErrorFields;
}
export interface ErrorReply {
  status: number;
  body: ErrorBody;
  headers?: Record<string, string>;
}

/** The transports a request comes in on. */
export type Transport = 'http/1.1' | 'h2' | 'ws';

/** A request in flight, as GET /v1/stats lists it. */
export interface ActiveRequest {
  id: number;
  endpoint: Endpoint;
  transport: Transport;
  key: string;
  state: 'starting' | 'running';
  startedAt: number;
  tokens: number;
  writes: number;
  blocked: boolean;
  blockedMs: number;
  blockedSince?: number;
  controller: AbortController;
}

/** What every request of one server shares. */
export interface ServeContext {
  engine: EngineBridge;
  model: string;
  contextLength: number;
  apiKeys: Map<string, { rateLimit?: RateLimit }> | null;
  rateLimit: RateLimit | undefined;
  limiter: RateLimiter;
  gate: AdmissionGate;
  keepAliveMs: number;
  maxBodyBytes: number;
  cors: string | undefined;
  active: Map<number, ActiveRequest>;
  nextId: number;
  totals: Record<string, number>;
  closing: boolean;
  startedAt: number;
  onIdle: (() => void)[];
  log: (line: string) => void;
  accessLog?: boolean;
}

/** Who is asking, for rate limits and logs. */
export interface Client {
  key: string;
  limit: RateLimit | undefined;
  label: string;
}

/** What a transport does with one request's answer. */
export interface Sink {
  signal: AbortSignal;
  fail: (reply: ErrorReply) => void;
  start: (headers: Record<string, string>) => void;
  write: (object: Record<string, unknown>) => true | Promise<void>;
  end: (tally: Tally) => void;
  abort: (body: ErrorBody | null) => void;
  json: (object: Record<string, unknown>, headers: Record<string, string>) => void;
}

/** What GET /v1/stats answers. */
export interface ServerStats {
  object: 'intab.stats';
  model: string;
  status: 'ok' | 'draining' | 'engine_down';
  uptime_s: number;
  engine: EngineStats | null;
  admission: { in_flight: number; slots: number; max_queue: number };
  requests: {
    id: number;
    endpoint: Endpoint;
    transport: Transport;
    key: string;
    state: 'starting' | 'running';
    age_ms: number;
    completion_tokens: number;
    writes: number;
    blocked: boolean;
    blocked_ms: number;
  }[];
  totals: Record<string, number>;
}

/** The reason a shutdown past its grace period aborts requests with. */
export const SHUTDOWN = Object.freeze({ shutdown: true });

/** An OpenAI error body. */
export function errorBody(message: string, type: string, code: string | null = null, param: string | null = null): ErrorBody {
  return { error: { message, type, param, code } };
}

export function shuttingDown(): ErrorReply {
  return { status: 503, body: errorBody('The server is shutting down: retry against another instance.', 'server_error', 'server_shutting_down'), headers: { 'retry-after': '1' } };
}

/**
 * Who a request comes from: the API key it presents (`key`; when keys are set, one of them, else 401), or its address
 * (rate limits without keys are per address).
 */
export function authorize(ctx: ServeContext, key: string | undefined, address: string | undefined): { ok: true; client: Client } | { ok: false; reply: ErrorReply } {
  if (!ctx.apiKeys) return { ok: true, client: { key: `addr:${address ?? '?'}`, limit: ctx.rateLimit, label: address ?? '?' } };
  const entry = key === undefined ? undefined : ctx.apiKeys.get(key);
  if (!entry || key === undefined) {
    const message = key === undefined
      ? "You didn't provide an API key. Provide it in an Authorization header (Authorization: Bearer YOUR_KEY)."
      : `Incorrect API key provided: ${key.length > 8 ? `${key.slice(0, 3)}...${key.slice(-4)}` : '***'}. Use one of the keys intab serve was started with (--api-key).`;
    return { ok: false, reply: { status: 401, body: errorBody(message, 'invalid_request_error', 'invalid_api_key') } };
  }
  return { ok: true, client: { key: `key:${key}`, limit: entry.rateLimit ?? ctx.rateLimit, label: `${key.slice(0, 3)}…${key.slice(-2)}` } };
}

/**
 * The 429 of a refused charge, as OpenAI words it (type 'requests' or 'tokens', code rate_limit_exceeded), with
 * Retry-After; a request bigger than the per-minute token limit itself has no Retry-After: waiting cannot help.
 */
function rateLimited(v: Extract<Verdict, { ok: false }>, headers: Record<string, string>): ErrorReply {
  const what = v.kind === 'tokens' ? 'tokens per min (TPM)' : 'requests per min (RPM)';
  if (v.retryAfterMs === Infinity) {
    return {
      status: 429,
      body: errorBody(`Request too large: ${what}: Limit ${v.limit}, Requested ${v.requested} (prompt + max tokens). Lower max_tokens or shorten the prompt.`, 'tokens', 'rate_limit_exceeded'),
      headers,
    };
  }
  const s = retryAfterSeconds(v.retryAfterMs);
  return {
    status: 429,
    body: errorBody(`Rate limit reached on ${what}: Limit ${v.limit}, Requested ${v.requested}. Please try again in ${(v.retryAfterMs / 1000).toFixed(2)}s.`, v.kind, 'rate_limit_exceeded'),
    headers: { ...headers, 'retry-after': String(s), 'retry-after-ms': String(Math.ceil(v.retryAfterMs)) },
  };
}

/** Runs one completion request to its end (answered, failed, or aborted); never throws. */
export async function runCompletion(ctx: ServeContext, r: { endpoint: Endpoint; body: unknown; client: Client; transport: Transport; stream?: boolean }, sink: Sink): Promise<void> {
  const convert = ctx.engine.convert;
  ctx.totals.requests++;
  if (ctx.closing) return refuse(ctx, sink, shuttingDown(), 'refused_503');
  let prepared: Prepared;
  try {
    prepared = convert.prepare(r.endpoint, r.body, { contextLength: ctx.contextLength, ...(r.stream ? { stream: true } : {}) });
  } catch (err) {
    return refuse(ctx, sink, convert.errorReply(err), 'invalid');
  }
  const verdict = ctx.limiter.check(r.client.key, r.client.limit, prepared.estimate);
  const rateHeaders = ctx.limiter.headers(r.client.key, r.client.limit);
  if (prepared.ignored.length) rateHeaders['x-intab-ignored-fields'] = prepared.ignored.join(', ');
  if (!verdict.ok) return refuse(ctx, sink, rateLimited(verdict, rateHeaders), 'refused_429');

  const controller = new AbortController();
  const signal = controller.signal;
  const onGone = () => controller.abort(sink.signal.reason ?? new Error('the client went away'));
  if (sink.signal.aborted) onGone();
  else sink.signal.addEventListener('abort', onGone, { once: true });
  const entry: ActiveRequest = { id: ctx.nextId++, endpoint: r.endpoint, transport: r.transport, key: r.client.label, state: 'starting', startedAt: Date.now(), tokens: 0, writes: 0, blocked: false, blockedMs: 0, controller };
  ctx.active.set(entry.id, entry);
  const tally = convert.newTally();
  let started = false;
  let ran = false;
  let release: (() => void) | undefined;
  try {
    try {
      release = ctx.gate.admit();
    } catch (err) {
      if (!(err instanceof QueueFullError)) throw err;
      return void refuse(ctx, sink, { status: 503, body: errorBody(err.message, 'server_error', 'server_overloaded'), headers: { ...rateHeaders, 'retry-after': '1' } }, 'refused_503');
    }
    entry.state = 'running';
    const chunks = await ctx.engine.open(prepared.request, signal);
    ran = true;
    if (!prepared.stream) {
      const answer = await convert.complete(prepared, ctx.model, chunks, tally, signal);
      sink.json(answer, rateHeaders);
      ctx.totals.completed++;
      return;
    }
    sink.start(rateHeaders);
    started = true;
    const objects = convert.streamChunks(prepared, ctx.model, chunks, tally);
    try {
      for (;;) {
        const next = await objects.next();
        if (next.done) break;
        entry.tokens = tally.completionTokens;
        entry.writes++;
        const more = sink.write(next.value);
        if (more !== true) {
          // The client's socket is full: nothing more is pulled from the engine until it drains (or the client goes).
          entry.blocked = true;
          entry.blockedSince = Date.now();
          await untilOr(more, signal);
          entry.blockedMs += Date.now() - entry.blockedSince;
          entry.blocked = false;
          entry.blockedSince = undefined;
        }
        if (signal.aborted) break;
      }
    } finally {
      await objects.return(undefined);
    }
    entry.tokens = tally.completionTokens;
    if (!signal.aborted) {
      sink.end(tally);
      ctx.totals.completed++;
    } else ended(ctx, sink, signal);
  } catch (err) {
    if (signal.aborted) ended(ctx, sink, signal);
    else {
      ctx.totals.errors++;
      const reply = convert.errorReply(err);
      if (reply.status >= 500) ctx.log(`error: ${r.endpoint} ${(err as Error)?.message ?? String(err)}`);
      if (started) sink.abort(reply.body);
      else sink.fail({ ...reply, headers: rateHeaders });
    }
  } finally {
    release?.();
    sink.signal.removeEventListener('abort', onGone);
    // Settled against what was used (prompt and completion tokens; the prompt's estimate when the engine never said):
    // a request that never ran gives its whole charge back.
    const prompt = tally.promptTokens || (ran ? prepared.promptEstimate : 0);
    ctx.limiter.settle(verdict.ticket, prompt + tally.completionTokens);
    ctx.active.delete(entry.id);
    if (ctx.accessLog) {
      const outcome = ran ? (tally.finishReason ?? (signal.aborted ? 'aborted' : 'error')) : 'not run';
      ctx.log(`${r.transport} ${r.endpoint} ${r.client.label} ${outcome} ${tally.promptTokens}+${tally.completionTokens} tokens ${Date.now() - entry.startedAt} ms`);
    }
    if (ctx.active.size === 0) for (const f of ctx.onIdle.splice(0)) f();
  }
}

/** Waits for `p`, or for `signal` to abort (whichever comes first; the listener does not outlive the wait). */
function untilOr(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  let onAbort = () => {};
  const aborted = new Promise((resolve) => signal.addEventListener('abort', (onAbort = () => resolve(undefined)), { once: true }));
  return Promise.race([p, aborted]).finally(() => signal.removeEventListener('abort', onAbort)).then(() => {});
}

/**
 * An aborted request's end: a shutdown tells the client why (mid-stream: an error event); a client that went away
 * hears nothing.
 */
function ended(ctx: ServeContext, sink: Sink, signal: AbortSignal): void {
  if (signal.reason === SHUTDOWN) {
    ctx.totals.shutdown_aborted++;
    sink.abort(shuttingDown().body);
  } else {
    ctx.totals.aborted++;
    sink.abort(null);
  }
}

/** Refuses a request with `reply`, counted under `counter` in the totals. */
function refuse(ctx: ServeContext, sink: Sink, reply: ErrorReply, counter: string): void {
  ctx.totals[counter] = (ctx.totals[counter] ?? 0) + 1;
  sink.fail(reply);
}

/**
 * What GET /v1/stats answers: the engine's stats (pages, streams, running, waiting, paused), admission (requests in
 * flight and the bound), every request in flight, and counters since start.
 */
export async function serverStats(ctx: ServeContext): Promise<ServerStats> {
  const now = Date.now();
  return {
    object: 'intab.stats',
    model: ctx.model,
    status: ctx.closing ? 'draining' : ctx.engine.alive() ? 'ok' : 'engine_down',
    uptime_s: Math.round((now - ctx.startedAt) / 1000),
    engine: ctx.engine.alive() ? await ctx.engine.stats() : null,
    admission: { in_flight: ctx.gate.inFlight, slots: ctx.gate.slots, max_queue: ctx.gate.maxQueue },
    requests: [...ctx.active.values()].map((a) => ({
      id: a.id,
      endpoint: a.endpoint,
      transport: a.transport,
      key: a.key,
      state: a.state,
      age_ms: now - a.startedAt,
      completion_tokens: a.tokens,
      writes: a.writes,
      blocked: a.blocked,
      blocked_ms: Math.round(a.blockedMs + (a.blockedSince !== undefined ? now - a.blockedSince : 0)),
    })),
    totals: { ...ctx.totals },
  };
}
