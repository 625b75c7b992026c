// The EncoderRunner over onnxruntime: embedding models (encoder-graph.ts's graphs) on ORT's wasm build in the browser
// and onnxruntime-node's CPU provider in Node, where WebGPU is missing. ORT takes rectangular batches (its packed
// attention kernels are CUDA-only), so a pass's sequences are sorted by length and cut into runs of neighbours, each
// right-padded to its longest: planRuns picks the cuts that minimise a cost model of padded work plus a fixed cost per
// run, within a memory bound per run. Pooling and normalisation happen in the graph; a run returns (B, C) vectors, put
// back in the caller's order (a reranker's graph: (B, outputs) logits, with each pair's token types as an input).
// Why: measured on all-MiniLM-L6 (f32, 6 layers), ms per pass (best of 2 rounds), onnxruntime-node 1.30 CPU 2 threads /
// 1 thread / onnxruntime-web 1.30 wasm in Node 1 thread:
//   the 20 embed-inputs texts (4..154 tokens, 806 in all): one padded run 141 / 241 / 1,111; sorted, cut by planRuns
//     (9 runs) 97 / 143 / 648; one run per text 108 / 156 / 687;
//   32 texts of 24..36 tokens: one padded run 98 / 194 / 882; planRuns (4 runs) 92 / 155 / 763; one each 143 / 197 / 833;
//   64 texts of 8..256 tokens (log-uniform, 4,501 in all): 566 / 1,166 / 4,708; planRuns (19 runs) 448 / 775 / 3,596;
//     one each 533 / 854 / 3,846.
// RUN_COST = 16 tokens' worth per run was the fastest or within 3% of it on all nine (runtime, workload) pairs; 4 and 64
// were up to 10% slower than 16, 256 (few runs, much padding) 6-32% slower, one padded run 6-71%, one run each 6-56%.

import type { Tensor } from 'onnxruntime-web';
import { IntabModelError, classifierOutputs, encoderFacts, type EncodeOptions, type EncoderConfig, type EncoderFacts, type EncoderRunner } from '@intab/model';
import { ENCODER_GRAPH_IO, encoderGraphTakesTypes } from './encoder-graph.ts';
import { OnnxRunError } from './errors.ts';
import type { OnnxSession } from './session.ts';

export interface OnnxEncoderOptions {
  /** Most tokens of all sequences of one encode() call [max(2048, the model's context)]. */
  maxTokensPerPass?: number;
  /** Most sequences of one encode() call [64]. */
  maxSequencesPerPass?: number;
  /** Most padded tokens (rows × longest) in one ORT run [max(2048, the model's context)]: bounds a run's activations. */
  maxTokensPerRun?: number;
}

// ---- planning: which sequences share an ORT run ----

/** What planRuns weighs: a run of B rows padded to T tokens costs RUN_COST + B·T·(1 + T/attentionTokens) token-times. */
export interface RunCostModel {
  /** The fixed cost of one ORT run (graph walk, kernel launches, small-matrix inefficiency), in tokens' worth of work. */
  runCost: number;
  /** The sequence length at which attention costs as much per token as the projections (it grows with T). */
  attentionTokens: number;
  /** Most padded tokens (B·T) of one run. */
  maxTokensPerRun: number;
  /** Most attention scores (B·H·T²) of one run: the (B, H, T, T) scores a run may hold. */
  maxScoresPerRun: number;
  heads: number;
}

/**
 * The fixed cost of a run in tokens' worth of work. On all-MiniLM-L6 (f32), a run of 1 token costs what ~11 tokens
 * cost in a batch with onnxruntime-node on 1 thread, ~19 on 2 threads, ~4 on ORT wasm; ORT's matrix kernels are also
 * faster per row at larger M, which favours fewer runs. 16 was the best or within 3% of it on every workload measured
 * (see the header); larger models lower the true value (their per-token work grows faster than the graph's overhead),
 * where the cost of a wrong guess is small.
 */
export const RUN_COST = 16;
/** Most (B, H, T, T) attention scores of one run: 16 M floats (64 MiB). */
export const MAX_SCORES_PER_RUN = 2 ** 24;

