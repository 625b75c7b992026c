// The StepRunner over onnxruntime-web: the engine (scheduling, sampling policy, stops, logprobs, grammar masks,
// speculative verify steps, the prefix cache) runs unchanged on an ONNX graph in the onnx-community layout
// (graph-layout.ts), on the wasm or the WebGPU execution provider. Each sequence's K/V lives in the ORT tensors the graph
// returned (present.* fed back as past_key_values.*): in GPU buffers on the WebGPU EP, in JS memory on wasm. Rewind trims
// them, fork shares them (ORT never writes its inputs), and decode steps of several sequences run as one left-padded call.
// A PagePool does the accounting in pages, as on the WebGPU Runner, so the scheduler admits sequences by the same rules.
// Pages are not where K/V live here, so sharing them (the prefix cache) works through what the pool is told: a page the
// cache retains is kept with its K/V as they are then (a copy of its positions on wasm; on the GPU, the tensors that
// hold them), and a sequence that adopts cached pages starts from those K/V put together. Given the weights' hash, the
// kept pages are also read and written as bytes (pageIO), so a saved prefix cache is restored at the next load.

import type { InferenceSession, Tensor } from 'onnxruntime-web';
import { f16ToF32 } from '@intab/gpu';
import { PagePool, checkStep, type KvKey, type PageIO, type RunnerCapabilities, type StepEntry, type StepOptions, type StepResult, type StepRunner } from '@intab/model';
import { sampleEntry } from './sample-entry.ts';
import { OnnxRunError, OnnxUnsupportedError } from './errors.ts';
import type { GraphLayout } from './graph-layout.ts';
import type { OnnxSession, Ort } from './session.ts';

export interface OnnxRunnerOptions {
  /** Bytes of K/V all sequences may hold together [64 MiB]: sets the pool's pages. */
  kvBudgetBytes?: number;
  /** Most sequences in one step [16]. */
  maxBatch?: number;
  /** Most tokens in one step, of all its entries [512]. */
  maxTokensPerStep?: number;
  /** Tokens per accounting page [16]. */
  pageSize?: number;
  /**
   * Decode steps of several sequences run as one batched call (left-padded K/V) or one call each ['batched']. Measured
   * on ORT wasm in Chromium, aggregate tok/s at 4 sequences: a SmolLM2-135M-shaped model 47.5 batched vs 43.7 one call
   * each; stories260K (so small that copying the padded K/V costs more than a call) 2,812 vs 3,490.
   */
  batching?: 'per-sequence' | 'batched';
  /**
   * Where the session leaves the present.* outputs: 'gpu-buffer' (the WebGPU EP: K/V never leave the GPU between steps;
   * steps then run one call per sequence, as padding a batch would read them back) or 'cpu' ['cpu'].
   */
  kvLocation?: 'cpu' | 'gpu-buffer';
  /**
   * A hash of the weights (as the loader read them): with it, and f32 K/V, the runner has a pageIO, so a prefix cache
   * can be saved and restored. Its key says 'onnx' as the layout: a file saved by intab's WebGPU kernels is not read here.
   */
  weightsHash?: string;
}

/** What the runner needs of the model: the StepRunner's config. */
export interface OnnxModelConfig {
  vocab: number;
  maxContext: number;
  eosIds: number[];
  bosId: number | null;
  layers: number;
}

/** One sequence's K/V: per layer, [1, Hkv, S, D] tensors (S = the sequence's cached tokens once trimmed). */
interface SeqKv {
  keys: Tensor[];
  values: Tensor[];
  /** Set on a sequence that adopted cached pages and has not run since: its K/V are these pages', put together by trimmed(). */
  adopted?: PageKv[];
}

/** The K/V of a page the prefix cache holds: per layer, positions `at`.. of [1, Hkv, S, D] tensors. */
interface PageKv {
  keys: Tensor[];
  values: Tensor[];
  at: number;
}

/** The pool of an OnnxRunner: it tells the runner when a page gains the holder's reference and when the holder lets one go. */
class SharingPool extends PagePool {
  constructor(
    pages: number,
    pageSize: number,
    private readonly onRetain: (page: number) => void,
    private readonly onRelease: (page: number) => void,
  ) {
    super(pages, pageSize);
  }

  override retain(page: number): void {
    super.retain(page);
    this.onRetain(page);
  }

