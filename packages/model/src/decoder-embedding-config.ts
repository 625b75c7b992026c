// DecoderEmbeddingConfig: an embedding model whose layers are a decoder's (a LlamaConfig, run by the same forward as a
// text generator) — Qwen3-Embedding (GGUF `qwen3` with a pooling_type: causal attention, the last token's state) and
// EmbeddingGemma (GGUF `gemma-embedding`: Gemma 3's layer attending both ways, its sliding window made symmetric, mean
// pooling, then sentence-transformers' Dense projections, llama.cpp's dense_2 / dense_3). What differs from the text
// generator is here, as fields: the attention's direction, the pooling, the projections after it, normalisation.
// decoderEmbeddingConfigFromGguf reads what llama.cpp reads and throws typed errors naming the file and key.

import { ggufModelNames, trainedForMatryoshka } from './matryoshka.ts';
import { configFromGguf, type LlamaConfig, type TensorShapeLike } from './config.ts';
import type { EncoderFacts, Pooling } from './encoder-runner.ts';
import { ModelFormatError, UnsupportedModelError } from './errors.ts';

/** A projection after pooling: y (rows) = W (rows, cols) · x (cols), no bias (llama.cpp's dense_2 / dense_3). */
export interface DenseProjection {
  /** The tensor's canonical name: 'dense_2.weight', 'dense_3.weight'. */
  name: string;
  rows: number;
  cols: number;
}

export interface DecoderEmbeddingConfig {
  /** The GGUF architecture: 'qwen3' (Qwen3-Embedding), 'gemma-embedding' (EmbeddingGemma), … */
  arch: string;
  /** The layers, as the text generator's config describes them (slidingWindow: the GGUF's n_swa). */
  decoder: LlamaConfig;
  /**
   * 'causal': a token attends to itself and earlier ones (Qwen3-Embedding); 'bidirectional': to every token of its
   * sequence (EmbeddingGemma), and a sliding layer's window is symmetric, |i − j| ≤ ⌊slidingWindow / 2⌋
   * (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC).
   */
  attention: 'causal' | 'bidirectional';
  /** How the final-norm states of a sequence become one vector (over every token, BOS/EOS included). */
  pooling: Pooling;
  /** Projections applied in order after pooling (EmbeddingGemma: 768 → 3072 → 768); empty for most models. */
  dense: readonly DenseProjection[];
  /** The vector is L2-normalised (llama.cpp's server and llama-embedding normalise by default). */
  normalize: boolean;
  /** Trained with Matryoshka dimensions (its name is one of matryoshka.ts's): `dimensions` may cut its vectors. */
  matryoshka?: boolean;
}

/** GGUF architectures that are decoders trained to embed whatever their pooling_type says. */
const EMBEDDING_ONLY_ARCHS = new Set(['gemma-embedding']);
/** Decoder architectures that are embedding models when the GGUF gives them a pooling type (1 mean, 2 cls, 3 last). */
const POOLED_DECODER_ARCHS = new Set(['qwen3', 'qwen2', 'llama', 'mistral', 'gemma3']);
/** llama_pooling_type. */
const GGUF_POOLING: Readonly<Record<number, Pooling>> = { 1: 'mean', 2: 'cls', 3: 'last' };

/**
 * Whether a GGUF's metadata is a decoder trained to embed: `gemma-embedding`, or a decoder architecture with a
 * pooling_type other than 0 (none) — Qwen3-Embedding is `qwen3` with pooling_type 3 (last).
 * @example
 * if (isDecoderEmbeddingGguf(Object.fromEntries(gguf.metadata))) files = ggufDecoderEmbeddingFiles(gguf);
 */
export function isDecoderEmbeddingGguf(metadata: Record<string, unknown>): boolean {
  const arch = metadata['general.architecture'];
  if (typeof arch !== 'string') return false;
  if (EMBEDDING_ONLY_ARCHS.has(arch)) return true;
  const pooling = metadata[`${arch}.pooling_type`];
  return POOLED_DECODER_ARCHS.has(arch) && pooling !== undefined && Number(pooling) !== 0;
}