/** The cost model of a config: attention per token (≈ 4·T·C multiply-adds) against the projections' (4C² + 2 or 3 CF). */
export function runCostModel(c: EncoderConfig, maxTokensPerRun: number): RunCostModel {
  const projections = 4 * c.hidden * c.hidden + (c.activation === 'swiglu' ? 3 : 2) * c.hidden * c.ffn;
  return { runCost: RUN_COST, attentionTokens: projections / (4 * c.hidden), maxTokensPerRun, maxScoresPerRun: MAX_SCORES_PER_RUN, heads: c.heads };
}

/**
 * Splits sequences (by their lengths) into ORT runs: sorted by length, then cut into contiguous groups by dynamic
 * programming over the cost model (optimal among groupings of sorted neighbours; O(n²) for n sequences). Each run's
 * indices are into `lengths`, longest last.
 * @example
 * planRuns([30, 31, 200, 29], runCostModel(config, 2048)); // [[3, 0, 1], [2]]
 */
export function planRuns(lengths: readonly number[], m: RunCostModel): number[][] {
  const n = lengths.length;
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const best = new Float64Array(n + 1).fill(Infinity); // best[j]: cost of the first j sorted sequences
  const cut = new Int32Array(n + 1); // where the last run of best[j] starts
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    const T = lengths[order[j - 1]]; // the longest of any run ending at j
    for (let i = j - 1; i >= 0; i--) {
      const B = j - i;
      if (B > 1 && (B * T > m.maxTokensPerRun || B * m.heads * T * T > m.maxScoresPerRun)) break; // a lone sequence always runs
      const cost = best[i] + m.runCost + B * T * (1 + T / m.attentionTokens);
      if (cost < best[j]) (best[j] = cost), (cut[j] = i);
    }
  }
  const runs: number[][] = [];
  for (let j = n; j > 0; j = cut[j]) runs.unshift(order.slice(cut[j], j));
  return runs;
}

/**
 * An ORT encoder's bounds from its options: tokens and sequences of one pass, padded tokens of one run (`floor` the
 * default tokens, 64 sequences), each a positive integer (else an IntabModelError naming `who`).
 */
export function passLimits(o: OnnxEncoderOptions, floor: number, who: string): Required<OnnxEncoderOptions> {
  const limits = { maxTokensPerPass: o.maxTokensPerPass ?? floor, maxSequencesPerPass: o.maxSequencesPerPass ?? 64, maxTokensPerRun: o.maxTokensPerRun ?? floor };
  for (const [key, v] of Object.entries(limits)) {
    if (!Number.isInteger(v) || v < 1) throw new IntabModelError(`${who}: ${key} = ${v} must be a positive integer.`);
  }
  return limits;
}

// ---- the runner ----

/**
 * An EncoderRunner over an ORT session of encoder-graph.ts's graph.
 * @example
 * const onnx = await createSession(graph.model, { backend: 'onnx-wasm' });
 * const runner = new OnnxEncoder(onnx, config, graph.weightBytes);
 * const [v] = await runner.encode([[101, 7592, 102]]);
 */
export class OnnxEncoder implements EncoderRunner {
  readonly facts: EncoderFacts;
  readonly maxTokensPerPass: number;
  readonly maxSequencesPerPass: number;
  private readonly cost: RunCostModel;
  private queue: Promise<unknown> = Promise.resolve();
  private destroyed = false;
  /** ORT runs made so far (how planRuns cut the passes; for tests and benchmarks). */
  runs = 0;

  constructor(
    private readonly onnx: OnnxSession,
    private readonly config: EncoderConfig,
    readonly weightBytes: number,
    o: OnnxEncoderOptions = {},
  ) {
    this.facts = encoderFacts(config);
    const limits = passLimits(o, Math.max(2048, config.maxPositions), 'onnx encoder');
    this.maxTokensPerPass = limits.maxTokensPerPass;
    this.maxSequencesPerPass = limits.maxSequencesPerPass;
    this.cost = runCostModel(config, limits.maxTokensPerRun);
  }

  encode(sequences: readonly (readonly number[])[], options: EncodeOptions = {}): Promise<Float32Array[]> {
    // One session, one run at a time (ORT refuses concurrent runs on a session), in call order.
    const run = this.queue.then(() => this.encodeNow(sequences, options));
    this.queue = run.catch(() => undefined);
    return run;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    // After queued passes: releasing a session mid-run is ORT's undefined behaviour.
    void this.queue.then(() => this.onnx.session.release()).catch(() => undefined);
  }

