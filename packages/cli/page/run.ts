// The page `intab generate`, `intab bench decode` and `intab bench speculative` drive in headless Chromium:
// it loads the model the CLI serves (range requests, like a model hub), and a draft model beside it for
// speculative decoding, runs it on WebGPU through the Engine (@intab/engine, in this thread: the product
// path with its scheduler, continuous batching, speculation, sampling and cancellation), and reports every
// token and the final figures through window.__intabReport. The job comes from window.__intabJob. Several
// streams (--concurrency, --batch) share one engine, so they share its steps.

import { gpuStats, requestGpu, type Gpu } from '@intab/gpu';
import { mulberry32 } from '@intab/gpu/reference';
import {
  Engine,
  type EngineOptions,
  loadRunners,
  checkDraft,
  describeModel,
  resolveSpeculative,
  type Chunk,
  type GenerateRequest,
  type RequestMetrics,
  type SpeculativeMethod,
  type SpeculativeMetrics,
  type SpeculativeOptions,
} from '@intab/engine';
import { createDetokenizer, openGguf, openHfFolder, openTokenizer, tokenBytes, urlSource, type ByteSource, type ModelFiles, type Runner as RunnerType, type Tokenizer } from '@intab/model';
// The grammar package by path (the CLI does not depend on it; the engine does): bench grammar replays documents.
import { TokenMatcher, TokenVocabulary, compileJsonSchema } from '../../grammar/src/index.ts';
import { benchChat, type ChatJob, type LoadedEngine } from './bench-chat.ts';
import { benchStore } from './bench-store.ts';

/** Where a model's files are: GGUF (one file or splits) or a Hugging Face folder. */
interface ModelRef {
  kind: 'gguf' | 'hf';
  /** File names (hf) and their URLs, same order; a single URL ending in / for a remote hf folder. */
  files: string[];
  urls: string[];
}

export interface Job extends ModelRef, ChatJob {
  /** intab generate: constrained output (--json-schema, --json-object, --grammar, --regex). */
  format?: { responseFormat?: GenerateRequest['responseFormat']; grammar?: string; regex?: string };
  /** 'bench' is intab bench decode, 'speculative' intab bench speculative, 'grammar' the decode part of intab bench grammar, 'chat' intab bench chat. */
  mode: 'generate' | 'bench' | 'speculative' | 'grammar' | 'chat' | 'store';
  /** grammar: the id of the JSONSchemaBench schema in format.responseFormat (reported). */
  schemaId?: string;
  /** grammar: the model's tokenizer by name, when the CLI knows it (the model it made); reported. */
  tokenizerName?: string;
  promptIds?: number[];
  /** Plain text, encoded with the model's tokenizer (BOS as the tokenizer adds it). */
  prompt?: string;
  /** One user message, through the model's chat template with the generation prompt. */
  chat?: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  quantize?: 'q8_0' | 'q4_0';
  ignoreEos?: boolean;
  /** bench: prompt length and decode steps. */
  promptTokens?: number;
  /** generate: copies of the request run at once through the one engine; set, every record names its stream. */
  concurrency?: number;
  /** Abort each stream (its AbortSignal) once it has delivered this many tokens. */
  abortAfterTokens?: number;
  /** bench: batch sizes, each measured with that many concurrent streams. */
  batch?: number[];
  /** A draft model (same vocabulary), loaded beside the target for speculative decoding. */
  draft?: ModelRef;
  /** generate: the request's speculative option. */
  speculative?: SpeculativeMethod | SpeculativeOptions;
  /** speculative: the methods measured, the k of the fixed-k lines, and the grounded prompt as text. */
  methods?: ('ngram' | 'self' | 'draft')[];
  specK?: number;
  groundedPrompt?: string;
  /** bench speculative, chat and store: measured repeats (medians are reported). */
  repeats?: number;
}

declare global {
  interface Window {
    __intabJob?: Job;
    __intabReport?: (record: unknown) => void;
    __intabDone?: boolean;
  }
}

const report = (r: unknown) => window.__intabReport?.(r);

