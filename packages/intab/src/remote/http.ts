// The HTTP side of the remote backend: one POST (or GET) to an OpenAI-compatible server with a connect timeout (until
// the response head), retried with exponential backoff and full jitter on connection errors, timeouts and the statuses
// OpenAI's own client retries (408, 409, 429, 5xx), honouring Retry-After / retry-after-ms. It returns the first 2xx
// response; what happens to its body (first-byte and idle timeouts, the stream) is stream.ts's job.

import { RemoteConnectionError, RemoteHttpError, RemoteTimeoutError } from './errors.ts';
import { InvalidArgumentError } from '../errors.ts';

/** Where the remote backend sends requests, and how patiently. */
export interface RemoteOptions {
  /** The API's root, as OpenAI's client takes it: `https://api.openai.com/v1`, `http://localhost:8000/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** The model the server runs (the requests' `model`). */
  model: string;
  /** Extra headers on every request (an organization, a proxy's key). */
  headers?: Record<string, string>;
  timeouts?: {
    /** Until the response's status and headers arrive [10,000]. */
    connectMs?: number;
    /** From the request until its first token (or a complete answer) [60,000]. */
    firstByteMs?: number;
    /** Between two pieces of the stream once it has started; keep-alive comments count [30,000]. */
    idleMs?: number;
  };
  retries?: {
    /** Retries after the first attempt, only before any token was delivered [2]. */
    max?: number;
    /** The first backoff; each retry doubles it, up to maxDelayMs, with full jitter [500, 8,000]. */
    baseDelayMs?: number;
    maxDelayMs?: number;
    /** A Retry-After longer than this is not waited for: the error is raised with retryAfterMs [60,000]. */
    maxRetryAfterMs?: number;
  };
  /** The fetch to use [globalThis.fetch]. */
  fetch?: typeof fetch;
}

/** RemoteOptions with every default filled in. */
export interface RemoteConfig {
  baseURL: string;
  model: string;
  headers: Record<string, string>;
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  maxRetryAfterMs: number;
  fetch: typeof fetch;
}

export function remoteConfig(o: RemoteOptions): RemoteConfig {
  if (typeof o?.baseURL !== 'string' || !/^https?:\/\//i.test(o.baseURL)) {
    throw new InvalidArgumentError('remote', `remote.baseURL must be an http(s) URL of an OpenAI-compatible API's root, e.g. 'http://localhost:8000/v1', not ${JSON.stringify(o?.baseURL)}.`);
  }
  if (typeof o.model !== 'string' || o.model === '') throw new InvalidArgumentError('remote', "remote.model must name the model the server runs, e.g. 'Qwen/Qwen3-0.6B' (GET <baseURL>/models lists them).");
  const ms = (v: number | undefined, dflt: number, name: string) => {
    if (v === undefined) return dflt;
    if (typeof v !== 'number' || !(v > 0)) throw new InvalidArgumentError('remote', `remote.${name} must be a positive number of milliseconds, not ${String(v)}.`);
    return v;
  };
  const retries = o.retries?.max ?? 2;
  if (!Number.isInteger(retries) || retries < 0) throw new InvalidArgumentError('remote', `remote.retries.max must be a whole number ≥ 0, not ${String(retries)}.`);
  const fetchFn = o.fetch ?? globalThis.fetch?.bind(globalThis);
  if (typeof fetchFn !== 'function') throw new InvalidArgumentError('remote', 'remote: this environment has no fetch: pass remote.fetch.');
  return {
    baseURL: o.baseURL.replace(/\/+$/, ''),
    model: o.model,
    headers: { ...(o.apiKey ? { Authorization: `Bearer ${o.apiKey}` } : {}), ...(o.headers ?? {}) },
    connectMs: ms(o.timeouts?.connectMs, 10_000, 'timeouts.connectMs'),
    firstByteMs: ms(o.timeouts?.firstByteMs, 60_000, 'timeouts.firstByteMs'),
    idleMs: ms(o.timeouts?.idleMs, 30_000, 'timeouts.idleMs'),
    maxRetries: retries,
    baseDelayMs: ms(o.retries?.baseDelayMs, 500, 'retries.baseDelayMs'),
    maxDelayMs: ms(o.retries?.maxDelayMs, 8_000, 'retries.maxDelayMs'),
    maxRetryAfterMs: ms(o.retries?.maxRetryAfterMs, 60_000, 'retries.maxRetryAfterMs'),
    fetch: fetchFn,
  };
}

/** A 2xx response, with the controller that aborts it (stream.ts aborts it on idle, cancel and abort). */
export interface Opened {
  response: Response;
  controller: AbortController;
  /** Attempts made so far (1 + retries). */
  attempts: number;
  /** ms from the request's start to the response head. */
  headMs: number;
}

