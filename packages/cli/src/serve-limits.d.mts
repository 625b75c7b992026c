// Types of serve-limits.mjs for the TypeScript tests.
export declare class TokenBucket {
  constructor(capacity: number, perMs: number, now: () => number);
  readonly capacity: number;
  readonly perMs: number;
  readonly available: number;
  readonly resetMs: number;
  wait(n: number): number;
  take(n: number): void;
  give(n: number): void;
}
export interface RateLimit {
  rpm?: number;
  tpm?: number;
}
export declare function parseRateLimit(spec: string, flag?: string): RateLimit;
export declare function parseApiKey(spec: string): { key: string; rateLimit?: RateLimit };
export type Verdict =
  | { ok: true; ticket: { key: string; tokens: number } | null }
  | { ok: false; kind: 'requests' | 'tokens'; retryAfterMs: number; limit: number; requested: number };
export declare class RateLimiter {
  constructor(o?: { now?: () => number });
  check(key: string, limit: RateLimit | undefined, tokens: number): Verdict;
  settle(ticket: { key: string; tokens: number } | null, used: number): void;
  headers(key: string, limit: RateLimit | undefined): Record<string, string>;
  prune(): void;
}
export declare function retryAfterSeconds(ms: number): number;
export declare class QueueFullError extends Error {
  constructor(slots: number, maxQueue: number);
  readonly slots: number;
  readonly maxQueue: number;
}
export declare class AdmissionGate {
  constructor(o: { slots: number; maxQueue: number });
  readonly slots: number;
  readonly maxQueue: number;
  readonly inFlight: number;
  readonly capacity: number;
  admit(): () => void;
}
