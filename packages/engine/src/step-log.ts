// The scheduler's step log (LoadOptions.stepLog): a ring of the last N steps, each with the requests that took part and
// what each did there (admitted, prefilled a prompt chunk, emitted tokens, finished). Tests read fairness from it (a
// tab's request admitted ahead of another tab's queue, its first token within steps of its admission) instead of
// timing anything. The step loop calls it only when the log is on, so off it costs nothing.

import type { StepLogEntry, StepLogRequest } from './contract.ts';
import type { PlannedEntry } from './scheduler.ts';
import type { Sequence } from './sequence.ts';

/** The longest log kept (LoadOptions.stepLog is clamped to it). */
export const MAX_STEP_LOG = 4096;

/** What a planned entry was before its step applied (noted by before(), read by add()). */
export interface StepBefore {
  prefill: number;
  generated: number;
}

/** One step as kept: sessions as the engine knows them (the tabs' ids), mapped per reader by entries(). */
interface Kept {
  step: number;
  waiting: number;
  requests: (Omit<StepLogRequest, 'session'> & { session?: string })[];
}

/**
 * The last `capacity` steps.
 * @example
 * const log = new StepLog(64);
 * const before = log.before(plan);            // before the step's results are applied
 * log.add(step, plan, before, admitted, scheduler.waiting.length);
 * log.entries();                               // [{ step, waiting, requests: [{ stream, admitted, prefill, tokens }] }]
 */
export class StepLog {
  private ring: Kept[] = [];
  /** Where the next step goes once the ring is full (its oldest). */
  private head = 0;

  constructor(private cap: number) {
    this.cap = stepLogLength(cap);
  }

  get capacity(): number {
    return this.cap;
  }

  /** Keeps at least `n` steps from now on (a shared engine's tab that asks for a longer log). */
  lengthen(n: number): void {
    const cap = stepLogLength(n);
    if (cap <= this.cap) return;
    this.ring = this.entriesKept();
    this.head = 0;
    this.cap = cap;
  }

  /** What each planned entry stood at before its step: prompt tokens it prefills, tokens generated so far. */
  before(plan: readonly PlannedEntry[]): StepBefore[] {
    return plan.map((p) => ({ prefill: p.seq.prefillLeft > 0 ? p.tokens.length : 0, generated: p.seq.generated.length }));
  }

  /** Records step `step`, its results applied: `admitted` are the requests its plan admitted. */
  add(step: number, plan: readonly PlannedEntry[], before: readonly StepBefore[], admitted: readonly Sequence[], waiting: number): void {
    const kept: Kept = {
      step,
      waiting,
      requests: plan.map(({ seq }, i) => {
        const r: Kept['requests'][number] = { stream: seq.id };
        if (seq.session !== undefined) r.session = seq.session;
        if (admitted.includes(seq)) r.admitted = true;
        if (before[i].prefill > 0) r.prefill = before[i].prefill;
        const tokens = seq.generated.length - before[i].generated;
        if (tokens > 0) r.tokens = tokens;
        if (seq.finishReason !== null) r.finish = seq.finishReason;
        return r;
      }),
    };
    if (this.cap === 0) return;
    if (this.ring.length < this.cap) this.ring.push(kept);
    else {
      this.ring[this.head] = kept;
      this.head = (this.head + 1) % this.cap;
    }
  }

  /**
   * The kept steps, oldest first. `session` maps a request's session (a shared engine's tab) to what the reader sees
   * (StepLogRequest.session); without it, sessions are left out.
   */
  entries(session?: (id: string) => number): StepLogEntry[] {
    return this.entriesKept().map((k) => ({
      step: k.step,
      waiting: k.waiting,
      requests: k.requests.map(({ session: s, ...r }) => (session && s !== undefined ? { ...r, session: session(s) } : r)),
    }));
  }

  private entriesKept(): Kept[] {
    return [...this.ring.slice(this.head), ...this.ring.slice(0, this.head)];
  }
}

/** LoadOptions.stepLog as a length: a whole number from 0 to MAX_STEP_LOG (anything else is 0, no log). */
export function stepLogLength(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? Math.min(MAX_STEP_LOG, Math.max(0, Math.floor(n))) : 0;
}
