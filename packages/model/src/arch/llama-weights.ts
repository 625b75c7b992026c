// The Llama family's weights on the GPU, in the spirit of llama2.c's TransformerWeights: every tensor checked
// against the config before anything is allocated, then streamed from its file in its stored format (or quantized
// on the way). Projections that read the same input are stacked into one tensor where their formats match, so one
// GEMV computes them: [q; k; v] and [gate; up]. The bytes are hashed as they pass (what identifies these weights).
// Qwen3.5: a Gated DeltaNet layer's q|k|v and out projections take the places of attention's (qkv, o), with its
// [z; b; a] projections, conv taps, gates and norm beside them (linear); a gated attention layer's q projection,
// each head's q rows then its gate rows, is split by rows on the way into [q; k; v] and the gate (qGate).

import { createWeight, rowBytes, type Gpu, type WeightDtype, type WeightTensor } from '@intab/gpu';
import { createXXHash128 } from 'hash-wasm';
import type { LlamaConfig } from '../config.ts';
import { ffnNormName } from '../tensor-names.ts';
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
  /** (H D, C): the output-gate rows of a gated attention layer's q projection (config.attnOutputGate). */
  qGate?: WeightTensor;
  /** A Gated DeltaNet layer (config.linearAttention): qkv is then its q|k|v projection and o its out projection. */
  linear?: LinearLayerWeights;
}

/** What a Gated DeltaNet layer has beside its q|k|v and out projections. */
export interface LinearLayerWeights {
  /** [z; b; a] ((Hv Dv + 2 Hv), C): the output gate, β and decay projections, one tensor when their formats match. */
  zba: readonly WeightTensor[];
  /** (channels, K) f32: the causal conv's taps. */
  conv: GPUBuffer;
  /** [ssm_a | dt_bias] (2 Hv) f32. */
  gates: GPUBuffer;
  /** (Dv) f32: the gated RMSNorm's weight. */
  norm: GPUBuffer;
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
  const linear = new Set(c.linearAttention?.layers ?? []);
  for (let i = 0; i < c.layers; i++) {
    const b = `blk.${i}.`;
    expect.push([`${b}attn_norm.weight`, [C]]);
    if (linear.has(i)) {
      const { kHeads: Hk, vHeads: Hv, kDim: Dk, vDim: Dv, convKernel: K } = c.linearAttention!;
      const channels = 2 * Hk * Dk + Hv * Dv;
      expect.push(
        [`${b}attn_qkv.weight`, [channels, C]],
        [`${b}attn_gate.weight`, [Hv * Dv, C]],
        [`${b}ssm_beta.weight`, [Hv, C]],
        [`${b}ssm_alpha.weight`, [Hv, C]],
        [`${b}ssm_conv1d.weight`, [channels, K]],
        [`${b}ssm_dt.bias`, [Hv]],
        [`${b}ssm_a`, [Hv]],
        [`${b}ssm_norm.weight`, [Dv]],
        [`${b}ssm_out.weight`, [C, Hv * Dv]],
      );
    } else {
      expect.push(
        [`${b}attn_q.weight`, [(c.attnOutputGate ? 2 : 1) * H * D, C]],
        [`${b}attn_k.weight`, [Hkv * D, C]],
        [`${b}attn_v.weight`, [Hkv * D, C]],
        [`${b}attn_output.weight`, [C, H * D]],
      );
      if (c.qkvBias) expect.push([`${b}attn_q.bias`, [H * D]], [`${b}attn_k.bias`, [Hkv * D]], [`${b}attn_v.bias`, [Hkv * D]]);
      if (c.qkNorm) expect.push([`${b}attn_q_norm.weight`, [D]], [`${b}attn_k_norm.weight`, [D]]);
      if (c.postNorms) expect.push([`${b}post_attention_norm.weight`, [C]]);
    }
    expect.push([ffnNormName(c, i), [C]], [`${b}ffn_gate.weight`, [F, C]], [`${b}ffn_up.weight`, [F, C]], [`${b}ffn_down.weight`, [C, F]]);
    if (c.postNorms) expect.push([`${b}post_ffw_norm.weight`, [C]]);
  }
  return expect;
}

/**
 * A gated q projection's rows for one part of every head ((H, 2, D) rows: part 0 the queries, 1 the output gates), as
 * views of the stored tensor named `${name}#${part}.${h}`: rows of any stored format are contiguous bytes.
 */
function headRowViews(info: TensorInfo, name: string, heads: number, D: number, part: 0 | 1): Map<string, TensorInfo> {
  const rb = rowBytes(info.dtype as WeightDtype, info.shape[1]);
  const views = new Map<string, TensorInfo>();
  for (let h = 0; h < heads; h++) {
    const first = h * 2 * D + part * D;
    views.set(`${name}#${part}.${h}`, { ...info, shape: [D, info.shape[1]], offset: info.offset + first * rb, byteLength: D * rb });
  }
  return views;
}