async function openModel(job: ModelRef): Promise<ModelFiles> {
  const abs = (u: string) => new URL(u, location.href).href;
  if (job.kind === 'gguf') return openGguf(await Promise.all(job.urls.map((u) => urlSource(abs(u)))));
  const sources = new Map<string, ByteSource>();
  const remoteBase = job.urls.length === 1 && job.urls[0].endsWith('/') ? job.urls[0] : undefined;
  await Promise.all(
    job.files.map(async (name, i) => {
      try {
        sources.set(name, await urlSource(abs(remoteBase ? remoteBase + name : job.urls[i])));
      } catch (err) {
        if (!remoteBase || name === 'config.json') throw err; // optional files may be absent remotely
      }
    }),
  );
  return openHfFolder(sources);
}

/** Bytes the GPU reads for one decode token: every matrix except the embedding (one row), plus norms. */
function bytesPerToken(runner: RunnerType): number {
  const w = runner.weights;
  let bytes = w.output.rowBytes * w.output.n + w.embed.rowBytes;
  for (const l of w.layers) for (const m of [l.q, l.k, l.v, l.o, l.gate, l.up, l.down]) bytes += m.rowBytes * m.n;
  return bytes + (2 * w.layers.length + 1) * runner.config.hidden * 4;
}

/** What one stream delivered, timed on the consumer's side. */
interface StreamResult {
  stream: number;
  ids: number[];
  finishReason: Chunk['finishReason'];
  metrics?: RequestMetrics;
  /** performance.now() of start(), the first token's arrival and the last chunk's arrival. */
  startedAt: number;
  firstTokenAt?: number;
  endedAt: number;
  /** Arrival time and token count of every chunk that brought tokens. */
  arrivals: { at: number; tokens: number }[];
  /** With abortAfterTokens: tokens delivered when the signal was aborted, and abort → iterator end. */
  abortedAtTokens?: number;
  abortLatencyMs?: number;
}

/**
 * Runs one request through the engine as a consumer would: pull chunks until one carries a finishReason.
 * `onTokens` sees every delivered id as it arrives; with `abortAfterTokens` the stream's AbortSignal fires
 * once that many tokens arrived, and the time until the iterator ends is measured.
 */
async function consume(engine: Engine, stream: number, request: GenerateRequest, abortAfterTokens: number | undefined, onTokens?: (ids: number[]) => void): Promise<StreamResult> {
  const controller = new AbortController();
  const startedAt = performance.now();
  const id = await engine.start(request, controller.signal);
  const ids: number[] = [];
  let firstTokenAt: number | undefined;
  let abortAt: number | undefined;
  let abortedAtTokens: number | undefined;
  const arrivals: { at: number; tokens: number }[] = [];
  for (;;) {
    const chunk = await engine.next(id);
    const now = performance.now();
    if (chunk.ids.length) {
      firstTokenAt ??= now;
      arrivals.push({ at: now, tokens: chunk.ids.length });
      ids.push(...chunk.ids);
      onTokens?.(chunk.ids);
    }
    if (chunk.finishReason) {
      return {
        stream,
        ids,
        finishReason: chunk.finishReason,
        metrics: chunk.metrics,
        startedAt,
        firstTokenAt,
        endedAt: now,
        arrivals,
        ...(abortAt !== undefined ? { abortedAtTokens, abortLatencyMs: round(now - abortAt) } : {}),
      };
    }
    if (abortAfterTokens !== undefined && abortAt === undefined && ids.length >= abortAfterTokens) {
      abortedAtTokens = ids.length;
      abortAt = performance.now();
      controller.abort();
    }
  }
}

/** The request of the job (sampling and stopping options shared by every stream). */
function requestOf(job: Job, tokenizer: Tokenizer | undefined, benchPrompt: () => number[]): GenerateRequest {
  if ((job.prompt !== undefined || job.chat !== undefined) && !tokenizer) {
    throw new Error('this model ships no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): pass --prompt-ids');
  }
  const options = {
    maxTokens: job.maxTokens,
    temperature: job.temperature,
    ...(job.topK !== undefined ? { topK: job.topK } : {}),
    ...(job.topP !== undefined ? { topP: job.topP } : {}),
    seed: job.seed,
    // bench decodes exactly maxTokens, as the kernels do not care what the ids mean
    ignoreEos: job.mode === 'bench' || Boolean(job.ignoreEos),
    ...(job.speculative !== undefined ? { speculative: job.speculative } : {}),
    ...(job.format ?? {}),
  };
  if (job.promptIds) return { ...options, promptIds: job.promptIds };
  if (job.prompt !== undefined) return { ...options, prompt: job.prompt };
  if (job.chat !== undefined) return { ...options, messages: [{ role: 'user', content: job.chat }] };
  if (job.mode === 'bench') return { ...options, promptIds: benchPrompt() };
  throw new Error('the prompt is empty: pass --prompt-ids, --prompt or --chat');
}

