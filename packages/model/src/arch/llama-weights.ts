// The Llama family's weights on the GPU, in the spirit of llama2.c's TransformerWeights: every tensor checked
// against the config before anything is allocated, then streamed from its file in its stored format (or quantized
// on the way). Projections that read the same input are stacked into one tensor where their formats match, so one
// GEMV computes them: [q; k; v] and [gate; up]. The bytes are hashed as they pass (what identifies these weights).

import { createWeight, rowBytes, type Gpu, type WeightTensor } from '@intab/gpu';
import { createXXHash128 } from 'hash-wasm';
import type { LlamaConfig } from '../config.ts';
import { ModelMismatchError } from '../errors.ts';
import type { TensorInfo } from '../types.ts';
import { readVector, uploadDtype, uploadF32, uploadRows, uploadVector, type UploadOptions } from '../upload.ts';

export interface LayerWeights {
  attnNorm: GPUBuffer; // (C) f32
  /** The q, k and v projections: one [q; k; v] ((H + 2 Hkv) D, C) tensor when their formats match, else the three. */
  qkv: readonly WeightTensor[];
  /** ((H + 2 Hkv) D) f32: the [q | k | v] biases (config.qkvBias). */
  qkvBias?: GPUBuffer;
  /** (2 D) f32: [q_norm | k_norm], the per-head RMSNorm weights (config.qkNorm). */
  qkNorm?: GPUBuffer;
  o: WeightTensor; // (C, H D)
  /** (C) f32: the norm of the attention output before the residual add (config.postNorms). */
  attnPostNorm?: GPUBuffer;
  ffnNorm: GPUBuffer; // (C) f32
  /** (C) f32: the norm of the feed-forward output before the residual add (config.postNorms). */
  ffnPostNorm?: GPUBuffer;
  /** gate and up: one [gate; up] (2F, C) tensor in one binding when their formats match, else the two. */
  gateUp: readonly WeightTensor[];
  down: WeightTensor; // (C, F)
}

export interface LlamaWeights {
  embed: WeightTensor; // (V, C)
  layers: LayerWeights[];
  outputNorm: GPUBuffer; // (C)
  output: WeightTensor; // (V, C); the embedding itself when tied
  /** (rotaryDim/2) llama.cpp rope_freqs factors, when config.rope.freqFactors. */
  ropeFreqs?: Float32Array;
  bytes: number;
  /**
   * 'xxh128:<hex>' over every tensor as read from its file, in load order, each with its name, shape and stored
   * dtype: what identifies these weights (saved KV pages are only restored into the same weights).
   */
  hash: string;
  destroy(): void;
}

/** Canonical (GGUF-style) tensor names to their stored tensors, e.g. 'blk.0.attn_q.weight'. */
export type TensorTable = ReadonlyMap<string, TensorInfo>;

export interface LoadProgress {
  loaded: number;
  total: number;
}

/** The tensors a config needs, with their shapes, in load order. */
function expectedTensors(c: LlamaConfig): [string, number[]][] {
  const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = c;
  const expect: [string, number[]][] = [['token_embd.weight', [V, C]], ['output_norm.weight', [C]]];
  if (!c.tiedEmbeddings) expect.push(['output.weight', [V, C]]);
  if (c.rope.freqFactors) expect.push(['rope_freqs.weight', [c.rope.rotaryDim / 2]]);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    expect.push(
      [`${b}attn_norm.weight`, [C]],
      [`${b}attn_q.weight`, [H * D, C]],
      [`${b}attn_k.weight`, [Hkv * D, C]],
      [`${b}attn_v.weight`, [Hkv * D, C]],
      [`${b}attn_output.weight`, [C, H * D]],
      [`${b}ffn_norm.weight`, [C]],
      [`${b}ffn_gate.weight`, [F, C]],
      [`${b}ffn_up.weight`, [F, C]],
      [`${b}ffn_down.weight`, [C, F]],
    );
    if (c.qkvBias) expect.push([`${b}attn_q.bias`, [H * D]], [`${b}attn_k.bias`, [Hkv * D]], [`${b}attn_v.bias`, [Hkv * D]]);
    if (c.qkNorm) expect.push([`${b}attn_q_norm.weight`, [D]], [`${b}attn_k_norm.weight`, [D]]);
    if (c.postNorms) expect.push([`${b}post_attention_norm.weight`, [C]], [`${b}post_ffw_norm.weight`, [C]]);
  }
  return expect;
}