  override release(page: number): void {
    super.release(page);
    this.onRelease(page);
  }
}

/**
 * The ONNX StepRunner.
 * @example
 * const onnx = await createSession(modelBytes, { backend: 'onnx-wasm' });
 * const runner = new OnnxRunner(onnx, graphLayout(onnx.session, config, 'model.onnx'), config);
 * runner.alloc(0);
 * const [{ id }] = await runner.step([{ seq: 0, tokens: [1, 403, 261] }]);
 */
export class OnnxRunner implements StepRunner {
  readonly kv: PagePool;
  readonly maxBatch: number;
  readonly maxRows: number;
  readonly maxTokens: number;
  readonly capabilities: RunnerCapabilities = { sharedPages: true, earlyExit: false };
  private readonly seqs = new Map<number, SeqKv>();
  /** K/V of the pages the prefix cache retained, by page (dropped once the page is free). */
  private readonly kept = new Map<number, PageKv>();
  private readonly batching: 'per-sequence' | 'batched';
  /** Saving and restoring the prefix cache's pages, when the loader gave a weights hash and K/V are f32. */
  readonly pageIO?: PageIO;
  /** Where present.* stay between steps (OnnxRunnerOptions.kvLocation). */
  readonly kvLocation: 'cpu' | 'gpu-buffer';
  private destroyed = false;
  private readonly ort: Ort;
  private readonly session: InferenceSession;

  constructor(
    { ort, session }: OnnxSession,
    readonly layout: GraphLayout,
    readonly config: OnnxModelConfig,
    options: OnnxRunnerOptions = {},
  ) {
    this.ort = ort;
    this.session = session;
    this.maxBatch = options.maxBatch ?? 16;
    this.maxTokens = options.maxTokensPerStep ?? 512;
    this.maxRows = 4 * this.maxBatch;
    this.kvLocation = options.kvLocation ?? 'cpu';
    this.batching = this.kvLocation === 'gpu-buffer' ? 'per-sequence' : (options.batching ?? 'batched');
    const pageSize = options.pageSize ?? 16;
    const pageBytes = 2 * layout.layers * layout.kvHeads * layout.headDim * layout.kvBytes * pageSize;
    const pages = Math.floor((options.kvBudgetBytes ?? 64 << 20) / pageBytes);
    if (pages < 1) throw new OnnxUnsupportedError('kvBudgetBytes', `${options.kvBudgetBytes} bytes hold no page of ${pageBytes} bytes: give at least one page's worth.`);
    this.kv = new SharingPool(pages, pageSize, (page) => this.keep(page), (page) => this.forgetFree([page]));
    if (options.weightsHash && layout.kvType === 'float32') {
      const key: KvKey = { weights: options.weightsHash, quantize: null, kvDtype: 'f32', pageSize, arch: { ...config, kvLayout: 'onnx' } };
      this.pageIO = {
        pageBytes,
        key: async () => key,
        read: (pages) => this.readPages(pages),
        write: async (pages, bytes) => this.writePages(pages, bytes),
      };
    }
  }

  alloc(seq: number): void {
    this.kv.alloc(seq);
    this.seqs.set(seq, this.emptyKv());
  }

  /** Pages whose K/V the runner keeps for the prefix cache, ascending (at rest: exactly the pages the cache holds). */
  get keptPages(): number[] {
    return [...this.kept.keys()].sort((a, b) => a - b);
  }

  /** A new sequence over pages the prefix cache retained: their kept K/V, put together before its first step. */
  adopt(seq: number, pages: readonly number[], length: number): void {
    const adopted = pages.map((p) => {
      const kv = this.kept.get(p);
      if (!kv) throw new OnnxUnsupportedError('adopt', `page ${p} was never retained, so this runner kept no K/V for it: adopt only pages a prefix cache holds.`);
      return kv;
    });
    this.kv.adopt(seq, pages, length);
    this.seqs.set(seq, { keys: [], values: [], adopted });
  }

  free(seq: number): void {
    const pages = this.kv.has(seq) ? [...this.kv.pagesOf(seq)] : [];
    this.kv.free(seq);
    this.replace(seq, undefined);
    this.forgetFree(pages);
  }

  rewind(seq: number, n: number): void {
    const pages = [...this.kv.pagesOf(seq)];
    this.kv.rewind(seq, n);
    this.kv.takeCopies();
    this.forgetFree(pages.slice(this.kv.pagesOf(seq).length));
  }

