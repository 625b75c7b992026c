// Model families against llama.cpp (node-llama-cpp's prebuilt CPU build, one thread, K/V in f32): a small random model
// of the family, written as GGUF by the make-model writer with stories260K's vocabulary (llama.cpp needs one), decoded
// greedily by llama.cpp and by intab's CPU reference (the twin that the WebGPU kernels and the ONNX graph are tested
// against, variant by variant). In f32: the ids must be llama.cpp's up to its end-of-text, and the next-token
// distribution after the prompt too (log-probabilities of llama.cpp's likeliest tokens, to rounding); in q8_0 and
// q4_0 the likeliest next token. q and k weights are written large, so attention is sharp and positions matter: a
// family's own layer (SmolLM3: no RoPE on every fourth layer) moves that distribution far more than rounding, so a
// family run as its plain-Llama neighbour is caught. Qwen3.5 (Gated DeltaNet layers beside gated attention) runs 64
// greedy steps, so its recurrent state carries through a long decode.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { dequantize, type WeightDtype } from '@intab/gpu';
import { hfValueTransform, openGguf, pathSource, type LlamaConfig } from '@intab/model';
import { createReferenceModel } from '@intab/model/reference';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { llamaCppGreedy, logProbGap, storiesTokenizer } from './test-llamacpp.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-families-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROMPT = [1, 403, 261, 310, 263, 411];
const STEPS = 16;

/**
 * intab's CPU reference: greedy ids after PROMPT (the lowest id among equal logits, as llama.cpp takes: rows the
 * generator repeats tie exactly), and the logits after PROMPT.
 */
function intabGreedy(config: LlamaConfig, tensors: Map<string, Float32Array>, steps = STEPS): { ids: number[]; logits: Float32Array } {
  const model = createReferenceModel(config, (n) => tensors.get(n));
  let logits = model.forward(PROMPT, 0);
  const first = logits;
  const ids: number[] = [];
  for (let i = 0; i < steps; i++) {
    let best = 0;
    for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
    ids.push(best);
    logits = model.forward([best], model.length);
  }
  return { ids, logits: first };
}

/** SmolLM3's layer at a size the CPU reference runs in a moment: 8 layers, so two are NoPE (3 and 7). */
const SMOLLM3: SyntheticShape = { hidden: 64, ffn: 128, layers: 8, heads: 4, kvHeads: 2, headDim: 16, vocab: 0, ropeTheta: 5000000, context: 256, arch: 'smollm3' };

/**
 * Gemma 3's layer at a size the CPU reference runs in a moment: 6 layers (five local with a window of 4 positions, the
 * sixth global), one kv head, so the window, the local RoPE base, the post-norms and √C all act within the prompt.
 */
const GEMMA3: SyntheticShape = { hidden: 64, ffn: 128, layers: 6, heads: 4, kvHeads: 1, headDim: 16, vocab: 0, ropeTheta: 1000000, context: 256, arch: 'gemma3', window: 4 };

/**
 * Qwen3.5's layers at a size the CPU reference runs in a moment: 4 layers (three Gated DeltaNet, the fourth gated
 * attention), 2 key heads to 4 value heads (so llama.cpp's tiled head order matters), a quarter of each attention head
 * rotated.
 */
const QWEN35: SyntheticShape = {
  hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 32, vocab: 0, ropeTheta: 10000000, context: 256, arch: 'qwen35',
  rotaryDim: 8, linear: { interval: 4, convKernel: 4, kHeads: 2, vHeads: 4, headDim: 16 },
};
const QWEN35_STEPS = 64;

