// The contract between the engine's embeddings and whatever runs an embedding model: the WebGPU encoder (arch/bert.ts)
// and the CPU reference (reference/bert.ts, for tests) both implement it. An encoder has no KV cache and no sampling:
// a pass takes whole sequences (packed: no padding between them, none attending to another) and returns one pooled
// vector per sequence. A reranker (a cross-encoder: BERT with a classification head, llama.cpp's pooling_type 4 'rank')
// runs through the same contract: its [CLS] row goes through the head, and its "vector" is the head's raw outputs
// (logits, no sigmoid: `facts.classifier`); a (query, document) pair is one sequence whose second segment starts at
// `typeSplits[b]` (rerank-pair.ts builds both).

/** How a sequence's hidden states become one vector (sentence-transformers' pooling, GGUF `pooling_type`). */
export type Pooling = 'mean' | 'cls' | 'last';

/** What the engine needs to know of an embedding model. */
export interface EncoderFacts {
  arch: string;
  layers: number;
  hidden: number;
  vocab: number;
  /** Most tokens of one sequence (its position embeddings or trained context). */
  contextLength: number;
  /** The vectors' width (the hidden size, or a dense projection's). */
  dimensions: number;
  pooling: Pooling;
  /** Whether vectors are L2-normalised (sentence-transformers' Normalize module; llama.cpp normalises always). */
  normalized: boolean;
  /** Whether the model was trained so that its vectors' first values are an embedding of their own (Matryoshka). */
  matryoshka: boolean;
  /**
   * Present for a reranker (cross-encoder): encode() returns, per sequence, the classification head's `outputs` raw
   * logits ([CLS] row → [dense → tanh] → out projection; `dimensions` = outputs, not normalised, pooling 'cls'). A
   * relevance score is outputs[0]; sigmoid(outputs[0]) is the probability node-llama-cpp's rank() returns, while
   * llama.cpp's server and this runner return the logit itself.
   */
  classifier?: { outputs: number; labels: readonly string[] };
}

/** Per-call options of EncoderRunner.encode. */
export interface EncodeOptions {
  /**
   * Per sequence, the index of its first token of type 1 (a pair's second segment, as the tokenizer's pair template
   * says: rerankPair's `typeSplit`); tokens before it are type 0. Omitted, or a value ≥ the sequence's length: every
   * token is type 0 (an embedding input). Ignored by a model with fewer than 2 token types, as transformers does.
   */
  typeSplits?: readonly number[];
}

export interface EncoderRunner {
  readonly facts: EncoderFacts;
  /** Most tokens of all sequences of one encode() call together (the activations sized at load). */
  readonly maxTokensPerPass: number;
  /** Most sequences of one encode() call. */
  readonly maxSequencesPerPass: number;
  /** Bytes of the weights as loaded. */
  readonly weightBytes: number;
  /**
   * One pass over whole sequences (each 1..contextLength ids; all together ≤ maxTokensPerPass and ≤
   * maxSequencesPerPass): one vector per sequence, in order, of `facts.dimensions` values, pooled and normalised as
   * `facts` says (a reranker's: its head's logits). `options.typeSplits` gives pairs their token types.
   */
  encode(sequences: readonly (readonly number[])[], options?: EncodeOptions): Promise<Float32Array[]>;
  destroy(): void;
}
