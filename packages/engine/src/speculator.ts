// Speculative decoding: proposers guess the next tokens of a decoding sequence, and the target checks all
// of them in one step (a verify entry: [last token, ...proposals], one sampled row per token; the runner
// accepts the longest prefix of proposals that equal the target's own samples, see StepEntry.verify).
//
// Proposers are deterministic (a copy of earlier text, or a draft's argmax), so each proposal's q is a point
// mass, and "accept iff the target's own sample equals the proposal" is the standard rejection rule for that
// q: it accepts with probability p(d) = min(1, p/q) and on a mismatch the sample is distributed as p without
// d, renormalized, which is norm(max(0, p − q)). The output distribution is exactly the target's, greedy or
// sampled, with every sampling option applied to p as in plain decoding (the draft's argmax is taken under
// the same penalties, bias and mask). Token i always uses the sequence's i-th uniform draw (Sequence.sampling),
// so a seeded request gives the same ids with and without speculation.
//
// After a verify step the rejected positions are rolled back in the paged cache of the target and of the
// draft. Adaptive k: each sequence keeps a running acceptance rate α; with the measured wall-clock cost of
// steps by their token count (StepCosts), k is chosen to maximize the expected aggregate throughput of the
// step, and speculation is switched off for a while (with growing back-off) when no k beats plain decoding.

import type { SpeculativeMethod, SpeculativeMetrics, SpeculativeOptions } from './contract.ts';
import { InvalidRequestError } from './errors.ts';
import type { PrefixCache } from './prefix-cache.ts';
import type { Sequence } from './sequence.ts';
import type { StepEntry, StepRunner } from '@intab/model';

/** A request's speculation, checked, with defaults filled in. */
export interface SpeculationConfig {
  method: Exclude<SpeculativeMethod, 'auto'>;
  k: number;
  adaptive: boolean;
  ngramMax: number;
  ngramMin: number;
  /** 'self': layers that draft. */
  layers: number;
}

export const MAX_SPECULATIVE_K = 16;
/** Proposals of a probe round (speculation switched off, checking whether it pays again). */
const PROBE_K = 2;
/** Most of the decode time that probing may cost. */
const PROBE_BUDGET = 0.015;

/**
 * Checks a request's `speculative` option (or the engine default) against what is loaded.
 * Returns undefined when speculation is off.
 */
export function resolveSpeculative(
  value: SpeculativeMethod | SpeculativeOptions | false | undefined,
  context: { hasDraft: boolean; layers: number; earlyExit?: boolean; why?: string },
): SpeculationConfig | undefined {
  const bad = (field: string, v: unknown, expected: string): never => {
    throw new InvalidRequestError(field, v, expected);
  };
  if (value === undefined || value === false) return undefined;
  const o: SpeculativeOptions = typeof value === 'string' ? { method: value } : value;
  if (typeof o !== 'object' || o === null) return bad('speculative', value, "false, a method ('ngram', 'draft', 'self', 'auto') or { method, k?, ... }");
  const methods = ['ngram', 'draft', 'self', 'auto'];
  if (!methods.includes(o.method)) return bad('speculative.method', o.method, "'ngram', 'draft', 'self' or 'auto'");
  if (o.method === 'draft' && !context.hasDraft) {
    return bad('speculative.method', o.method, "'ngram', 'self' or 'auto': no draft model is loaded (load one with createEngine({ model, draft }))");
  }
  if (o.method === 'self' && context.earlyExit === false) {
    if (context.why) return bad('speculative.method', o.method, `'ngram', 'draft' or 'auto': ${context.why}, so the model cannot draft with its first layers`);
    return bad('speculative.method', o.method, "'ngram', 'draft' or 'auto': this backend runs every layer in each step, so the model cannot draft for itself (self-speculation needs the WebGPU backend)");
  }
  const method = o.method === 'auto' ? (context.hasDraft ? 'draft' : 'ngram') : o.method;
  const k = o.k ?? (method === 'ngram' ? 8 : 4);
  if (!Number.isInteger(k) || k < 1 || k > MAX_SPECULATIVE_K) bad('speculative.k', o.k, `an integer in [1, ${MAX_SPECULATIVE_K}]`);
  if (o.adaptive !== undefined && typeof o.adaptive !== 'boolean') bad('speculative.adaptive', o.adaptive, 'a boolean');
  const ngramMax = o.ngramMax ?? 3;
  const ngramMin = o.ngramMin ?? 1;
  if (!Number.isInteger(ngramMax) || ngramMax < 1 || ngramMax > 16) bad('speculative.ngramMax', o.ngramMax, 'an integer in [1, 16]');
  if (!Number.isInteger(ngramMin) || ngramMin < 1 || ngramMin > ngramMax) bad('speculative.ngramMin', o.ngramMin, `an integer in [1, ngramMax = ${ngramMax}]`);
  const layers = o.layers ?? Math.ceil(context.layers / 2);
  if (!Number.isInteger(layers) || layers < 1 || layers > context.layers) bad('speculative.layers', o.layers, `an integer in [1, ${context.layers}] (the target's layers)`);
  return { method, k, adaptive: o.adaptive ?? true, ngramMax, ngramMin, layers };
}

