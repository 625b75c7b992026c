// `intab bench soak` in the page: mixed traffic against one engine for as long as the CLI lets it run. The engine is
// the product's (createEngine: a module Worker behind Comlink, intab's WebGPU kernels), with the model as its own
// draft unless the CLI names one. Clients, each with its own seeded RNG, send requests back to back: plain streams,
// aborts (the AbortSignal, and `break`), speculative and constrained requests, slow readers that backpressure pauses,
// prompts that share prefixes, and requests the engine must refuse. Every outcome is checked as it lands; anything a
// request of its kind should not end with is an unexpected error. Every interval the CLI (src/bench-soak.ts) brings
// the traffic to rest through window.__soak (no new requests; those in flight finish), measures the heaps over CDP,
// samples the counters and the engine's stats, and lets the traffic go on: at rest, whatever is still held is held
// for good, so the intervals compare like with like. stop() at the end is the same rest, for good.

import { mulberry32 } from '@intab/gpu';
import type { Chunk, EngineStats, GenerateRequest, ModelInfo, ModelSource, SpeculativeMethod } from '@intab/engine';
import { createEngine, type IntabEngine } from 'intab';
import type { ModelRef } from './shared.ts';

/** What the CLI asks of the page (bench-soak.ts builds it; browser.ts sets it as window.__intabJob). */
export interface SoakJob extends ModelRef {
  /** The draft model for speculative requests; absent, the model drafts for itself. */
  draft?: ModelRef;
  /** Clients sending requests at once. */
  streams: number;
  seed: number;
  /** KV-cache bytes (LoadOptions.kvBudgetBytes): small enough that the prefix cache fills, then evicts. */
  kvBudgetBytes: number;
  /** Sequences per engine step. */
  maxBatch: number;
}

export const KINDS = ['plain', 'abort-signal', 'abort-break', 'speculative', 'constrained', 'slow', 'prefix', 'refused'] as const;
export type Kind = (typeof KINDS)[number];
export type Outcome = 'stop' | 'length' | 'abort' | 'error';

/** Cumulative counters since the traffic started (the CLI takes differences between samples). */
export interface SoakCounters {
  /** Requests that ended, by outcome ('error': refused as expected), and by kind and outcome. */
  requests: Record<Outcome, number>;
  kinds: Record<Kind, Record<Outcome, number>>;
  /** Token ids delivered to the clients. */
  tokens: number;
  /** Outcomes no request of its kind should have; the first few messages, told apart by kind. */
  unexpected: number;
  unexpectedSamples: string[];
  /** Requests that backpressure paused (metrics.pausedMs > 0), prompt tokens served by the prefix cache. */
  paused: number;
  cachedTokens: number;
  /** Speculative proposals, and how many the target accepted. */
  proposed: number;
  accepted: number;
  /** Requests in flight. */
  inFlight: number;
}

export interface SoakSample {
  counters: SoakCounters;
  stats: EngineStats;
}

declare global {
  interface Window {
    __soak?: { rest(): Promise<void>; resume(): void; sample(): Promise<SoakSample>; stop(): Promise<SoakSample> };
  }
}

const report = (r: unknown) => window.__intabReport?.(r);

