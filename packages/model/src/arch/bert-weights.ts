// A BERT-family encoder's weights on the GPU (bert, nomic-bert), under the tensor names llama.cpp's GGUFs use: every
// tensor checked against the EncoderConfig before anything is allocated, matrices kept in their stored format (or
// quantized on the way), projections reading the same input stacked into one tensor where their formats match ([q; k; v]
// unless the file already has attn_qkv, nomic's [gate; up]), and biases joined to match. BERT's position rows are read
// to f32 with a token-type row added — one table per type, stacked (row t·P + p = position p + type t) — so the
// embedding sum costs one gather and one norm's residual whatever the token's type. A reranker's head (cls, cls.output)
// is kept as two small matrices with their biases.

import { createWeight, rowBytes, type Gpu, type WeightTensor } from '@intab/gpu';
import type { EncoderConfig } from '../encoder-config.ts';
import { ModelMismatchError } from '../errors.ts';
import { readVector, uploadDtype, uploadF32, uploadRows, type UploadOptions } from '../upload.ts';
import type { TensorTable } from './llama-weights.ts';

/** A LayerNorm's weight and bias. */
export interface NormWeights {
  gamma: GPUBuffer; // (C) f32
  beta: GPUBuffer; // (C) f32
}

export interface BertLayerWeights {
  /** [q; k; v] (3C, C): one tensor when the formats match (or the file fuses them), else the three in order. */
  qkv: readonly WeightTensor[];
  qkvBias?: GPUBuffer; // (3C) f32 [bq | bk | bv]
  o: WeightTensor; // (C, C)
  oBias?: GPUBuffer; // (C)
  attnNorm: NormWeights; // attn_output_norm: after the attention residual
  /** bert: [up] (F, C). nomic-bert: [gate; up] (2F, C), one tensor when the formats match, else the two in order. */
  up: readonly WeightTensor[];
  upBias?: GPUBuffer; // (F)
  down: WeightTensor; // (C, F)
  downBias?: GPUBuffer; // (C)
  outNorm: NormWeights; // layer_output_norm: after the feed-forward residual
}

export interface BertWeights {
  tokens: WeightTensor; // (V, C)
  /**
   * bert: (typeTables · P, C) f32: position_embd with token_types row t added, for t < typeTables (row t·P + p is
   * position p of type t).
   */
  positions?: WeightTensor;
  /** Stacked position tables: 2 for a model with ≥ 2 token types (type 1 for a pair's second segment), else 1. */
  typeTables: number;
  /** nomic-bert: (C) f32, token_types row 0 (every token is type 0); absent without token types. */
  typeRow?: GPUBuffer;
  embedNorm: NormWeights; // token_embd_norm
  layers: BertLayerWeights[];
  /** A reranker's head: cls (C, C) + bias (then tanh), cls.output (outputs, C) + bias, as config.classifier has them. */
  head?: { dense?: { w: WeightTensor; b: GPUBuffer }; out?: { w: WeightTensor; b: GPUBuffer } };
  bytes: number;
  destroy(): void;
}

/** The tensors a config needs, with their shapes; `fusedQkv` when the file has attn_qkv instead of q, k and v. */
function expectedTensors(c: EncoderConfig, fusedQkv: boolean): [string, number[]][] {
  const { hidden: C, ffn: F } = c;
  const bias = c.projectionBias;
  const e: [string, number[]][] = [['token_embd.weight', [c.vocab, C]], ['token_embd_norm.weight', [C]], ['token_embd_norm.bias', [C]]];
  if (c.absolutePositions) e.push(['position_embd.weight', [c.maxPositions, C]]);
  if (c.typeVocab > 0) e.push(['token_types.weight', [c.typeVocab, C]]);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    if (fusedQkv) {
      e.push([`${b}attn_qkv.weight`, [3 * C, C]]);
      if (bias) e.push([`${b}attn_qkv.bias`, [3 * C]]);
    } else {
      for (const p of ['q', 'k', 'v']) e.push([`${b}attn_${p}.weight`, [C, C]]);
      if (bias) for (const p of ['q', 'k', 'v']) e.push([`${b}attn_${p}.bias`, [C]]);
    }
    e.push([`${b}attn_output.weight`, [C, C]], [`${b}attn_output_norm.weight`, [C]], [`${b}attn_output_norm.bias`, [C]]);
    if (c.activation === 'swiglu') e.push([`${b}ffn_gate.weight`, [F, C]]);
    e.push([`${b}ffn_up.weight`, [F, C]], [`${b}ffn_down.weight`, [C, F]], [`${b}layer_output_norm.weight`, [C]], [`${b}layer_output_norm.bias`, [C]]);
    if (bias) e.push([`${b}attn_output.bias`, [C]], [`${b}ffn_up.bias`, [F]], [`${b}ffn_down.bias`, [C]]);
  }
  if (c.classifier?.dense) e.push(['cls.weight', [C, C]], ['cls.bias', [C]]);
  if (c.classifier && c.classifier.outputs > 0) e.push(['cls.output.weight', [c.classifier.outputs, C]], ['cls.output.bias', [c.classifier.outputs]]);
  return e;
}