/** The shape as a GGUF with stories260K's vocabulary (seed 11, sharp attention), and what intab reads of it (as f32). */
async function write(name: string, shape: SyntheticShape, dtype: WeightDtype): Promise<{ file: string; config: LlamaConfig; tensors: Map<string, Float32Array> }> {
  const file = join(dir, `${name}-${dtype}.gguf`);
  writeFileSync(file, syntheticGguf(shape, dtype, 11, { tokenizer: storiesTokenizer(), qkScale: 8 }));
  const model = await openGguf(await pathSource(file));
  const tensors = new Map<string, Float32Array>();
  for (const [n, t] of model.tensors) {
    const [rows, cols] = t.shape.length === 1 ? [1, t.shape[0]] : t.shape;
    tensors.set(n, dequantize(t.dtype as WeightDtype, await t.source.read(t.offset, t.byteLength), rows, cols));
  }
  return { file, config: model.config, tensors };
}

describe('model families: intab gives llama.cpp\'s greedy ids', () => {
  test('smollm3 (NoPE on layers 3 and 7 of 8): GGUF keys, RoPE style and the NoPE layers as llama.cpp reads them', { timeout: 120_000 }, async () => {
    const { file, config, tensors } = await write('smollm3', SMOLLM3, 'f32');
    expect(config).toMatchObject({ arch: 'smollm3', rope: { style: 'normal', noRopeLayers: [3, 7] } });
    const ours = intabGreedy(config, tensors);
    const theirs = await llamaCppGreedy(file, PROMPT);
    // llama.cpp stops at the end-of-text id; what it wrote up to there is ours.
    expect(theirs.ids.length).toBeGreaterThanOrEqual(8);
    expect(ours.ids.slice(0, theirs.ids.length)).toEqual(theirs.ids);
    const gap = logProbGap(theirs.probabilities, ours.logits);
    // The NoPE layers matter: with RoPE on every layer, the distribution leaves llama.cpp's by far more.
    const everywhere = logProbGap(theirs.probabilities, intabGreedy({ ...config, rope: { ...config.rope, noRopeLayers: [] } }, tensors).logits);
    console.log(JSON.stringify({ test: 'families', family: 'smollm3', log_prob_gap: gap, gap_with_rope_everywhere: everywhere }));
    // Both in f32 (K and V too): what is left is summation order and llama.cpp's own approximations (SiLU, softmax).
    expect(gap).toBeLessThan(0.01);
    expect(everywhere).toBeGreaterThan(10 * gap);
  });

  test('gemma3 (5 local layers of 6, window 4): GGUF keys, √C, post-norms, GeGLU, window and local RoPE base as llama.cpp reads them', { timeout: 120_000 }, async () => {
    const { file, config, tensors } = await write('gemma3', GEMMA3, 'f32');
    expect(config).toMatchObject({ arch: 'gemma3', activation: 'gelu_tanh', postNorms: true, qkNorm: true, slidingWindow: 4, slidingLayers: [0, 1, 2, 3, 4], embedScale: 8, rope: { style: 'neox', theta: 1000000, localTheta: 10000 } });
    const ours = intabGreedy(config, tensors);
    const theirs = await llamaCppGreedy(file, PROMPT);
    expect(theirs.ids.length).toBeGreaterThanOrEqual(8);
    expect(ours.ids.slice(0, theirs.ids.length)).toEqual(theirs.ids);
    const gap = logProbGap(theirs.probabilities, ours.logits);
    // Each of Gemma's own parts matters: without it, the distribution leaves llama.cpp's by far more.
    const without = {
      window: { ...config, slidingWindow: null },
      local_rope_base: { ...config, rope: { ...config.rope, localTheta: undefined } },
      embed_scale: { ...config, embedScale: 1 },
    };
    const gaps = Object.fromEntries(Object.entries(without).map(([k, c]) => [k, logProbGap(theirs.probabilities, intabGreedy(c, tensors).logits)]));
    console.log(JSON.stringify({ test: 'families', family: 'gemma3', log_prob_gap: gap, gap_without: gaps }));
    // llama.cpp's GELU reads a table at f16 inputs; the rest is summation order.
    expect(gap).toBeLessThan(0.02);
    for (const g of Object.values(gaps)) expect(g).toBeGreaterThan(5 * gap);
  });

  test('qwen35 (3 Gated DeltaNet layers + 1 gated attention layer): GGUF keys, conv, delta rule, gates and head order as llama.cpp runs them, over 64 steps', { timeout: 120_000 }, async () => {
    const { file, config, tensors } = await write('qwen35', QWEN35, 'f32');
    expect(config).toMatchObject({ arch: 'qwen35', attnOutputGate: true, qkNorm: true, fusedProjections: false, rope: { style: 'neox', rotaryDim: 8 }, linearAttention: { layers: [0, 1, 2], convKernel: 4, kHeads: 2, vHeads: 4, kDim: 16, vDim: 16 } });
    const ours = intabGreedy(config, tensors, QWEN35_STEPS);
    const theirs = await llamaCppGreedy(file, PROMPT, QWEN35_STEPS);
    expect(theirs.ids.length).toBeGreaterThanOrEqual(8);
    expect(ours.ids.slice(0, theirs.ids.length)).toEqual(theirs.ids);
    const gap = logProbGap(theirs.probabilities, ours.logits);
    // Each part of the layer matters: with it changed, the distribution leaves llama.cpp's by far more.
    const edit = (name: RegExp, f: (data: Float32Array, tensor: string) => Float32Array) => new Map([...tensors].map(([n, d]) => [n, name.test(n) ? f(d, n) : d]));
    const K = QWEN35.linear!.convKernel;
    const without = {
      // The conv reduced to its current-token tap of 1 (silu(x) of the projection alone).
      conv: edit(/ssm_conv1d/, (d) => d.map((_, i) => (i % K === K - 1 ? 1 : 0))),
      // No decay (g = 0): the state never forgets.
      decay: edit(/ssm_a$/, (d) => d.map(() => 0)),
      // The attention output gate at sigmoid(0) = ½ on every channel (its rows of attn_q zeroed).
      output_gate: edit(/blk\.3\.attn_q\.weight/, (d) => d.map((v, i) => (Math.floor(i / QWEN35.hidden / QWEN35.headDim) % 2 === 1 ? 0 : v))),
      // Transformers' grouped value heads (value head h reads key head ⌊h / 2⌋) instead of llama.cpp's tiled ones
      // (h mod 2): the same as tiling the value heads of the weights once more (hfValueTransform's reorder).
      tiled_heads: edit(/attn_qkv|attn_gate|ssm_(beta|alpha|conv1d|dt|out)/, (d, n) => hfValueTransform(config, n, d)),
    };
    const gaps = Object.fromEntries(Object.entries(without).map(([k, t]) => [k, logProbGap(theirs.probabilities, intabGreedy(config, t, 1).logits)]));
    console.log(JSON.stringify({ test: 'families', family: 'qwen35', steps: theirs.ids.length, log_prob_gap: gap, gap_without: gaps }));
    expect(gap).toBeLessThan(0.01);
    for (const g of Object.values(gaps)) expect(g).toBeGreaterThan(10 * gap);
  });

  // Quantized, llama.cpp multiplies by q8_0-rounded activations where intab's reference keeps f32: the likeliest next
  // token after the prompt agrees (the distributions differ by that rounding).
  for (const [family, shape, dtype] of [['smollm3', SMOLLM3, 'q8_0'], ['smollm3', SMOLLM3, 'q4_0'], ['gemma3', GEMMA3, 'q8_0'], ['gemma3', GEMMA3, 'q4_0'], ['qwen35', QWEN35, 'q8_0'], ['qwen35', QWEN35, 'q4_0']] as const) {
    test(`${family} in ${dtype}: the same likeliest next token as llama.cpp`, { timeout: 120_000 }, async () => {
      const { file, config, tensors } = await write(family, shape, dtype);
      const ours = intabGreedy(config, tensors);
      const theirs = await llamaCppGreedy(file, PROMPT);
      expect(ours.ids[0]).toBe(theirs.ids[0]);
      // Among llama.cpp's likeliest tokens (the generator repeats rows every 64 ids: exact ties, in either order).
      expect(theirs.probabilities.get(ours.ids[0])).toBe(Math.max(...theirs.probabilities.values()));
    });
  }
});
