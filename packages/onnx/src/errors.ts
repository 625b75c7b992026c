// Typed errors of the ONNX backend, each declared with errorClass (its name, stable `code` and fields in one place):
// each carries the fields a caller needs to react and says in its message what to do; they are plain data (name +
// fields) so they cross the worker boundary intact (ONNX_ERRORS lists them for the worker's error registry).
// Missing or misshaped weights are @intab/model's ModelMismatchError: the model's files disagree, not ONNX.

import { IntabError, errorClass } from '@intab/errors';

/** Base class of every error thrown by @intab/onnx. */
export class IntabOnnxError extends errorClass(IntabError, 'IntabOnnxError', 'onnx_error') {
  constructor(message: string, options?: { cause?: unknown }) {
    super({}, message, options);
  }
}

/** An .onnx file is malformed: truncated, a broken protobuf field, a graph that refers to values it never defines. */
export class OnnxFormatError extends errorClass(IntabOnnxError, 'OnnxFormatError', 'malformed_onnx')<{
  /** The file (name or URL) at fault. */
  readonly file: string;
  /** The structure at fault, e.g. 'graph.node[12].input[1]' or 'graph.initializer[3].raw_data'. */
  readonly field: string;
  /** Byte offset in the file where reading failed (-1 when the problem is not at one place). */
  readonly offset: number;
}> {
  constructor(file: string, field: string, problem: string, offset = -1, options?: { cause?: unknown }) {
    super(
      { file, field, offset },
      `${file}: ${field}: ${problem}${offset >= 0 ? ` (at byte ${offset})` : ''}. The file is damaged or not an ONNX model: download it again, or re-export it.`,
      options,
    );
  }
}

/** A graph cannot be written as asked: a model past protobuf's 2 GiB, a weight dtype or an option the writer cannot express. */
export class OnnxWriteError extends errorClass(IntabOnnxError, 'OnnxWriteError', 'onnx_write_failed')<{
  /** What is at fault, e.g. 'model size' or 'options.matmulNBits'. */
  readonly field: string;
}> {
  constructor(field: string, problem: string, advice: string) {
    super({ field }, `ONNX writer: ${field}: ${problem}: ${advice}.`);
  }
}

/** A well-formed graph whose inputs and outputs are not a layout intab can drive (see graph-layout.ts). */
export class OnnxLayoutError extends errorClass(IntabOnnxError, 'OnnxLayoutError', 'unsupported_onnx_layout')<{
  readonly file: string;
  /** The graph's input and output names, as found. */
  readonly inputs: string[];
  readonly outputs: string[];
}> {
  constructor(file: string, inputs: string[], outputs: string[], problem: string) {
    super(
      { file, inputs, outputs },
      `${file}: ${problem}. intab drives decoder graphs with inputs input_ids, attention_mask, position_ids and past_key_values.{i}.key|value, and outputs logits and present.{i}.key|value (Hugging Face optimum / onnx-community layout); this graph has inputs [${inputs.join(', ')}] and outputs [${outputs.join(', ')}]. Export the model with optimum's text-generation-with-past task, or load its GGUF or safetensors instead.`,
    );
  }
}

/** onnxruntime failed while running a step (an op it cannot run, memory, a shape the graph rejects). */
export class OnnxRunError extends errorClass(IntabOnnxError, 'OnnxRunError', 'onnx_run_failed')<{
  /** Which call failed, e.g. 'sequence 3, 1 tokens after 40'. */
  readonly call: string;
}> {
  constructor(call: string, cause: unknown, advice = "The sequence's cache is unchanged: retry, or load the model on another backend.") {
    super({ call }, `onnxruntime failed (${call}): ${cause instanceof Error ? cause.message : String(cause)}. ${advice}`, { cause });
  }
}

/** Asked of the ONNX runner something it cannot do (see OnnxRunner.capabilities), or after destroy(). */
export class OnnxUnsupportedError extends errorClass(IntabOnnxError, 'OnnxUnsupportedError', 'onnx_unsupported')<{
  readonly feature: string;
}> {
  constructor(feature: string, advice: string) {
    super({ feature }, `ONNX runner: ${feature}: ${advice}`);
  }
}

/** Every error class of this package, by name (for an error registry that rebuilds them across the worker). */
export const ONNX_ERRORS = { IntabOnnxError, OnnxFormatError, OnnxWriteError, OnnxLayoutError, OnnxRunError, OnnxUnsupportedError } as const;