/** Relative weights of the kinds in the mix. */
const WEIGHTS: Record<Kind, number> = { plain: 3, 'abort-signal': 2, 'abort-break': 2, speculative: 3, constrained: 2, slow: 1, prefix: 3, refused: 0.5 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The model where the CLI serves it, as createEngine takes it. */
function sourceOf(ref: ModelRef): ModelSource {
  const abs = (u: string) => new URL(u, location.href).href;
  if (ref.kind === 'gguf') {
    if (ref.urls.length !== 1) throw new Error('bench soak loads one GGUF file through createEngine; split GGUFs (-0000N-of-0000M) are not taken: merge them first');
    return { kind: 'url', url: abs(ref.urls[0]) };
  }
  // A remote folder is one URL ending in '/' for all its files.
  const base = ref.urls.length === 1 && ref.urls[0].endsWith('/') ? abs(ref.urls[0]) : undefined;
  return { kind: 'hf-urls', files: Object.fromEntries(ref.files.map((name, i) => [name, base ? base + name : abs(ref.urls[i])])) };
}

// ---- constrained formats: each with a check of what a 'stop' must have produced ----

interface Format {
  request: Pick<GenerateRequest, 'responseFormat' | 'regex'>;
  /** Why the finished text does not match, or undefined when it does. */
  check(text: string): string | undefined;
  name: string;
}

const isInt = (v: unknown, lo: number, hi: number) => Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;

/** A format drawn from a small family; bounds vary, so the grammar is compiled afresh for most requests. */
function drawFormat(rng: () => number): Format {
  const pick = Math.floor(rng() * 5);
  const json = (name: string, schema: Record<string, unknown> | undefined, valid: (v: unknown) => boolean): Format => ({
    name,
    request: { responseFormat: schema ? { type: 'json_schema', schema } : { type: 'json_object' } },
    check(text) {
      let v: unknown;
      try {
        v = JSON.parse(text);
      } catch (err) {
        return `${name}: the output is not JSON (${(err as Error).message}): ${JSON.stringify(text.slice(0, 80))}`;
      }
      return valid(v) ? undefined : `${name}: ${JSON.stringify(text.slice(0, 80))} does not match ${JSON.stringify(schema)}`;
    },
  });
  if (pick === 0) {
    const maxLength = 1 + Math.floor(rng() * 12);
    const maximum = 1 + Math.floor(rng() * 999);
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength }, age: { type: 'integer', minimum: 0, maximum } },
      required: ['name', 'age'],
      additionalProperties: false,
    };
    return json('person', schema, (v) => {
      const o = v as Record<string, unknown>;
      return typeof o === 'object' && o !== null && !Array.isArray(o) && Object.keys(o).length === 2 && typeof o.name === 'string' && [...o.name].length <= maxLength && isInt(o.age, 0, maximum);
    });
  }
  if (pick === 1) {
    const maxItems = 1 + Math.floor(rng() * 6);
    const schema = { type: 'array', items: { type: 'integer', minimum: 0, maximum: 9 }, minItems: 1, maxItems };
    return json('digits', schema, (v) => Array.isArray(v) && v.length >= 1 && v.length <= maxItems && v.every((x) => isInt(x, 0, 9)));
  }
  if (pick === 2) {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, tag: { enum: ['a', 'b', 'c'] } }, required: ['ok', 'tag'], additionalProperties: false };
    return json('flag', schema, (v) => {
      const o = v as Record<string, unknown>;
      return typeof o === 'object' && o !== null && Object.keys(o).length === 2 && typeof o.ok === 'boolean' && ['a', 'b', 'c'].includes(o.tag as string);
    });
  }
  if (pick === 3) return json('any-json', undefined, () => true);
  const patterns = ['[0-9]{3}-[a-z]{2,4}', '(yes|no)!', '[A-Z][a-z]{1,8}( [a-z]{1,6}){0,2}\\.', `[a-f0-9]{${1 + Math.floor(rng() * 8)}}`];
  const pattern = patterns[Math.floor(rng() * patterns.length)];
  const whole = new RegExp(`^(?:${pattern})$`);
  return { name: 'regex', request: { regex: pattern }, check: (text) => (whole.test(text) ? undefined : `regex ${pattern}: ${JSON.stringify(text)} does not match`) };
}

// ---- the traffic ----

class Traffic {
  readonly counters: SoakCounters = {
    requests: { stop: 0, length: 0, abort: 0, error: 0 },
    kinds: Object.fromEntries(KINDS.map((k) => [k, { stop: 0, length: 0, abort: 0, error: 0 }])) as SoakCounters['kinds'],
    tokens: 0,
    unexpected: 0,
    unexpectedSamples: [],
    paused: 0,
    cachedTokens: 0,
    proposed: 0,
    accepted: 0,
    inFlight: 0,
  };
  private stopping = false;
  /** Set while the traffic rests: clients wait on it before their next request. */
  private gate?: { wait: Promise<void>; open: () => void };
  /** Called when the last request in flight ends while the traffic rests. */
  private onIdle?: () => void;
  private clients: Promise<void>[] = [];
  /** A few prompts that many requests start with (a system prompt's role), long enough to fill whole pages. */
  private readonly prefixes: number[][];
  /**
   * Speculative methods, 'draft' more often than the others together: the draft model's own prefix cache fills only
   * through draft requests, and should be full (its tree at its final size) early in the run.
   */
  private readonly methods: SpeculativeMethod[];
  /** The kinds in the mix: constrained requests need the model's tokenizer (its tokens' bytes). */
  readonly kinds: Kind[];