  fork(src: number, dst: number): void {
    const kv = this.seqs.get(src)!;
    this.kv.fork(src, dst);
    // ORT never writes its inputs: both sequences read the same tensors until their next step replaces them.
    this.seqs.set(dst, { keys: [...kv.keys], values: [...kv.values], ...(kv.adopted ? { adopted: [...kv.adopted] } : {}) });
  }

  async step(entries: readonly StepEntry[], options: StepOptions = {}): Promise<StepResult[]> {
    if (this.destroyed) throw new OnnxUnsupportedError('step', 'this OnnxRunner was destroyed: load the model again.');
    if (entries.length === 0) return [];
    checkStep(this.kv, entries, this.config.vocab, this.maxBatch, this.maxRows, this.maxTokens);
    if (options.layers !== undefined && options.layers !== this.config.layers) {
      throw new OnnxUnsupportedError('layers', `an ONNX graph runs all ${this.config.layers} layers (capabilities.earlyExit is false): use ngram or draft-model speculation instead of self-speculation.`);
    }
    // Decode steps of several sequences may run as one call (left-padded), when the graph takes an attention mask.
    const batched = this.batching === 'batched' && entries.length > 1 && this.layout.attentionMask !== undefined && entries.every((e) => e.tokens.length === 1 && !e.verify);
    const logits = batched ? await this.runBatched(entries) : [];
    const results: StepResult[] = [];
    for (const [b, e] of entries.entries()) results.push(sampleEntry(e, batched ? logits[b] : await this.run(e), this.config.vocab, options.logits === true));
    return results;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.kept.clear();
    for (const seq of [...this.seqs.keys()]) this.replace(seq, undefined);
    void this.session.release().catch(() => undefined);
  }

  // ---- one sequence ----

  /** Runs one entry's tokens; returns the logits of its rows ((rows, V) f32: the last token, or every token of a verify entry). */
  private async run(e: StepEntry): Promise<Float32Array> {
    const L = this.layout;
    const kv = await this.trimmed(e.seq);
    const past = this.kv.length(e.seq);
    const T = e.tokens.length;
    this.kv.grow(e.seq, T);
    this.kv.takeCopies();
    const feeds: Record<string, Tensor> = {
      [L.inputIds]: new this.ort.Tensor('int64', BigInt64Array.from(e.tokens, BigInt), [1, T]),
    };
    if (L.attentionMask) feeds[L.attentionMask] = new this.ort.Tensor('int64', new BigInt64Array(past + T).fill(1n), [1, past + T]);
    if (L.positionIds) feeds[L.positionIds] = new this.ort.Tensor('int64', BigInt64Array.from({ length: T }, (_, i) => BigInt(past + i)), [1, T]);
    const rows = e.verify ? T : 1;
    if (L.logitsToKeep) feeds[L.logitsToKeep] = new this.ort.Tensor('int64', BigInt64Array.of(BigInt(rows)), []);
    for (let l = 0; l < L.layers; l++) {
      feeds[L.pastKeys[l]] = kv.keys[l];
      feeds[L.pastValues[l]] = kv.values[l];
    }
    let out: InferenceSession.ReturnType;
    try {
      out = await this.session.run(feeds);
    } catch (err) {
      this.kv.rewind(e.seq, T);
      throw new OnnxRunError(`sequence ${e.seq}, ${T} tokens after ${past}`, err);
    }
    this.replace(e.seq, { keys: L.presentKeys.map((n) => out[n]), values: L.presentValues.map((n) => out[n]) });
    return lastRows(out[L.logits], rows, this.config.vocab);
  }

