// The contract between `intab bench compare` (bench-systems.ts) and the peer libraries it measures intab against:
// one greedy run of exactly these prompt ids, timed on the page the same way for every system (start → first
// token → last token), and the typed error a peer throws when it cannot load or run. Each peer lives in its own
// file (transformers.ts, wllama.ts), loaded with a dynamic import so a bench that does not ask for it never fetches it.

/** One greedy run of a peer, timed on the page. */
export interface PeerRun {
  /** The generated ids (maxTokens of them; EOS never stops a run). */
  ids: number[];
  /** Start of generate → first generated token, ms. */
  ttftMs: number;
  /** promptIds.length / (ttftMs / 1000). */
  prefillTokS: number;
  /** (ids.length - 1) / seconds from the first to the last token; 0 with fewer than two tokens. */
  decodeTokS: number;
}

export interface Peer {
  system: 'transformers.js' | 'wllama';
  backend: 'wasm' | 'webgpu';
  /**
   * Greedy continuation of exactly these prompt ids (no BOS added, no tokenizer involved), maxTokens new ids.
   * EOS is an id like any other, as with intab's ignoreEos: not masked out of the argmax, and no stop.
   */
  run(promptIds: number[], maxTokens: number): Promise<PeerRun>;
  /** Frees the peer's sessions / worker. Idempotent. */
  destroy(): Promise<void>;
}

/** A peer could not load or run; the message says what to change. */
export class PeerError extends Error {
  readonly system: Peer['system'];
  constructor(system: Peer['system'], message: string, options?: { cause?: unknown }) {
    super(`${system}: ${message}`, options);
    this.name = 'PeerError';
    this.system = system;
  }
}

/**
 * The figures of a run from its clock readings: t0 when generate was called, and the arrival time of each
 * generated id (several ids may share one reading when a peer hands them over in a batch).
 * @example
 * const run = timedRun(promptIds.length, t0, ids, arrivals);
 */
export function timedRun(promptLength: number, t0: number, ids: number[], arrivals: number[]): PeerRun {
  const first = arrivals[0] ?? t0;
  const last = arrivals.at(-1) ?? t0;
  const ttftMs = first - t0;
  return {
    ids,
    ttftMs,
    prefillTokS: ttftMs > 0 ? promptLength / (ttftMs / 1000) : 0,
    decodeTokS: ids.length > 1 && last > first ? (ids.length - 1) / ((last - first) / 1000) : 0,
  };
}

/** Checks a run's arguments the same way for every peer. */
export function checkRunArgs(system: Peer['system'], promptIds: number[], maxTokens: number, contextSize: number): void {
  if (promptIds.length === 0 || !promptIds.every((id) => Number.isInteger(id) && id >= 0)) {
    throw new PeerError(system, `the prompt must be one or more token ids (non-negative integers), got [${promptIds.slice(0, 8).join(', ')}${promptIds.length > 8 ? ', …' : ''}]`);
  }
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new PeerError(system, `maxTokens must be a whole number ≥ 1, got ${maxTokens}`);
  if (promptIds.length + maxTokens > contextSize) {
    throw new PeerError(system, `the prompt (${promptIds.length}) plus maxTokens (${maxTokens}) pass the context of ${contextSize} tokens: ask for fewer tokens, or load the peer with a larger context`);
  }
}
