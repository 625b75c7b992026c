// The node tier's check of a decoder embedding model against llama.cpp (test-only, as test-llamacpp.ts): `intab
// make-model --like <shape>` writes the seeded GGUF with its real tokenizer; llama.cpp (node-llama-cpp's embedding
// context, one thread) embeds the texts one by one; intab reads the same file (openAnyGguf, the
// GGUF's tokenizer, the CPU reference: the Llama-family forward's final-norm states, pooled and projected). The ids must
// be llama.cpp's, every vector within `min` cosine of llama.cpp's, its length before normalisation llama.cpp's (which
// returns it unnormalised), and a text encoded with the others the same vector as alone. So that the bar cannot be met
// by accident, the texts' vectors are far apart, and the reference with one family-specific part changed falls below it.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { isDecoderEmbeddingFiles, openAnyGguf, openTokenizer, pathSource, type DecoderEmbeddingConfig, type LlamaConfig, type Tokenizer } from '@intab/model';
import { encodeDecoderReference, loadDecoderEmbeddingWeights, type DecoderEmbeddingWeights } from '@intab/model/reference';
import { EMBED_INPUTS as INPUTS, cosine } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from './make-model.ts';
import { llamaCppDecoderEmbeddings } from './test-llamacpp.ts';

export interface DecoderEmbedCase {
  like: string;
  dtype: WeightDtype;
  layers: number;
  /** Cosine every vector must reach. */
  min: number;
  /** |length of llama.cpp's vector / length of ours before normalisation − 1| at most. */
  lengthTolerance: number;
  /** Which of TEXTS are embedded. */
  inputs: readonly number[];
  /** Indices into `inputs` also encoded alone. */
  alone: readonly number[];
  /** What the file's config must hold. */
  config: Omit<Partial<DecoderEmbeddingConfig>, 'decoder'> & { decoder: Partial<LlamaConfig> };
  /** The config with one part of the family changed: each must leave the bar on the `few` inputs (indices into `inputs`). */
  without: Record<string, (c: DecoderEmbeddingConfig) => DecoderEmbeddingConfig>;
  few: readonly number[];
  /** llama.cpp's context (and batch): the longest input must fit. */
  context: number;
}

/** Every embed input's index. */
export const ALL = INPUTS.map((_, i) => i);
/** Index in TEXTS of the six longest inputs as one text (~460 Gemma tokens), so that a 512 window (±256) matters. */
export const LONG = INPUTS.length;
/** The 20 embed inputs (one word to ~150 tokens), then LONG. */
export const TEXTS = [...INPUTS, INPUTS.slice(14).join(' ')];

const norm = (a: ArrayLike<number>) => Math.sqrt(Array.from(a).reduce((s, x) => s + x * x, 0));

/** What intab reads of the file: its config, its tokenizer and a loader of its weights (as f32) under a config. */
async function intab(file: string): Promise<{ config: DecoderEmbeddingConfig; tokenizer: Tokenizer; load: (config?: DecoderEmbeddingConfig) => DecoderEmbeddingWeights }> {
  const files = await openAnyGguf(await pathSource(file));
  if (!isDecoderEmbeddingFiles(files)) throw new Error(`${file} did not open as a decoder embedding model`);
  const tokenizer = openTokenizer(files);
  if (!tokenizer) throw new Error(`${file} carries no tokenizer`);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of files.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    tensors.set(name, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return { config: files.config, tokenizer, load: (config = files.config) => loadDecoderEmbeddingWeights(config, (n) => tensors.get(n), file) };
}

/** Runs one case (see the file header); prints its measurements as a JSON line. */
export async function checkDecoderEmbedding(c: DecoderEmbedCase): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'intab-decoder-embed-'));
  try {
    const out = join(dir, `${c.like}-${c.dtype}-${c.layers}.gguf`);
    const written = writeSyntheticModel({ like: c.like, dtype: c.dtype, out, seed: 5, layers: c.layers });
    expect(written).toMatchObject({ like: c.like, layers: c.layers, vocab: c.config.decoder.vocab });
    const texts = c.inputs.map((i) => TEXTS[i]);
    const theirs = await llamaCppDecoderEmbeddings(out, texts, c.context);
    const { config, tokenizer, load } = await intab(out);
    rmSync(out, { force: true });
    expect(config).toMatchObject({ ...c.config, decoder: expect.objectContaining(c.config.decoder) });
    const weights = load();

    // Token ids: ours are llama.cpp's, BOS / EOS as the GGUF says.
    const ids = texts.map((t) => tokenizer.encode(t));
    expect(ids).toEqual(theirs.ids);

    // Vectors: all texts in one call.
    const batch = encodeDecoderReference(weights, ids);
    expect(theirs.vectors[0]).toHaveLength(batch.vectors[0].length);
    const cos = batch.vectors.map((v, i) => cosine(v, theirs.vectors[i]));
    const lengthRatio = batch.pooled.map((p, i) => norm(theirs.vectors[i]) / norm(p));
    let apart = -1;
    for (let i = 0; i < texts.length; i++) for (let j = 0; j < texts.length; j++) if (i !== j) apart = Math.max(apart, cosine(batch.vectors[i], theirs.vectors[j]));
    const without = Object.fromEntries(Object.entries(c.without).map(([part, edit]) => {
      const edited = encodeDecoderReference(load(edit(config)), c.few.map((i) => ids[i])).vectors;
      return [part, Math.max(...edited.map((v, k) => cosine(v, theirs.vectors[c.few[k]])))];
    }));
    console.log(JSON.stringify({ test: 'decoder-embed-llamacpp', like: c.like, dtype: c.dtype, layers: c.layers, texts: texts.length, tokens: ids.flat().length, longest: Math.max(...ids.map((s) => s.length)), min_cosine: Math.min(...cos), max_length_ratio_gap: Math.max(...lengthRatio.map((r) => Math.abs(r - 1))), max_cosine_between_texts: apart, cosine_without: without }));
    for (const [i, v] of cos.entries()) expect(v, `input ${c.inputs[i]}: ${JSON.stringify(texts[i].slice(0, 40))}`).toBeGreaterThanOrEqual(c.min);
    for (const r of lengthRatio) expect(Math.abs(r - 1)).toBeLessThan(c.lengthTolerance);
    for (const v of batch.vectors) expect(norm(v)).toBeCloseTo(1, 6);
    // The bar is not met by accident: different texts are far apart, and each family part matters.
    expect(apart).toBeLessThan(0.99);
    for (const [part, best] of Object.entries(without)) expect(best, `without ${part}`).toBeLessThan(c.min);

    // Batched = one by one, bit for bit.
    for (const i of c.alone) expect(encodeDecoderReference(weights, [ids[i]]).vectors[0]).toEqual(batch.vectors[i]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
