// The step loop: one iteration is one GPU step for every runnable sequence (continuous batching, planned by the
// Scheduler): proposals first when requests speculate (draft steps), then one runner step that prefills prompt chunks,
// decodes and verifies, then each sequence takes what it sampled and its stream is told. Requests join at the next
// step and leave the moment they finish or are aborted (abort waits for the step in flight), their pages freed (kept
// in the prefix cache first) before their stream ends. A device lost under a step ends the loop; the recovery starts
// a new one on the new device.

import type { DeviceLostError } from '@intab/gpu';
import type { StepEntry, StepResult, StepRunner } from '@intab/model';
import type { PrefixCache } from './prefix-cache.ts';
import type { LossSignal } from './recovery.ts';
import type { PlannedEntry, Scheduler } from './scheduler.ts';
import type { Sequence } from './sequence.ts';
import type { Speculator } from './speculator.ts';
import type { StepLog } from './step-log.ts';
import type { Stream, Streams } from './stream-delivery.ts';

/** What the loop reads of the engine, at each use: the model attached now (undefined once destroyed or lost). */
export interface LoopHost {
  runner(): StepRunner | undefined;
  scheduler(): Scheduler | undefined;
  speculator(): Speculator | undefined;
  /** The prefix cache, when it is on. */
  cache(): PrefixCache | undefined;
  /** The current device's loss, which a step in flight races (undefined off the GPU). */
  deviceLost(): LossSignal<DeviceLostError> | undefined;
  /** The step log (LoadOptions.stepLog), when it is on. */
  stepLog(): StepLog | undefined;
  closed(): boolean;
  now(): number;
}

/**
 * Runs the engine's steps while there is work, and ends sequences (finish, abort, failure) with their pages freed.
 * @example
 * const loop = new StepLoop(streams, host);
 * scheduler.add(seq);
 * loop.wake(); // steps until nothing is plannable
 */
export class StepLoop {
  /** Sequences in the step being run. */
  private inFlight = new Set<Sequence>();
  private loop?: Promise<void>;
  /** Runner steps since load (the step log's numbers). */
  private steps = 0;

  constructor(
    private readonly streams: Streams,
    private readonly host: LoopHost,
  ) {}