  /**
   * One token of each of B sequences in one call: the K/V of each, left-padded to the longest (the padding masked out
   * by attention_mask, positions given by position_ids), and each sequence's present cut back out of the batch's.
   */
  private async runBatched(entries: readonly StepEntry[]): Promise<Float32Array[]> {
    const L = this.layout;
    const B = entries.length;
    const kvs = await Promise.all(entries.map((e) => this.trimmed(e.seq)));
    const pasts = entries.map((e) => this.kv.length(e.seq));
    const P = Math.max(...pasts);
    for (const e of entries) this.kv.grow(e.seq, 1);
    this.kv.takeCopies();
    const mask = new BigInt64Array(B * (P + 1));
    entries.forEach((_, b) => mask.fill(1n, b * (P + 1) + P - pasts[b], (b + 1) * (P + 1)));
    const feeds: Record<string, Tensor> = {
      [L.inputIds]: new this.ort.Tensor('int64', BigInt64Array.from(entries, (e) => BigInt(e.tokens[0])), [B, 1]),
      [L.attentionMask!]: new this.ort.Tensor('int64', mask, [B, P + 1]),
    };
    if (L.positionIds) feeds[L.positionIds] = new this.ort.Tensor('int64', BigInt64Array.from(pasts, BigInt), [B, 1]);
    if (L.logitsToKeep) feeds[L.logitsToKeep] = new this.ort.Tensor('int64', BigInt64Array.of(1n), []);
    for (let l = 0; l < L.layers; l++) {
      feeds[L.pastKeys[l]] = padLeft(this.ort, kvs.map((kv) => kv.keys[l]), P);
      feeds[L.pastValues[l]] = padLeft(this.ort, kvs.map((kv) => kv.values[l]), P);
    }
    let out: InferenceSession.ReturnType;
    try {
      out = await this.session.run(feeds);
    } catch (err) {
      for (const e of entries) this.kv.rewind(e.seq, 1);
      throw new OnnxRunError(`${B} sequences, one token each, after up to ${P}`, err);
    }
    entries.forEach((e, b) => {
      const take = (n: string) => unbatch(this.ort, out[n], b, P + 1 - (pasts[b] + 1));
      this.replace(e.seq, { keys: L.presentKeys.map(take), values: L.presentValues.map(take) });
    });
    const V = this.config.vocab;
    const all = lastRows(out[L.logits], B, V);
    return entries.map((_, b) => all.subarray(b * V, (b + 1) * V));
  }

  // ---- pages the prefix cache holds ----

  /**
   * Keeps the K/V of a page that just gained the holder's reference, from the live sequence holding most of its
   * positions: a copy of those positions when the tensors are in JS memory, else the tensors themselves. A page the
   * cache holds is never written again (a sequence appending into it copies it first), so what is kept stays right.
   */
  private keep(page: number): void {
    const P = this.kv.pageSize;
    let best: { kv: SeqKv; index: number; filled: number } | undefined;
    for (const [seq, kv] of this.seqs) {
      if (kv.adopted || !this.kv.has(seq)) continue;
      const index = this.kv.pagesOf(seq).indexOf(page);
      if (index < 0) continue;
      const filled = Math.min(P, this.kv.length(seq) - index * P, kv.keys[0]?.dims[2] ?? 0);
      if (!best || filled > best.filled) best = { kv, index, filled };
    }
    // Not in a live sequence that ran (an adopted page, retained again): what was kept for it stays.
    if (!best) return;
    const { kv, index, filled } = best;
    const at = index * P;
    if (kv.keys[0]?.location === 'gpu-buffer') {
      this.kept.set(page, { keys: [...kv.keys], values: [...kv.values], at });
      return;
    }
    const cut = (t: Tensor) => slicePositions(this.ort, t, at, filled);
    this.kept.set(page, { keys: kv.keys.map(cut), values: kv.values.map(cut), at: 0 });
  }

  /**
   * The kept K/V of `pages` (PageIO.read): per page, per layer, its K block then its V block, each (Hkv, PAGE, D) f32,
   * the positions a page does not hold as zeros.
   */
  private async readPages(pages: readonly number[]): Promise<Uint8Array> {
    const P = this.kv.pageSize;
    const { layers, kvHeads: H, headDim: D } = this.layout;
    const block = H * P * D;
    const out = new Float32Array(pages.length * layers * 2 * block);
    const data = dataOf();
    for (const [i, page] of pages.entries()) {
      const kv = this.kept.get(page);
      if (!kv) throw new OnnxUnsupportedError('pageIO.read', `page ${page} holds no kept K/V: read only pages the prefix cache holds.`);
      for (let l = 0; l < layers; l++) {
        for (const [j, t] of [kv.keys[l], kv.values[l]].entries()) {
          const S = t.dims[2];
          const n = Math.min(P, S - kv.at);
          const src = (await data(t)) as Float32Array;
          const base = ((i * layers + l) * 2 + j) * block;
          for (let h = 0; h < H; h++) out.set(src.subarray((h * S + kv.at) * D, (h * S + kv.at + n) * D), base + h * P * D);
        }
      }
    }
    return new Uint8Array(out.buffer);
  }

