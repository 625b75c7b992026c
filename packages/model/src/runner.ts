// The Runner: the only thing that touches GPU weights. It owns a loaded model, its paged KV-cache and
// the sampler, and runs steps: a batch of sequences, each with its new tokens, recorded into ONE command
// encoder with ONE submit, sampled on the GPU; only the sampled ids (and logprobs when asked) come back.

import { GpuValidationError, createSampler, packSamplingBatch, unpackSamples, type Gpu, type Sampler, type SampleResult, type SamplingParams } from '@intab/gpu';
import type { LlamaConfig } from './config.ts';
import { IntabModelError } from './errors.ts';
import { PagedKvCache } from './kv-cache.ts';
import { checkStep } from './page-pool.ts';
import { GEMV_MAX_ROWS, LlamaForward, loadLlamaWeights, type LlamaWeights, type LoadProgress, type StepPlan, type TensorTable } from './arch/llama.ts';

export interface RunnerOptions {
  /** Bytes for the KV-cache of all layers (default 64 MiB). */
  kvBudgetBytes?: number;
  /** Most sequences in one step (default 16). */
  maxBatch?: number;
  pageSize?: number;
  /** Quantize f32/f16/bf16 matrices on load, so a Hugging Face checkpoint runs in 8 or 4 bits. */
  quantize?: 'q8_0' | 'q4_0';
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/** One sequence's part of a step: its new tokens (prompt chunk, or the last sampled token) and how to sample. */
export interface StepEntry {
  seq: number;
  tokens: readonly number[];
  /** Sampling of the token after the last one; temperature 0 is greedy. */
  sampling?: SamplingParams;
}

/** The sampled next token of one entry, and its last token's logits when asked. */
export interface StepResult extends SampleResult {
  logits?: Float32Array;
}

export class Runner {
  private readonly sampler: Sampler;
  private readonly forward: LlamaForward;
  private samplesOut: GPUBuffer;
  private destroyed = false;
  private gpuError?: GPUError;
  private readonly onGpuError: (e: Event) => void;

  private constructor(
    private readonly gpu: Gpu,
    readonly config: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly kv: PagedKvCache,
    readonly maxBatch: number,
  ) {
    this.forward = new LlamaForward(gpu, config, weights, kv);
    this.sampler = createSampler(gpu, { vocab: config.vocab, maxBatch, label: 'sampler' });
    // A validation error means a step computed garbage: remember it and fail that step loudly.
    this.onGpuError = (e: Event) => (this.gpuError ??= (e as GPUUncapturedErrorEvent).error);
    gpu.device.addEventListener('uncapturederror', this.onGpuError);
    this.samplesOut = gpu.device.createBuffer({
      label: 'sampler.out',
      size: maxBatch * this.sampler.outStride * 4,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC,
    });
  }

  /** Upload the weights named in `tensors` (canonical names) and size the KV-cache. */
  static async load(gpu: Gpu, config: LlamaConfig, tensors: TensorTable, o: RunnerOptions = {}): Promise<Runner> {
    const weights = await loadLlamaWeights(gpu, config, tensors, { signal: o.signal, onProgress: o.onProgress, quantize: o.quantize });
    try {
      const kv = new PagedKvCache(
        gpu,
        { layers: config.layers, kvHeads: config.kvHeads, headDim: config.headDim, pageSize: o.pageSize },
        { budgetBytes: o.kvBudgetBytes ?? 64 << 20 },
      );
      return new Runner(gpu, config, weights, kv, o.maxBatch ?? 16);
    } catch (err) {
      weights.destroy();
      throw err;
    }
  }

  /**
   * Compile every pipeline a step can use (the prefill and the decode paths) by running two throwaway
   * steps on a scratch sequence, so the first real request's time to first token excludes shader
   * compilation (seconds on software adapters). Leaves the cache as it was.
   */
  async warmup(): Promise<void> {
    const seq = -1;
    const token = this.config.bosId ?? 0;
    this.kv.alloc(seq);
    try {
      await this.step([{ seq, tokens: Array(GEMV_MAX_ROWS + 1).fill(token) }]);
      await this.step([{ seq, tokens: [token] }]);
    } finally {
      this.kv.free(seq);
    }
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
  }

