// The EncoderRunner of a decoder trained to embed (Qwen3-Embedding, EmbeddingGemma) over onnxruntime, where WebGPU is
// missing ('auto' on a machine without a hardware adapter, and intab serve's Node runtime): the Llama-family graph
// written with output 'states' (llama-graph.ts: every position's final-norm state, no head, no K/V cache; attention
// causal, or both ways with a symmetric window for EmbeddingGemma), run over passes planned as the encoder's are
// (planRuns: sorted by length, cut into right-padded runs), then pooled, projected (dense_2 / dense_3) and normalised
// on the CPU by the model layer's embedding head, the same code that finishes the CPU reference's vectors.
// ORT's Attention op holds a run's (B, H, T, T) scores, so one sequence's length is bounded to keep them within
// MAX_SCORES_PER_RUN: the runner's contextLength may be below the model's (the engine truncates or refuses past it).

import type { Tensor } from 'onnxruntime-web';
import { IntabModelError, decoderEmbeddingFacts, poolStates, projectAndNormalize, type DecoderEmbeddingFiles, type EncodeOptions, type EncoderFacts, type EncoderRunner, type LoadProgress } from '@intab/model';
import { MAX_SCORES_PER_RUN, RUN_COST, passLimits, planRuns, type OnnxEncoderOptions, type RunCostModel } from './encoder-runner.ts';
import { OnnxRunError } from './errors.ts';
import { fetchMatrix, toF32 } from './graph-builder.ts';
import { LLAMA_GRAPH_IO, buildLlamaGraph, tensorWeights } from './llama-graph.ts';
import { createSession, providerOf, type OnnxBackend, type OnnxSession, type OrtRuntime } from './session.ts';

/** How long one sequence may be on ORT: its (H, T, T) attention scores within MAX_SCORES_PER_RUN, and at least 512. */
export function onnxDecoderContext(maxContext: number, heads: number): number {
  return Math.min(maxContext, Math.max(512, Math.floor(Math.sqrt(MAX_SCORES_PER_RUN / heads))));
}

/**
 * An EncoderRunner over an ORT session of a decoder's states graph.
 * @example
 * const { runner } = await loadOnnxDecoderEncoder(files, { backend: 'onnx-wasm' });
 * const [v] = await runner.encode([tokenizer.encode('a note')]);
 */
export class OnnxDecoderEncoder implements EncoderRunner {
  readonly facts: EncoderFacts;
  readonly maxTokensPerPass: number;
  readonly maxSequencesPerPass: number;
  private readonly cost: RunCostModel;
  private queue: Promise<unknown> = Promise.resolve();
  private destroyed = false;
  /** ORT runs made so far. */
  runs = 0;

  constructor(
    private readonly onnx: OnnxSession,
    private readonly files: DecoderEmbeddingFiles,
    /** config.dense's matrices as f32, (rows, cols) each. */
    private readonly dense: readonly { rows: number; cols: number; weight: Float32Array }[],
    readonly weightBytes: number,
    o: OnnxEncoderOptions = {},
  ) {
    const d = files.config.decoder;
    const context = onnxDecoderContext(d.maxContext, d.heads);
    this.facts = { ...decoderEmbeddingFacts(files.config), contextLength: context };
    const limits = passLimits(o, Math.max(2048, context), 'onnx decoder encoder');
    this.maxTokensPerPass = limits.maxTokensPerPass;
    this.maxSequencesPerPass = limits.maxSequencesPerPass;
    const perRun = limits.maxTokensPerRun;
    // Work per token: the projections (q, k, v, o and the gated feed-forward) against attention's 4·T·H·D.
    const projections = 2 * d.hidden * d.heads * d.headDim + 2 * d.hidden * d.kvHeads * d.headDim + 3 * d.hidden * d.ffn;
    this.cost = { runCost: RUN_COST, attentionTokens: projections / (4 * d.heads * d.headDim), maxTokensPerRun: perRun, maxScoresPerRun: MAX_SCORES_PER_RUN, heads: d.heads };
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
    void this.queue.then(() => this.onnx.session.release()).catch(() => undefined);
  }

  private check(sequences: readonly (readonly number[])[], options: EncodeOptions): void {
    if (this.destroyed) throw new IntabModelError('This encoder was destroyed: load the model again.');
    const { vocab, contextLength } = this.facts;
    if (sequences.length > this.maxSequencesPerPass) throw new IntabModelError(`onnx decoder encoder: ${sequences.length} sequences in one pass; at most ${this.maxSequencesPerPass} (maxSequencesPerPass): split the batch.`);
    let tokens = 0;
    sequences.forEach((ids, b) => {
      if (ids.length < 1 || ids.length > contextLength) throw new IntabModelError(`onnx decoder encoder: sequence ${b} has ${ids.length} tokens; each needs 1..${contextLength} (the context on onnxruntime): truncate it.`);
      ids.forEach((id, i) => {
        if (!Number.isInteger(id) || id < 0 || id >= vocab) throw new IntabModelError(`onnx decoder encoder: sequence ${b} token ${i} is id ${id}; ids are 0..${vocab - 1}.`);
      });
      tokens += ids.length;
    });
    if (tokens > this.maxTokensPerPass) throw new IntabModelError(`onnx decoder encoder: ${tokens} tokens in one pass; at most ${this.maxTokensPerPass} (maxTokensPerPass): split the batch.`);
    if (options.typeSplits?.some((x, b) => x < sequences[b].length)) throw new IntabModelError('onnx decoder encoder: a decoder has no token types (typeSplits are a reranker\'s): leave them out.');
  }