/** Upload every weight, checking each shape against the config before allocating. */
export async function loadLlamaWeights(
  gpu: Gpu,
  c: LlamaConfig,
  stored: TensorTable,
  options: { signal?: AbortSignal; onProgress?: (p: LoadProgress) => void; quantize?: 'q8_0' | 'q4_0' } = {},
): Promise<LlamaWeights> {
  let total = 0;
  const tensors = new Map(stored); // and the row views of gated q projections, added once checked
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
  if (c.attnOutputGate) {
    for (let i = 0; i < c.layers; i++) {
      const name = `blk.${i}.attn_q.weight`;
      const q = tensors.get(name);
      if (!q) continue; // a Gated DeltaNet layer
      for (const part of [0, 1] as const) for (const [n, v] of headRowViews(q, name, c.heads, c.headDim, part)) tensors.set(n, v);
    }
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
    const linearLayers = new Set(c.linearAttention?.layers ?? []);
    for (let i = 0; i < c.layers; i++) {
      const b = `blk.${i}.`;
      const L = `L${i}.`;
      // In the order the tensors were always read (the weights' hash depends on it).
      const attnNorm = await vector(`${b}attn_norm.weight`, `${L}attn_norm`);
      if (linearLayers.has(i)) {
        const qkv = [await matrix(`${b}attn_qkv.weight`, `${L}linear.qkv`)];
        const zba = await stacked([`${b}attn_gate.weight`, `${b}ssm_beta.weight`, `${b}ssm_alpha.weight`], [`${L}linear.z`, `${L}linear.b`, `${L}linear.a`], `${L}linear.zba`, false);
        const conv = await joined([`${b}ssm_conv1d.weight`], `${L}linear.conv`);
        const gates = await joined([`${b}ssm_a`, `${b}ssm_dt.bias`], `${L}linear.gates`);
        const norm = await vector(`${b}ssm_norm.weight`, `${L}linear.norm`);
        const o = await matrix(`${b}ssm_out.weight`, `${L}linear.out`);
        const ffnNorm = await vector(ffnNormName(c, i), `${L}ffn_norm`);
        const gateUp = await stacked([`${b}ffn_gate.weight`, `${b}ffn_up.weight`], [`${L}ffn.gate`, `${L}ffn.up`], `${L}ffn.gate_up`, true);
        const down = await matrix(`${b}ffn_down.weight`, `${L}ffn.down`);
        layers.push({ attnNorm, qkv, o, ffnNorm, gateUp, down, linear: { zba, conv, gates, norm } });
        continue;
      }
      const gated = c.attnOutputGate === true;
      const qName = `${b}attn_q.weight`;
      const heads = (part: 0 | 1) => Array.from({ length: c.heads }, (_, h) => `${qName}#${part}.${h}`);
      const qParts = gated ? heads(0) : [qName];
      const qkv = await stacked([...qParts, `${b}attn_k.weight`, `${b}attn_v.weight`], [...qParts.map((_, h) => `${L}attn.q${gated ? h : ''}`), `${L}attn.k`, `${L}attn.v`], `${L}attn.qkv`, false);
      const qGate = gated ? await stacked(heads(1), heads(1).map((_, h) => `${L}attn.q_gate${h}`), `${L}attn.q_gate`, false) : undefined;
      if (qGate && qGate.length !== 1) throw new ModelMismatchError(stored.get(qName)!.source.name, `tensor '${qName}'`, 'gate rows that stack into one tensor', `${qGate.length} parts`);
      const o = await matrix(`${b}attn_output.weight`, `${L}attn.o`);
      const qkvBias = c.qkvBias ? await joined([`${b}attn_q.bias`, `${b}attn_k.bias`, `${b}attn_v.bias`], `${L}attn.qkv.bias`) : undefined;
      const qkNorm = c.qkNorm ? await joined([`${b}attn_q_norm.weight`, `${b}attn_k_norm.weight`], `${L}attn.qk_norm`) : undefined;
      const ffnNorm = await vector(ffnNormName(c, i), `${L}ffn_norm`);
      const gateUp = await stacked([`${b}ffn_gate.weight`, `${b}ffn_up.weight`], [`${L}ffn.gate`, `${L}ffn.up`], `${L}ffn.gate_up`, true);
      const down = await matrix(`${b}ffn_down.weight`, `${L}ffn.down`);
      const attnPostNorm = c.postNorms ? await vector(`${b}post_attention_norm.weight`, `${L}attn_post_norm`) : undefined;
      const ffnPostNorm = c.postNorms ? await vector(`${b}post_ffw_norm.weight`, `${L}ffn_post_norm`) : undefined;
      layers.push({ attnNorm, qkv, qkvBias, qkNorm, o, attnPostNorm, ffnNorm, ffnPostNorm, gateUp, down, ...(qGate ? { qGate: qGate[0] } : {}) });
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