  /** Keeps `bytes` (as readPages gives them) as the K/V of `pages`, pages the holder acquired (PageIO.write). */
  private writePages(pages: readonly number[], bytes: Uint8Array): void {
    const P = this.kv.pageSize;
    const { layers, kvHeads: H, headDim: D } = this.layout;
    const block = H * P * D;
    if (bytes.byteLength !== pages.length * layers * 2 * block * 4) {
      throw new OnnxUnsupportedError('pageIO.write', `${bytes.byteLength} bytes for ${pages.length} pages of ${layers * 2 * block * 4}: give pages.length · pageBytes.`);
    }
    const all = new Float32Array(bytes.slice().buffer);
    for (const [i, page] of pages.entries()) {
      const tensor = (l: number, j: number) => new this.ort.Tensor('float32', all.slice(((i * layers + l) * 2 + j) * block, ((i * layers + l) * 2 + j + 1) * block), [1, H, P, D]);
      this.kept.set(page, { keys: Array.from({ length: layers }, (_, l) => tensor(l, 0)), values: Array.from({ length: layers }, (_, l) => tensor(l, 1)), at: 0 });
    }
  }

  /** Forgets what was kept for those of `pages` that are now free (the cache let them go, and no sequence maps them). */
  private forgetFree(pages: readonly number[]): void {
    const dropped: Tensor[] = [];
    for (const page of pages) {
      const kv = this.kept.get(page);
      if (!kv || this.kv.refCount(page) > 0) continue;
      this.kept.delete(page);
      dropped.push(...kv.keys, ...kv.values);
    }
    if (dropped.length) this.disposeUnheld(dropped);
  }

  /** An adopted sequence's K/V: its pages' kept positions, in order, as [1, Hkv, length, D] tensors in JS memory. */
  private async assemble(pages: readonly PageKv[], length: number): Promise<SeqKv> {
    const P = this.kv.pageSize;
    const L = this.layout;
    const data = dataOf();
    const join = async (of: (kv: PageKv) => Tensor): Promise<Tensor> => {
      const Arr = L.kvType === 'float16' ? Uint16Array : Float32Array;
      const [H, D] = [L.kvHeads, L.headDim];
      const out = new Arr(H * length * D);
      for (const [i, kv] of pages.entries()) {
        const n = Math.min(P, length - i * P);
        if (n <= 0) break;
        const t = of(kv);
        const S = t.dims[2];
        const src = await data(t);
        for (let h = 0; h < H; h++) out.set(src.subarray((h * S + kv.at) * D, (h * S + kv.at + n) * D), (h * length + i * P) * D);
      }
      return new this.ort.Tensor(L.kvType, out, [1, H, length, D]);
    };
    const layers = Array.from({ length: L.layers }, (_, l) => l);
    return {
      keys: await Promise.all(layers.map((l) => join((kv) => kv.keys[l]))),
      values: await Promise.all(layers.map((l) => join((kv) => kv.values[l]))),
    };
  }

  /** The sequence's K/V cut to its cached length (a rewind drops the tail lazily, here; K/V on the GPU are read back first). */
  private async trimmed(seq: number): Promise<SeqKv> {
    const length = this.kv.length(seq);
    const pending = this.seqs.get(seq)!;
    if (pending.adopted) this.replace(seq, length === 0 ? this.emptyKv() : await this.assemble(pending.adopted, length));
    const kv = this.seqs.get(seq)!;
    if (kv.keys.length === 0 || kv.keys[0].dims[2] === length) return kv;
    const cut = async (t: Tensor) => slicePositions(this.ort, t.location === 'gpu-buffer' ? new this.ort.Tensor(t.type as 'float32', (await t.getData()) as Float32Array, t.dims) : t, 0, length);
    const out = { keys: await Promise.all(kv.keys.map(cut)), values: await Promise.all(kv.values.map(cut)) };
    this.replace(seq, out);
    return out;
  }

  /** Sets (or with undefined drops) a sequence's K/V, freeing the GPU buffers nothing else (a fork, a kept page) holds. */
  private replace(seq: number, next: SeqKv | undefined): void {
    const old = this.seqs.get(seq);
    if (next) this.seqs.set(seq, next);
    else this.seqs.delete(seq);
    if (old) this.disposeUnheld([...old.keys, ...old.values]);
  }

