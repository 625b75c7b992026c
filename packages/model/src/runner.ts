// The Runner: the only thing that touches GPU weights. It owns a loaded model, its paged KV-cache and
// the sampler, and runs steps: a batch of sequences, each with its new tokens, recorded into ONE command
// encoder with ONE submit, sampled on the GPU; only 4 words per sequence come back (the sampled id, its
// logprob, and for speculative verify entries how many proposals were accepted), plus the sampled rows
// when top logprobs or accepted rows are asked for.

import {
  GpuValidationError,
  createAccept,
  createSampler,
  packAcceptSpans,
  packSamplingBatch,
  unpackAcceptance,
  unpackSamples,
  ACCEPT_OUT_WORDS,
  type Accept,
  type AcceptSpan,
  type Gpu,
  type Sampler,
  type SampleResult,
  type SamplingParams,
} from '@intab/gpu';
import { layerWindows, type LlamaConfig } from './config.ts';
import { IntabModelError } from './errors.ts';
import { LoadScopes, loadNeeds } from './gpu-memory.ts';
import { PagedKvCache } from './kv-cache.ts';
import { checkStep } from './page-pool.ts';
import { SequenceStates } from './sequence-states.ts';
import type { KvKey, PageIO, RunnerCapabilities, StepEntry, StepOptions, StepResult, StepRunner } from './step-runner.ts';
import { LlamaForward, checkLayers, loadLlamaWeights, type LlamaWeights, type LoadProgress, type StepPlan, type TensorTable } from './arch/llama.ts';

export interface RunnerOptions {
  /** Bytes for the KV-cache of all layers (default 64 MiB). */
  kvBudgetBytes?: number;
  /** Most sequences in one step (default 16). */
  maxBatch?: number;
  /** Most tokens in one step, of all its sequences (default 512): the step's activations are allocated for it. */
  maxTokensPerStep?: number;
  /**
   * Most logits rows in one step: one per plain entry, one per token of a verify entry (≥ maxBatch). It sizes
   * the sampler's (maxRows, V) f32 scratch. Default 4 · maxBatch (every sequence can verify 3 proposals at
   * once), lowered to what one storage binding holds for large vocabularies, and never below maxBatch.
   */
  maxRows?: number;
  pageSize?: number;
  /**
   * The most tokens a sequence is rewound by after a step (speculative drafts; default 32). Sliding-window layers
   * keep the pages that far back, and refuse a longer rewind.
   */
  maxRewind?: number;
  /** Quantize f32/f16/bf16 matrices on load, so a Hugging Face checkpoint runs in 8 or 4 bits. */
  quantize?: 'q8_0' | 'q4_0';
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

const GREEDY: SamplingParams = { temperature: 0, u: 0 };

export class Runner implements StepRunner {
  private readonly sampler: Sampler;
  private readonly accept: Accept;
  private readonly forward: LlamaForward;
  private samplesOut: GPUBuffer;
  private acceptOut: GPUBuffer;
  private destroyed = false;
  private gpuError?: GPUError;
  private readonly onGpuError: (e: Event) => void;

  /** Reading and writing whole KV pages, for a prefix cache saved to disk (absent with a window store: kept in memory only). */
  readonly pageIO?: PageIO;
  /**
   * With Gated DeltaNet layers (Qwen3.5), a sequence's state is more than its pages: no page sharing (prefix cache,
   * adopt) and no early exit (a draft of the first layers would advance their state with tokens that are undone).
   */
  readonly capabilities?: RunnerCapabilities;