/**
 * Prompt lookup: the tokens that followed the latest earlier occurrence of the text's last n tokens
 * (n from max down to min), k of them. When fewer than k follow it (the occurrence is near the end: the text
 * repeats with a short period, as a loop, a list or a table row does), the copy runs on over its own proposals,
 * as an overlapping LZ77 copy does: the text is taken to go on repeating, so a period-d loop gets k proposals
 * instead of d. The CPU verifies k tokens for little more than one, so those proposals pay there.
 * @example
 * ngramProposals([5, 6, 7, 8, 5, 6], 3, 1, 3); // [7, 8, 5]
 * ngramProposals([4, 9, 4, 9], 3, 1, 5); // [4, 9, 4, 9, 4]
 */
export function ngramProposals(text: readonly number[], max: number, min: number, k: number): number[] {
  const L = text.length;
  for (let n = Math.min(max, L - 1); n >= min; n--) {
    // candidate starts i of an earlier occurrence text[i..i+n) == text[L-n..L), with i + n < L
    for (let i = L - n - 1; i >= 0; i--) {
      let j = 0;
      while (j < n && text[i + j] === text[L - n + j]) j++;
      if (j < n) continue;
      const from = i + n;
      const out = text.slice(from, Math.min(from + k, L));
      // Past the text's end, position from + m of text ++ out is out[from + m - L] (from < L, so it is already there).
      for (let m = out.length; m < k; m++) out.push(out[from + m - L]);
      return out;
    }
  }
  return [];
}

/** Recorded steps after which a token count's cost, unmeasured since, is stale (StepCosts). */
const STALE_STEPS = 64;

/**
 * Wall-clock cost of steps by their token count, as running averages (the adaptive k's cost model). A count is
 * measured only when adaptive k picks it, so one slow sample (another tab, GC, a busy CPU) could rule a k out for
 * good: a count not measured in the last STALE_STEPS steps is trusted no further than the prior's extrapolation
 * from the nearest smaller count measured since, so it is tried, and so measured, again. Its next sample replaces it.
 */
export class StepCosts {
  private readonly ms = new Map<number, { ms: number; at: number }>();
  /** Steps recorded so far. */
  private clock = 0;

  record(tokens: number, ms: number): void {
    const old = this.ms.get(tokens);
    this.ms.set(tokens, { ms: old && !this.stale(old) ? 0.8 * old.ms + 0.2 * ms : ms, at: ++this.clock });
  }

  /**
   * Estimated ms of a step of `tokens` tokens: measured, else interpolated between the nearest measured
   * counts, else extrapolated with a prior of 15% more per token beyond the nearest measured count. A stale
   * measurement is capped at that prior's extrapolation from the nearest smaller count measured since.
   */
  cost(tokens: number): number {
    const exact = this.ms.get(tokens);
    if (exact !== undefined) {
      if (!this.stale(exact)) return exact.ms;
      let lo: number | undefined;
      for (const [t, e] of this.ms) if (t < tokens && !this.stale(e) && (lo === undefined || t > lo)) lo = t;
      return lo === undefined ? exact.ms : Math.min(exact.ms, this.ms.get(lo)!.ms * (1 + 0.15 * (tokens - lo)));
    }
    let lo: number | undefined;
    let hi: number | undefined;
    for (const t of this.ms.keys()) {
      if (t < tokens && (lo === undefined || t > lo)) lo = t;
      if (t > tokens && (hi === undefined || t < hi)) hi = t;
    }
    if (lo !== undefined && hi !== undefined) {
      const a = this.cost(lo);
      const b = this.cost(hi);
      return a + ((b - a) * (tokens - lo)) / (hi - lo);
    }
    if (lo !== undefined) return this.cost(lo) * (1 + 0.15 * (tokens - lo));
    if (hi !== undefined) return this.cost(hi) / (1 + 0.15 * (hi - tokens));
    return 1 + 0.15 * (tokens - 1);
  }

