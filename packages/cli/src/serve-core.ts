// What `intab serve` adds to intab's one OpenAI core (handleOpenAI, answerCompletion), whatever transport carries a
// request (HTTP/1.1, HTTP/2 or a WebSocket): who asks (API keys), how much they may (per-key rate limits), how many run
// at once (the admission gate), and the record of every request in flight (GET /v1/stats). It all hooks into the core
// through one `admit` callback per request: checked by the core first (routes, JSON, fields, mapping), then charged to
// its key, then given a place, or answered for (401 is the transport's, before the core; 429 and 503 are answered here),
// and once over (answered, failed, aborted) its place is given back and its charge settled against what it used. A
// shutdown aborts every request in flight with its reply (shuttingDown), which the core tells the client.
import { errorResponse, openAIError, type CompletionOptions, type OpenAIRoute, type OpenAIErrorBody, type OpenAIErrorReply, type Tally } from 'intab';
import type { EngineStats } from '@intab/engine/contract';
import type { ServeEngine } from './serve-engine.ts';
import { QueueFullError, retryAfterSeconds, type AdmissionGate, type RateLimit, type RateLimiter, type Verdict } from './serve-limits.ts';

/** The transports a request comes in on. */
export type Transport = 'http/1.1' | 'h2' | 'ws';

/** A request in flight, as GET /v1/stats lists it. */
export interface ActiveRequest {
  id: number;
  endpoint: OpenAIRoute;
  transport: Transport;
  key: string;
  /** 'starting' until the engine accepted it (its answer began), then 'running'. */
  state: 'starting' | 'running';
  startedAt: number;
  /** What it used so far (the core fills it in as chunks pass). */
  tally: Readonly<Tally>;
  writes: number;
  blocked: boolean;
  blockedMs: number;
  blockedSince?: number;
  /** Aborting it ends the request (with shuttingDown(): the client is told why). */
  controller: AbortController;
}