/**
 * Uploads an encoder's weights, checking each shape against the config first.
 * @example
 * const weights = await loadBertWeights(gpu, config, model.tensors, { quantize: 'q8_0' });
 */
export async function loadBertWeights(
  gpu: Gpu,
  c: EncoderConfig,
  tensors: TensorTable,
  options: { signal?: AbortSignal; quantize?: UploadOptions['quantize'] } = {},
): Promise<BertWeights> {
  const file = [...tensors.values()][0]?.source.name ?? 'model';
  const fusedQkv = tensors.has('blk.0.attn_qkv.weight');
  const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
  let total = 0;
  for (const [name, shape] of expectedTensors(c, fusedQkv)) {
    const t = tensors.get(name);
    if (!t) throw new ModelMismatchError(file, `tensor '${name}'`, `present with shape [${shape.join(', ')}]`, 'missing');
    const same = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
    if (!same && !(shape.length === 1 && count(t.shape) === shape[0])) {
      throw new ModelMismatchError(t.source.name, `tensor '${name}' shape`, `[${shape.join(', ')}]`, `[${t.shape.join(', ')}]`);
    }
    total += t.byteLength;
  }
  const owned: { destroy(): void }[] = [];
  const opts: UploadOptions = { signal: options.signal, quantize: options.quantize };
  const matrix = async (name: string, label: string): Promise<WeightTensor> => {
    const t = tensors.get(name)!;
    const w = createWeight(gpu, { dtype: uploadDtype(t, options.quantize), n: t.shape[0], k: t.shape[1], label });
    owned.push(w);
    await uploadRows(gpu, t, w, 0, opts);
    return w;
  };
  /** Matrices of the same K stacked by rows into one tensor when their GPU formats match and rows stay 4-byte aligned. */
  const stacked = async (names: string[], label: string): Promise<WeightTensor[]> => {
    const infos = names.map((n) => tensors.get(n)!);
    const dtypes = infos.map((i) => uploadDtype(i, options.quantize));
    const rb = rowBytes(dtypes[0], infos[0].shape[1]);
    if (!dtypes.every((d) => d === dtypes[0]) || infos.some((i) => (i.shape[0] * rb) % 4 !== 0)) {
      const out: WeightTensor[] = [];
      for (const n of names) out.push(await matrix(n, `${label}:${n}`));
      return out;
    }
    const w = createWeight(gpu, { dtype: dtypes[0], n: infos.reduce((s, i) => s + i.shape[0], 0), k: infos[0].shape[1], label });
    owned.push(w);
    let row = 0;
    for (const info of infos) {
      await uploadRows(gpu, info, w, row, opts);
      row += info.shape[0];
    }
    return [w];
  };
  /** 1-D tensors joined into one f32 buffer, in order. */
  const joined = async (names: string[], label: string): Promise<GPUBuffer> => {
    const parts = await Promise.all(names.map((n) => readVector(tensors.get(n)!, opts)));
    const values = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) (values.set(p, at), (at += p.length));
    const buffer = uploadF32(gpu, values, label);
    owned.push(buffer);
    return buffer;
  };
  const norm = async (name: string, label: string): Promise<NormWeights> => ({
    gamma: await joined([`${name}.weight`], `${label}.gamma`),
    beta: await joined([`${name}.bias`], `${label}.beta`),
  });
  try {
    const C = c.hidden;
    const tokens = await matrix('token_embd.weight', 'token_embd');
    const types = c.typeVocab > 0 ? await readVector(tensors.get('token_types.weight')!, opts) : new Float32Array(C);
    const typeRow0 = types.subarray(0, C);
    const typeTables = c.absolutePositions && c.typeVocab >= 2 ? 2 : 1;
    let positions: WeightTensor | undefined;
    let typeRow: GPUBuffer | undefined;
    if (c.absolutePositions) {
      const P = c.maxPositions;
      const pos = (await readVector(tensors.get('position_embd.weight')!, opts)).subarray(0, P * C);
      const table = new Float32Array(typeTables * P * C);
      for (let t = 0; t < typeTables; t++) {
        for (let p = 0; p < P; p++) for (let i = 0; i < C; i++) table[(t * P + p) * C + i] = pos[p * C + i] + types[t * C + i];
      }
      positions = createWeight(gpu, { dtype: 'f32', n: typeTables * P, k: C, label: 'position_embd+types', data: new Uint8Array(table.buffer) });
      owned.push(positions);
    } else if (c.typeVocab > 0) {
      typeRow = uploadF32(gpu, typeRow0.slice(), 'token_types[0]');
      owned.push(typeRow);
    }
    const embedNorm = await norm('token_embd_norm', 'token_embd_norm');
    const layers: BertLayerWeights[] = [];
    const bias = c.projectionBias;
    for (let i = 0; i < c.layers; i++) {
      const b = `blk.${i}.`;
      const L = `L${i}.`;
      const qkv = fusedQkv ? [await matrix(`${b}attn_qkv.weight`, `${L}attn.qkv`)] : await stacked(['q', 'k', 'v'].map((p) => `${b}attn_${p}.weight`), `${L}attn.qkv`);
      const qkvBias = !bias ? undefined : await joined(fusedQkv ? [`${b}attn_qkv.bias`] : ['q', 'k', 'v'].map((p) => `${b}attn_${p}.bias`), `${L}attn.qkv.bias`);
      const o = await matrix(`${b}attn_output.weight`, `${L}attn.o`);
      const oBias = bias ? await joined([`${b}attn_output.bias`], `${L}attn.o.bias`) : undefined;
      const attnNorm = await norm(`${b}attn_output_norm`, `${L}attn_output_norm`);
      const upW = c.activation === 'swiglu' ? await stacked([`${b}ffn_gate.weight`, `${b}ffn_up.weight`], `${L}ffn.gate_up`) : [await matrix(`${b}ffn_up.weight`, `${L}ffn.up`)];
      const upBias = bias ? await joined([`${b}ffn_up.bias`], `${L}ffn.up.bias`) : undefined;
      const down = await matrix(`${b}ffn_down.weight`, `${L}ffn.down`);
      const downBias = bias ? await joined([`${b}ffn_down.bias`], `${L}ffn.down.bias`) : undefined;
      const outNorm = await norm(`${b}layer_output_norm`, `${L}layer_output_norm`);
      layers.push({ qkv, qkvBias, o, oBias, attnNorm, up: upW, upBias, down, downBias, outNorm });
    }
    let head: BertWeights['head'];
    if (c.classifier) {
      head = {};
      if (c.classifier.dense) head.dense = { w: await matrix('cls.weight', 'cls.dense'), b: await joined(['cls.bias'], 'cls.dense.bias') };
      if (c.classifier.outputs > 0) head.out = { w: await matrix('cls.output.weight', 'cls.output'), b: await joined(['cls.output.bias'], 'cls.output.bias') };
    }
    let destroyed = false;
    return {
      tokens,
      positions,
      typeTables,
      typeRow,
      embedNorm,
      layers,
      head,
      bytes: total,
      destroy() {
        if (destroyed) return;
        destroyed = true;
        for (const x of owned) x.destroy();
      },
    };
  } catch (err) {
    for (const x of owned) x.destroy();
    throw err;
  }
}