  get measured(): boolean {
    return this.ms.size > 0;
  }

  private stale(e: { at: number }): boolean {
    return this.clock - e.at >= STALE_STEPS;
  }
}

/** One sequence's speculation: its config, acceptance statistics, switch-off state and metrics. */
export class SequenceSpeculation {
  /** Discounted counts of accepted proposals and of rejections (a geometric model's evidence). */
  private acceptedWeight = 0;
  private rejectedWeight = 0;
  /** Speculation is off until the sequence has generated this many tokens. */
  offUntil = 0;
  /**
   * The next round probes: a small k whatever the estimates say, so α is measured rather than assumed —
   * at the start, and after each back-off (else a low estimate would never be revised).
   */
  probe = true;
  private backoff = 8;
  readonly metrics: SpeculativeMetrics;

  constructor(readonly config: SpeculationConfig) {
    this.metrics = { method: config.method, proposed: 0, accepted: 0, targetSteps: 0, verifySteps: 0, draftSteps: 0, targetMs: 0, verifyMs: 0, draftMs: 0 };
  }

  /** Estimated probability that one proposal is accepted (prior 0.6 worth two observations). */
  get alpha(): number {
    return (this.acceptedWeight + 1.2) / (this.acceptedWeight + this.rejectedWeight + 2);
  }

  /** A verify step accepted `accepted` of `proposed` proposals. */
  observe(proposed: number, accepted: number): void {
    this.acceptedWeight = 0.9 * this.acceptedWeight + accepted;
    this.rejectedWeight = 0.9 * this.rejectedWeight + (accepted < proposed ? 1 : 0);
    this.metrics.proposed += proposed;
    this.metrics.accepted += accepted;
    this.metrics.verifySteps++;
    this.probe = false;
  }

  /**
   * No k paid: sit out `backoff` tokens (doubling each time, up to 256) but at least `minTokens`, then
   * probe once.
   */
  switchOff(generated: number, minTokens = 0): void {
    this.offUntil = generated + Math.max(this.backoff, Math.ceil(minTokens));
    this.backoff = Math.min(256, this.backoff * 2);
    this.probe = true;
  }

  /** A round that paid resets the back-off. */
  paid(): void {
    this.backoff = 8;
  }
}

/** Expected tokens of one round with k proposals, each accepted with probability α (plus the bonus token). */
export function expectedTokens(alpha: number, k: number): number {
  if (alpha >= 1) return k + 1;
  return (1 - alpha ** (k + 1)) / (1 - alpha);
}

/**
 * The k that maximizes the step's aggregate throughput when one of `decoding` sequences speculates:
 * plain, the step makes `decoding` tokens in cost(decoding); speculating with k it makes decoding − 1 +
 * E(k) tokens in cost(decoding + k) + draft(k). Returns 0 when no k in 1..kMax beats plain decoding.
 */
export function chooseK(alpha: number, kMax: number, decoding: number, target: StepCosts, draftCost: (k: number) => number): number {
  const base = target.cost(decoding);
  const plain = decoding / base;
  let best = 0;
  let bestRate = plain * 1.01; // a 1% margin: do not speculate for noise
  for (let k = 1; k <= kMax; k++) {
    const rate = (decoding - 1 + expectedTokens(alpha, k)) / (target.cost(decoding + k) + draftCost(k));
    if (rate > bestRate) {
      best = k;
      bestRate = rate;
    }
  }
  return best;
}

/** What the engine gives the speculator for each speculating sequence of a step. */
export interface SpeculationItem {
  seq: Sequence;
  state: SequenceSpeculation;
  /** Most proposals this step can take. */
  k: number;
}

/**
 * The engine's speculation: chooses k per sequence, runs the proposers (n-gram lookup on the CPU, draft
 * steps on the draft runner or on the target's first layers), and rolls back after verify.
 */
export class Speculator {
  readonly targetCosts = new StepCosts();
  readonly draftCosts = new StepCosts();
  readonly selfCosts = new StepCosts();

  constructor(
    private readonly target: StepRunner,
    readonly draft: StepRunner | undefined,
    private readonly now: () => number,
    /** Most tokens one draft catch-up step feeds per sequence. */
    private readonly chunk = 256,
    /**
     * The draft model's own prefix cache (its pages are its own): a draft sequence starts from the longest cached
     * prefix of its text, so a chat's next turn does not make the draft read the whole history again.
     */
    readonly draftCache?: PrefixCache,
  ) {}