/** What every request of one server shares. */
export interface ServeContext {
  engine: ServeEngine;
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
  /** When the model began to be served (ms): /v1/models' `created`, /v1/stats' uptime. */
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

/** What GET /v1/stats answers. */
export interface ServerStats {
  object: 'intab.stats';
  model: string;
  runtime: ServeEngine['runtime'];
  backend: string;
  status: 'ok' | 'draining' | 'engine_down';
  uptime_s: number;
  engine: EngineStats | null;
  admission: { in_flight: number; slots: number; max_queue: number };
  requests: {
    id: number;
    endpoint: OpenAIRoute;
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

/** The routes a transport answers itself beside the core's (named in the core's 404). */
export const SERVER_ROUTES = ['GET /health', 'GET /v1/stats', 'the WebSocket /v1/realtime-text'] as const;

/** The reply every request gets while the server shuts down (before it runs, or mid-stream past the grace period). */
export function shuttingDown(): OpenAIErrorReply {
  return { status: 503, body: openAIError('The server is shutting down: retry against another instance.', 'server_error', 'server_shutting_down'), headers: { 'retry-after': '1' } };
}

/** Whether a request was aborted by the shutdown (its client is told), not by a client that went away. */
export function isShutdown(reason: unknown): boolean {
  return (reason as OpenAIErrorReply | undefined)?.body?.error?.code === 'server_shutting_down';
}

/**
 * Who a request comes from: the API key it presents (`key`; when keys are set, one of them, else 401), or its address
 * (rate limits without keys are per address).
 */
export function authorize(ctx: ServeContext, key: string | undefined, address: string | undefined): { ok: true; client: Client } | { ok: false; reply: OpenAIErrorReply } {
  if (!ctx.apiKeys) return { ok: true, client: { key: `addr:${address ?? '?'}`, limit: ctx.rateLimit, label: address ?? '?' } };
  const entry = key === undefined ? undefined : ctx.apiKeys.get(key);
  if (!entry || key === undefined) {
    const message = key === undefined
      ? "You didn't provide an API key. Provide it in an Authorization header (Authorization: Bearer YOUR_KEY)."
      : `Incorrect API key provided: ${key.length > 8 ? `${key.slice(0, 3)}...${key.slice(-4)}` : '***'}. Use one of the keys intab serve was started with (--api-key).`;
    return { ok: false, reply: { status: 401, body: openAIError(message, 'invalid_request_error', 'invalid_api_key') } };
  }
  return { ok: true, client: { key: `key:${key}`, limit: entry.rateLimit ?? ctx.rateLimit, label: `${key.slice(0, 3)}…${key.slice(-2)}` } };
}

/**
 * The 429 of a refused charge, as OpenAI words it (type 'requests' or 'tokens', code rate_limit_exceeded), with
 * Retry-After; a request bigger than the per-minute token limit itself has no Retry-After: waiting cannot help.
 */
function rateLimited(v: Extract<Verdict, { ok: false }>, headers: Record<string, string>): OpenAIErrorReply {
  const what = v.kind === 'tokens' ? 'tokens per min (TPM)' : 'requests per min (RPM)';
  if (v.retryAfterMs === Infinity) {
    return {
      status: 429,
      body: openAIError(`Request too large: ${what}: Limit ${v.limit}, Requested ${v.requested} (prompt + max tokens). Lower max_tokens or shorten the prompt.`, 'tokens', 'rate_limit_exceeded'),
      headers,
    };
  }
  const s = retryAfterSeconds(v.retryAfterMs);
  return {
    status: 429,
    body: openAIError(`Rate limit reached on ${what}: Limit ${v.limit}, Requested ${v.requested}. Please try again in ${(v.retryAfterMs / 1000).toFixed(2)}s.`, v.kind, 'rate_limit_exceeded'),
    headers: { ...headers, 'retry-after': String(s), 'retry-after-ms': String(Math.ceil(v.retryAfterMs)) },
  };
}

/** One request of a transport, from its arrival: `admit` for the core, and its entry in ctx.active once admitted. */
export interface RequestScope {
  admit: NonNullable<CompletionOptions['admit']>;
  /** Its entry while it runs (undefined before admit let it in, and after it refused). */
  entry(): ActiveRequest | undefined;
  /** Whether `admit` was called: the core checked the body and mapped it (a 400 before it was not). */
  checked(): boolean;
}

/**
 * The admission of one completion request (`controller` aborts it: the client went away, or the shutdown): refused
 * while the server drains, charged to `client`'s rate limits, given a place by the gate; once over, settled.
 */
export function requestScope(ctx: ServeContext, client: Client, transport: Transport, controller: AbortController): RequestScope {
  let entry: ActiveRequest | undefined;
  let checked = false;
  const count = (counter: string) => (ctx.totals[counter] = (ctx.totals[counter] ?? 0) + 1);
  const admit: RequestScope['admit'] = (prepared, tally) => {
    checked = true;
    if (ctx.closing) return (count('refused_503'), shuttingDown());
    const verdict = ctx.limiter.check(client.key, client.limit, prepared.estimate);
    const headers = ctx.limiter.headers(client.key, client.limit);
    if (!verdict.ok) return (count('refused_429'), rateLimited(verdict, headers));
    let release: () => void;
    try {
      release = ctx.gate.admit();
    } catch (err) {
      if (!(err instanceof QueueFullError)) throw err;
      ctx.limiter.settle(verdict.ticket, 0); // never ran: the whole charge goes back
      count('refused_503');
      return { status: 503, body: openAIError(err.message, 'server_error', 'server_overloaded'), headers: { ...headers, 'retry-after': '1' } };
    }
    const e: ActiveRequest = { id: ctx.nextId++, endpoint: prepared.endpoint, transport, key: client.label, state: 'starting', startedAt: Date.now(), tally, writes: 0, blocked: false, blockedMs: 0, controller };
    entry = e;
    ctx.active.set(e.id, e);
    return {
      headers,
      ended(end) {
        release();
        // Settled against what was used (prompt and completion tokens; the prompt's estimate when the engine never
        // said): a request that never ran gives its whole charge back.
        const prompt = end.tally.promptTokens || (end.ran ? prepared.promptEstimate : 0);
        ctx.limiter.settle(verdict.ticket, prompt + end.tally.completionTokens);
        if (end.outcome === 'completed') count('completed');
        else if (end.outcome === 'aborted') count(isShutdown(controller.signal.reason) ? 'shutdown_aborted' : 'aborted');
        else {
          count('errors');
          // A refusal the client caused (a 4xx) is its answer; the server's own failures are logged.
          if (errorResponse(end.error, prepared.endpoint).status >= 500) ctx.log(`error: ${prepared.endpoint} ${(end.error as Error)?.message ?? String(end.error)}`);
        }
        ctx.active.delete(e.id);
        entry = undefined;
        if (ctx.accessLog) {
          const outcome = end.ran ? (end.tally.finishReason ?? (end.outcome === 'aborted' ? 'aborted' : 'error')) : 'not run';
          ctx.log(`${transport} ${prepared.endpoint} ${client.label} ${outcome} ${end.tally.promptTokens}+${end.tally.completionTokens} tokens ${Date.now() - e.startedAt} ms`);
        }
        if (ctx.active.size === 0) for (const f of ctx.onIdle.splice(0)) f();
      },
    };
  };
  return { admit, entry: () => entry, checked: () => checked };
}

/** Counts a completion request once answered: `invalid` when the core refused it before `admit` (not JSON, a bad field). */
export function countRequest(ctx: ServeContext, scope: RequestScope, status: number): void {
  ctx.totals.requests++;
  if (!scope.checked() && status >= 400) ctx.totals.invalid++;
}

/** Marks a request blocked on its client's socket until `drained` settles (for /v1/stats). */
export async function blockedOn(entry: ActiveRequest | undefined, drained: Promise<void>): Promise<void> {
  if (!entry) return drained;
  entry.blocked = true;
  entry.blockedSince = Date.now();
  try {
    await drained;
  } finally {
    entry.blockedMs += Date.now() - entry.blockedSince;
    entry.blocked = false;
    entry.blockedSince = undefined;
  }
}

/** An OpenAI error body for a transport's own answers (405 of /health, a bad WebSocket frame...). */
export function errorBody(message: string, type: string, code: string | null = null): OpenAIErrorBody {
  return openAIError(message, type, code);
}

/**
 * What GET /v1/stats answers: the engine's stats (pages, streams, running, waiting, paused), admission (requests in
 * flight and the bound), every request in flight, and counters since start.
 */
export async function serverStats(ctx: ServeContext): Promise<ServerStats> {
  const now = Date.now();
  const alive = ctx.engine.alive();
  return {
    object: 'intab.stats',
    model: ctx.engine.model,
    runtime: ctx.engine.runtime,
    backend: ctx.engine.info.backend.name,
    status: ctx.closing ? 'draining' : alive ? 'ok' : 'engine_down',
    uptime_s: Math.round((now - ctx.startedAt) / 1000),
    engine: alive ? await ctx.engine.stats() : null,
    admission: { in_flight: ctx.gate.inFlight, slots: ctx.gate.slots, max_queue: ctx.gate.maxQueue },
    requests: [...ctx.active.values()].map((a) => ({
      id: a.id,
      endpoint: a.endpoint,
      transport: a.transport,
      key: a.key,
      state: a.state,
      age_ms: now - a.startedAt,
      completion_tokens: a.tally.completionTokens,
      writes: a.writes,
      blocked: a.blocked,
      blocked_ms: Math.round(a.blockedMs + (a.blockedSince !== undefined ? now - a.blockedSince : 0)),
    })),
    totals: { ...ctx.totals },
  };
}