  /** Starts the step loop unless it runs. */
  wake(): void {
    if (this.loop || !this.host.scheduler() || this.host.closed()) return;
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      // Work may have arrived between the last plan and now.
      const scheduler = this.host.scheduler();
      if (!this.host.closed() && scheduler && scheduler.plannable) this.wake();
    });
  }

  /** Resolves once the step in flight (if any) is over and the loop has stopped. */
  async settled(): Promise<void> {
    await this.loop;
  }

  private async run(): Promise<void> {
    const runner = this.host.runner()!;
    const scheduler = this.host.scheduler()!;
    const speculator = this.host.speculator()!;
    // Yield once before the first step, so requests that arrive together (several messages from the
    // main thread in one burst) share it instead of the first prefilling alone.
    await new Promise((resolve) => setTimeout(resolve, 0));
    const lost = this.host.deviceLost();
    for (;;) {
      // After a device loss the runner is gone (a recovery attaches a new one, with a loop of its own).
      if (this.host.runner() !== runner) return;
      // Every entry takes one sampled row; proposals take the rows the runner has beyond those.
      let rowsLeft = (runner.maxRows ?? Infinity) - scheduler.limits.maxBatch;
      const log = this.host.stepLog();
      const admitted: Sequence[] | undefined = log ? [] : undefined;
      let plan = scheduler.plan((seq, decoding, budget) => {
        const spec = this.streams.get(seq.id)?.spec;
        const k = spec ? Math.min(rowsLeft, speculator.want(seq, spec, decoding, budget)) : 0;
        rowsLeft -= k;
        return k;
      }, admitted);
      // Preloads admitted with their whole prefix cached are done without a step.
      const preloaded = scheduler.running.filter((s) => s.prefillOnly && s.prefillLeft === 0 && !s.finished);
      for (const s of preloaded) this.prefilled(s);
      if (plan.length === 0) {
        if (preloaded.length) continue;
        return;
      }
      const started = this.host.now();
      for (const p of plan) p.seq.scheduled(started);
      this.inFlight = new Set(plan.map((p) => p.seq));
      // Proposals first (draft steps, when a draft proposes); then one target step verifies them all.
      let proposals = new Map<Sequence, number[]>();
      const speculating = plan.filter((p) => p.lookahead > 0);
      if (speculating.length) {
        try {
          proposals = await speculator.propose(speculating.map((p) => ({ seq: p.seq, state: this.streams.get(p.seq.id)!.spec!, k: p.lookahead })));
        } catch (err) {
          if (lost && (await lost.within(LOSS_REPORT_MS))) return; // the device went: its recovery ended every stream (failAll)
          for (const p of speculating) this.inFlight.delete(p.seq), this.fail(p.seq, err);
          plan = plan.filter((p) => !speculating.includes(p));
        }
        // An abort that came during drafting ends the sequence now, before the verify step.
        for (const p of plan.filter((q) => q.seq.abortRequested)) {
          this.inFlight.delete(p.seq);
          const stream = this.streams.get(p.seq.id);
          if (stream) this.abort(stream);
        }
        plan = plan.filter((p) => !p.seq.finished);
        if (plan.length === 0) continue;
      }
      const entries = plan.map((p) => this.entry(p, proposals.get(p.seq) ?? []));
      const t0 = this.host.now();
      let results;
      try {
        // A lost device may leave the step waiting on a readback that never comes: the loss ends it at once.
        results = await (lost ? lost.race(runner.step(entries)) : runner.step(entries));
      } catch (err) {
        this.inFlight.clear();
        if (lost && (await lost.within(LOSS_REPORT_MS))) return; // the device went: its recovery ended every stream (failAll)
        for (const p of plan) this.fail(p.seq, err);
        continue;
      }
      const step = ++this.steps;
      const ms = this.host.now() - t0;
      // The cost model compares decode and verify steps: steps with a prompt chunk (one logits row for many
      // tokens) would skew it.
      if (plan.every((p) => p.samples && p.seq.prefillLeft === 0)) speculator.targetCosts.record(entries.reduce((n, e) => n + e.tokens.length, 0), ms);
      this.inFlight.clear();
      const before = log?.before(plan);
      this.apply(plan, entries, results, ms);
      if (log) log.add(step, plan, before!, admitted!, scheduler.waiting.length);
      // A runner whose step never leaves the event loop (onnxruntime's wasm computes inside run() and resolves at
      // once) would keep the next pull, and an abort, waiting in the message queue until the loop ran dry: the
      // tokens of eight steps then arrived as one chunk, and an abort came that late. When output waits for a pull,
      // one task lets messages in: a consumer that keeps up gets a chunk per step, one that falls behind coalesced.
      if (this.streams.awaitingPull()) await nextTask();
    }
  }

  /** A planned entry as the runner takes it: plain, or a verify entry when there are proposals. */
  private entry(p: PlannedEntry, proposals: number[]): StepEntry {
    const seq = p.seq;
    // Under a grammar, proposals stop at the first one it refuses (the target could never sample it).
    if (seq.constraint && proposals.length) proposals = proposals.slice(0, seq.constraint.allowedPrefix(proposals));
    // A grammar's masks are computed by the runner's call, while the GPU runs the step's forward pass.
    const c = seq.constraint;
    const rows = proposals.length + 1;
    const masks = c && p.samples ? { masks: () => Array.from({ length: rows }, (_, i) => c.mask(proposals.slice(0, i))) } : {};
    if (proposals.length === 0) return { seq: seq.id, tokens: p.tokens, ...(p.samples ? { sampling: seq.sampling(0, [], false), ...masks } : {}) };
    return {
      seq: seq.id,
      tokens: [...p.tokens, ...proposals],
      verify: Array.from({ length: rows }, (_, i) => seq.sampling(i, proposals, false)),
      ...(seq.options.logprobs ? { rows: true } : {}),
      ...masks,
    };
  }

  private apply(plan: PlannedEntry[], entries: StepEntry[], results: StepResult[], ms: number): void {
    const t = this.host.now();
    plan.forEach((p, i) => {
      const seq = p.seq;
      const stream = this.streams.get(seq.id);
      const e = entries[i];
      if (e.verify && stream?.spec) {
        // Roll back first, so the caches are right whatever happens to the sequence next.
        const proposed = e.tokens.length - 1;
        const accepted = results[i].accepted ?? 0;
        const valid = this.host.runner()!.kv.length(seq.id) - (proposed - accepted);
        this.host.speculator()!.afterVerify(seq, stream.spec, proposed, accepted, valid);
      }
      if (stream?.spec && p.samples && seq.prefillLeft === 0) {
        const m = stream.spec.metrics;
        m.targetSteps++;
        m.targetMs += ms;
        if (e.verify) m.verifyMs += ms;
      }
      if (seq.abortRequested || !stream) {
        if (stream) this.abort(stream);
        return;
      }
      const r = results[i];
      const accepted = e.verify ? (r.accepted ?? 0) : 0;
      const prefilling = seq.prefillLeft > 0;
      seq.advanced(p.tokens.length + accepted);
      if (prefilling) this.cachePrompt(seq);
      if (seq.prefillOnly && seq.prefillLeft === 0) return this.prefilled(seq);
      if (!p.samples) return this.streams.notify(stream);
      for (let j = 0; j < accepted; j++) seq.accept(r.acceptedRows?.[j] ?? { id: e.tokens[j + 1], logprob: NaN, top: [] }, t);
      seq.accept(r, t);
      if (seq.finished) this.retire(stream);
      this.streams.notify(stream);
    });
  }

  /** A preload's prefix is in the cache: it ends (retire() pins it). */
  private prefilled(seq: Sequence): void {
    const stream = this.streams.get(seq.id);
    seq.finish('stop', this.host.now());
    if (!stream) return;
    this.retire(stream);
    this.streams.notify(stream);
  }

  /** Hands a running sequence's newly full prompt pages to the prefix cache, so requests admitted now share them. */
  private cachePrompt(seq: Sequence): void {
    const cache = this.host.cache();
    if (!cache || !seq.options.cache || !this.host.runner()?.kv.has(seq.id)) return;
    const full = Math.floor(seq.prefilled / cache.pageSize);
    if (full <= seq.cachedPages) return;
    cache.insert(seq.id, seq.prompt.slice(0, full * cache.pageSize), 'running');
    seq.cachedPages = full;
  }

  /**
   * Takes a finished sequence out of the batch and frees its pages; with the prefix cache, what its cache holds
   * (prompt and generated tokens, unless the sequence failed) stays cached first, and a preload's prefix is pinned.
   */
  private retire(stream: Stream): void {
    const seq = stream.seq;
    const admitted = this.host.scheduler()?.remove(seq);
    const runner = this.host.runner();
    const cache = this.host.cache();
    if (runner && (admitted || runner.kv.has(seq.id))) {
      if (cache && seq.options.cache && seq.finishReason !== 'error' && runner.kv.has(seq.id)) {
        const tokens = seq.text.slice(0, runner.kv.length(seq.id));
        const path = cache.insert(seq.id, tokens, 'finished');
        if (seq.prefillOnly && seq.finishReason === 'stop') stream.pin = cache.pin(path, tokens.length);
      }
      runner.free(seq.id);
    }
    this.host.speculator()?.release(seq);
    stream.detach?.();
    stream.release();
    this.wake(); // freed pages may admit a waiting request
  }

  /** Abort: now if the sequence is not in the step in flight, else right after that step. */
  abort(stream: Stream): void {
    const seq = stream.seq;
    if (seq.finished) return;
    seq.abortRequested = true;
    if (this.inFlight.has(seq)) return; // apply() comes back here once the step is over
    seq.finish('abort', this.host.now());
    this.retire(stream);
    this.streams.notify(stream);
  }

  /** A failed step or draft: the sequence ends with finishReason 'error' and `err` (its last chunk carries it). */
  private fail(seq: Sequence, err: unknown): void {
    if (seq.finished) return; // a device loss ended it already
    const stream = this.streams.get(seq.id);
    seq.error = err;
    seq.finish('error', this.host.now());
    if (!stream) return;
    this.retire(stream);
    this.streams.notify(stream);
  }

  /** A lost device: every stream ends with `err` now (what they produced was delivered or is in their last chunk). */
  failAll(err: unknown): void {
    for (const stream of this.streams.all()) {
      this.inFlight.delete(stream.seq);
      this.fail(stream.seq, err);
    }
  }
}

/**
 * Resolves after the tasks queued before it (messages from the main thread among them) have run: a MessageChannel
 * round trip, which browsers do not throttle as they clamp nested setTimeout(0) to 4 ms.
 */
function nextTask(): Promise<void> {
  if (typeof MessageChannel === 'undefined') return new Promise((resolve) => setTimeout(resolve, 0));
  if (!ticks) {
    const channel = new MessageChannel();
    const waiting: (() => void)[] = [];
    channel.port1.onmessage = () => waiting.shift()?.();
    // Node: an idle engine must not keep the process alive.
    (channel.port1 as { unref?: () => void }).unref?.();
    ticks = { post: () => channel.port2.postMessage(0), waiting };
  }
  const t = ticks;
  return new Promise((resolve) => {
    t.waiting.push(resolve);
    t.post();
  });
}
let ticks: { post(): void; waiting: (() => void)[] } | undefined;

/**
 * How long a failed step waits for its device's loss. A step on a device that goes away fails first (its readback is
 * aborted), and the loss is reported a moment later: the loss, not the AbortError, is what its requests end with.
 */
const LOSS_REPORT_MS = 1000;
