// What the graph writers share (llama-graph.ts for decoders, encoder-graph.ts for embedding models): a node and
// initializer collector with unique value names, weight fetching checked against the config, matrices laid out for
// MatMul, and serialization with weights inline or in an external data file. Internal to this package.

import { dequantize, rowBytes, type WeightDtype } from '@intab/gpu';
import { ModelMismatchError } from '@intab/model';
import { OnnxWriteError } from './errors.ts';
import { ExternalDataBuilder, MAX_PROTO_BYTES, encodeModel, type OnnxAttribute, type OnnxNode, type OnnxTensor, type OnnxValueInfo, type OpsetImport } from './onnx-proto.ts';

/** A weight as the builders take it: f32 values, or stored bytes in a format @intab/gpu decodes. Matrices are (N, K) row-major. */
export type GraphWeight = Float32Array | { dtype: WeightDtype; data: Uint8Array };

/** Canonical (GGUF-style) tensor name → the weight, or undefined when the checkpoint has none. */
export type GraphWeights = (name: string) => GraphWeight | undefined | Promise<GraphWeight | undefined>;

/** The ONNX opset both writers target: RMSNormalization, RotaryEmbedding and Attention are standard from 23 (ORT ≥ 1.22 runs them). */
export const OPSET = 23;
/** The IR version opset 23 needs. */
export const IR_VERSION = 11;
/** Initializers this large or larger go to the external data file. */
const EXTERNAL_MIN_BYTES = 1024;

/** Nodes and initializers being collected, with unique value names. */
export class Graph {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  private count = 0;

  /** Adds a node; returns its output names (`outputs` names them, or a count makes fresh ones). */
  op(opType: string, inputs: readonly string[], options: { name?: string; outputs?: number | readonly string[]; attributes?: OnnxAttribute[]; domain?: string } = {}): string[] {
    const label = options.name ?? `${opType}_${this.count}`;
    this.count++;
    const outs = typeof options.outputs === 'object' ? [...options.outputs] : Array.from({ length: options.outputs ?? 1 }, (_, i) => `${label}/out${i}`);
    this.nodes.push({ opType, inputs, outputs: outs, name: label, ...(options.attributes ? { attributes: options.attributes } : {}), ...(options.domain ? { domain: options.domain } : {}) });
    return outs;
  }

  /** A single-output node. */
  op1(opType: string, inputs: readonly string[], options: { name?: string; output?: string; attributes?: OnnxAttribute[]; domain?: string } = {}): string {
    return this.op(opType, inputs, { ...options, outputs: options.output ? [options.output] : 1 })[0];
  }

  init(t: OnnxTensor): string {
    this.initializers.push(t);
    return t.name;
  }

  private consts = new Set<string>();

  /** A small constant shared by every node that names it: created on first use. */
  constant(name: string, make: () => OnnxTensor): string {
    if (!this.consts.has(name)) {
      this.consts.add(name);
      this.init(make());
    }
    return name;
  }
}

/** A matrix (n, k) as given: stored bytes and their format. */
export interface Matrix {
  name: string;
  n: number;
  k: number;
  dtype: WeightDtype;
  bytes: Uint8Array;
}

/**
 * Fetches a weight by name as an (n, k) matrix and checks its size: a missing or misshapen tensor is a
 * ModelMismatchError naming it and `file`. Checks `signal` first.
 */
