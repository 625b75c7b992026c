// Iteration-level scheduling (continuous batching): before every step the scheduler decides which sequences
// run and with how many tokens, so requests join and leave between any two steps. Policy, in order:
//   1. decoding sequences, one token each (round-robin when there are more than fit), plus the tokens
//      speculative decoding sets aside for proposals;
//   2. admission of waiting requests while a batch slot, a token and KV pages are left: FIFO within a session, and
//      between sessions (the tabs of a shared engine) the one with the fewest admitted sequences goes first, so a
//      tab streaming ten requests cannot starve another tab's one; the chosen head waits for room and nobody
//      overtakes it (with one session, strict FIFO);
//   3. prefill chunks for the remaining token budget, shared evenly (water-filling) among prefilling sequences.
// KV pages are reserved at admission for the whole request (prompt + maxTokens), so a running sequence can
// never hit a full cache mid-stream: a request that does not fit now waits; one that never can is refused
// earlier (Engine.start). Paused sequences (backpressure) keep their pages and their reservation. How a request
// is admitted (a fresh sequence, or one that maps pages of the prefix cache and so needs fewer) is the
// Admission's business; pages a prefix cache holds and would give back count as available.

import type { StepRunner } from '@intab/model';
import type { Sequence } from './sequence.ts';

/**
 * Pages a request takes from the pool if admitted now, and the pages available to it (before reservations); with
 * sliding-window layers in a store of their own (kv.window), the same for window pages.
 */
export interface AdmissionCost {
  need: number;
  available: number;
  window?: { need: number; available: number };
}

/** How waiting requests get their KV: the pages each would take now, and the allocation itself. */
export interface Admission {
  cost(seq: Sequence): AdmissionCost;
  /** Allocates `seq` in the runner (right after cost() said it fits). */
  admit(seq: Sequence): void;
}

/** Admission without a prefix cache: every request starts empty. */
export function plainAdmission(runner: Pick<StepRunner, 'kv' | 'alloc'>): Admission {
  return {
    cost: (seq) => ({
      need: Math.ceil(seq.reserveLength / runner.kv.pageSize),
      available: runner.kv.availablePageCount,
      ...(runner.kv.window ? { window: { need: runner.kv.windowToCome(undefined, seq.reserveLength), available: runner.kv.availableWindowCount } } : {}),
    }),
    admit: (seq) => runner.alloc(seq.id),
  };
}

export interface SchedulerLimits {
  /** Most sequences in one step. */
  maxBatch: number;
  /** Most tokens in one step (decode tokens + prefill chunks). */
  maxTokensPerStep: number;
}

/** One sequence's part of the next step. */
export interface PlannedEntry {
  seq: Sequence;
  tokens: number[];
  /** The step's sampled token is this sequence's next token (decode, or the prompt's last chunk). */
  samples: boolean;
  /** Decode entries: step tokens set aside for speculative proposals (the engine may use fewer). */
  lookahead: number;
}

/** Proposals a decoding sequence wants this step (0 = none), given how many decode and the budget left. */
export type Lookahead = (seq: Sequence, decoding: number, budget: number) => number;

export class Scheduler {
  /** Requests not yet admitted (no KV allocation), first come first served. */
  readonly waiting: Sequence[] = [];
  /** Admitted sequences (allocated in the runner), in admission order. */
  readonly running: Sequence[] = [];
  private cursor = 0;

  constructor(
    private readonly runner: Pick<StepRunner, 'kv' | 'alloc' | 'freeSequenceSlots'>,
    readonly limits: SchedulerLimits,
    private readonly admission: Admission = plainAdmission(runner),
  ) {}

  add(seq: Sequence): void {
    this.waiting.push(seq);
  }

  /** Forget a sequence (finished or aborted); the caller frees its pages. Returns whether it was admitted. */
  remove(seq: Sequence): boolean {
    const w = this.waiting.indexOf(seq);
    if (w >= 0) this.waiting.splice(w, 1);
    const r = this.running.indexOf(seq);
    if (r >= 0) this.running.splice(r, 1);
    return r >= 0;
  }

  /** Pages the admitted sequences may still take to reach their reserved length. */
  reservedPages(): number {
    let n = 0;
    for (const s of this.running) n += this.runner.kv.pagesNeeded(s.id, s.reserveLength);
    return n;
  }

  /** Window pages (sliding-window layers' store) the admitted sequences may still take to reach their reserved length. */
  reservedWindowPages(): number {
    let n = 0;
    for (const s of this.running) n += this.runner.kv.windowToCome(s.id, s.reserveLength);
    return n;
  }

  /** Whether `seq` (not admitted) fits beside every admitted sequence's reservation right now. */
  fits(seq: Sequence): boolean {
    if ((this.runner.freeSequenceSlots ?? Infinity) < 1) return false; // a recurrent state slot each (Qwen3.5)
    const { need, available, window } = this.admission.cost(seq);
    return need <= available - this.reservedPages() && (!window || window.need <= window.available - this.reservedWindowPages());
  }