async function main(): Promise<void> {
  const job = window.__intabJob;
  if (!job) throw new Error('no job: this page is driven by the intab CLI');
  // The model store's figures go through the public API (createEngine, its worker, the store) on their own.
  if (job.mode === 'store') return benchStore(job, report);
  const gpu = await requestGpu();
  const t0 = performance.now();
  const model = await openModel(job);
  const tokenizer = openTokenizer(model);
  // The draft's files are checked (same vocabulary, same tokens) before either model is uploaded.
  const draftModel = job.draft ? await openModel(job.draft) : undefined;
  if (draftModel) checkDraft(model, tokenizer, draftModel, openTokenizer(draftModel));
  const widest = Math.max(1, job.concurrency ?? 1, ...(job.batch ?? []));
  // The benchmarks of decoding run the same prompts again and again: the prefix cache would skip their prefill.
  const prefixCache = job.mode === 'generate' || job.mode === 'chat';
  const load = () => loadEngine(gpu, job, model, tokenizer, draftModel, { maxBatch: Math.max(8, widest), kvBudgetBytes: 256 << 20, seed: job.seed, prefixCache, restoreCache: false });
  if (job.mode === 'chat') {
    try {
      await benchChat(job, tokenizer, load, report);
    } finally {
      gpu.destroy();
    }
    return;
  }
  const { engine, runner, draft, info } = await load();
  let steps = 0;
  const step = runner.step.bind(runner);
  runner.step = (entries, options) => (steps++, step(entries, options));
  const loadMs = performance.now() - t0;
  const c = model.config;
  const adapter = info.adapter;
  const rng = mulberry32(job.seed);
  const benchPrompt = () =>
    Array.from({ length: job.promptTokens ?? 64 }, (_, i) => (i === 0 && c.bosId !== null ? c.bosId : 3 + Math.floor(rng() * (c.vocab - 3))));
  const perToken = bytesPerToken(runner);
  const modelFacts = {
    arch: c.arch,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocab,
    dtype: runner.weights.layers[0]?.q.dtype,
    quantize: job.quantize ?? null,
    ...(draft ? { draft: { arch: draft.config.arch, layers: draft.config.layers, hidden: draft.config.hidden, dtype: draft.weights.layers[0]?.q.dtype } } : {}),
  };
  try {
    if (job.mode === 'grammar') await benchGrammarDecode(engine, job, tokenizer, { perToken, modelFacts, adapter, loadMs, steps: () => steps });
    else if (job.mode === 'speculative') await benchSpeculative(engine, job, tokenizer, c.bosId, benchPrompt, { perToken, modelFacts, adapter, loadMs, steps: () => steps });
    else if (job.mode === 'bench' && job.batch) await benchBatches(engine, job, benchPrompt, { perToken, modelFacts, adapter, loadMs, steps: () => steps });
    else await generate(engine, job, requestOf(job, tokenizer, benchPrompt), tokenizer, { perToken, modelFacts, adapter, loadMs, steps: () => steps });
  } finally {
    await engine.destroy();
    gpu.destroy();
  }
}

/**
 * Uploads the job's model (and its draft) to the GPU, compiles every pipeline, and wraps them in an engine that owns
 * them from then on (engine.destroy() frees them; the GPU device stays the caller's).
 */
async function loadEngine(gpu: Gpu, job: Job, model: ModelFiles, tokenizer: Tokenizer | undefined, draftModel: ModelFiles | undefined, options: EngineOptions): Promise<LoadedEngine> {
  const t0 = performance.now();
  const progress = (which?: 'draft') => {
    let last = 0;
    return (p: { loaded: number; total: number }) => {
      if (p.loaded === p.total || p.loaded - last > p.total / 10) {
        last = p.loaded;
        report({ type: 'progress', ...(which ? { model: which } : {}), loaded: p.loaded, total: p.total });
      }
    };
  };
  const { runner, draft } = await loadRunners(gpu, model, draftModel, {
    kvBudgetBytes: options.kvBudgetBytes ?? 256 << 20,
    maxBatch: Math.max(16, options.maxBatch ?? 8),
    quantize: job.quantize,
    onProgress: progress(),
    onDraftProgress: progress('draft'),
  });
  const info = { ...describeModel(gpu, runner, tokenizer, draft), prefixCache: options.prefixCache !== false };
  const engine = new Engine({ runner, draft, tokenizer, info, options });
  return { engine, runner, draft, info, loadMs: performance.now() - t0 };
}

