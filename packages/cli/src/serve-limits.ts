// What `intab serve` lets in, as pure logic with an injectable clock (serve-limits.test.ts drives it with a fake one):
//   rate limits  per API key, requests per minute and tokens per minute, each a token bucket (capacity = the
//                per-minute figure, refilled continuously). A request is charged 1 request and its token estimate
//                (prompt + max tokens) up front, only when both buckets have room; when it is over, the charge is
//                settled against what it used (prompt + completion tokens): unused tokens go back, overuse is taken.
//   admission    the engine runs `slots` requests at once (its batch) and keeps the rest waiting in order; at most
//                `maxQueue` may wait: past `slots + maxQueue` in flight a request is refused at once (the server
//                answers 503) rather than queued without bound.

import { IntabError, errorClass } from '@intab/errors';

// ---- token buckets ----

export class TokenBucket {
  private level: number;
  private at: number;

  /** `capacity`: tokens it holds when full; `perMs`: tokens it gains per millisecond; `now`: clock in ms. */
  constructor(
    readonly capacity: number,
    readonly perMs: number,
    private readonly now: () => number,
  ) {
    this.level = capacity;
    this.at = now();
  }

  /** Tokens now (may be negative after an overuse was settled). */
  get available(): number {
    this.refill();
    return this.level;
  }

  private refill(): void {
    const t = this.now();
    this.level = Math.min(this.capacity, this.level + (t - this.at) * this.perMs);
    this.at = t;
  }

  /** Milliseconds until `n` tokens are there: 0 when they are now, Infinity when `n` is more than it ever holds. */
  wait(n: number): number {
    this.refill();
    if (n > this.capacity) return Infinity;
    return this.level >= n ? 0 : (n - this.level) / this.perMs;
  }

  take(n: number): void {
    this.refill();
    this.level -= n;
  }

  /** Gives `n` tokens back (a negative `n` takes more), never above capacity. */
  give(n: number): void {
    this.refill();
    this.level = Math.min(this.capacity, this.level + n);
  }

  /** Milliseconds until it is full again. */
  get resetMs(): number {
    this.refill();
    return (this.capacity - this.level) / this.perMs;
  }
}

// ---- rate limits ----

/** Requests and tokens per minute; an absent figure is no limit. */
export interface RateLimit {
  rpm?: number;
  tpm?: number;
}

/** `rpm=60,tpm=40000` (either may be left out) as a RateLimit; `flag` names it in messages. */
export function parseRateLimit(spec: string, flag = '--rate-limit'): RateLimit {
  const out: RateLimit = {};
  for (const part of spec.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(rpm|tpm)=(\d+)$/.exec(part);
    if (!m || Number(m[2]) < 1) throw new Error(`${flag} takes rpm=N and/or tpm=N (requests and tokens per minute, at least 1), e.g. ${flag} rpm=60,tpm=40000; got '${part}'`);
    out[m[1] as 'rpm' | 'tpm'] = Number(m[2]);
  }
  if (out.rpm === undefined && out.tpm === undefined) throw new Error(`${flag} needs rpm=N and/or tpm=N, e.g. ${flag} rpm=60,tpm=40000`);
  return out;
}

/** `KEY` or `KEY:rpm=N,tpm=N` (the key's own limits, instead of --rate-limit's). */
export function parseApiKey(spec: string): { key: string; rateLimit?: RateLimit } {
  const i = spec.indexOf(':');
  const key = i < 0 ? spec : spec.slice(0, i);
  if (!/^[\x21-\x7e]+$/.test(key)) throw new Error(`--api-key needs a key of printable characters without spaces, e.g. --api-key sk-local-1 (or sk-local-1:rpm=10,tpm=5000); got '${spec}'`);
  return i < 0 ? { key } : { key, rateLimit: parseRateLimit(spec.slice(i + 1), '--api-key KEY:') };
}

/**
 * A charge's outcome: taken (its ticket, to settle), or refused (which limit, when to retry). retryAfterMs is Infinity
 * when the request asks for more tokens than the per-minute limit itself.
 */
export type Verdict =
  | { ok: true; ticket: { key: string; tokens: number } | null }
  | { ok: false; kind: 'requests' | 'tokens'; retryAfterMs: number; limit: number; requested: number };

export class RateLimiter {
  private readonly now: () => number;
  private readonly keys = new Map<string, { limit: RateLimit; requests?: TokenBucket; tokens?: TokenBucket }>();

  constructor(o: { now?: () => number } = {}) {
    this.now = o.now ?? (() => Date.now());
  }

