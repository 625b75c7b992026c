// Which inputs and outputs of an ONNX graph the runner feeds and reads: the layout Hugging Face optimum, the
// onnx-community exports and transformers.js use (and llama-graph.ts writes): input_ids, attention_mask,
// position_ids (optional), past_key_values.{i}.key|value in, logits and present.{i}.key|value out, K/V as
// [batch, Hkv, S, D] in f32 or f16. A graph with anything else is refused here, naming what it has, before a
// step runs.

import { OnnxLayoutError } from './errors.ts';

export interface GraphLayout {
  inputIds: string;
  attentionMask?: string;
  positionIds?: string;
  /** How many last positions get logits (llama-graph.ts's graphs; an export without it gives every position's). */
  logitsToKeep?: string;
  /** Per layer. */
  pastKeys: string[];
  pastValues: string[];
  presentKeys: string[];
  presentValues: string[];
  logits: string;
  layers: number;
  kvHeads: number;
  headDim: number;
  kvType: 'float32' | 'float16';
  /** Bytes of one K/V element. */
  kvBytes: 2 | 4;
}

/** What graphLayout reads of a session (InferenceSession fits). */
export interface GraphIO {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata?: readonly { name: string; isTensor: boolean; type?: string }[];
}

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const KNOWN_INPUTS = new Set(['input_ids', 'attention_mask', 'position_ids', 'num_logits_to_keep']);

/**
 * The layout of a graph's inputs and outputs, for a model of `shape` (its config's K/V heads and head size).
 * @example
 * const layout = graphLayout(session, { kvHeads: 4, headDim: 8 }, 'onnx/model.onnx');
 */
export function graphLayout(io: GraphIO, shape: { kvHeads: number; headDim: number }, file: string): GraphLayout {
  const inputs = [...io.inputNames];
  const outputs = [...io.outputNames];
  const refuse = (problem: string): never => {
    throw new OnnxLayoutError(file, inputs, outputs, problem);
  };
  if (!inputs.includes('input_ids')) refuse("it has no 'input_ids' input");
  if (!outputs.includes('logits')) refuse("it has no 'logits' output");
  const unknown = inputs.filter((n) => !KNOWN_INPUTS.has(n) && !PAST.test(n));
  if (unknown.length) refuse(`inputs ${unknown.map((n) => `'${n}'`).join(', ')} are not part of the layout intab feeds`);
  const layers = inputs.filter((n) => PAST.test(n)).length / 2;
  if (layers === 0) refuse("it has no 'past_key_values.{i}.key|value' inputs: export it with its KV cache (optimum's 'text-generation-with-past' task)");
  const names = (prefix: string, kind: string) => Array.from({ length: layers }, (_, i) => `${prefix}.${i}.${kind}`);
  const pastKeys = names('past_key_values', 'key');
  const pastValues = names('past_key_values', 'value');
  const presentKeys = names('present', 'key');
  const presentValues = names('present', 'value');
  for (const n of [...pastKeys, ...pastValues]) if (!inputs.includes(n)) refuse(`input '${n}' is missing: layers must be numbered 0..${layers - 1} with a key and a value each`);
  for (const n of [...presentKeys, ...presentValues]) if (!outputs.includes(n)) refuse(`output '${n}' is missing: every past_key_values input needs its present output`);
  const meta = io.inputMetadata?.find((m) => m.name === pastKeys[0]);
  const type = meta?.isTensor ? (meta.type ?? 'float32') : 'float32';
  if (type !== 'float32' && type !== 'float16') refuse(`its K/V inputs are ${type}: intab feeds float32 or float16`);
  const kvType = type as 'float32' | 'float16';
  return {
    inputIds: 'input_ids',
    attentionMask: inputs.includes('attention_mask') ? 'attention_mask' : undefined,
    positionIds: inputs.includes('position_ids') ? 'position_ids' : undefined,
    logitsToKeep: inputs.includes('num_logits_to_keep') ? 'num_logits_to_keep' : undefined,
    pastKeys,
    pastValues,
    presentKeys,
    presentValues,
    logits: 'logits',
    layers,
    kvHeads: shape.kvHeads,
    headDim: shape.headDim,
    kvType,
    kvBytes: kvType === 'float16' ? 2 : 4,
  };
}