interface Facts {
  perToken: number;
  /** Runner steps run so far (target model). */
  steps: () => number;
  modelFacts: Record<string, unknown>;
  adapter: string;
  loadMs: number;
}

/** `intab generate` (and the single-stream `intab bench decode`): N copies of the request at once. */
async function generate(engine: Engine, job: Job, request: GenerateRequest, tokenizer: Tokenizer | undefined, facts: Facts): Promise<void> {
  const tagged = job.concurrency !== undefined;
  const n = job.concurrency ?? 1;
  const tStart = performance.now();
  // GPU work per decode step, from the first token on (prefill is done by then): dispatches and bind groups.
  let tokens = 0;
  let from: { dispatches: number; bindGroups: number; steps: number; tokens: number } | undefined;
  const results = await Promise.all(
    Array.from({ length: n }, (_, stream) => {
      const detok = tokenizer ? createDetokenizer(tokenizer) : undefined;
      const tag = tagged ? { stream } : {};
      return consume(engine, stream, request, job.abortAfterTokens, (ids) => {
        tokens += ids.length;
        from ??= { ...gpuStats, steps: facts.steps(), tokens };
        for (const id of ids) report(detok ? { type: 'token', ...tag, id, text: detok.push(id) } : { type: 'token', ...tag, id });
      });
    }),
  );
  const wallMs = performance.now() - tStart;
  const steps = from ? facts.steps() - from.steps : 0;
  const perStep = from && steps > 0 ? { dispatches_per_step: round((gpuStats.dispatches - from.dispatches) / steps), bind_groups_per_step: round((gpuStats.bindGroups - from.bindGroups) / steps) } : {};
  const perToken = from && tokens > from.tokens ? { dispatches_per_token: round((gpuStats.dispatches - from.dispatches) / (tokens - from.tokens)) } : {};
  for (const r of results) {
    const m = r.metrics;
    const decoded = r.ids.length - 1;
    const decodeTokS = m && m.decodeTokensPerSecond > 0 ? m.decodeTokensPerSecond : null;
    report({
      type: 'done',
      done: true,
      ...(tagged ? { stream: r.stream } : {}),
      ids: r.ids,
      ...(tokenizer ? { text: tokenizer.decode(r.ids, { skipSpecialTokens: true }) } : {}),
      finish_reason: r.finishReason,
      prompt_tokens: m?.promptTokens ?? null,
      generated_tokens: r.ids.length,
      queue_ms: m ? round(m.queueMs) : null,
      ttft_ms: m ? round(m.ttftMs) : null,
      prefill_tok_s: m ? round(m.prefillTokensPerSecond) : null,
      decode_tok_s: decodeTokS !== null ? round(decodeTokS) : null,
      ...(r.abortLatencyMs !== undefined ? { abort_after_tokens: job.abortAfterTokens, aborted_at_tokens: r.abortedAtTokens, abort_latency_ms: r.abortLatencyMs } : {}),
      ...(m?.speculative ? { speculative: speculativeFigures(m.speculative, r.ids.length) } : {}),
      ...(job.format?.responseFormat && tokenizer ? { json: parsedOrNull(tokenizer.decode(r.ids, { skipSpecialTokens: true })) } : {}),
      weight_bytes_per_token: facts.perToken,
      ...perToken,
      ...perStep,
      decode_gbps: decodeTokS !== null && decoded > 0 ? round((facts.perToken * decodeTokS) / 1e9) : null,
      load_ms: round(facts.loadMs),
      model: facts.modelFacts,
      adapter: facts.adapter,
    });
  }
  if (!tagged) return;
  const latencies = results.flatMap((r) => (r.abortLatencyMs !== undefined ? [r.abortLatencyMs] : []));
  report({
    type: 'summary',
    summary: true,
    streams: n,
    finish_reasons: results.map((r) => r.finishReason),
    identical_ids: results.every((r) => r.ids.length === results[0].ids.length && r.ids.every((id, i) => id === results[0].ids[i])),
    generated_tokens: results.reduce((s, r) => s + r.ids.length, 0),
    wall_ms: round(wallMs),
    aggregate_tok_s: round((results.reduce((s, r) => s + r.ids.length, 0) / wallMs) * 1000),
    ...aggregateDecode(results),
    ttft_ms_mean: round(mean(results.map((r) => r.metrics?.ttftMs ?? 0))),
    ttft_ms_max: round(Math.max(...results.map((r) => r.metrics?.ttftMs ?? 0))),
    ...(latencies.length ? { abort_latency_ms_mean: round(mean(latencies)), abort_latency_ms_max: round(Math.max(...latencies)) } : {}),
    adapter: facts.adapter,
  });
}