export async function fetchMatrix(weights: GraphWeights, name: string, n: number, k: number, file: string, signal?: AbortSignal): Promise<Matrix> {
  signal?.throwIfAborted();
  const w = await weights(name);
  if (!w) throw new ModelMismatchError(file, `tensor '${name}'`, `present (${n} × ${k} values)`, 'missing');
  if (w instanceof Float32Array) {
    if (w.length !== n * k) throw new ModelMismatchError(file, `tensor '${name}'`, `${n} × ${k} values`, `${w.length} values`);
    return { name, n, k, dtype: 'f32', bytes: new Uint8Array(w.buffer, w.byteOffset, w.byteLength) };
  }
  let need: number;
  try {
    need = n * rowBytes(w.dtype, k);
  } catch {
    throw new ModelMismatchError(file, `tensor '${name}'`, `rows of ${k} values (a whole number of ${w.dtype} blocks)`, `${w.dtype} rows that do not split into blocks`);
  }
  if (w.data.length !== need) throw new ModelMismatchError(file, `tensor '${name}'`, `${need} bytes (${n} × ${k} ${w.dtype})`, `${w.data.length} bytes`);
  return { name, n, k, dtype: w.dtype, bytes: w.data };
}

/** A matrix's values as f32 (a view when it is stored as aligned f32, else dequantized). */
export function toF32(m: Matrix): Float32Array {
  if (m.dtype === 'f32' && m.bytes.byteOffset % 4 === 0) return new Float32Array(m.bytes.buffer, m.bytes.byteOffset, m.n * m.k);
  return dequantize(m.dtype, m.bytes, m.n, m.k);
}

/** out[j, col + r] = w[r, j] for w (rows, k) into out (k, n): in 64×64 tiles, so both sides stay in cache. */
export function transposeInto(out: Float32Array, n: number, col: number, w: Float32Array, rows: number, k: number): void {
  const TILE = 64;
  for (let r0 = 0; r0 < rows; r0 += TILE) {
    const r1 = Math.min(rows, r0 + TILE);
    for (let j0 = 0; j0 < k; j0 += TILE) {
      const j1 = Math.min(k, j0 + TILE);
      for (let j = j0; j < j1; j++) {
        const o = j * n + col;
        for (let r = r0; r < r1; r++) out[o + r] = w[r * k + j];
      }
    }
  }
}

export function concatF32(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}

/** A serialized graph: the .onnx bytes, and the external data file its initializers point into when there is one. */
export interface SerializedGraph {
  model: Uint8Array;
  externalData?: { path: string; data: Uint8Array };
  nodeCount: number;
  /** Bytes of all initializers (inline or external). */
  weightBytes: number;
}

/**
 * Encodes the collected graph. `externalData`: a file name for the weights (initializers of 1 KiB and more), null for
 * inline always (OnnxWriteError past 2 GiB), undefined for inline unless the model would pass protobuf's 2 GiB.
 */
export function serializeGraph(
  g: Graph,
  o: { name: string; inputs: OnnxValueInfo[]; outputs: OnnxValueInfo[]; opsetImports: OpsetImport[]; metadata: Record<string, string>; externalData: string | null | undefined },
): SerializedGraph {
  let weightBytes = 0;
  for (const t of g.initializers) weightBytes += t.data?.length ?? 0;
  const model = (initializers: readonly OnnxTensor[]) =>
    encodeModel({
      irVersion: IR_VERSION,
      opsetImports: o.opsetImports,
      producerName: 'intab',
      producerVersion: '0.1.0',
      graph: { name: o.name, nodes: g.nodes, initializers, inputs: o.inputs, outputs: o.outputs },
      metadata: o.metadata,
    });
  let location = o.externalData;
  if (location === undefined) location = weightBytes > MAX_PROTO_BYTES - 2 ** 24 ? 'model.onnx_data' : null;
  if (location === null) return { model: model(g.initializers), nodeCount: g.nodes.length, weightBytes };
  if (!location || /[\\/]/.test(location)) throw new OnnxWriteError('options.externalData', `'${location}' is not a plain file name`, "name a file beside the model, e.g. 'model.onnx_data'");
  const ext = new ExternalDataBuilder(location);
  const inits = g.initializers.map((t) => ((t.data?.length ?? 0) >= EXTERNAL_MIN_BYTES ? ext.add(t) : t));
  return { model: model(inits), externalData: { path: location, data: ext.bytes() }, nodeCount: g.nodes.length, weightBytes };
}