  constructor(
    private readonly engine: IntabEngine,
    private readonly info: ModelInfo,
    private readonly job: SoakJob,
  ) {
    const rng = mulberry32(job.seed ^ 0x5eed);
    this.prefixes = Array.from({ length: 4 }, () => this.ids(rng, 40 + Math.floor(rng() * 120)));
    // Self-speculation drafts with the target's first layers: it needs two of them at least.
    this.methods = info.layers > 1 ? ['draft', 'draft', 'draft', 'ngram', 'self'] : ['draft', 'draft', 'ngram'];
    this.kinds = KINDS.filter((k) => k !== 'constrained' || info.hasTokenizer);
  }

  start(): void {
    this.clients = Array.from({ length: this.job.streams }, (_, i) => this.client(i, mulberry32((this.job.seed * 7919 + i * 104729) >>> 0)));
  }

  /** Starts no new request and resolves once every request in flight has ended. */
  async rest(): Promise<void> {
    if (!this.gate) {
      let open = () => {};
      const wait = new Promise<void>((r) => (open = r));
      this.gate = { wait, open };
    }
    if (this.counters.inFlight > 0) await new Promise<void>((r) => (this.onIdle = r));
  }

  resume(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.resume();
    await Promise.all(this.clients);
  }

  /** Random ids past the special ones (0..2 are unk, BOS and EOS in llama-style vocabularies). */
  private ids(rng: () => number, n: number): number[] {
    return Array.from({ length: n }, () => 3 + Math.floor(rng() * (this.info.vocab - 3)));
  }

  private unexpected(kind: Kind, message: string): void {
    this.counters.unexpected++;
    if (this.counters.unexpectedSamples.length < 10) this.counters.unexpectedSamples.push(`${kind}: ${message}`);
  }

  private async client(index: number, rng: () => number): Promise<void> {
    const total = this.kinds.reduce((s, k) => s + WEIGHTS[k], 0);
    // Each client first sends one request of every kind (starting at a kind of its own), so every path has run, and
    // warmed up, in the first interval; then the seeded mix.
    const first = this.kinds.map((_, j) => this.kinds[(index + j) % this.kinds.length]);
    for (let n = 0; ; n++) {
      while (this.gate) await this.gate.wait;
      if (this.stopping) return;
      let u = rng() * total;
      const kind = n < first.length ? first[n] : (this.kinds.find((k) => (u -= WEIGHTS[k]) < 0) ?? 'plain');
      this.counters.inFlight++;
      try {
        await this.one(kind, rng);
      } catch (err) {
        // Whatever escapes a request is unexpected: its kind's own checks catch every expected error.
        const e = err as Error;
        this.unexpected(kind, `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`);
      } finally {
        if (--this.counters.inFlight === 0 && this.gate) this.onIdle?.();
      }
    }
  }

  private sampling(rng: () => number): Pick<GenerateRequest, 'temperature' | 'topK' | 'seed'> {
    const seed = Math.floor(rng() * 2 ** 31);
    return rng() < 0.5 ? { temperature: 0, seed } : { temperature: 0.6 + rng() * 0.6, topK: rng() < 0.5 ? 0 : 40, seed };
  }

  private count(kind: Kind, outcome: Outcome): void {
    this.counters.requests[outcome]++;
    this.counters.kinds[kind][outcome]++;
  }