  private constructor(
    private readonly gpu: Gpu,
    readonly config: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly kv: PagedKvCache,
    readonly maxBatch: number,
    readonly maxRows: number,
    readonly maxTokens: number,
    quantize: 'q8_0' | 'q4_0' | undefined,
    /** The recurrent state of the Gated DeltaNet layers, one slot per sequence (config.linearAttention). */
    readonly states?: SequenceStates,
  ) {
    const key: KvKey = { weights: weights.hash, quantize: quantize ?? null, kvDtype: 'f32', pageSize: kv.pageSize, arch: config };
    if (states) {
      this.capabilities = {
        sharedPages: false,
        earlyExit: false,
        why: `${config.arch}'s Gated DeltaNet layers keep a recurrent state per sequence beside its K/V pages, which pages cannot share`,
      };
    } else if (!kv.window) {
      this.pageIO = {
        pageBytes: kv.pageBytesAllLayers,
        key: async () => key,
        read: (pages) => kv.readPages(pages),
        write: async (pages, bytes) => kv.writePages(pages, bytes),
      };
    }
    this.forward = new LlamaForward(gpu, config, weights, kv, { maxTokens, maxBatch, maxRows }, states);
    let sampler: Sampler | undefined;
    try {
      this.sampler = sampler = createSampler(gpu, { vocab: config.vocab, maxBatch: maxRows, label: 'sampler' });
      this.accept = createAccept(gpu);
    } catch (err) {
      // What this constructor made is its own to free (load() frees the cache and the weights).
      this.forward.destroy();
      sampler?.destroy();
      throw err;
    }
    // A validation error means a step computed garbage: remember it and fail that step loudly.
    this.onGpuError = (e: Event) => (this.gpuError ??= (e as GPUUncapturedErrorEvent).error);
    gpu.device.addEventListener('uncapturederror', this.onGpuError);
    this.samplesOut = gpu.device.createBuffer({
      label: 'sampler.out', // (maxRows, outStride) u32
      size: maxRows * this.sampler.outStride * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
    });
    this.acceptOut = gpu.device.createBuffer({
      label: 'accept.out', // (maxBatch, 4) u32
      size: maxBatch * ACCEPT_OUT_WORDS * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
    });
  }

  /** Upload the weights named in `tensors` (canonical names) and size the KV-cache. */
  static async load(gpu: Gpu, config: LlamaConfig, tensors: TensorTable, o: RunnerOptions = {}): Promise<Runner> {
    const maxBatch = o.maxBatch ?? 16;
    const maxTokens = o.maxTokensPerStep ?? 512;
    if (!Number.isInteger(maxTokens) || maxTokens < maxBatch) {
      throw new IntabModelError(`Runner: maxTokensPerStep = ${maxTokens} must be an integer ≥ maxBatch (${maxBatch}): every sequence of a step has at least one token.`);
    }
    // Rows whose (rows, V) f32 logits fit one storage binding (the sampler binds them whole).
    const fit = Math.floor(gpu.limits.maxStorageBufferBindingSize / (config.vocab * 4));
    const maxRows = o.maxRows ?? Math.max(maxBatch, Math.min(4 * maxBatch, fit));
    if (!Number.isInteger(maxRows) || maxRows < maxBatch) {
      throw new IntabModelError(`Runner: maxRows = ${maxRows} must be an integer ≥ maxBatch (${maxBatch}): every sequence of a step needs at least one logits row.`);
    }
    const maxRewind = o.maxRewind ?? 32;
    if (!Number.isInteger(maxRewind) || maxRewind < 0) throw new IntabModelError(`Runner: maxRewind = ${maxRewind} must be an integer ≥ 0.`);
    // Sliding-window layers beside full ones keep only their window (and maxRewind) in a store of their own.
    const shape = {
      layers: config.layers,
      kvHeads: config.kvHeads,
      headDim: config.headDim,
      pageSize: o.pageSize,
      windows: layerWindows(config),
      windowStore: { reach: maxRewind, step: maxTokens, sequences: maxBatch },
      // Qwen3.5's Gated DeltaNet layers keep a recurrent state (SequenceStates), no K/V
      ...(config.linearAttention ? { kvLayers: [...Array(config.layers).keys()].filter((l) => !config.linearAttention!.layers.includes(l)) } : {}),
    };
    const budgetBytes = o.kvBudgetBytes ?? 64 << 20;
    // Before anything is uploaded: a budget no page fits is refused now, and the figures an out-of-memory error gives.
    const needs = loadNeeds(gpu, config, tensors, { kv: { ...shape, budgetBytes }, maxTokens, maxBatch, maxRows, quantize: o.quantize });
    // Every allocation runs under error scopes, so a refused one is a typed error after all of them are freed.
    const scopes = new LoadScopes(gpu.device, o.signal);
    let weights: LlamaWeights | undefined;
    let kv: PagedKvCache | undefined;
    let states: SequenceStates | undefined;
    let runner: Runner | undefined;
    try {
      scopes.open('weights', needs.weights);
      try {
        weights = await loadLlamaWeights(gpu, config, tensors, {
          signal: scopes.signal,
          quantize: o.quantize,
          onProgress: (p) => {
            scopes.checkpoint();
            o.onProgress?.(p);
          },
        });
      } finally {
        scopes.close();
      }
      const loaded = weights;
      const cache = (kv = scopes.run('kv-cache', needs.kv, () => {
        const made = new PagedKvCache(gpu, shape, { budgetBytes });
        // Qwen3.5: a recurrent state slot for each sequence a step can hold
        if (config.linearAttention) states = new SequenceStates(gpu, config.linearAttention, maxBatch);
        return made;
      }));
      runner = scopes.run('activations', needs.activations, () => new Runner(gpu, config, loaded, cache, maxBatch, maxRows, maxTokens, o.quantize, states));
      const failed = await scopes.failure(needs);
      if (failed) throw failed;
      return runner;
    } catch (err) {
      if (runner) runner.destroy();
      else {
        kv?.destroy();
        states?.destroy();
        weights?.destroy();
      }
      // A refused allocation is the cause of whatever followed it (an upload stopped through scopes.signal).
      throw (await scopes.failure(needs)) ?? err;
    } finally {
      scopes.dispose();
    }
  }