  /** Disposes those of `candidates` that are GPU tensors no sequence and no kept page holds. */
  private disposeUnheld(candidates: Tensor[]): void {
    if (!candidates.some((t) => t.location === 'gpu-buffer')) return;
    const held = new Set<Tensor>();
    const hold = (kv: { keys: Tensor[]; values: Tensor[] }) => [...kv.keys, ...kv.values].forEach((t) => held.add(t));
    for (const kv of this.seqs.values()) {
      hold(kv);
      kv.adopted?.forEach(hold);
    }
    this.kept.forEach(hold);
    for (const t of candidates) if (t.location === 'gpu-buffer' && !held.has(t)) t.dispose();
  }

  private emptyKv(): SeqKv {
    const L = this.layout;
    const empty = () => new this.ort.Tensor(L.kvType, L.kvType === 'float16' ? new Uint16Array(0) : new Float32Array(0), [1, L.kvHeads, 0, L.headDim]);
    return { keys: Array.from({ length: L.layers }, empty), values: Array.from({ length: L.layers }, empty) };
  }
}

/**
 * A reader of tensors' values that reads each GPU tensor back once (kept pages on the WebGPU EP share their
 * sequence's tensors: one readback for all of them).
 */
function dataOf(): (t: Tensor) => Promise<Float32Array | Uint16Array> {
  const read = new Map<Tensor, Promise<Float32Array | Uint16Array>>();
  return (t) => {
    if (t.location !== 'gpu-buffer') return Promise.resolve(t.data as Float32Array | Uint16Array);
    let p = read.get(t);
    if (!p) read.set(t, (p = t.getData() as Promise<Float32Array | Uint16Array>));
    return p;
  };
}

/** Positions from..from+n of a [B, Hkv, S, D] tensor in JS memory (a copy). */
function slicePositions(ort: Ort, t: Tensor, from: number, n: number): Tensor {
  const [b, h, s, d] = t.dims;
  const src = t.data as Float32Array | Uint16Array;
  const out = new (src.constructor as Float32ArrayConstructor | Uint16ArrayConstructor)(b * h * n * d);
  for (let i = 0; i < b * h; i++) out.set(src.subarray((i * s + from) * d, (i * s + from + n) * d), i * n * d);
  return new ort.Tensor(t.type as 'float32' | 'float16', out, [b, h, n, d]);
}

/** [1, Hkv, S_b, D] tensors as one [B, Hkv, P, D], each sequence's positions at the end (zeros before them). */
function padLeft(ort: Ort, ts: Tensor[], P: number): Tensor {
  const [, h, , d] = ts[0].dims;
  const src0 = ts[0].data as Float32Array | Uint16Array;
  const out = new (src0.constructor as Float32ArrayConstructor | Uint16ArrayConstructor)(ts.length * h * P * d);
  ts.forEach((t, b) => {
    const s = t.dims[2];
    const src = t.data as Float32Array | Uint16Array;
    for (let i = 0; i < h; i++) out.set(src.subarray(i * s * d, (i + 1) * s * d), ((b * h + i) * P + (P - s)) * d);
  });
  return new ort.Tensor(ts[0].type as 'float32' | 'float16', out, [ts.length, h, P, d]);
}

/** Sequence b of a [B, Hkv, S, D] tensor without its first `skip` (padding) positions, as [1, Hkv, S - skip, D]. */
function unbatch(ort: Ort, t: Tensor, b: number, skip: number): Tensor {
  const [, h, s, d] = t.dims;
  const src = t.data as Float32Array | Uint16Array;
  const n = s - skip;
  const out = new (src.constructor as Float32ArrayConstructor | Uint16ArrayConstructor)(h * n * d);
  for (let i = 0; i < h; i++) out.set(src.subarray(((b * h + i) * s + skip) * d, ((b * h + i) * s + s) * d), i * n * d);
  return new ort.Tensor(t.type as 'float32' | 'float16', out, [1, h, n, d]);
}

/** The last `rows` rows of a [1, T, V] logits tensor, as f32. */
function lastRows(t: Tensor, rows: number, vocab: number): Float32Array {
  const data = t.data as Float32Array | Uint16Array;
  const all = data instanceof Float32Array ? data : Float32Array.from(data, f16ToF32);
  return all.subarray(all.length - rows * vocab);
}
