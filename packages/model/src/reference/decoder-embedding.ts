// CPU reference of the decoders that embed (Qwen3-Embedding, EmbeddingGemma): the Llama-family reference forward
// (llama.ts, the same layers a text generator runs) returns every token's final-norm state, causally or both ways as
// the config says, then the model layer's embedding head (embedding-head.ts, shared with the ONNX runner): pooling
// (mean over every token, the first token's or the last token's state), the projections after pooling (EmbeddingGemma's
// dense_2 / dense_3: y = W x, float64 sums), and L2 normalisation. It is the twin llama.cpp and the runners are compared
// with, and a CPU EncoderRunner for tests.

import { ShapeError } from '@intab/gpu';
import { decoderEmbeddingFacts, type DecoderEmbeddingConfig } from '../decoder-embedding-config.ts';
import { poolStates, projectAndNormalize } from '../embedding-head.ts';
import type { EncoderRunner } from '../encoder-runner.ts';
import type { EncodeResult } from './bert.ts';
import { createReferenceModel, type ReferenceModel, type WeightsFn } from './llama.ts';
import { tensorGetter } from './ops.ts';

/** The model's weights as the reference reads them: the decoder (its own reference model) and the projections. */
export interface DecoderEmbeddingWeights {
  readonly config: DecoderEmbeddingConfig;
  readonly model: ReferenceModel;
  /** config.dense's matrices, (rows, cols) each. */
  readonly dense: readonly Float32Array[];
  /** Bytes of every tensor read (f32). */
  readonly bytes: number;
}

/**
 * Fetches every tensor the config needs by its canonical (llama.cpp) name, as f32 (a missing or misshapen one is a
 * ModelMismatchError naming it).
 * @example
 * const weights = loadDecoderEmbeddingWeights(files.config, (name) => tensors.get(name), 'qwen3-embedding.gguf');
 */
export function loadDecoderEmbeddingWeights(config: DecoderEmbeddingConfig, weights: WeightsFn, file = 'weights'): DecoderEmbeddingWeights {
  let bytes = 0;
  const counted: WeightsFn = (name) => {
    const t = weights(name);
    if (t) bytes += t.byteLength;
    return t;
  };
  const model = createReferenceModel(config.decoder, counted, { file });
  const get = tensorGetter(counted, file);
  const dense = config.dense.map((d) => get(d.name, d.rows * d.cols));
  return { config, model, dense, bytes };
}

/**
 * Encodes whole sequences (token ids with the BOS / EOS the tokenizer adds), each on its own (positions from 0, none
 * attending to another), so packing them changes nothing: one vector per sequence.
 * @example
 * const { vectors } = encodeDecoderReference(weights, [tok.encode('a cat'), tok.encode('a dog sat')]);
 */
export function encodeDecoderReference(weights: DecoderEmbeddingWeights, sequences: readonly (readonly number[])[]): EncodeResult {
  const { config: c, model } = weights;
  const C = c.decoder.hidden;
  if (sequences.length === 0) throw new ShapeError('reference-decoder-embedding', 'sequences', 'at least one sequence', 'none');
  const starts = [0];
  for (const s of sequences) starts.push(starts.at(-1)! + s.length);
  const hidden = new Float32Array(starts.at(-1)! * C);
  const pooled: Float32Array[] = [];
  const vectors: Float32Array[] = [];
  sequences.forEach((seq, b) => {
    if (seq.length === 0) throw new ShapeError('reference-decoder-embedding', `sequences[${b}]`, 'at least one token', 'empty');
    const states = model.hiddenStates(seq, { bidirectional: c.attention === 'bidirectional' }); // (S, C)
    hidden.set(states, starts[b] * C);
    // pool, then y = W p through each projection; the vector is that, L2-normalised as the config says
    const p = projectAndNormalize(poolStates(states, seq.length, C, c.pooling), c.dense.map((d, i) => ({ ...d, weight: weights.dense[i] })), false);
    pooled.push(p);
    vectors.push(c.normalize ? projectAndNormalize(p, [], true) : p.slice());
  });
  return { vectors, pooled, hidden, starts };
}

/**
 * The CPU reference as an EncoderRunner (the engine's contract), for tests without a GPU.
 * @example
 * const runner = createReferenceDecoderEncoder(loadDecoderEmbeddingWeights(config, (n) => tensors.get(n)));
 * const [a, b] = await runner.encode([tok.encode('a cat'), tok.encode('a dog')]);
 */
export function createReferenceDecoderEncoder(weights: DecoderEmbeddingWeights, options: { maxTokensPerPass?: number; maxSequencesPerPass?: number } = {}): EncoderRunner {
  const facts = decoderEmbeddingFacts(weights.config);
  let destroyed = false;
  const runner: EncoderRunner = {
    facts,
    maxTokensPerPass: options.maxTokensPerPass ?? Math.min(8192, facts.contextLength),
    maxSequencesPerPass: options.maxSequencesPerPass ?? 64,
    weightBytes: weights.bytes,
    async encode(sequences) {
      if (destroyed) throw new ShapeError('reference-decoder-embedding', 'runner', 'a runner not yet destroyed', 'destroyed');
      const tokens = sequences.reduce((n, s) => n + s.length, 0);
      if (tokens > runner.maxTokensPerPass) throw new ShapeError('reference-decoder-embedding', 'sequences', `at most ${runner.maxTokensPerPass} tokens in one pass`, `${tokens} tokens`);
      if (sequences.length > runner.maxSequencesPerPass) throw new ShapeError('reference-decoder-embedding', 'sequences', `at most ${runner.maxSequencesPerPass} sequences in one pass`, `${sequences.length}`);
      return encodeDecoderReference(weights, sequences).vectors;
    },
    destroy() {
      destroyed = true;
    },
  };
  return runner;
}