  /**
   * Compile every pipeline a step can use (the prefill, verify and decode paths) by running throwaway
   * steps on a scratch sequence, so the first real request's time to first token (and the first
   * speculative step) excludes shader compilation (seconds on software adapters). Leaves the cache as it was.
   */
  async warmup(): Promise<void> {
    const seq = -1;
    const token = this.config.bosId ?? 0;
    const tokens = Array(Math.min(this.forward.gemvMaxRows + 1, this.maxTokens)).fill(token);
    this.alloc(seq);
    try {
      // A verify entry past gemvMaxRows rows: prefill attention, GEMMs, and the lm_head GEMM over several rows.
      const verify = tokens.length <= this.maxRows ? tokens.map(() => GREEDY) : undefined;
      await this.step([{ seq, tokens, verify }]);
      await this.step([{ seq, tokens: [token] }]);
    } finally {
      this.free(seq);
    }
  }

  /** Gated DeltaNet layers: the state slots left (maxBatch in all); absent otherwise. */
  get freeSequenceSlots(): number | undefined {
    return this.states?.freeSlotCount;
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
    try {
      this.states?.alloc(seq);
    } catch (err) {
      this.kv.free(seq);
      throw err;
    }
  }

  /** A new sequence over pages in use (a prefix cache's), holding `length` tokens (see PagePool.adopt). */
  adopt(seq: number, pages: readonly number[], length: number): void {
    if (this.states) throw new IntabModelError(`adopt: ${this.capabilities!.why}: start sequence ${seq} with alloc() and prefill it.`);
    this.kv.adopt(seq, pages, length);
  }

  free(seq: number): void {
    this.kv.free(seq);
    this.states?.free(seq);
  }

  /** Drops the last `n` tokens; with Gated DeltaNet layers, within the sequence's last verify step (SequenceStates). */
  rewind(seq: number, n: number): void {
    // (nothing to undo when every proposal was accepted: the state stays, with no replay)
    if (this.states && n > 0) this.states.rewind(seq, Math.max(0, this.kv.length(seq) - n));
    this.kv.rewind(seq, n);
  }

  /** A new sequence sharing `src`'s cached tokens (copy-on-write pages; a copy of its recurrent state). */
  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
    try {
      this.states?.fork(src, dst);
    } catch (err) {
      this.kv.free(dst);
      throw err;
    }
  }

  /**
   * Run one step for every entry; resolves with the sampled next token of each, in entry order (for verify
   * entries, the token after the accepted proposals, with `accepted`). `layers` runs only the first layers
   * (a draft); `logits: true` also returns each entry's logits rows.
   */
  async step(entries: readonly StepEntry[], options: StepOptions = {}): Promise<StepResult[]> {
    if (this.destroyed) throw new IntabModelError('This Runner was destroyed: load the model again.');
    if (entries.length === 0) return [];
    const layers = checkLayers(this.config, options.layers);
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch, this.maxRows, this.maxTokens);
    // Each entry's rows: one per plain entry (its sampling), one per token of a verify entry (verify[i]).
    const rowParams: SamplingParams[] = [];
    const spans: AcceptSpan[] = [];
    let tokens = 0;
    for (const e of entries) {
      spans.push({ firstRow: rowParams.length, rowCount: e.verify ? e.tokens.length : 1, firstToken: tokens });
      if (e.verify) rowParams.push(...e.verify);
      else rowParams.push(e.sampling ?? GREEDY);
      tokens += e.tokens.length;
    }
    const R = rowParams.length;
    const B = entries.length;
    // Validated before the cache grows, so a refused step leaves every sequence as it was.
    let packed = packSamplingBatch(this.config.vocab, rowParams, { maxTopLogprobs: this.sampler.maxTopLogprobs });
    const readRows = entries.some((e) => e.verify && e.rows) || rowParams.some((p) => (p.topLogprobs ?? 0) > 0);
    const lazy = entries.some((e) => e.masks);

