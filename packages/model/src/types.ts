// The shapes every model format reader produces, so loaders and architectures never care whether
// weights came from GGUF, safetensors or a Hugging Face folder.

import type { WeightDtype } from '@intab/gpu';

/** Random access to the bytes of one file: an ArrayBuffer, a Blob/File, a URL (range requests) or a Node path. */
export interface ByteSource {
  /** File name or URL, for error messages. */
  readonly name: string;
  /** Total size in bytes. */
  readonly size: number;
  /** Exactly `length` bytes at `offset`; throws ModelFormatError when the range is past the end. */
  read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
}

/** One tensor as stored: where its bytes are and how to read them. */
export interface TensorInfo {
  /** The name in its file, e.g. 'blk.0.attn_q.weight' or 'model.layers.0.self_attn.q_proj.weight'. */
  readonly name: string;
  /** The stored dtype when intab reads it, else the format's own name of it (e.g. 'q5_K', 'I8'). */
  readonly dtype: WeightDtype | `unsupported:${string}`;
  /** Row-major shape, outermost first (HF order): an (N, K) matrix is [N, K]. GGUF's ne[] reversed. */
  readonly shape: readonly number[];
  /** The file holding the bytes. */
  readonly source: ByteSource;
  /** Absolute byte offset in `source`. */
  readonly offset: number;
  /** Bytes of the tensor. */
  readonly byteLength: number;
  /**
   * Added to every value as it is read (1-D tensors only): Gemma's Hugging Face RMSNorm weights are stored as w and
   * used as 1 + w (see hfValueOffset). Absent: 0.
   */
  readonly valueOffset?: number;
  /** 'negExp': every value read as −exp(value), after valueOffset (Qwen3.5's A_log read as llama.cpp's ssm_a). */
  readonly valueTransform?: 'negExp';
}

/** A scalar, string or array value of a GGUF metadata key. */
export type GgufValue = number | bigint | boolean | string | GgufValue[];