/**
 * Decode throughput of streams run together. `aggregate_decode_tok_s` is the steady state: tokens that
 * arrived while every stream was decoding (after the last stream's first token, up to the first stream's
 * end) over that window, i.e. the speed of a step that holds all of them. Streams join at the step after
 * their start(), so the first one may run a step ahead; `aggregate_decode_tok_s_overall` counts every token
 * after each stream's first, over the time from the earliest first token to the last stream's end.
 */
function aggregateDecode(results: StreamResult[]): Record<string, number | null> {
  const none = { aggregate_decode_tok_s: null, aggregate_decode_tok_s_overall: null, decode_window_ms: null };
  if (results.some((r) => r.firstTokenAt === undefined)) return none;
  const decoded = results.reduce((s, r) => s + Math.max(0, r.ids.length - 1), 0);
  if (decoded === 0) return none;
  const firsts = results.map((r) => r.firstTokenAt!);
  const overallMs = Math.max(...results.map((r) => r.endedAt)) - Math.min(...firsts);
  const from = Math.max(...firsts);
  const to = Math.min(...results.map((r) => r.endedAt));
  const steady = results.reduce((s, r) => s + r.arrivals.filter((a) => a.at > from && a.at <= to).reduce((n, a) => n + a.tokens, 0), 0);
  return {
    aggregate_decode_tok_s: to > from && steady > 0 ? round((steady / (to - from)) * 1000) : null,
    aggregate_decode_tok_s_overall: overallMs > 0 ? round((decoded / overallMs) * 1000) : null,
    decode_window_ms: to > from ? round(to - from) : null,
  };
}

/** `intab bench decode --batch 1,2,4`: per batch size, that many streams at once (same prompt length and max tokens). */
async function benchBatches(engine: Engine, job: Job, benchPrompt: () => number[], facts: Facts): Promise<void> {
  const base: GenerateRequest = { maxTokens: job.maxTokens, temperature: job.temperature, seed: job.seed, ignoreEos: true };
  for (const b of job.batch!) {
    const prompts = Array.from({ length: b }, () => benchPrompt());
    // One short unmeasured round at this batch size first: first-use allocations stay out of the figures.
    await Promise.all(prompts.map((p, i) => consume(engine, i, { ...base, maxTokens: 2, promptIds: p }, undefined)));
    const tStart = performance.now();
    const results = await Promise.all(prompts.map((p, i) => consume(engine, i, { ...base, promptIds: p }, undefined)));
    const wallMs = performance.now() - tStart;
    const perStream = results.map((r) => r.metrics?.decodeTokensPerSecond ?? 0);
    const ttft = results.map((r) => r.metrics?.ttftMs ?? 0);
    const agg = aggregateDecode(results);
    report({
      type: 'bench',
      bench: 'decode',
      batch: b,
      prompt_tokens: prompts[0].length,
      max_tokens: job.maxTokens,
      generated_tokens: results.reduce((s, r) => s + r.ids.length, 0),
      ...agg,
      per_stream_decode_tok_s: round(mean(perStream)),
      per_stream_decode_tok_s_min: round(Math.min(...perStream)),
      ttft_ms: round(mean(ttft)),
      ttft_ms_max: round(Math.max(...ttft)),
      prefill_tok_s: round(mean(results.map((r) => r.metrics?.prefillTokensPerSecond ?? 0))),
      wall_ms: round(wallMs),
      weight_bytes_per_token: facts.perToken,
      load_ms: round(facts.loadMs),
      model: facts.modelFacts,
      adapter: facts.adapter,
    });
  }
}

