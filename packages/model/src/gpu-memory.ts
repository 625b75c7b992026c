// A model load's GPU memory: what it needs (weights, KV-cache, activations), computed from the config and the tensor
// table before anything is uploaded, and LoadScopes, the WebGPU error scopes around the load's allocations that turn
// a refused one into a GpuOutOfMemoryError (or a GpuValidationError) once the load has freed what it made. Reading a
// scope costs a round trip to the GPU process, so scopes wrap loads only: a step never opens one (the Runner follows
// steps through 'uncapturederror').

import { GpuOutOfMemoryError, GpuValidationError, isWeightDtype, rowBytes, rowsPerWeightPart, weightPartBytes, type Gpu, type GpuMemoryNeeds } from '@intab/gpu';
import { runStateBytes } from './arch/llama.ts';
import type { LlamaConfig } from './config.ts';
import { IntabModelError } from './errors.ts';
import { planKvCache, type KvCacheShape } from './kv-cache.ts';
import { stateSlotBytes } from './sequence-states.ts';
import type { TensorInfo } from './types.ts';
import { uploadDtype } from './upload.ts';

/** What a load allocates, in order. */
export type LoadPhase = GpuOutOfMemoryError['allocating'];

/** The sampler's top-logprobs slots per row (createSampler's default), which size its output rows. */
const SAMPLER_TOP_LOGPROBS = 20;
/** Keys per split of the decode attention's partials: the smaller default split (software adapters), an upper bound. */
const DECODE_SPLIT = 64;

export interface NeedsOptions {
  kv: KvCacheShape & { budgetBytes: number };
  /** The step's limits: tokens (T), sequences (B) and logits rows (R). */
  maxTokens: number;
  maxBatch: number;
  maxRows: number;
  quantize?: 'q8_0' | 'q4_0';
}

/**
 * The bytes a Llama-family model will hold on the GPU once loaded: its weights in their upload formats (split into
 * parts as createWeight splits them), the KV-cache as planKvCache clamps it, and the activations a step uses (the
 * RunState, the sampler's scratch and outputs). Tensors missing or unreadable count 0: the loader refuses them itself.
 * @example
 * const needs = loadNeeds(gpu, model.config, model.tensors, { kv: { ...shape, budgetBytes: 64 << 20 }, maxTokens: 512, maxBatch: 16, maxRows: 64 });
 */
export function loadNeeds(gpu: Pick<Gpu, 'limits'>, c: LlamaConfig, tensors: ReadonlyMap<string, TensorInfo>, o: NeedsOptions): GpuMemoryNeeds {
  const { hidden: C, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = c;
  const partLimit = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
  const matrix = (name: string): number => {
    const t = tensors.get(name);
    if (!t || t.shape.length !== 2 || !isWeightDtype(t.dtype)) return 0;
    const [n, k] = t.shape;
    let rb: number;
    try {
      rb = rowBytes(uploadDtype(t, o.quantize), k);
    } catch {
      return 0; // a row length its format cannot hold: createWeight refuses it with a ShapeError
    }
    // createWeight's parts (a row over the limit counts one row a part: createWeight refuses it with a LimitError).
    const perPart = Math.max(1, rowsPerWeightPart(rb, partLimit));
    let bytes = 0;
    for (let r = 0; r < n; r += perPart) bytes += weightPartBytes(Math.min(perPart, n - r), rb);
    return bytes;
  };
  const vector = (count: number) => Math.max(16, count * 4); // uploadF32's f32 buffer
  let weights = matrix('token_embd.weight') + vector(C) + (c.tiedEmbeddings ? 0 : matrix('output.weight'));
  for (let l = 0; l < c.layers; l++) {
    const b = `blk.${l}.`;
    // (a Gated DeltaNet layer has attn_qkv, attn_gate, ssm_beta, ssm_alpha and ssm_out where attention has q, k, v, o)
    for (const m of ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'attn_qkv', 'attn_gate', 'ssm_beta', 'ssm_alpha', 'ssm_out', 'ffn_gate', 'ffn_up', 'ffn_down']) {
      weights += matrix(`${b}${m}.weight`);
    }
    weights += 2 * vector(C);
    if (c.qkvBias) weights += vector((H + 2 * Hkv) * D);
    if (c.qkNorm) weights += vector(2 * D);
  }

  const kv = planKvCache(gpu.limits, o.kv, o.kv.budgetBytes);
  // LlamaForward's RunState, for the longest sequence the cache can hold (the decode partials at DECODE_SPLIT).
  const { maxBatch: B, maxRows: R } = o;
  const longest = Math.min(c.maxContext, kv.pages * kv.pageSize);
  const partials = B * H * Math.ceil(longest / DECODE_SPLIT) * (D + 2) * 4;
  const runState = Object.values(runStateBytes(c, o, Math.ceil(longest / kv.pageSize), partials)).reduce((a, b) => a + b, 0);
  // The sampler's (R, V) scratch and (R, outStride) output, the acceptance output (B, 4).
  const sampling = R * V + R * (2 + 2 * SAMPLER_TOP_LOGPROBS) + B * 4;
  // Gated DeltaNet layers: each sequence's recurrent state, live and snapshot (SequenceStates), with the K/V.
  const la = c.linearAttention;
  const states = la ? 2 * B * la.layers.length * Object.values(stateSlotBytes(la)).reduce((a, b) => a + b, 0) : 0;
  return { weights, kv: kv.bytes + states, activations: runState + 4 * sampling };
}