  /** How many proposals `seq` should get this step (0 = decode plainly), `decoding` sequences decoding in it. */
  want(seq: Sequence, state: SequenceSpeculation, decoding: number, budget: number): number {
    const c = state.config;
    const kMax = Math.min(c.k, seq.remaining - 1, budget, MAX_SPECULATIVE_K);
    if (kMax < 1) return 0;
    if (!c.adaptive) return kMax;
    if (seq.generated.length < state.offUntil) return 0;
    const draftCost = (k: number): number => {
      if (c.method === 'ngram') return 0;
      const costs = c.method === 'draft' ? this.draftCosts : this.selfCosts;
      // Before any draft step is measured: a draft step as dear as a target step times the layer share.
      const d = costs.measured ? costs.cost(1) : this.targetCosts.cost(1) * (c.method === 'self' ? c.layers / this.target.config.layers : 0.5);
      return k * d;
    };
    const k = chooseK(state.alpha, kMax, decoding, this.targetCosts, draftCost);
    if (k > 0 || !this.targetCosts.measured) return k;
    // Nothing pays at the current estimates: after a back-off, one small probe round (its verify step
    // updates α and clears the probe); otherwise back off, for longer each time. A probe measures α, so it is
    // only worth its cost when some α could pay: where even every proposal accepted loses to plain decoding
    // (a draft step nearly as dear as a target step, as self-drafting is where fixed per-step costs dominate),
    // the sequence backs off without probing, and the costs are asked again after the back-off.
    if (state.probe && chooseK(1, kMax, decoding, this.targetCosts, draftCost) > 0) return Math.min(kMax, PROBE_K);
    // Probes are spaced so that what they cost beyond plain steps stays within PROBE_BUDGET of the time.
    const base = this.targetCosts.cost(decoding);
    const probeExtra = Math.max(0, (this.targetCosts.cost(decoding + PROBE_K) + draftCost(PROBE_K)) / base - 1);
    state.switchOff(seq.generated.length, probeExtra / PROBE_BUDGET);
    return 0;
  }

  /**
   * Proposals for each item (possibly fewer than k, or none). Draft and self methods run their draft steps
   * here; self leaves the target's cache as it found it.
   */
  async propose(items: readonly SpeculationItem[]): Promise<Map<Sequence, number[]>> {
    const out = new Map<Sequence, number[]>();
    const drafted: SpeculationItem[] = [];
    const self: SpeculationItem[] = [];
    for (const it of items) {
      const c = it.state.config;
      if (c.method === 'ngram') out.set(it.seq, ngramProposals(it.seq.text, c.ngramMax, c.ngramMin, it.k));
      else (c.method === 'draft' ? drafted : self).push(it);
    }
    if (drafted.length) await this.runDraft(this.draft!, drafted, out, 'draft');
    if (self.length) {
      // Different layer counts cannot share a step: group by layers.
      const byLayers = new Map<number, SpeculationItem[]>();
      for (const it of self) byLayers.set(it.state.config.layers, [...(byLayers.get(it.state.config.layers) ?? []), it]);
      for (const group of byLayers.values()) await this.runDraft(this.target, group, out, 'self');
    }
    return out;
  }

  /**
   * After a verify step of `seq` that held `proposed` proposals and accepted `accepted`: roll back the
   * rejected positions in the target and draft caches (the target's cache now holds the last token and
   * the accepted proposals; the bonus token is the next step's input).
   */
  afterVerify(seq: Sequence, state: SequenceSpeculation, proposed: number, accepted: number, validLength: number): void {
    this.target.rewind(seq.id, proposed - accepted);
    if (state.config.method === 'draft' && this.draft?.kv.has(seq.id)) {
      const have = this.draft.kv.length(seq.id);
      if (have > validLength) this.draft.rewind(seq.id, have - validLength);
    }
    state.observe(proposed, accepted);
    if (accepted > 0) state.paid();
  }

  /** The sequence is gone: its draft pages go to the draft's prefix cache (unless it failed), then are freed. */
  release(seq: Sequence): void {
    const draft = this.draft;
    if (!draft?.kv.has(seq.id)) return;
    // The draft cache holds the text's first tokens (drafted, unverified positions lie beyond the text).
    if (this.draftCache && seq.options.cache && seq.finishReason !== 'error') this.draftCache.insert(seq.id, seq.text.slice(0, draft.kv.length(seq.id)), 'finished');
    draft.free(seq.id);
  }