/** Why an attempt failed, and whether another may be made. */
export interface Failure {
  error: unknown;
  retryable: boolean;
  /** What the server asked to wait (Retry-After), in ms. */
  retryAfterMs?: number;
}

/** Statuses worth another attempt (OpenAI's client retries the same ones). */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a Retry-After header asks for, in ms: `retry-after-ms` (OpenAI's), else Retry-After's seconds or HTTP
 * date; undefined when absent or unreadable.
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const msHeader = headers.get('retry-after-ms');
  if (msHeader !== null && /^\s*\d+(\.\d+)?\s*$/.test(msHeader)) return Number(msHeader);
  const v = headers.get('retry-after');
  if (v === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) return Number(v) * 1000;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The backoff before retry number `retry` (0-based): full jitter over min(max, base·2^retry). */
export function backoffMs(retry: number, c: Pick<RemoteConfig, 'baseDelayMs' | 'maxDelayMs'>, random = Math.random): number {
  return Math.round(random() * Math.min(c.maxDelayMs, c.baseDelayMs * 2 ** retry));
}

/** Resolves after ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const done = () => {
      signal?.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/** An OpenAI-shaped error body's fields ({ error: { message, type, code } }), or the start of whatever else it is. */
export function errorBody(text: string): { message?: string; code?: string; type?: string } {
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const e = j?.error;
    if (e && typeof e === 'object') {
      const o = e as { message?: unknown; code?: unknown; type?: unknown };
      return {
        ...(typeof o.message === 'string' ? { message: o.message } : {}),
        ...(typeof o.code === 'string' ? { code: o.code } : typeof o.code === 'number' ? { code: String(o.code) } : {}),
        ...(typeof o.type === 'string' ? { type: o.type } : {}),
      };
    }
    if (typeof e === 'string') return { message: e };
    if (typeof j?.message === 'string') return { message: j.message };
    if (typeof j?.detail === 'string') return { message: j.detail };
  } catch {
    // not JSON
  }
  const t = text.replace(/\s+/g, ' ').trim();
  return t ? { message: t.length > 200 ? `${t.slice(0, 197)}...` : t } : {};
}

/**
 * Sends one request, retrying what may be retried, and resolves with the first 2xx response. `attempt` lets the
 * caller start counting where an earlier open left off (a stream that broke before its first token reopens).
 * Aborting `signal` rejects with its reason at once.
 */
export async function send(
  c: RemoteConfig,
  path: string,
  init: { method: 'GET' | 'POST'; body?: unknown },
  signal: AbortSignal | undefined,
  attempt = 0,
  earlier?: Failure,
): Promise<Opened> {
  const url = `${c.baseURL}${path}`;
  let last = earlier;
  for (let n = attempt; ; n++) {
    if (n > 0) {
      if (!last?.retryable || n > c.maxRetries) throw finalError(url, last!, n);
      const asked = last.retryAfterMs;
      if (asked !== undefined && asked > c.maxRetryAfterMs) throw finalError(url, last, n);
      await sleep(asked ?? backoffMs(n - 1, c), signal);
    }
    signal?.throwIfAborted();
    const controller = new AbortController();
    const forward = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', forward, { once: true });
    const started = performance.now();
    const timeout = new RemoteTimeoutError(url, 'connect', c.connectMs);
    const timer = setTimeout(() => controller.abort(timeout), c.connectMs);
    let response: Response;
    try {
      response = await c.fetch(url, {
        method: init.method,
        headers: { Accept: init.method === 'POST' ? 'text/event-stream, application/json' : 'application/json', ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...c.headers },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        signal: controller.signal,
      });
    } catch (err) {
      signal?.removeEventListener('abort', forward);
      if (signal?.aborted) throw signal.reason;
      last = { error: controller.signal.aborted ? controller.signal.reason : err, retryable: true };
      continue;
    } finally {
      clearTimeout(timer);
    }
    const headMs = performance.now() - started;
    if (response.ok) {
      // The caller's signal keeps aborting this controller (and so the body) until the stream is over.
      return { response, controller, attempts: n + 1, headMs };
    }
    signal?.removeEventListener('abort', forward);
    const text = await response.text().catch(() => '');
    last = { error: { status: response.status, body: errorBody(text) }, retryable: retryableStatus(response.status), retryAfterMs: retryAfterMs(response.headers) };
  }
}

/** The error to raise once no more attempts are made. */
export function finalError(url: string, f: Failure, attempts: number): Error {
  const e = f.error as { status?: number; body?: { message?: string; code?: string; type?: string } };
  if (e && typeof e === 'object' && typeof e.status === 'number' && e.body) return new RemoteHttpError(url, e.status, e.body, attempts, f.retryAfterMs);
  if (f.error instanceof Error && f.error.name.startsWith('Remote')) return f.error;
  return new RemoteConnectionError(url, attempts, f.error);
}
