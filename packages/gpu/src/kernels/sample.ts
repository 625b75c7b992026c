// Logits processing and sampling on the GPU (shaders/sampling/adjust.wgsl then sample.wgsl): only the
// chosen ids and logprobs are read back, logits stay on the GPU. One record of 16 words per sequence
// carries its parameters; packSamplingBatch builds those records plus the shared history, bias and mask
// buffers from plain SamplingParams objects. The CPU twin is reference/sampling.ts.
// Order: penalties (repetition, presence, frequency) → logit bias → mask → (T = 0: argmax) → ÷ T → top-k →
// top-p → min-p → softmax → the first token whose cumulative probability exceeds u (descending order when
// truncating, token-id order for pure temperature). Logprobs: log-softmax after the mask, before ÷ T.

import adjustSrc from '../../../../shaders/sampling/adjust.wgsl?raw';
import sampleSrc from '../../../../shaders/sampling/sample.wgsl?raw';
import seqParamsSrc from '../../../../shaders/lib/sampling-params.wgsl?raw';
import reduceSrc from '../../../../shaders/lib/reduce.wgsl?raw';
import scanSrc from '../../../../shaders/lib/scan.wgsl?raw';
import { isSoftwareAdapter, type Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBindable, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { IntabGpuError, LimitError, ShapeError } from '../errors.ts';
import { biasEntries, checkSamplingParams, DEFAULT_KMAX, NO_TOKEN, type SampleResult, type SamplingParams } from '../sampling-params.ts';

export { MAX_HISTORY, NO_TOKEN, type SampleResult, type SamplingParams } from '../sampling-params.ts';

/** Bytes of one per-sequence record (struct SeqParams in the WGSL). */
export const SEQ_PARAMS_BYTES = 64;
const NONE = 0xffffffff;

// ---- packing ----

/** Where one sequence's slices live in the shared buffers (offsets in entries; mask in words, or none). */
export interface SeqSlices {
  historyOffset: number;
  historyLength: number;
  /** In (id, bias) pairs. */
  biasOffset: number;
  biasLength: number;
  /** In u32 words; undefined = no mask. */
  maskOffset?: number;
}

/**
 * Writes one SeqParams record (64 bytes) at `byteOffset`. Field order matches the WGSL struct:
 * temperature, top_k, top_p, min_p, repetition, presence, frequency, u, history_offset, history_len,
 * bias_offset, bias_len, mask_offset (0xffffffff = none), n_logprobs, pad, pad.
 */
export function writeSeqParams(view: DataView, byteOffset: number, p: SamplingParams, slices: SeqSlices): void {
  const words: [number, 'f' | 'u'][] = [
    [p.temperature, 'f'],
    [p.topK ?? 0, 'u'],
    [p.topP ?? 1, 'f'],
    [p.minP ?? 0, 'f'],
    [p.repetitionPenalty ?? 1, 'f'],
    [p.presencePenalty ?? 0, 'f'],
    [p.frequencyPenalty ?? 0, 'f'],
    [p.u, 'f'],
    [slices.historyOffset, 'u'],
    [slices.historyLength, 'u'],
    [slices.biasOffset, 'u'],
    [slices.biasLength, 'u'],
    [slices.maskOffset ?? NONE, 'u'],
    [p.topLogprobs ?? 0, 'u'],
    [0, 'u'],
    [0, 'u'],
  ];
  words.forEach(([v, kind], i) => {
    if (kind === 'f') view.setFloat32(byteOffset + 4 * i, v, true);
    else view.setUint32(byteOffset + 4 * i, v >>> 0, true);
  });
}

/** Everything the sampler reads for one batch, ready to upload (each array at least 16 bytes). */
export interface PackedSampling {
  batch: number;
  /** (B) records of SEQ_PARAMS_BYTES. */
  params: Uint8Array;
  /** (*) u32 token ids, every sequence's history back to back. */
  history: Uint32Array;
  /** (*, 2) u32: (token id, f32 bias bits) pairs. */
  bias: Uint32Array;
  /** (*) u32 allowed-token bitmasks of ceil(V/32) words; sequences passing the same Uint32Array share one. */
  mask: Uint32Array;
  /** Whether any sequence's logits change before the pick (a mask, a bias, or a history with penalties). */
  adjust: boolean;
  /** Whether any sequence needs the candidate selection (top-k/top-p/min-p truncation, or top logprobs). */
  candidates: boolean;
}

/**
 * Packs per-sequence sampling parameters into the sampler's input buffers (validating each field).
 *
 * @example
 * const packed = packSamplingBatch(vocab, [{ temperature: 0.7, topP: 0.9, u: rng(), history: last64 }]);
 * const params = upload(gpu, packed.params); // likewise history, bias, mask
 */
export function packSamplingBatch(
  vocab: number,
  seqs: readonly SamplingParams[],
  options: { maxTopLogprobs?: number } = {},
): PackedSampling {
  requireDim('packSamplingBatch', 'seqs.length', seqs.length);
  const maxTop = options.maxTopLogprobs ?? 20;
  const params = new Uint8Array(seqs.length * SEQ_PARAMS_BYTES);
  const view = new DataView(params.buffer);
  const history: number[] = [];
  const bias: number[] = [];
  const masks: Uint32Array[] = [];
  const maskAt = new Map<Uint32Array, number>();
  const f32 = new DataView(new ArrayBuffer(4));
  let adjust = false;
  let candidates = false;
  seqs.forEach((p, b) => {
    checkSamplingParams(p, b, vocab, maxTop);
    const h = Array.from(p.history ?? []);
    const entries = biasEntries(p.logitBias);
    let maskOffset: number | undefined;
    if (p.allowed) {
      maskOffset = maskAt.get(p.allowed);
      if (maskOffset === undefined) {
        maskOffset = masks.reduce((n, m) => n + m.length, 0);
        maskAt.set(p.allowed, maskOffset);
        masks.push(p.allowed);
      }
    }
    writeSeqParams(view, b * SEQ_PARAMS_BYTES, p, {
      historyOffset: history.length,
      historyLength: h.length,
      biasOffset: bias.length / 2,
      biasLength: entries.length,
      maskOffset,
    });
    history.push(...h);
    const penalizes = (p.repetitionPenalty ?? 1) !== 1 || (p.presencePenalty ?? 0) !== 0 || (p.frequencyPenalty ?? 0) !== 0;
    if (p.allowed || entries.length > 0 || (h.length > 0 && penalizes)) adjust = true;
    const truncates = p.temperature > 0 && (((p.topK ?? 0) > 0 && p.topK! < vocab) || (p.topP ?? 1) < 1 || (p.minP ?? 0) > 0);
    if (truncates || (p.topLogprobs ?? 0) > 0) candidates = true;
    for (const [id, v] of entries) {
      f32.setFloat32(0, v, true);
      bias.push(id, f32.getUint32(0, true));
    }
  });
  const padded = (n: number) => Math.max(4, n);
  const mask = new Uint32Array(padded(masks.reduce((n, m) => n + m.length, 0)));
  let at = 0;
  for (const m of masks) {
    mask.set(m, at);
    at += m.length;
  }
  const hist = new Uint32Array(padded(history.length));
  hist.set(history);
  const bs = new Uint32Array(padded(bias.length));
  bs.set(bias);
  return { batch: seqs.length, params, history: hist, bias: bs, mask, adjust, candidates };
}

/**
 * Reads the sampler's output words: per sequence the id, its logprob, then topLogprobs[b] (id, logprob) pairs.
 *
 * @example
 * const results = unpackSamples(await readU32(gpu, out), sampler.outStride, seqs.map((s) => s.topLogprobs ?? 0));
 */
export function unpackSamples(words: Uint32Array, outStride: number, topLogprobs: readonly number[]): SampleResult[] {
  const f = new Float32Array(words.buffer, words.byteOffset, words.length);
  return topLogprobs.map((n, b) => {
    const o = b * outStride;
    return {
      id: words[o],
      logprob: f[o + 1],
      top: Array.from({ length: n }, (_, k) => ({ id: words[o + 2 + 2 * k], logprob: f[o + 3 + 2 * k] })),
    };
  });
}

// ---- sampler ----

export interface SamplerOptions {
  /** V: vocabulary size (< 2^24). */
  vocab: number;
  /** Largest B one encode will see; sizes the (B, V) f32 scratch of processed logits. */
  maxBatch: number;
  /** NMAX: top logprobs one sequence may ask for (default 20); the output stride is 2 + 2·NMAX words. */
  maxTopLogprobs?: number;
  /** KMAX: candidates kept for top-k/top-p/min-p (default 1024, a power of two ≥ maxTopLogprobs). */
  candidates?: number;
  /** Invocations per workgroup: 32, 64, 128 or 256 (default 256; 64 on software adapters). */
  workgroupSize?: number;
  label?: string;
}

export interface SampleArgs {
  /** (B, V) f32 logits; left untouched. */
  logits: BufferRef;
  /** (B) SeqParams records (SEQ_PARAMS_BYTES each), e.g. PackedSampling.params. */
  params: BufferRef;
  /** (*) u32 token ids; required when any record has a history. */
  history?: BufferRef;
  /** (*, 2) u32 (id, f32 bias bits); required when any record has a bias. */
  bias?: BufferRef;
  /** (*) u32 allowed-token bitmasks; required when any record has a mask. */
  mask?: BufferRef;
  /** (B, outStride) u32: id, logprob (f32 bits), then n (id, logprob) pairs. */
  out: BufferRef;
  /** B sequences in this step (≤ maxBatch). */
  batch: number;
  /**
   * false when no sequence's logits change before the pick (PackedSampling.adjust): the pick reads the logits
   * directly and the adjust pass is skipped (default true).
   */
  adjust?: boolean;
  /**
   * false when no sequence truncates or asks for top logprobs (PackedSampling.candidates): the pick runs a build
   * of the kernel without the candidate arrays (KMAX = 1), whose 12 KiB of workgroup memory every workgroup would
   * otherwise zero first (on SwiftShader a greedy pick went from ~0.8 to ~0.4 ms). A sequence that does need them
   * gets NO_TOKEN from that build, never a wrong token (default true).
   */
  candidates?: boolean;
}

export interface Sampler {
  readonly vocab: number;
  readonly maxBatch: number;
  readonly maxTopLogprobs: number;
  readonly candidates: number;
  /** u32 words per sequence in `out`: 2 + 2·maxTopLogprobs. */
  readonly outStride: number;
  encode(pass: GPUComputePassEncoder, args: SampleArgs): void;
  /** Frees the scratch. Idempotent. */
  destroy(): void;
}

/**
 * Creates a sampler: two dispatches per encode (adjust: penalties, bias, mask → scratch; sample: logsumexp,
 * top-M radix select, bitonic sort, pick). Owns a (maxBatch, V) f32 scratch.
 *
 * @example
 * const sampler = createSampler(gpu, { vocab: 151936, maxBatch: 8 });
 * const packed = packSamplingBatch(sampler.vocab, seqs);
 * sampler.encode(pass, { logits, params, history, bias, mask, out, batch: seqs.length });
 */
export function createSampler(gpu: Gpu, options: SamplerOptions): Sampler {
  const name = 'createSampler';
  const { vocab, maxBatch } = options;
  const label = options.label ?? 'sampler';
  requireDim(name, 'vocab', vocab);
  if (vocab >= 2 ** 24) throw new ShapeError(name, 'vocab', 'below 2^24 (ids are 24-bit in the radix select)', String(vocab));
  requireDim(name, 'maxBatch', maxBatch);
  const nmax = options.maxTopLogprobs ?? 20;
  if (!Number.isInteger(nmax) || nmax < 0) throw new ShapeError(name, 'maxTopLogprobs', 'an integer ≥ 0', String(nmax));
  const kmax = options.candidates ?? DEFAULT_KMAX;
  const pow2 = (x: number) => Number.isInteger(x) && x > 0 && (x & (x - 1)) === 0;
  if (!pow2(kmax) || kmax < nmax) {
    throw new ShapeError(name, 'candidates', `a power of two ≥ maxTopLogprobs (${nmax})`, String(kmax));
  }
  // Software adapters pay for every barrier per group of SIMD lanes: 64 invocations measured 6x faster than 256 on
  // SwiftShader (stories260K greedy decode: the pick went from 3.6 to 0.6 ms, a whole step from 7.8 to ~4 ms).
  const wg = options.workgroupSize ?? (isSoftwareAdapter(gpu.adapterInfo) ? 64 : 256);
  if (!pow2(wg) || wg < 32 || wg > 256 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw new ShapeError(name, 'workgroupSize', 'a power of two in 32..256 within the device limit', String(wg));
  }
  // cand_z, cand_id, cand_c + histogram + reduction array (lib/reduce.wgsl) + small state (see sample.wgsl).
  const wgBytes = 12 * kmax + 4 * 256 + 4 * wg + 96;
  if (wgBytes > gpu.limits.maxComputeWorkgroupStorageSize) {
    throw new LimitError(`${label} (candidates ${kmax})`, 'maxComputeWorkgroupStorageSize', wgBytes,
      gpu.limits.maxComputeWorkgroupStorageSize, 'pass a smaller `candidates` (1024 fits in 16 KiB).');
  }
  const scratchBytes = maxBatch * vocab * 4;
  requireBindable(gpu, `${label}.z (maxBatch × V f32)`, scratchBytes);

  const constants = { WG_SIZE: wg };
  const adjust = gpu.pipelines.get({
    name: 'sample-adjust',
    variant: 'f32',
    code: `${adjustSrc}\n${seqParamsSrc}`,
    bindings: withParams('read', 'read', 'read', 'read', 'read', 'storage'),
    constants,
  });
  // The lean build has one candidate slot and refuses what needs more (LEAN); a sampler of one candidate is its own.
  const samplePipeline = (lean: boolean) =>
    gpu.pipelines.get({
      name: 'sample',
      variant: 'f32',
      code: `${sampleSrc}\n${seqParamsSrc}\n${reduceSrc}\n${scanSrc}`,
      bindings: withParams('read', 'read', 'storage'),
      constants: { ...constants, KMAX: lean ? 1 : kmax, NMAX: nmax, LEAN: lean ? 1 : 0 },
    });
  const sampleFull = samplePipeline(false);
  const sampleLean = kmax === 1 ? sampleFull : samplePipeline(true);
  let z: GPUBuffer | undefined = gpu.device.createBuffer({ label: `${label}.z`, size: scratchBytes, usage: GPUBufferUsage.STORAGE });
  const outStride = 2 + 2 * nmax;

  return {
    vocab,
    maxBatch,
    maxTopLogprobs: nmax,
    candidates: kmax,
    outStride,
    encode(pass, a) {
      const k = 'sample';
      if (!z) throw new IntabGpuError(`${label} was destroyed: create a new sampler with createSampler().`);
      requireDim(k, 'batch', a.batch);
      if (a.batch > maxBatch) throw new ShapeError(k, 'batch', `at most maxBatch = ${maxBatch} (create the sampler with a larger maxBatch)`, String(a.batch));
      requireBytes(k, 'logits', a.logits, a.batch * vocab * 4);
      requireBytes(k, 'params', a.params, a.batch * SEQ_PARAMS_BYTES);
      requireBytes(k, 'out', a.out, a.batch * outStride * 4);
      const params = new Params(4).u32(a.batch).u32(vocab).u32(0).u32(0);
      const grid = grid2d(gpu, a.batch);
      const dummy = unusedBinding(gpu);
      const sample = a.candidates === false ? sampleLean : sampleFull;
      if (a.adjust === false) {
        dispatch(gpu, pass, sample, `${label}.sample`, params, [a.params, a.logits, a.out], grid);
        return;
      }
      dispatch(gpu, pass, adjust, `${label}.adjust`, params, [a.params, a.logits, a.history ?? dummy, a.bias ?? dummy, a.mask ?? dummy, z], grid);
      dispatch(gpu, pass, sample, `${label}.sample`, params, [a.params, z, a.out], grid);
    },
    destroy() {
      z?.destroy();
      z = undefined;
    },
  };
}