/** A request's speculative metrics, rounded, with acceptance_rate and tokens_per_target_step = (generated − 1) / targetSteps. */
function speculativeFigures(s: SpeculativeMetrics, generated: number): Record<string, unknown> {
  return {
    method: s.method,
    proposed: s.proposed,
    accepted: s.accepted,
    targetSteps: s.targetSteps,
    verifySteps: s.verifySteps,
    draftSteps: s.draftSteps,
    targetMs: round(s.targetMs),
    verifyMs: round(s.verifyMs),
    draftMs: round(s.draftMs),
    acceptance_rate: s.proposed > 0 ? round(s.accepted / s.proposed) : null,
    tokens_per_target_step: s.targetSteps > 0 ? round((generated - 1) / s.targetSteps) : null,
  };
}

/** bench speculative's open prompt for a model with a tokenizer (no --prompt). */
const OPEN_QUESTION = 'Why do cats like to sit in boxes?';

/**
 * `intab bench speculative`: per prompt (grounded, open), plain greedy decoding, then each method with
 * adaptive k and with a fixed k, same prompt and max tokens, all in this one engine. Every measured request
 * comes after an unmeasured short one of the same kind (shader compiles, first-use allocations, and the
 * engine's step-cost model, which adaptive k reads, has seen steps of that shape).
 */
async function benchSpeculative(engine: Engine, job: Job, tokenizer: Tokenizer | undefined, bosId: number | null, randomPrompt: () => number[], facts: Facts): Promise<void> {
  const encode = (text: string, flag: string): number[] => {
    if (!tokenizer) {
      const instead = flag === '--prompt' ? 'pass --prompt-ids, or no prompt for seeded random ids' : 'drop it: the grounded prompt is then built from the open one';
      throw new Error(`this model ships no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): ${flag} needs one; ${instead}`);
    }
    return tokenizer.encode(text, { addSpecialTokens: true });
  };
  const open = job.promptIds ?? (job.prompt !== undefined ? encode(job.prompt, '--prompt') : tokenizer ? encode(OPEN_QUESTION, '--prompt') : randomPrompt());
  const run = (promptIds: number[], maxTokens: number, speculative: SpeculativeOptions | false) =>
    consume(engine, 0, { promptIds, maxTokens, temperature: 0, seed: job.seed, ignoreEos: true, speculative }, undefined);
  const warm = Math.min(8, job.maxTokens);
  await run(open, warm, false);
  let grounded: number[];
  if (job.groundedPrompt !== undefined) grounded = encode(job.groundedPrompt, '--grounded-prompt');
  else {
    // P + G + P: the continuation after the second P can copy G from the prompt. BOS only once, at the start.
    const g = await run(open, job.maxTokens, false);
    const bos = bosId !== null && open[0] === bosId ? 1 : 0;
    grounded = [...open, ...g.ids, ...open.slice(bos)];
  }
  const info = engine.modelInfo!;
  // Each line: `repeats` pairs of (plain run, speculative run), alternating so that the adapter's drift
  // (these machines are noisy) hits both alike; decode tok/s are medians, speedup is the median of the
  // pairs' ratios, and the counts come from the last speculative run.
  const repeats = job.repeats ?? 3;
  for (const [name, prompt] of [['grounded', grounded], ['open', open]] as const) {
    await run(prompt, warm, false);
    for (const method of job.methods ?? ['ngram', 'self']) {
      for (const adaptive of [true, false]) {
        const spec: SpeculativeOptions = adaptive ? { method } : { method, k: job.specK ?? 4, adaptive: false };
        const resolved = resolveSpeculative(spec, { hasDraft: info.draft !== undefined, layers: info.layers })!;
        await run(prompt, warm, spec);
        const plainTokS: number[] = [];
        const specTokS: number[] = [];
        const ratios: number[] = [];
        const plainMsPerStep: number[] = [];
        let identical = true;
        let r!: StreamResult;
        for (let i = 0; i < repeats; i++) {
          const plain = await run(prompt, job.maxTokens, false);
          r = await run(prompt, job.maxTokens, spec);
          const p = plain.metrics?.decodeTokensPerSecond ?? 0;
          const t = r.metrics?.decodeTokensPerSecond ?? 0;
          plainTokS.push(p);
          specTokS.push(t);
          if (p > 0 && t > 0) ratios.push(t / p);
          if (p > 0) plainMsPerStep.push(1000 / p);
          identical &&= r.ids.length === plain.ids.length && r.ids.every((id, j) => id === plain.ids[j]);
        }
        const s = r.metrics?.speculative;
        const msPerStep = median(plainMsPerStep);
        const tokS = median(specTokS);
        const plainMedian = median(plainTokS);
        report({
          type: 'bench',
          bench: 'speculative',
          prompt: name,
          method,
          k: resolved.k,
          adaptive,
          ...(method === 'self' ? { self_layers: resolved.layers } : {}),
          acceptance_rate: s && s.proposed > 0 ? round(s.accepted / s.proposed) : null,
          tokens_per_target_step: s && s.targetSteps > 0 ? round((r.ids.length - 1) / s.targetSteps) : null,
          verify_decode_cost_ratio: s && s.verifySteps > 0 && msPerStep > 0 ? round(s.verifyMs / s.verifySteps / msPerStep) : null,
          draft_ms_per_step: s && s.draftSteps > 0 ? round(s.draftMs / s.draftSteps) : null,
          decode_tok_s: tokS > 0 ? round(tokS) : null,
          plain_decode_tok_s: plainMedian > 0 ? round(plainMedian) : null,
          speedup: ratios.length ? round(median(ratios)) : null,
          speedup_min: ratios.length ? round(Math.min(...ratios)) : null,
          speedup_max: ratios.length ? round(Math.max(...ratios)) : null,
          repeats,
          identical_ids: identical,
          prompt_tokens: prompt.length,
          max_tokens: job.maxTokens,
          generated_tokens: r.ids.length,
          proposed: s?.proposed ?? 0,
          accepted: s?.accepted ?? 0,
          target_steps: s?.targetSteps ?? 0,
          verify_steps: s?.verifySteps ?? 0,
          draft_steps: s?.draftSteps ?? 0,
          model: facts.modelFacts,
          adapter: facts.adapter,
        });
      }
    }
  }
}