/**
 * The embedding model's config from GGUF metadata (and the tensor list, for what the metadata leaves out). Qwen3-Embedding
 * (and any llama-family decoder with a pooling type) keeps its causal layers; `gemma-embedding` is read as Gemma 3's keys
 * are, then set as llama.cpp's llama_model_gemma_embedding sets it: attention both ways with a symmetric window on the
 * sliding layers (every layer but each `attention.sliding_window_pattern`-th, 6 by default), 1/√D attention scale, the
 * local layers' RoPE base from rope.freq_base_swa (10,000 by default), and dense_2 / dense_3 when the file has them.
 * @example
 * const config = decoderEmbeddingConfigFromGguf(Object.fromEntries(gguf.metadata), 'embeddinggemma.gguf', gguf.tensors);
 * config.attention; // 'bidirectional'
 */
export function decoderEmbeddingConfigFromGguf(metadata: Record<string, unknown>, file: string, tensors?: readonly TensorShapeLike[]): DecoderEmbeddingConfig {
  const arch = metadata['general.architecture'];
  if (typeof arch !== 'string') throw new ModelFormatError(file, 'general.architecture', arch === undefined ? 'is missing' : 'should be a string');
  const p = `${arch}.`;
  const rawPooling = metadata[`${p}pooling_type`];
  let pooling: Pooling;
  if (rawPooling === undefined) {
    if (arch !== 'gemma-embedding') throw new ModelFormatError(file, `${p}pooling_type`, 'is missing: a decoder is an embedding model only with a pooling type (1 mean, 2 cls, 3 last)');
    pooling = 'mean'; // EmbeddingGemma's sentence-transformers pooling
  } else {
    const t = Number(rawPooling);
    if (t === 4) throw new UnsupportedModelError(file, `${p}pooling_type`, '4 (rank)', 'this is a reranker (Qwen3-Reranker scores with its lm_head), not an embedding model: intab does not rerank with decoders');
    const named = GGUF_POOLING[t];
    if (!named) throw new ModelFormatError(file, `${p}pooling_type`, `should be 1 (mean), 2 (cls) or 3 (last) but is ${String(rawPooling)}`);
    pooling = named;
  }
  if (arch !== 'gemma-embedding') {
    const decoder = configFromGguf(metadata, file, tensors);
    if (decoder.linearAttention) throw new UnsupportedModelError(file, 'general.architecture', arch, 'intab embeds with attention-only decoders');
    return { arch, decoder, attention: 'causal', pooling, dense: [], normalize: true, ...(trainedForMatryoshka(ggufModelNames(metadata)) ? { matryoshka: true } : {}) };
  }

  // gemma-embedding: Gemma 3's keys under another prefix; read them as gemma3's, then set what differs.
  const asGemma3: Record<string, unknown> = { 'general.architecture': 'gemma3' };
  for (const [k, v] of Object.entries(metadata)) if (k !== 'general.architecture') asGemma3[k.startsWith(p) ? `gemma3.${k.slice(p.length)}` : k] = v;
  if (asGemma3['gemma3.attention.sliding_window'] === undefined) throw new ModelFormatError(file, `${p}attention.sliding_window`, 'is missing (llama.cpp requires it for gemma-embedding)');
  const base = configFromGguf(asGemma3, file, tensors);
  const swaTheta = metadata[`${p}rope.freq_base_swa`];
  const localTheta = swaTheta === undefined ? 10000 : Number(swaTheta);
  if (!(localTheta > 0)) throw new ModelFormatError(file, `${p}rope.freq_base_swa`, `should be a positive number but is ${String(swaTheta)}`);
  const decoder: LlamaConfig = {
    ...base,
    rope: { ...base.rope, localTheta },
    slidingLayers: slidingLayers(metadata[`${p}attention.sliding_window_pattern`], base.layers, file, `${p}attention.sliding_window_pattern`),
    attnScale: 1 / Math.sqrt(base.headDim),
  };
  const dense = denseProjections(metadata, p, file, base.hidden, tensors);
  return { arch, decoder, attention: 'bidirectional', pooling, dense, normalize: true, ...(trainedForMatryoshka(ggufModelNames(metadata)) ? { matryoshka: true } : {}) };
}