  /** One request of `kind`, from its parameters to its checked outcome. */
  private async one(kind: Kind, rng: () => number): Promise<void> {
    const int = (lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
    const ctx = this.info.contextLength;
    switch (kind) {
      case 'plain':
        return this.stream(kind, { promptIds: this.ids(rng, int(2, 96)), maxTokens: int(1, 128), ...this.sampling(rng) });
      case 'abort-signal': {
        const byTokens = rng() < 0.5;
        const maxTokens = int(32, 160);
        return this.stream(kind, { promptIds: this.ids(rng, int(2, 96)), maxTokens, ...this.sampling(rng) }, byTokens ? { abortAfterTokens: int(1, maxTokens) } : { abortAfterMs: int(0, 400) });
      }
      case 'abort-break':
        return this.stream(kind, { promptIds: this.ids(rng, int(2, 96)), maxTokens: int(32, 160), ...this.sampling(rng) }, { breakAfterChunks: int(1, 6) });
      case 'speculative': {
        // A phrase said a few times: ngram lookup finds matches, and greedy continuations of it repeat too.
        const phrase = this.ids(rng, int(4, 16));
        const promptIds = Array.from({ length: int(2, 5) }, () => phrase).flat();
        const method = this.methods[Math.floor(rng() * this.methods.length)];
        const speculative = { method, k: int(1, 8), adaptive: rng() < 0.5 };
        return this.stream(kind, { promptIds, maxTokens: int(16, 128), speculative, ...(rng() < 0.7 ? { temperature: 0 } : this.sampling(rng)) });
      }
      case 'constrained': {
        const format = drawFormat(rng);
        // Some speculate too: rejected proposals roll the grammar back.
        const speculative = rng() < 0.3 ? { speculative: rng() < 0.5 ? ('draft' as const) : ('ngram' as const) } : {};
        return this.stream(kind, { promptIds: this.ids(rng, int(2, 48)), maxTokens: int(24, 96), ...format.request, ...speculative, ...this.sampling(rng) }, { format });
      }
      case 'slow':
        // A reader that stalls a second or two after its first chunk, then pulls with gaps: meanwhile the engine's
        // queue for it fills (maxQueuedChunks) and the sequence sits out steps (pausedMs > 0), its tokens coalesced.
        return this.stream(kind, { promptIds: this.ids(rng, int(2, 64)), maxTokens: int(48, 128), ...this.sampling(rng) }, { stallMs: int(800, 2000), pullDelayMs: int(20, 150) });
      case 'prefix': {
        const prefix = this.prefixes[Math.floor(rng() * this.prefixes.length)];
        // Some draft too: the draft model then finds the shared prefix in its own cache.
        const speculative = rng() < 0.5 ? { speculative: 'draft' as const } : {};
        return this.stream(kind, { promptIds: [...prefix, ...this.ids(rng, int(1, 24))], maxTokens: int(4, 48), ...speculative, ...this.sampling(rng) });
      }
      case 'refused':
        return this.refused(rng, ctx);
    }
  }

  /** A request the engine must refuse with a typed error: too long a prompt, or an option out of range. */
  private async refused(rng: () => number, ctx: number): Promise<void> {
    const which = Math.floor(rng() * 3);
    const [request, expected]: [GenerateRequest, string] =
      which === 0
        ? [{ promptIds: this.ids(rng, ctx + 1 + Math.floor(rng() * 32)), maxTokens: 8 }, 'ContextLengthExceededError']
        : which === 1
          ? [{ promptIds: this.ids(rng, 8), maxTokens: 8, temperature: -1 }, 'InvalidRequestError']
          : [{ promptIds: this.ids(rng, 8), maxTokens: 8, speculative: { method: 'ngram', k: 99 } }, 'InvalidRequestError'];
    try {
      for await (const c of this.engine.generate(request)) this.counters.tokens += c.ids.length;
    } catch (err) {
      const name = (err as Error)?.name;
      if (name === expected) return this.count('refused', 'error');
      throw err;
    }
    this.unexpected('refused', `a request that should be a ${expected} ran to its end`);
  }

  /**
   * Streams one request as its kind consumes it, and checks how it ended: an abort only when this side aborted, every
   * token the metrics count delivered, at most maxTokens of them, a constrained output that matches its format.
   */
  private async stream(
    kind: Kind,
    request: GenerateRequest,
    o: { abortAfterTokens?: number; abortAfterMs?: number; breakAfterChunks?: number; stallMs?: number; pullDelayMs?: number; format?: Format } = {},
  ): Promise<void> {
    const controller = new AbortController();
    const timer = o.abortAfterMs !== undefined ? setTimeout(() => controller.abort(), o.abortAfterMs) : undefined;
    let ids = 0;
    let text = '';
    let chunks = 0;
    let last: Chunk | undefined;
    try {
      for await (const c of this.engine.generate(request, { signal: controller.signal })) {
        ids += c.ids.length;
        text += c.text;
        this.counters.tokens += c.ids.length;
        if (c.finishReason) {
          last = c;
          break;
        }
        chunks++;
        if (o.breakAfterChunks !== undefined && chunks >= o.breakAfterChunks) return this.count(kind, 'abort');
        if (o.abortAfterTokens !== undefined && ids >= o.abortAfterTokens) controller.abort();
        if (o.stallMs && chunks === 1) await sleep(o.stallMs);
        if (o.pullDelayMs) await sleep(o.pullDelayMs);
      }
    } finally {
      clearTimeout(timer);
    }
    if (!last) return this.unexpected(kind, 'the stream ended without a chunk that has a finishReason');
    const reason = last.finishReason!;
    if (reason === 'error') return this.unexpected(kind, `finishReason 'error'${last.error ? `: ${last.error.message}` : ''}`);
    if (reason === 'abort' && !controller.signal.aborted) return this.unexpected(kind, "finishReason 'abort', yet nothing aborted it");
    // The soak's requests carry no tools, so no reply of theirs can end in calls.
    if (reason === 'tool_calls') return this.unexpected(kind, "finishReason 'tool_calls' on a request without tools");
    const m = last.metrics;
    if (m) {
      if (m.pausedMs > 0) this.counters.paused++;
      this.counters.cachedTokens += m.cachedTokens;
      if (m.speculative) {
        this.counters.proposed += m.speculative.proposed;
        this.counters.accepted += m.speculative.accepted;
      }
    }
    if (reason !== 'abort') {
      if (!m) return this.unexpected(kind, `the last chunk ('${reason}') has no metrics`);
      if (m.completionTokens !== ids) return this.unexpected(kind, `${m.completionTokens} tokens generated, ${ids} delivered`);
      if (request.maxTokens !== undefined && ids > request.maxTokens) return this.unexpected(kind, `${ids} tokens, over maxTokens ${request.maxTokens}`);
      if (reason === 'stop' && o.format) {
        const why = o.format.check(text);
        if (why) return this.unexpected(kind, why);
      }
    }
    this.count(kind, reason);
  }
}

async function main(): Promise<void> {
  const job = window.__intabJob as unknown as SoakJob | undefined;
  if (!job?.streams) throw new Error('no job: this page is driven by intab bench soak');
  const source = sourceOf(job);
  let last = 0;
  const engine = await createEngine({
    model: source,
    draft: job.draft ? sourceOf(job.draft) : source,
    // Straight from the CLI's files: the model store's copies would only add OPFS traffic to the figures.
    cache: false,
    backend: 'webgpu',
    restoreCache: false,
    // Plain requests say nothing, and must not speculate just because a draft is loaded.
    speculative: false,
    kvBudgetBytes: job.kvBudgetBytes,
    maxBatch: job.maxBatch,
    onProgress: (p) => {
      if (p.loaded === p.total || p.loaded - last > p.total / 10) {
        last = p.loaded;
        report({ type: 'progress', loaded: p.loaded, total: p.total });
      }
    },
  });
  const traffic = new Traffic(engine, engine.info, job);
  const sample = async (): Promise<SoakSample> => ({ counters: structuredClone(traffic.counters), stats: await engine.stats() });
  window.__soak = {
    rest: () => traffic.rest(),
    resume: () => traffic.resume(),
    sample,
    async stop() {
      await traffic.stop();
      return sample();
    },
  };
  const i = engine.info;
  report({
    type: 'soak-ready',
    model: { arch: i.arch, layers: i.layers, hidden: i.hidden, vocab: i.vocab, context: i.contextLength, kv_pages: i.kvPages },
    draft: i.draft ? { arch: i.draft.arch, layers: i.draft.layers } : null,
    backend: i.backend.name,
    adapter: i.adapter,
    in_worker: engine.inWorker,
    kinds: traffic.kinds,
  });
  traffic.start();
}

main().catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }));