/** Decode figures of one run: tok/s (every generated token after the first) and ms per step (chunk arrivals after the first). */
function decodeFigures(r: StreamResult): { tokS: number; msPerStep: number; steps: number } {
  const a = r.arrivals;
  const steps = Math.max(0, a.length - 1);
  return {
    tokS: r.metrics?.decodeTokensPerSecond ?? 0,
    msPerStep: steps > 0 ? (a[a.length - 1].at - a[0].at) / steps : 0,
    steps,
  };
}

/**
 * The decode part of `intab bench grammar`: the same prompt decoded unconstrained (ignoring EOS) and constrained by
 * the job's JSON schema, in this one engine, alternated `repeats` times after an unmeasured short run of each.
 * Constrained runs add the grammar's work to every step (the mask, accepting the token, the forced tokens that follow
 * a sample, which join the next step's input): `ms_per_step` compares steps, `decode_tok_s` tokens (forced tokens
 * count as generated, so a schema with long fixed keys can decode more tokens per second than no schema). Each
 * constrained document's text goes to the CLI ({ type: 'grammar-text' }), which validates it with ajv.
 */
async function benchGrammarDecode(engine: Engine, job: Job, tokenizer: Tokenizer | undefined, facts: Facts): Promise<void> {
  if (!tokenizer) throw new Error('bench grammar decodes under a JSON schema: the model needs a tokenizer (intab make-model --tokenizer qwen3 writes one)');
  const format = job.format?.responseFormat;
  if (!format) throw new Error('bench grammar: the job has no responseFormat');
  const promptIds = tokenizer.encode(job.prompt ?? '', { addSpecialTokens: true });
  const base = { promptIds, temperature: job.temperature, seed: job.seed };
  const plain = (maxTokens: number) => consume(engine, 0, { ...base, maxTokens, ignoreEos: true }, undefined);
  const constrained = (maxTokens: number) => consume(engine, 0, { ...base, maxTokens, responseFormat: format }, undefined);
  const warm = Math.min(8, job.maxTokens);
  await plain(warm);
  await constrained(warm);
  const u: ReturnType<typeof decodeFigures>[] = [];
  const c: ReturnType<typeof decodeFigures>[] = [];
  let last!: StreamResult;
  let lastPlain!: StreamResult;
  for (let i = 0; i < (job.repeats ?? 3); i++) {
    lastPlain = await plain(job.maxTokens);
    last = await constrained(job.maxTokens);
    u.push(decodeFigures(lastPlain));
    c.push(decodeFigures(last));
    report({ type: 'grammar-text', text: tokenizer.decode(last.ids, { skipSpecialTokens: true }) });
  }
  const replay = replayGrammar(format, last.ids, tokenizer, engine.modelInfo?.vocab);
  const tokRatios = u.flatMap((x, i) => (x.tokS > 0 && c[i].tokS > 0 ? [c[i].tokS / x.tokS] : []));
  const stepRatios = u.flatMap((x, i) => (x.msPerStep > 0 && c[i].msPerStep > 0 ? [c[i].msPerStep / x.msPerStep] : []));
  const stepRatio = stepRatios.length ? median(stepRatios) : 0;
  report({
    type: 'bench',
    bench: 'grammar',
    kind: 'decode',
    tokenizer: job.tokenizerName ?? null,
    vocab: engine.modelInfo?.vocab ?? null,
    schema: job.schemaId ?? null,
    prompt_tokens: promptIds.length,
    max_tokens: job.maxTokens,
    temperature: job.temperature,
    repeats: u.length,
    decode_tok_s: round(median(u.map((x) => x.tokS))),
    constrained_decode_tok_s: round(median(c.map((x) => x.tokS))),
    tok_s_ratio: tokRatios.length ? round(median(tokRatios)) : null,
    decode_slowdown: tokRatios.length ? round(1 - median(tokRatios)) : null,
    ms_per_step: round(median(u.map((x) => x.msPerStep))),
    constrained_ms_per_step: round(median(c.map((x) => x.msPerStep))),
    step_slowdown: stepRatios.length ? round(stepRatio - 1) : null,
    step_slowdown_min: stepRatios.length ? round(Math.min(...stepRatios) - 1) : null,
    step_slowdown_max: stepRatios.length ? round(Math.max(...stepRatios) - 1) : null,
    grammar_ms_per_step: replay ? round(replay.msPerStep) : null,
    grammar_share_of_step: replay && u.length ? round(replay.msPerStep / median(u.map((x) => x.msPerStep))) : null,
    generated_tokens: lastPlain.ids.length,
    constrained_tokens: last.ids.length,
    constrained_steps: c[c.length - 1].steps + 1,
    constrained_finish_reason: last.finishReason,
    ttft_ms: round(lastPlain.metrics?.ttftMs ?? 0),
    constrained_ttft_ms: round(last.metrics?.ttftMs ?? 0),
    target_slowdown: 0.05,
    model: facts.modelFacts,
    load_ms: round(facts.loadMs),
    adapter: facts.adapter,
  });
}