  private buckets(key: string, limit: RateLimit) {
    let b = this.keys.get(key);
    if (!b || b.limit.rpm !== limit.rpm || b.limit.tpm !== limit.tpm) {
      if (this.keys.size >= 10_000) this.prune();
      b = {
        limit,
        ...(limit.rpm ? { requests: new TokenBucket(limit.rpm, limit.rpm / 60_000, this.now) } : {}),
        ...(limit.tpm ? { tokens: new TokenBucket(limit.tpm, limit.tpm / 60_000, this.now) } : {}),
      };
      this.keys.set(key, b);
    }
    return b;
  }

  /** Forgets keys whose buckets are full (as good as new), so per-address keys do not pile up. */
  prune(): void {
    for (const [k, b] of this.keys) if ((b.requests?.resetMs ?? 0) <= 0 && (b.tokens?.resetMs ?? 0) <= 0) this.keys.delete(k);
  }

  /**
   * Charges one request of `tokens` (estimated) to `key` when both buckets have room; else says which limit and when
   * to retry. Nothing is charged on a refusal.
   */
  check(key: string, limit: RateLimit | undefined, tokens: number): Verdict {
    if (!limit || (!limit.rpm && !limit.tpm)) return { ok: true, ticket: null };
    const b = this.buckets(key, limit);
    const waitRequests = b.requests?.wait(1) ?? 0;
    const waitTokens = b.tokens?.wait(tokens) ?? 0;
    if (waitTokens === Infinity) return { ok: false, kind: 'tokens', retryAfterMs: Infinity, limit: limit.tpm!, requested: tokens };
    if (waitRequests > 0 || waitTokens > 0) {
      const kind = waitTokens > waitRequests ? 'tokens' : 'requests';
      return { ok: false, kind, retryAfterMs: Math.max(waitRequests, waitTokens), limit: (kind === 'tokens' ? limit.tpm : limit.rpm)!, requested: kind === 'tokens' ? tokens : 1 };
    }
    b.requests?.take(1);
    b.tokens?.take(tokens);
    return { ok: true, ticket: { key, tokens } };
  }

  /** Settles a charge against what the request used: the difference goes back to (or is taken from) its tokens bucket. */
  settle(ticket: { key: string; tokens: number } | null, used: number): void {
    if (!ticket) return;
    this.keys.get(ticket.key)?.tokens?.give(ticket.tokens - used);
  }

  /** OpenAI's x-ratelimit-* headers for `key` (limit, remaining, reset of each limited bucket). */
  headers(key: string, limit: RateLimit | undefined): Record<string, string> {
    if (!limit || (!limit.rpm && !limit.tpm)) return {};
    const b = this.buckets(key, limit);
    const h: Record<string, string> = {};
    for (const [name, bucket] of [['requests', b.requests], ['tokens', b.tokens]] as const) {
      if (!bucket) continue;
      h[`x-ratelimit-limit-${name}`] = String(bucket.capacity);
      h[`x-ratelimit-remaining-${name}`] = String(Math.max(0, Math.floor(bucket.available)));
      h[`x-ratelimit-reset-${name}`] = `${Math.ceil(bucket.resetMs) / 1000}s`;
    }
    return h;
  }
}

/** Retry-After in whole seconds (at least 1) for a wait in ms. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

// ---- admission: a bounded number of requests in flight ----

/** Every place is taken: the server answers 503 (with Retry-After). */
export class QueueFullError extends errorClass(IntabError, 'QueueFullError', 'server_overloaded')<{
  /** Requests the engine runs at once. */
  readonly slots: number;
  /** Requests that may wait beyond them. */
  readonly maxQueue: number;
}> {
  constructor(slots: number, maxQueue: number) {
    super({ slots, maxQueue }, `The server is at capacity: ${slots} requests are running and ${maxQueue} more are waiting for the engine. Retry shortly.`);
  }
}

/**
 * At most `slots + maxQueue` requests in flight. The engine runs `slots` at once (its batch; a paused stream, whose
 * client reads slowly, leaves its place in the steps to others) and keeps the rest waiting in order; this only bounds
 * how many may wait, so a burst is refused at once (503) instead of queueing without bound.
 */
export class AdmissionGate {
  readonly slots: number;
  readonly maxQueue: number;
  /** Requests holding a place now. */
  inFlight = 0;

  constructor(o: { slots: number; maxQueue: number }) {
    this.slots = o.slots;
    this.maxQueue = o.maxQueue;
  }

  get capacity(): number {
    return this.slots + this.maxQueue;
  }

  /** Takes a place, or throws QueueFullError when none is left; returns the function that gives it back (idempotent). */
  admit(): () => void {
    if (this.inFlight >= this.capacity) throw new QueueFullError(this.slots, this.maxQueue);
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
    };
  }
}