  free(seq: number): void {
    this.kv.free(seq);
  }

  rewind(seq: number, n: number): void {
    this.kv.rewind(seq, n);
  }

  /** A new sequence sharing `src`'s cached tokens (copy-on-write pages). */
  fork(src: number, dst: number): void {
    this.kv.fork(src, dst);
  }

  /**
   * Run one step for every entry; resolves with the sampled next token of each, in entry order. With
   * `logits: true` each result also carries the (V) logits of the entry's last token (a larger readback:
   * for tests and tools, not for generation).
   */
  async step(entries: readonly StepEntry[], options: { logits?: boolean } = {}): Promise<StepResult[]> {
    if (this.destroyed) throw new IntabModelError('This Runner was destroyed: load the model again.');
    if (entries.length === 0) return [];
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch);
    const plan = this.plan(entries);
    const encoder = this.gpu.device.createCommandEncoder({ label: 'step' });
    this.kv.recordCopies(encoder);
    const logits = this.forward.encode(encoder, plan);
    const seqs = entries.map((e) => e.sampling ?? { temperature: 0, u: 0 });
    const packed = packSamplingBatch(this.config.vocab, seqs, { maxTopLogprobs: this.sampler.maxTopLogprobs });
    const pass = encoder.beginComputePass({ label: 'step.sample' });
    this.sampler.encode(pass, {
      logits,
      params: this.bytes('sampler.params', packed.params),
      history: this.bytes('sampler.history', packed.history),
      bias: this.bytes('sampler.bias', packed.bias),
      mask: this.bytes('sampler.mask', packed.mask),
      out: this.samplesOut,
      batch: entries.length,
    });
    pass.end();
    const ticket = this.gpu.readback.encodeCopy(encoder, this.samplesOut, 0, entries.length * this.sampler.outStride * 4);
    const V = this.config.vocab;
    const logitsTicket = options.logits ? this.gpu.readback.encodeCopy(encoder, logits, 0, entries.length * V * 4) : undefined;
    this.gpu.device.queue.submit([encoder.finish()]);
    this.gpu.uniforms.reset();
    const words = new Uint32Array(await ticket.read());
    if (this.gpuError) {
      const err = this.gpuError;
      this.gpuError = undefined;
      throw new GpuValidationError(err instanceof GPUOutOfMemoryError ? 'out-of-memory' : 'validation', 'Runner.step', err.message);
    }
    const results: StepResult[] = unpackSamples(words, this.sampler.outStride, seqs.map((s) => s.topLogprobs ?? 0));
    if (logitsTicket) {
      const all = new Float32Array(await logitsTicket.read());
      results.forEach((r, b) => (r.logits = all.slice(b * V, (b + 1) * V)));
    }
    return results;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.gpu.device.removeEventListener('uncapturederror', this.onGpuError);
    this.forward.destroy();
    this.sampler.destroy();
    this.samplesOut.destroy();
    for (const b of this.inputs.values()) b.destroy();
    this.kv.destroy();
    this.weights.destroy();
  }

  /** Grow each sequence in the cache and lay its tokens out for the step (checkStep ran first). */
  private plan(entries: readonly StepEntry[]): StepPlan {
    const T = entries.reduce((n, e) => n + e.tokens.length, 0);
    const ids = new Uint32Array(T);
    const rows = new Uint32Array(T);
    const positions = new Uint32Array(T);
    const lastToken = new Uint32Array(entries.length);
    let t = 0;
    let maxContext = 0;
    entries.forEach((e, b) => {
      const start = this.kv.grow(e.seq, e.tokens.length);
      for (let i = 0; i < e.tokens.length; i++, t++) {
        ids[t] = e.tokens[i];
        rows[t] = b;
        positions[t] = start + i;
      }
      lastToken[b] = t - 1;
      maxContext = Math.max(maxContext, start + e.tokens.length);
    });
    const { table, maxPages } = this.kv.pageTable(entries.map((e) => e.seq));
    return { ids, rows, positions, pageTable: table, maxPages, sequences: entries.length, lastToken, maxContext };
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