/**
 * The grammar's own work on a constrained run's tokens, in this page's JS engine: a fresh grammar compiled from the
 * same schema (the engine compiles one per request: every mask is cold) and matcher, driven as the engine drives it
 * (a mask before each sampled token, the token accepted, the forced tokens that follow accepted). `msPerStep` is
 * that work per sampled token, timed as one interval (the page's clock is coarse: single masks are not timed);
 * undefined when the run is not a json_schema one.
 */
function replayGrammar(format: NonNullable<GenerateRequest['responseFormat']>, ids: readonly number[], tokenizer: Tokenizer, vocabSize: number | undefined): { msPerStep: number; steps: number } | undefined {
  if (format.type !== 'json_schema' || ids.length === 0) return undefined;
  const vocab = TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds.filter((id) => vocabSize === undefined || id < vocabSize), size: vocabSize });
  const m = new TokenMatcher(compileJsonSchema(format.schema, { strict: format.strict ?? true }), vocab);
  let steps = 0;
  const t0 = performance.now();
  for (let i = 0; i < ids.length; ) {
    m.mask();
    if (!m.accept(ids[i++])) return undefined;
    steps++;
    // The forced tokens the engine appended after that sample (the ids that follow, as many as forced() gives).
    for (;;) {
      const f = m.done ? [] : m.forced();
      if (f.length === 0 || i + f.length > ids.length) break;
      for (const id of f) m.accept(id);
      i += f.length;
    }
  }
  return { msPerStep: (performance.now() - t0) / steps, steps };
}

/** The JSON document of a constrained run, or null when it was cut short (max tokens, abort). */
function parsedOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function median(xs: number[]): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : 0;
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}

main()
  .catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }))
  .finally(() => (window.__intabDone = true));