  /**
   * Greedy drafting, all items together: the first step feeds each sequence's tokens the draft has not
   * cached yet (for 'self', just the last token: the target's cache is the draft's), then one token per
   * step. For 'self', the drafted positions are rewound from the target's cache afterwards, so the verify
   * step writes them with every layer.
   */
  private async runDraft(runner: StepRunner, items: SpeculationItem[], out: Map<Sequence, number[]>, kind: 'draft' | 'self'): Promise<void> {
    const layers = kind === 'self' ? items[0].state.config.layers : undefined;
    const costs = kind === 'self' ? this.selfCosts : this.draftCosts;
    // A draft model's pool holds as many pages as the target's, but the target shares prompt pages through its
    // prefix cache and the draft may not: a sequence the draft has no room for gets no proposals this step (it
    // decodes plainly, with the same output), never a failure.
    if (kind === 'draft') items = this.withDraftRoom(runner, items, out);
    const drafts = new Map<Sequence, number[]>(items.map((it) => [it.seq, []]));
    const grown = new Map<Sequence, number>(items.map((it) => [it.seq, 0]));
    // The tokens each sequence still has to feed before its first proposal.
    const pending = new Map<Sequence, number[]>();
    for (const it of items) {
      const text = it.seq.text;
      if (kind === 'draft' && !runner.kv.has(it.seq.id)) {
        if (this.draftCache && it.seq.options.cache) this.draftCache.attach(it.seq.id, this.draftCache.lookup(text, text.length - 1), text.length);
        else runner.alloc(it.seq.id);
      }
      const cached = kind === 'self' ? text.length - 1 : runner.kv.length(it.seq.id);
      pending.set(it.seq, text.slice(cached));
    }
    try {
      // catch-up chunks of long backlogs (a fresh draft of a long prompt), their samples unused
      for (;;) {
        const long = items.filter((it) => pending.get(it.seq)!.length > this.chunk);
        if (long.length === 0) break;
        const entries: StepEntry[] = long.map((it) => ({ seq: it.seq.id, tokens: pending.get(it.seq)!.slice(0, this.chunk) }));
        await this.timed(runner, entries, layers, costs, long);
        for (const it of long) pending.set(it.seq, pending.get(it.seq)!.slice(this.chunk));
      }
      let active = items.filter((it) => it.k > 0);
      while (active.length) {
        const entries: StepEntry[] = active.map((it) => {
          const d = drafts.get(it.seq)!;
          const tokens = d.length === 0 ? pending.get(it.seq)! : [d[d.length - 1]];
          return { seq: it.seq.id, tokens, sampling: { ...it.seq.sampling(d.length, d), temperature: 0 } };
        });
        const results = await this.timed(runner, entries, layers, costs, active);
        active.forEach((it, i) => {
          grown.set(it.seq, grown.get(it.seq)! + entries[i].tokens.length);
          const id = results[i].id;
          if (id < runner.config.vocab) drafts.get(it.seq)!.push(id);
        });
        active = active.filter((it, i) => results[i].id < runner.config.vocab && drafts.get(it.seq)!.length < it.k);
      }
    } finally {
      if (kind === 'self') for (const it of items) runner.rewind(it.seq.id, grown.get(it.seq)!);
    }
    for (const [seq, d] of drafts) out.set(seq, d);
  }

  /** The items whose draft sequence can grow by its text's backlog and k proposals now; the others get none. */
  private withDraftRoom(runner: StepRunner, items: SpeculationItem[], out: Map<Sequence, number[]>): SpeculationItem[] {
    const kv = runner.kv;
    let available = kv.availablePageCount;
    let window = kv.availableWindowCount;
    return items.filter((it) => {
      const length = it.seq.text.length + it.k;
      const need = kv.has(it.seq.id) ? kv.pagesNeeded(it.seq.id, length) : Math.ceil(length / kv.pageSize);
      const needWindow = kv.windowToCome(kv.has(it.seq.id) ? it.seq.id : undefined, length);
      if (need > available || needWindow > window) {
        out.set(it.seq, []);
        return false;
      }
      available -= need;
      window -= needWindow;
      return true;
    });
  }

  private async timed(runner: StepRunner, entries: StepEntry[], layers: number | undefined, costs: StepCosts, items: SpeculationItem[]) {
    const t0 = this.now();
    const results = await runner.step(entries, layers === undefined ? undefined : { layers });
    const tokens = entries.reduce((n, e) => n + e.tokens.length, 0);
    const ms = this.now() - t0;
    costs.record(tokens, ms);
    for (const it of items) {
      it.state.metrics.draftSteps++;
      it.state.metrics.draftMs += ms;
    }
    return results;
  }
}