  private async encodeNow(sequences: readonly (readonly number[])[], options: EncodeOptions): Promise<Float32Array[]> {
    this.check(sequences, options);
    const c = this.files.config;
    const C = c.decoder.hidden;
    const out: Float32Array[] = new Array(sequences.length);
    for (const run of planRuns(sequences.map((s) => s.length), this.cost)) {
      const rows = run.map((i) => sequences[i]);
      const T = rows[rows.length - 1].length; // planRuns puts the longest last
      const states = await this.run(rows, T); // (B, T, C)
      run.forEach((i, r) => {
        const pooled = poolStates(states, rows[r].length, C, c.pooling, r * T * C);
        out[i] = projectAndNormalize(pooled, this.dense, c.normalize);
      });
    }
    return out;
  }

  /** One ORT run over `rows` right-padded to T (padding masked; positions from 0 in each row): (B, T, C) states. */
  private async run(rows: readonly (readonly number[])[], T: number): Promise<Float32Array> {
    const { ort, session } = this.onnx;
    const B = rows.length;
    const ids = new BigInt64Array(B * T);
    const mask = new BigInt64Array(B * T);
    const positions = new BigInt64Array(B * T);
    rows.forEach((seq, b) => {
      for (let i = 0; i < T; i++) positions[b * T + i] = BigInt(i);
      for (let i = 0; i < seq.length; i++) {
        ids[b * T + i] = BigInt(seq[i]);
        mask[b * T + i] = 1n;
      }
    });
    const io = LLAMA_GRAPH_IO;
    const feeds: Record<string, Tensor> = {
      [io.inputIds]: new ort.Tensor('int64', ids, [B, T]),
      [io.attentionMask]: new ort.Tensor('int64', mask, [B, T]),
      [io.positionIds]: new ort.Tensor('int64', positions, [B, T]),
    };
    let out: Record<string, Tensor>;
    try {
      out = await session.run(feeds);
    } catch (err) {
      throw new OnnxRunError(`embedding ${B} sequences of up to ${T} tokens`, err, 'Retry with fewer or shorter inputs, or load the model on another backend.');
    }
    this.runs++;
    return out[io.states].data as Float32Array;
  }
}

export interface OnnxDecoderEncoderLoadOptions extends OnnxEncoderOptions {
  backend: OnnxBackend;
  /** The host's onnxruntime (onnxruntime-node in Node) [onnxruntime-web's build for the backend]. */
  runtime?: OrtRuntime;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/**
 * A decoder embedding model's EncoderRunner on onnxruntime: the states graph written from the checkpoint (f32 weights:
 * quantized matrices are dequantized, as the text generator's default graph does), a session on `backend` (or the
 * host's `runtime`), the projections read as f32, and one throwaway pass to set ORT's kernels up.
 * @example
 * const { runner } = await loadOnnxDecoderEncoder(await openDecoderEmbeddingGguf(source), { backend: 'onnx-wasm' });
 */
export async function loadOnnxDecoderEncoder(files: DecoderEmbeddingFiles, o: OnnxDecoderEncoderLoadOptions): Promise<{ runner: OnnxDecoderEncoder; weightBytes: number; threads: number; runs: OnnxSession['runs'] }> {
  providerOf(o.backend, o.runtime); // refused before a byte is read
  const c = files.config;
  const weights = tensorWeights(files.tensors, { signal: o.signal, onProgress: o.onProgress });
  const graph = await buildLlamaGraph(c.decoder, weights, { output: 'states', attention: c.attention, file: 'weights', signal: o.signal });
  const dense = [];
  for (const d of c.dense) dense.push({ rows: d.rows, cols: d.cols, weight: toF32(await fetchMatrix(weights, d.name, d.rows, d.cols, 'weights', o.signal)) });
  o.signal?.throwIfAborted();
  const externalData = graph.externalData ? new Map([[graph.externalData.path, graph.externalData.data]]) : undefined;
  const onnx = await createSession(graph.model, { backend: o.backend, externalData, file: `${c.arch} states graph`, runtime: o.runtime });
  const denseBytes = dense.reduce((n, d) => n + d.weight.byteLength, 0);
  const runner = new OnnxDecoderEncoder(onnx, files, dense, graph.weightBytes + denseBytes, o);
  try {
    await runner.encode([[0, 1, 2].map((i) => i % runner.facts.vocab)]);
  } catch (err) {
    runner.destroy();
    throw err;
  }
  runner.runs = 0;
  return { runner, weightBytes: runner.weightBytes, threads: onnx.runs.threads, runs: onnx.runs };
}
