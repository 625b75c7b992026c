// intab serve's admission logic on a fake clock: token buckets (refill, wait, overuse), per-key rate limits in requests
// and tokens per minute (all-or-nothing charges, Retry-After, settling against what a request used, OpenAI's
// x-ratelimit headers), the flags that set them, and the bound on requests in flight.
import { describe, expect, test } from 'vitest';
import { AdmissionGate, QueueFullError, RateLimiter, TokenBucket, parseApiKey, parseRateLimit, retryAfterSeconds } from './serve-limits.ts';

function clock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('TokenBucket', () => {
  test('starts full, refills continuously up to capacity, says how long a take must wait', () => {
    const c = clock();
    const b = new TokenBucket(60, 60 / 60_000, c.now); // 60 a minute: one a second
    expect(b.available).toBe(60);
    b.take(60);
    expect(b.wait(1)).toBe(1_000);
    c.advance(500);
    expect(b.available).toBeCloseTo(0.5);
    expect(b.wait(1)).toBeCloseTo(500);
    c.advance(10 * 60_000);
    expect(b.available).toBe(60); // never above capacity
    expect(b.wait(61)).toBe(Infinity); // more than it ever holds
    expect(b.resetMs).toBe(0);
  });

  test('an overuse settled afterwards leaves it below zero, and the next take waits for it', () => {
    const c = clock();
    const b = new TokenBucket(100, 100 / 60_000, c.now);
    b.take(100);
    b.give(-50); // the request used 50 more than it was charged
    expect(b.available).toBe(-50);
    expect(b.wait(10)).toBeCloseTo(60 * 600); // 60 tokens at 100/min
    b.give(1_000);
    expect(b.available).toBe(100);
  });
});

describe('RateLimiter', () => {
  test('requests per minute: the third request in a minute is refused with the wait, per key', () => {
    const c = clock();
    const rl = new RateLimiter({ now: c.now });
    const limit = { rpm: 2 };
    expect(rl.check('a', limit, 10).ok).toBe(true);
    c.advance(1_000);
    expect(rl.check('a', limit, 10).ok).toBe(true);
    const v = rl.check('a', limit, 10);
    expect(v).toMatchObject({ ok: false, kind: 'requests', limit: 2, requested: 1 });
    if (v.ok) throw new Error('unreachable');
    expect(v.retryAfterMs).toBeCloseTo(29_000); // 1 of 2 regained takes 30 s; 1 s has passed
    expect(retryAfterSeconds(v.retryAfterMs)).toBe(29);
    expect(rl.check('b', limit, 10).ok).toBe(true); // another key has its own buckets
    c.advance(29_000);
    expect(rl.check('a', limit, 10).ok).toBe(true);
  });

  test('tokens per minute: a refused request charges nothing; settling gives back what was not used', () => {
    const c = clock();
    const rl = new RateLimiter({ now: c.now });
    const limit = { rpm: 100, tpm: 1_000 };
    const first = rl.check('k', limit, 800); // prompt + max_tokens
    expect(first.ok).toBe(true);
    const refused = rl.check('k', limit, 300);
    expect(refused).toMatchObject({ ok: false, kind: 'tokens', limit: 1_000, requested: 300 });
    // the refusal took no request either: 99 left
    expect(rl.headers('k', limit)).toMatchObject({ 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '99', 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '200' });
    // it used 120 of its 800: 680 come back
    rl.settle(first.ok ? first.ticket : null, 120);
    expect(rl.headers('k', limit)['x-ratelimit-remaining-tokens']).toBe('880');
    expect(rl.check('k', limit, 300).ok).toBe(true);
  });

  test('a request larger than the per-minute limit can never pass: no finite wait', () => {
    const rl = new RateLimiter({ now: clock().now });
    expect(rl.check('k', { tpm: 100 }, 101)).toMatchObject({ ok: false, kind: 'tokens', retryAfterMs: Infinity, limit: 100, requested: 101 });
  });

  test('no limit: always passes, nothing to settle, no headers', () => {
    const rl = new RateLimiter({ now: clock().now });
    expect(rl.check('k', undefined, 1e9)).toEqual({ ok: true, ticket: null });
    rl.settle(null, 5);
    expect(rl.headers('k', undefined)).toEqual({});
  });
});

describe('intab serve flags for limits', () => {
  test('--rate-limit and --api-key KEY[:rpm=N,tpm=N]', () => {
    expect(parseRateLimit('rpm=60,tpm=40000')).toEqual({ rpm: 60, tpm: 40_000 });
    expect(parseRateLimit('tpm=10')).toEqual({ tpm: 10 });
    expect(() => parseRateLimit('60/min')).toThrow(/--rate-limit takes rpm=N and\/or tpm=N/);
    expect(() => parseRateLimit('rpm=0')).toThrow(/at least 1/);
    expect(() => parseRateLimit('')).toThrow(/needs rpm=N/);
    expect(parseApiKey('sk-1')).toEqual({ key: 'sk-1' });
    expect(parseApiKey('sk-2:rpm=5')).toEqual({ key: 'sk-2', rateLimit: { rpm: 5 } });
    expect(() => parseApiKey('has space')).toThrow(/printable characters/);
    expect(() => parseApiKey('k:rps=1')).toThrow(/rpm=N/);
  });
});

describe('AdmissionGate', () => {
  test('slots + maxQueue in flight, then QueueFullError at once; a release (once) makes room', () => {
    const gate = new AdmissionGate({ slots: 2, maxQueue: 1 });
    const releases = [gate.admit(), gate.admit(), gate.admit()];
    expect(gate.inFlight).toBe(3);
    expect(() => gate.admit()).toThrow(QueueFullError);
    releases[0]();
    releases[0](); // idempotent
    expect(gate.inFlight).toBe(2);
    gate.admit();
    expect(() => gate.admit()).toThrow(/2 requests are running and 1 more are waiting/);
  });
});