/** Upload every weight, checking each shape against the config before allocating. */
export async function loadLlamaWeights(
  gpu: Gpu,
  c: LlamaConfig,
  tensors: TensorTable,
  options: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void; quantize?: 'q8_0' | 'q4_0' } = {},
): Promise<LlamaWeights> {
  let total = 0;
  for (const [name, shape] of expectedTensors(c)) {
    const t = tensors.get(name);
    const file = t?.source.name ?? [...tensors.values()][0]?.source.name ?? 'model';
    if (!t) throw new ModelMismatchError(file, `tensor '${name}'`, `present with shape [${shape.join(', ')}]`, 'missing');
    const same = t.shape.length === shape.length && t.shape.every((d, i) => d === shape[i]);
    // 1-D tensors may be stored as [1, n] or [n]; compare element counts for them.
    const count = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
    if (!same && !(shape.length === 1 && count(t.shape) === shape[0])) {
      throw new ModelMismatchError(t.source.name, `tensor '${name}' shape`, `[${shape.join(', ')}]`, `[${t.shape.join(', ')}]`);
    }
    total += t.byteLength;
  }

  let loaded = 0;
  const owned: { destroy(): void }[] = [];
  // Hashed as they stream past (xxh128 in wasm: several GB/s, never the whole model in memory).
  const hash = await createXXHash128();
  hash.init();
  const progress = (name: string): UploadOptions => {
    const base = loaded;
    const t = tensors.get(name)!;
    hash.update(`${name}|${t.dtype}|${t.shape.join('x')}|`);
    return { signal: options.signal, quantize: options.quantize, onBytes: (b) => options.onProgress?.({ loaded: base + b, total }), hash };
  };
  const done = (name: string) => (loaded += tensors.get(name)!.byteLength);
  /**
   * The matrices `names` (same K), stacked into one tensor of their rows when their formats on the GPU match and
   * each starts on a 4-byte boundary (and, with onePart, they fit one binding); else one tensor each.
   */
  const stacked = async (names: string[], labels: string[], label: string, onePart: boolean): Promise<WeightTensor[]> => {
    const infos = names.map((n) => tensors.get(n)!);
    const dtypes = infos.map((i) => uploadDtype(i, options.quantize));
    const k = infos[0].shape[1];
    const rb = rowBytes(dtypes[0], k);
    const n = infos.reduce((s, i) => s + i.shape[0], 0);
    const limit = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
    let row = 0;
    const aligned = infos.every((i) => ((row * rb) % 4 === 0 ? ((row += i.shape[0]), true) : false));
    if (!dtypes.every((d) => d === dtypes[0]) || !aligned || (onePart && n * rb + 4 > limit)) {
      const out: WeightTensor[] = [];
      for (let i = 0; i < names.length; i++) out.push(await matrix(names[i], labels[i]));
      return out;
    }
    const w = createWeight(gpu, { dtype: dtypes[0], n, k, label });
    owned.push(w);
    let first = 0;
    for (let i = 0; i < names.length; i++) {
      await uploadRows(gpu, infos[i], w, first, progress(names[i]));
      done(names[i]);
      first += infos[i].shape[0];
    }
    return [w];
  };
  const matrix = async (name: string, label: string) => {
    const t = tensors.get(name)!;
    const w = createWeight(gpu, { dtype: uploadDtype(t, options.quantize), n: t.shape[0], k: t.shape[1], label });
    owned.push(w);
    await uploadRows(gpu, t, w, 0, progress(name));
    done(name);
    return w;
  };
  const vector = async (name: string, label: string) => {
    const b = await uploadVector(gpu, tensors.get(name)!, label, progress(name));
    owned.push(b);
    done(name);
    return b;
  };
  /** 1-D tensors joined into one f32 buffer, in order. */
  const joined = async (names: string[], label: string) => {
    const parts: Float32Array[] = [];
    for (const name of names) {
      parts.push(await readVector(tensors.get(name)!, progress(name)));
      done(name);
    }
    const values = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) (values.set(p, at), (at += p.length));
    const buffer = uploadF32(gpu, values, label);
    owned.push(buffer);
    return buffer;
  };
  try {
    const embed = await matrix('token_embd.weight', 'token_embd');
    const layers: LayerWeights[] = [];
    for (let i = 0; i < c.layers; i++) {
      const b = `blk.${i}.`;
      const L = `L${i}.`;
      // In the order the tensors were always read (the weights' hash depends on it).
      const attnNorm = await vector(`${b}attn_norm.weight`, `${L}attn_norm`);
      const qkv = await stacked([`${b}attn_q.weight`, `${b}attn_k.weight`, `${b}attn_v.weight`], [`${L}attn.q`, `${L}attn.k`, `${L}attn.v`], `${L}attn.qkv`, false);
      const o = await matrix(`${b}attn_output.weight`, `${L}attn.o`);
      const qkvBias = c.qkvBias ? await joined([`${b}attn_q.bias`, `${b}attn_k.bias`, `${b}attn_v.bias`], `${L}attn.qkv.bias`) : undefined;
      const qkNorm = c.qkNorm ? await joined([`${b}attn_q_norm.weight`, `${b}attn_k_norm.weight`], `${L}attn.qk_norm`) : undefined;
      const ffnNorm = await vector(`${b}ffn_norm.weight`, `${L}ffn_norm`);
      const gateUp = await stacked([`${b}ffn_gate.weight`, `${b}ffn_up.weight`], [`${L}ffn.gate`, `${L}ffn.up`], `${L}ffn.gate_up`, true);
      const down = await matrix(`${b}ffn_down.weight`, `${L}ffn.down`);
      const attnPostNorm = c.postNorms ? await vector(`${b}post_attention_norm.weight`, `${L}attn_post_norm`) : undefined;
      const ffnPostNorm = c.postNorms ? await vector(`${b}post_ffw_norm.weight`, `${L}ffn_post_norm`) : undefined;
      layers.push({ attnNorm, qkv, qkvBias, qkNorm, o, attnPostNorm, ffnNorm, ffnPostNorm, gateUp, down });
    }
    const outputNorm = await vector('output_norm.weight', 'output_norm');
    const output = c.tiedEmbeddings ? embed : await matrix('output.weight', 'output');
    const ropeFreqs = c.rope.freqFactors ? await readVector(tensors.get('rope_freqs.weight')!, progress('rope_freqs.weight')) : undefined;
    if (ropeFreqs) done('rope_freqs.weight');
    let destroyed = false;
    return {
      embed,
      layers,
      outputNorm,
      output,
      ropeFreqs,
      bytes: total,
      hash: `xxh128:${hash.digest('hex')}`,
      destroy() {
        if (destroyed) return;
        destroyed = true;
        for (const o of owned) o.destroy();
      },
    };
  } catch (err) {
    for (const o of owned) o.destroy();
    throw err;
  }
}