  private check(sequences: readonly (readonly number[])[], splits: readonly number[] | undefined): void {
    if (this.destroyed) throw new IntabModelError('This encoder was destroyed: load the model again.');
    const c = this.config;
    const n = sequences.length;
    if (n > this.maxSequencesPerPass) throw new IntabModelError(`onnx encoder: ${n} sequences in one pass; at most ${this.maxSequencesPerPass} (maxSequencesPerPass): split the batch.`);
    let tokens = 0;
    sequences.forEach((ids, b) => {
      if (ids.length < 1 || ids.length > c.maxPositions) throw new IntabModelError(`onnx encoder: sequence ${b} has ${ids.length} tokens; each needs 1..${c.maxPositions} (the model's context): truncate it.`);
      ids.forEach((id, i) => {
        if (!Number.isInteger(id) || id < 0 || id >= c.vocab) throw new IntabModelError(`onnx encoder: sequence ${b} token ${i} is id ${id}; ids are 0..${c.vocab - 1}.`);
      });
      tokens += ids.length;
    });
    if (tokens > this.maxTokensPerPass) throw new IntabModelError(`onnx encoder: ${tokens} tokens in one pass; at most ${this.maxTokensPerPass} (maxTokensPerPass): split the batch.`);
    if (splits === undefined) return;
    if (splits.length !== n) throw new IntabModelError(`onnx encoder: ${splits.length} typeSplits for ${n} sequences; give one per sequence.`);
    splits.forEach((x, b) => {
      if (!Number.isInteger(x) || x < 0) throw new IntabModelError(`onnx encoder: typeSplits[${b}] = ${x}; a split is a token index ≥ 0.`);
      if (x < sequences[b].length && c.typeVocab >= 2 && !encoderGraphTakesTypes(c)) {
        throw new IntabModelError(`onnx encoder: sequence ${b} has type-1 tokens, which this embedding graph does not take (token types are a reranker's input): leave typeSplits out.`);
      }
    });
  }

  private async encodeNow(sequences: readonly (readonly number[])[], options: EncodeOptions): Promise<Float32Array[]> {
    const splits = options.typeSplits;
    this.check(sequences, splits);
    const out: Float32Array[] = new Array(sequences.length);
    const C = this.config.classifier ? classifierOutputs(this.config) : this.config.hidden;
    for (const run of planRuns(sequences.map((s) => s.length), this.cost)) {
      const vectors = await this.run(run.map((i) => sequences[i]), run.map((i) => splits?.[i] ?? sequences[i].length));
      run.forEach((i, r) => (out[i] = vectors.slice(r * C, (r + 1) * C)));
    }
    return out;
  }

  /** One ORT run over `rows` right-padded to the longest (token type 1 from each row's split on): (rows, C) vectors. */
  private async run(rows: readonly (readonly number[])[], splits: readonly number[]): Promise<Float32Array> {
    const { ort, session } = this.onnx;
    const B = rows.length;
    const T = rows[rows.length - 1].length; // planRuns puts the longest last
    const ids = new BigInt64Array(B * T); // padding: id 0 ([PAD]), masked
    const mask = new BigInt64Array(B * T);
    rows.forEach((seq, b) => {
      for (let i = 0; i < seq.length; i++) {
        ids[b * T + i] = BigInt(seq[i]);
        mask[b * T + i] = 1n;
      }
    });
    const io = ENCODER_GRAPH_IO;
    const feeds: Record<string, Tensor> = { [io.inputIds]: new ort.Tensor('int64', ids, [B, T]), [io.attentionMask]: new ort.Tensor('int64', mask, [B, T]) };
    if (encoderGraphTakesTypes(this.config)) {
      const types = new BigInt64Array(B * T); // padding: type 0, masked
      rows.forEach((seq, b) => {
        for (let i = splits[b]; i < seq.length; i++) types[b * T + i] = 1n;
      });
      feeds[io.tokenTypeIds] = new ort.Tensor('int64', types, [B, T]);
    }
    let out: Record<string, Tensor>;
    try {
      out = await session.run(feeds);
    } catch (err) {
      throw new OnnxRunError(`encoding ${B} sequences of up to ${T} tokens`, err, 'Retry with fewer or shorter inputs, or load the model on another backend.');
    }
    this.runs++;
    return out[this.config.classifier ? io.logits : io.embeddings].data as Float32Array; // (B, C) or (B, outputs): CPU memory of its own
  }
}