    if (this.states) this.replay(entries);
    const plan = this.plan(entries);
    let encoder = this.gpu.device.createCommandEncoder({ label: 'step' });
    this.kv.recordCopies(encoder);
    this.states?.recordPending(encoder);
    const logits = this.forward.encode(encoder, plan, { layers }); // (R, V)
    if (lazy) {
      // Masks from the CPU (grammars): submit the forward first and compute them while the GPU runs it.
      this.gpu.submit([encoder.finish()]);
      encoder = this.gpu.device.createCommandEncoder({ label: 'step.sample' });
      entries.forEach((e, b) => {
        if (!e.masks) return;
        const masks = e.masks();
        for (let i = 0; i < spans[b].rowCount; i++) {
          const m = masks[i];
          if (m) rowParams[spans[b].firstRow + i] = { ...rowParams[spans[b].firstRow + i], allowed: m };
        }
      });
      packed = packSamplingBatch(this.config.vocab, rowParams, { maxTopLogprobs: this.sampler.maxTopLogprobs });
    }
    const pass = encoder.beginComputePass({ label: 'step.sample' });
    this.sampler.encode(pass, {
      logits,
      params: this.bytes('sampler.params', packed.params),
      history: this.bytes('sampler.history', packed.history),
      bias: this.bytes('sampler.bias', packed.bias),
      mask: this.bytes('sampler.mask', packed.mask),
      out: this.samplesOut,
      batch: R,
      adjust: packed.adjust,
      candidates: packed.candidates,
    });
    this.accept.encode(pass, {
      samples: this.samplesOut,
      outStride: this.sampler.outStride,
      rows: R,
      tokens: this.bytes('accept.tokens', plan.ids),
      tokenCount: plan.ids.length,
      spans: this.bytes('accept.spans', packAcceptSpans(spans)),
      out: this.acceptOut,
      batch: B,
    });
    pass.end();
    const ticket = this.gpu.readback.encodeCopy(encoder, this.acceptOut, 0, B * ACCEPT_OUT_WORDS * 4);
    const rowsTicket = readRows ? this.gpu.readback.encodeCopy(encoder, this.samplesOut, 0, R * this.sampler.outStride * 4) : undefined;
    const V = this.config.vocab;
    const logitsTicket = options.logits ? this.gpu.readback.encodeCopy(encoder, logits, 0, R * V * 4) : undefined;
    this.gpu.submit([encoder.finish()]);
    this.gpu.uniforms.reset();
    const words = new Uint32Array(await ticket.read());
    const rowWords = rowsTicket ? new Uint32Array(await rowsTicket.read()) : undefined;
    const all = logitsTicket ? new Float32Array(await logitsTicket.read()) : undefined;
    if (this.gpuError) {
      const err = this.gpuError;
      this.gpuError = undefined;
      throw new GpuValidationError(err instanceof GPUOutOfMemoryError ? 'out-of-memory' : 'validation', 'Runner.step', err.message);
    }
    const rows = rowWords ? unpackSamples(rowWords, this.sampler.outStride, rowParams.map((p) => p.topLogprobs ?? 0)) : undefined;
    return unpackAcceptance(words, B).map((a, b) => {
      const e = entries[b];
      const { firstRow, rowCount } = spans[b];
      const r: StepResult = { id: a.id, logprob: a.logprob, top: rows?.[a.row].top ?? [] };
      if (e.verify) {
        r.accepted = a.accepted;
        if (e.rows) r.acceptedRows = rows!.slice(firstRow, firstRow + a.accepted);
      }
      if (all) r.logits = e.verify ? all.slice(firstRow * V, (firstRow + rowCount) * V) : all.slice(firstRow * V, (firstRow + 1) * V);
      return r;
    });
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.gpu.device.removeEventListener('uncapturederror', this.onGpuError);
    this.states?.destroy();
    this.forward.destroy();
    this.sampler.destroy();
    this.samplesOut.destroy();
    this.acceptOut.destroy();
    for (const b of this.inputs.values()) b.destroy();
    this.kv.destroy();
    this.weights.destroy();
  }

  /**
   * Gated DeltaNet layers, before a step: the sequences a rewind left owing tokens (SequenceStates.rewind restored
   * their state to the start of their last verify step) run those tokens again with every layer, in a submit of
   * their own (their K/V are written again, identically; the logits are not read), so the step continues from their
   * state at the length the rewind left. Then each sequence's snapshot is taken or kept for this step.
   */
  private replay(entries: readonly StepEntry[]): void {
    const states = this.states!;
    const owing = entries.filter((e) => states.replayOf(e.seq).length > 0);
    if (owing.length > 0) {
      const T = owing.reduce((n, e) => n + states.replayOf(e.seq).length, 0);
      const ids = new Uint32Array(T);
      const rows = new Uint32Array(T);
      const positions = new Uint32Array(T);
      let t = 0;
      let maxContext = 0;
      owing.forEach((e, b) => {
        const replay = states.replayOf(e.seq);
        const start = this.kv.length(e.seq) - replay.length;
        replay.forEach((id, i) => ((ids[t] = id), (rows[t] = b), (positions[t++] = start + i)));
        maxContext = Math.max(maxContext, start + replay.length);
      });
      const seqs = owing.map((e) => e.seq);
      const { table, maxPages } = this.kv.pageTable(seqs);
      const plan: StepPlan = { ids, rows, positions, pageTable: table, maxPages, sequences: owing.length, outputs: Uint32Array.of(T - 1), maxContext, slots: Uint32Array.from(seqs, (q) => states.slot(q)) };
      const encoder = this.gpu.device.createCommandEncoder({ label: 'step.replay' });
      states.recordPending(encoder);
      this.forward.encode(encoder, plan);
      this.gpu.submit([encoder.finish()]);
    }
    for (const e of entries) states.beforeStep(e.seq, this.kv.length(e.seq), e.tokens, e.verify !== undefined);
  }

  /** Grow each sequence in the cache and lay its tokens out for the step (checkStep ran first). */
  private plan(entries: readonly StepEntry[]): StepPlan {
    const T = entries.reduce((n, e) => n + e.tokens.length, 0);
    const ids = new Uint32Array(T);
    const rows = new Uint32Array(T);
    const positions = new Uint32Array(T);
    const outputs: number[] = [];
    let t = 0;
    let maxContext = 0;
    entries.forEach((e, b) => {
      const start = this.kv.grow(e.seq, e.tokens.length);
      for (let i = 0; i < e.tokens.length; i++, t++) {
        ids[t] = e.tokens[i];
        rows[t] = b;
        positions[t] = start + i;
        if (e.verify) outputs.push(t); // a verify entry wants every token's logits
      }
      if (!e.verify) outputs.push(t - 1); // a plain entry its last token's
      maxContext = Math.max(maxContext, start + e.tokens.length);
    });
    const seqs = entries.map((e) => e.seq);
    const { table, maxPages } = this.kv.pageTable(seqs);
    const windowTable = this.kv.window ? this.kv.pageTable(seqs, true).table : undefined;
    const slots = this.states ? Uint32Array.from(seqs, (q) => this.states!.slot(q)) : undefined;
    return { ids, rows, positions, pageTable: table, windowTable, maxPages, sequences: entries.length, outputs: Uint32Array.from(outputs), maxContext, slots };
  }

  private readonly inputs = new Map<string, GPUBuffer>();

  /** Upload per-step host data into a reused buffer. */
  private bytes(name: string, data: ArrayBufferView): GPUBuffer {
    let b = this.inputs.get(name);
    if (!b || b.size < data.byteLength) {
      b?.destroy();
      b = this.gpu.device.createBuffer({ label: name, size: Math.max(256, 2 ** Math.ceil(Math.log2(data.byteLength))), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      this.inputs.set(name, b);
    }
    this.gpu.device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  }
}