/** llama.cpp's load_swa_pattern: a per-layer flag array, or every n-th layer dense (n = 6 when absent; 0: all sliding). */
function slidingLayers(raw: unknown, layers: number, file: string, key: string): number[] {
  if (Array.isArray(raw)) {
    if (raw.length < layers) throw new ModelFormatError(file, key, `should hold ${layers} flags (one per layer)`);
    return raw.slice(0, layers).flatMap((f, i) => (f === true || f === 1 ? [i] : []));
  }
  const n = raw === undefined ? 6 : Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ModelFormatError(file, key, `should be a whole number but is ${String(raw)}`);
  return Array.from({ length: layers }, (_, i) => i).filter((i) => n === 0 || i % n < n - 1);
}

/** dense_2 (N, C) then dense_3 (C, N) when the file has them (convert_hf_to_gguf.py --sentence-transformers-dense-modules). */
function denseProjections(m: Record<string, unknown>, p: string, file: string, hidden: number, tensors?: readonly TensorShapeLike[]): DenseProjection[] {
  const out: DenseProjection[] = [];
  const names = tensors ? new Map(tensors.map((t) => [t.name, t.shape])) : undefined;
  for (const n of [2, 3]) {
    const name = `dense_${n}.weight`;
    const shape = names?.get(name);
    const featIn = m[`${p}dense_${n}_feat_in`];
    const featOut = m[`${p}dense_${n}_feat_out`];
    if (!shape) {
      if (names || featIn === undefined) continue;
      out.push({ name, rows: Number(featOut), cols: Number(featIn) });
      continue;
    }
    if (shape.length !== 2 || (featOut !== undefined && shape[0] !== Number(featOut)) || (featIn !== undefined && shape[1] !== Number(featIn))) {
      throw new ModelFormatError(file, name, `should be (${String(featOut ?? 'dense_feat_out')}, ${String(featIn ?? 'dense_feat_in')}) as ${p}dense_${n}_feat_out / _in say, but is [${shape.join(', ')}]`);
    }
    out.push({ name, rows: shape[0], cols: shape[1] });
  }
  // The chain must start and end at the hidden size (llama.cpp asserts dense_2_feat_in and dense_3_feat_out = n_embd).
  let width = hidden;
  for (const d of out) {
    if (d.cols !== width) throw new ModelFormatError(file, d.name, `should read ${width} values (the previous width) but reads ${d.cols}`);
    width = d.rows;
  }
  if (width !== hidden) throw new UnsupportedModelError(file, out.at(-1)?.name ?? 'dense', String(width), `the projections should end at the hidden size ${hidden}, as llama.cpp requires`);
  return out;
}

/**
 * What the engine needs to know of a decoder embedding model (EncoderRunner.facts).
 * @example
 * decoderEmbeddingFacts(config).dimensions; // 1024 for Qwen3-Embedding-0.6B
 */
export function decoderEmbeddingFacts(c: DecoderEmbeddingConfig): EncoderFacts {
  const d = c.decoder;
  // Both models were trained with Matryoshka (MRL) dimensions; no GGUF key says so, the model's name does (matryoshka.ts).
  return { arch: c.arch, layers: d.layers, hidden: d.hidden, vocab: d.vocab, contextLength: d.maxContext, dimensions: c.dense.at(-1)?.rows ?? d.hidden, pooling: c.pooling, normalized: c.normalize, matryoshka: c.matryoshka ?? false };
}