  /** Whether plan() would return a non-empty step right now. */
  get plannable(): boolean {
    if (this.running.some((s) => !s.finished && !s.paused && !s.abortRequested && !(s.prefillOnly && s.prefillLeft === 0))) return true;
    if (this.waiting.some((s) => s.abortRequested || s.finished)) return true;
    const head = this.head();
    return head !== undefined && this.fits(head);
  }

  /**
   * The waiting request admitted next: the oldest one of the session with the fewest admitted sequences (ties: the
   * session whose oldest request came first). With one session (every request of a tab's own engine), the oldest.
   */
  head(): Sequence | undefined {
    const first = this.waiting[0];
    if (first === undefined || this.waiting.every((s) => s.session === first.session)) return first;
    const admitted = new Map<string | undefined, number>();
    for (const s of this.running) if (!s.finished) admitted.set(s.session, (admitted.get(s.session) ?? 0) + 1);
    let best: Sequence | undefined;
    let least = Infinity;
    const seen = new Set<string | undefined>();
    for (const s of this.waiting) {
      if (seen.has(s.session)) continue;
      seen.add(s.session);
      const n = admitted.get(s.session) ?? 0;
      if (n < least) {
        best = s;
        least = n;
      }
    }
    return best;
  }

  /**
   * The next step: admits waiting requests as room allows (allocating them in the runner). Decoding
   * sequences come first; `lookahead` (speculative decoding) may set extra tokens aside for each of them. `admitted`
   * (the step log's) gets the requests this plan admitted.
   */
  plan(lookahead?: Lookahead, admitted?: Sequence[]): PlannedEntry[] {
    const { maxBatch, maxTokensPerStep } = this.limits;
    const entries: PlannedEntry[] = [];
    let budget = maxTokensPerStep;
    const n = this.running.length;
    const start = n ? this.cursor % n : 0;
    this.cursor = start + 1;
    // (A prefill-only sequence (a preload) with nothing left to prefill is done: the engine retires it.)
    const order = [...this.running.slice(start), ...this.running.slice(0, start)].filter((s) => !s.finished && !s.paused && !s.abortRequested && !(s.prefillOnly && s.prefillLeft === 0));

    // 1. decode: the pending token each (more when a grammar forced some), plus what speculation sets aside
    const decoding = Math.min(maxBatch, order.filter((s) => s.prefillLeft === 0).length);
    for (const s of order) {
      if (s.prefillLeft > 0) continue;
      if (entries.length >= maxBatch || budget < 1) break;
      const tokens = s.nextTokens(budget);
      const samples = s.samplesAfter(tokens);
      // Proposals follow a single pending token (verify rows compare every input after the first with a sample).
      const extra = lookahead && samples && tokens.length === 1 ? Math.max(0, Math.min(budget - 1, lookahead(s, decoding, budget - 1))) : 0;
      entries.push({ seq: s, tokens, samples, lookahead: extra });
      budget -= tokens.length + extra;
    }

    // 2. admission, FIFO within a session and fair between sessions (head()): the head waits for room and nobody
    //    overtakes it
    const prefilling = order.filter((s) => s.prefillLeft > 0);
    for (let i = this.waiting.length - 1; i >= 0; i--) if (this.waiting[i].abortRequested || this.waiting[i].finished) this.waiting.splice(i, 1);
    while (this.waiting.length > 0) {
      const head = this.head()!;
      if (entries.length + prefilling.length >= maxBatch || budget <= prefilling.length || !this.fits(head)) break;
      this.waiting.splice(this.waiting.indexOf(head), 1);
      this.admission.admit(head);
      head.state = 'running';
      this.running.push(head);
      admitted?.push(head);
      if (head.prefillLeft > 0) prefilling.push(head);
    }

    // 3. prefill chunks: the budget shared evenly, short prompts giving their surplus to long ones
    const chunkers = prefilling.slice(0, Math.max(0, maxBatch - entries.length));
    const share = waterFill(
      chunkers.map((s) => s.prefillLeft),
      budget,
    );
    chunkers.forEach((s, i) => {
      if (share[i] === 0) return;
      const tokens = s.nextTokens(share[i]);
      entries.push({ seq: s, tokens, samples: s.samplesAfter(tokens), lookahead: 0 });
    });
    return entries;
  }
}

/**
 * Splits `budget` among demands as evenly as possible: each gets min(demand, level), the level chosen so the
 * total fits; leftovers of the integer split go to the earliest entries. With budget < count, the first
 * `budget` entries get one each (callers rotate the order between steps for fairness).
 * @example
 * waterFill([2, 100, 100], 12); // [2, 5, 5]
 */
export function waterFill(demands: readonly number[], budget: number): number[] {
  const out = demands.map(() => 0);
  let left = budget;
  let open = demands.map((_, i) => i).filter((i) => demands[i] > 0);
  while (left > 0 && open.length > 0) {
    const level = Math.floor(left / open.length);
    if (level === 0) {
      for (const i of open.slice(0, left)) out[i]++;
      break;
    }
    for (const i of open) {
      const take = Math.min(level, demands[i] - out[i]);
      out[i] += take;
      left -= take;
    }
    open = open.filter((i) => out[i] < demands[i]);
  }
  return out;
}