interface Failure {
  phase: LoadPhase;
  bytes: number;
  /** Which scope caught it (the filter, not the error's class: Dawn for Node need not define GPUOutOfMemoryError). */
  kind: 'out-of-memory' | 'validation';
  message: string;
}

/**
 * Out-of-memory and validation error scopes around a load's allocations, one pair per window: `run` wraps a
 * synchronous allocation, `open`/`checkpoint`/`close` an upload that awaits between chunks (checkpoint reads the
 * window so far and opens the next, so a refused buffer stops the upload a chunk later, through `signal`, instead of
 * at its end). Windows are read without waiting; `failure()` waits for them all once.
 * @example
 * const scopes = new LoadScopes(gpu.device, options.signal);
 * const kv = scopes.run('kv-cache', needs.kv, () => new PagedKvCache(gpu, shape, { budgetBytes }));
 * const err = await scopes.failure(needs);
 * if (err) { kv.destroy(); throw err; }
 */
export class LoadScopes {
  /** Aborted when the caller's signal aborts (with its reason) or a window reports an error. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly answers: Promise<void>[] = [];
  /** Each window's error, in the order the windows were opened. */
  private readonly failures: (Failure | undefined)[] = [];
  private current?: { phase: LoadPhase; bytes: number };
  private readonly unlink: () => void = () => {};

  constructor(
    private readonly device: GPUDevice,
    signal?: AbortSignal,
  ) {
    this.signal = this.controller.signal;
    if (signal?.aborted) this.controller.abort(signal.reason);
    else if (signal) {
      const forward = () => this.controller.abort(signal.reason);
      signal.addEventListener('abort', forward, { once: true });
      this.unlink = () => signal.removeEventListener('abort', forward);
    }
  }

  /** Runs `make` (which creates GPU objects, synchronously) in its own window: `phase`, asking `bytes`. */
  run<T>(phase: LoadPhase, bytes: number, make: () => T): T {
    this.open(phase, bytes);
    try {
      return make();
    } finally {
      this.close();
    }
  }

  /** Opens a window for an upload of `bytes` that awaits in between (close it in a finally). */
  open(phase: LoadPhase, bytes: number): void {
    if (this.current) throw new IntabModelError(`LoadScopes: the '${this.current.phase}' window is still open: close() it first.`);
    this.current = { phase, bytes };
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
  }

  /** Reads the open window and opens the next of the same phase: call it between chunks of an upload. */
  checkpoint(): void {
    if (!this.current) return;
    this.read(this.current);
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
  }

  close(): void {
    if (!this.current) return;
    this.read(this.current);
    this.current = undefined;
  }

  /**
   * Waits for every window read so far; the first that reported an error, typed: GpuOutOfMemoryError (an
   * out-of-memory error, with `needs`) or GpuValidationError (a validation error: a size over a limit some check
   * missed, or a bug). Undefined when all were clean.
   */
  async failure(needs: GpuMemoryNeeds): Promise<GpuOutOfMemoryError | GpuValidationError | undefined> {
    await Promise.all(this.answers);
    const f = this.failures.find((x) => x !== undefined);
    if (!f) return undefined;
    if (f.kind === 'out-of-memory') return new GpuOutOfMemoryError(f.phase, f.bytes, needs, f.message);
    return new GpuValidationError('validation', `the model load (${f.phase})`, f.message);
  }

  /** Stops following the caller's signal. */
  dispose(): void {
    this.unlink();
  }

  private read(window: { phase: LoadPhase; bytes: number }): void {
    const index = this.failures.push(undefined) - 1;
    const validation = this.device.popErrorScope();
    const oom = this.device.popErrorScope();
    this.answers.push(
      Promise.all([oom, validation]).then(([o, v]) => {
        // Writes into a buffer that was refused fail validation too: out-of-memory is the cause, so it comes first.
        const error = o ?? v;
        if (!error) return;
        const kind = o ? 'out-of-memory' : 'validation';
        this.failures[index] = { ...window, kind, message: error.message };
        if (!this.controller.signal.aborted) this.controller.abort(new DOMException(`A GPU ${kind} error while allocating the ${window.phase}`, 'AbortError'));
      }),
    );
  }
}
