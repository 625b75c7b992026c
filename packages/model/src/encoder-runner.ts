// The contract between the engine's embeddings and whatever runs an embedding model: the WebGPU encoder (arch/bert.ts)
// and the CPU reference (reference/bert.ts, for tests) both implement it. An encoder has no KV cache and no sampling:
// a pass takes whole sequences (packed: no padding between them, none attending to another) and returns one pooled
// vector per sequence.

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
   * `facts` says.
   */
  encode(sequences: readonly (readonly number[])[]): Promise<Float32Array[]>;
  destroy(): void;
}
