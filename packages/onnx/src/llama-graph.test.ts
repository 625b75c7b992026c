// The built Llama graph, run by onnxruntime-web's wasm EP in Node: stories260K reproduces golden.json's greedy
// ids from its GGUF (normal rope) and its HF folder (neox rope); every random-weight fixture variant matches the
// CPU reference's logits for a prefill, for token-by-token decode with present.* fed back as past_key_values.*,
// and for a batch of two left-padded sequences (attention_mask); q4_0 / q8_0 as MatMulNBits match the same
// weights dequantized to f32; as int8 MatMulInteger (rounded) they keep the dequantized graph's top-1 on most
// teacher-forced steps of stories260K and of SmolLM2-135M's shape. INTAB_ONNX_BENCH=1 also prints decode tok/s as
// JSON lines (never asserted).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-web';
import { describe, expect, test } from 'vitest';
import { dequantize, quantize } from '@intab/gpu';
import { ModelMismatchError, bytesSource, openGguf, openHfFolder, pathSource, type LlamaConfig, type ModelFiles } from '@intab/model';
import { argmax, createReferenceModel } from '@intab/model/reference';
import { FIXTURE_VARIANTS, fixtureWeights } from '@intab/testing/fixtures';
import { SYNTHETIC_SHAPES, syntheticGguf } from '@intab/testing/synthetic';
import { buildLlamaGraph, tensorWeights, type GraphWeight, type LlamaGraphOptions } from './llama-graph.ts';
import { OnnxWriteError } from './errors.ts';
import { readOnnxModel } from './onnx-read.ts';

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');
const golden: { cases: { prompt: number[]; greedy: number[] }[] } = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8'));

// ---- driving the graph ----

/** One session of a built graph and the config it was built from. */
class Lm {
  private constructor(
    readonly session: ort.InferenceSession,
    readonly config: LlamaConfig,
  ) {}

  static async create(config: LlamaConfig, weights: (name: string) => GraphWeight | undefined | Promise<GraphWeight | undefined>, options: LlamaGraphOptions = {}): Promise<Lm> {
    const graph = await buildLlamaGraph(config, weights, options);
    const session = await ort.InferenceSession.create(graph.model, {
      graphOptimizationLevel: 'all',
      ...(graph.externalData ? { externalData: [graph.externalData] } : {}),
    });
    return new Lm(session, config);
  }

  /** An empty cache for `batch` sequences: past_key_values with P = 0. */
  emptyPast(batch: number): ort.Tensor[] {
    const { layers: L, kvHeads: Hkv, headDim: D } = this.config;
    return Array.from({ length: 2 * L }, () => new ort.Tensor('float32', new Float32Array(0), [batch, Hkv, 0, D]));
  }

  /**
   * One run: ids/positions (B, T), mask (B, P+T), past (2L tensors, key then value per layer). Returns the
   * (B, T, V) logits (with `keep`, num_logits_to_keep, the last `keep` positions' only; 0: all) and the present
   * tensors in the same order as past.
   */
  async run(ids: number[][], mask: number[][], positions: number[][], past: ort.Tensor[], keep = 0): Promise<{ logits: Float32Array; present: ort.Tensor[] }> {
    const B = ids.length;
    const T = ids[0].length;
    const big = (rows: number[][]) => new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [B, rows[0].length]);
    const feeds: Record<string, ort.Tensor> = { input_ids: big(ids), attention_mask: big(mask), position_ids: big(positions), num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(BigInt(keep)), []) };
    for (let l = 0; l < this.config.layers; l++) {
      feeds[`past_key_values.${l}.key`] = past[2 * l];
      feeds[`past_key_values.${l}.value`] = past[2 * l + 1];
    }
    const out = await this.session.run(feeds);
    const dims = out.logits.dims;
    const rows = keep === 0 ? T : keep;
    if (dims.length !== 3 || dims[0] !== B || dims[1] !== rows || dims[2] !== this.config.vocab) throw new Error(`logits dims [${dims.join(', ')}], expected [${B}, ${rows}, ${this.config.vocab}]`);
    const present: ort.Tensor[] = [];
    for (let l = 0; l < this.config.layers; l++) present.push(out[`present.${l}.key`], out[`present.${l}.value`]);
    return { logits: out.logits.data as Float32Array, present };
  }

  /** Greedy ids: the prompt in one run, then one token per run with the cache fed back. */
  async greedy(prompt: number[], n: number): Promise<number[]> {
    const V = this.config.vocab;
    let past = this.emptyPast(1);
    let tokens = prompt;
    let pos = 0;
    const ids: number[] = [];
    while (ids.length < n) {
      const T = tokens.length;
      // As the runner asks: the last position's logits only (num_logits_to_keep 1).
      const r = await this.run([tokens], [new Array(pos + T).fill(1)], [tokens.map((_, i) => pos + i)], past, 1);
      const id = argmax(r.logits.subarray(0, V));
      ids.push(id);
      past = r.present;
      pos += T;
      tokens = [id];
    }
    return ids;
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return Number.isNaN(m) ? Infinity : m;
}

/** Asserts closeness and prints the max error (the figure to watch when a tolerance is ever in doubt). */
function expectClose(label: string, got: Float32Array, want: Float32Array, tol: number): void {
  const err = maxAbsDiff(got, want);
  console.log(`${label}: max abs error = ${err.toExponential(2)}`);
  expect(err, label).toBeLessThan(tol);
}

const TOL = 1e-3;

async function stories(): Promise<{ gguf: ModelFiles; hf: ModelFiles }> {
  const gguf = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
  const files = new Map([
    ['config.json', await pathSource(join(STORIES, 'hf/config.json'))],
    ['model.safetensors', await pathSource(join(STORIES, 'hf/model.safetensors'))],
  ]);
  return { gguf, hf: await openHfFolder(files) };
}

// ---- stories260K: trained weights, golden ids ----

describe('stories260K through ORT wasm', () => {
  for (const layout of ['GGUF', 'HF'] as const) {
    test(`${layout}: greedy ids equal every golden case exactly`, async () => {
      const m = (await stories())[layout === 'GGUF' ? 'gguf' : 'hf'];
      expect(m.config.rope.style).toBe(layout === 'GGUF' ? 'normal' : 'neox');
      const lm = await Lm.create(m.config, tensorWeights(m.tensors), { file: layout });
      for (const c of golden.cases) expect(await lm.greedy(c.prompt, c.greedy.length)).toEqual(c.greedy);
    });
  }

  test('the graph is small and has exactly the contract I/O', async () => {
    const { gguf } = await stories();
    const graph = await buildLlamaGraph(gguf.config, tensorWeights(gguf.tensors));
    const L = gguf.config.layers;
    // Per layer: 2 norms, qkv MatMul + Split, 2 RotaryEmbedding, Attention, o MatMul + Add, gate|up MatMul + Split,
    // Sigmoid, 2 Mul, down MatMul + Add = 16; then mask (14), embedding, the last rows (Neg, Unsqueeze, Slice), final
    // norm, tied head (Reshape, Gemm, Shape, Concat, Reshape).
    expect(graph.nodeCount).toBe(16 * L + 14 + 1 + 3 + 1 + 5);
    const info = readOnnxModel(graph.model);
    expect(info.graph.nodes.length).toBe(graph.nodeCount);
    const io = (v: { name: string; elemType: number; dims: (number | string)[] }) => `${v.name}:${v.elemType}:[${v.dims.join(',')}]`;
    const past = (kind: string, s: string) => Array.from({ length: L }, (_, i) => [`${kind}.${i}.key:1:[batch_size,4,${s},8]`, `${kind}.${i}.value:1:[batch_size,4,${s},8]`]).flat();
    expect(info.graph.inputs.map(io)).toEqual([
      'input_ids:7:[batch_size,sequence_length]',
      'attention_mask:7:[batch_size,total_sequence_length]',
      'position_ids:7:[batch_size,sequence_length]',
      'num_logits_to_keep:7:[]',
      ...past('past_key_values', 'past_sequence_length'),
    ]);
    expect(info.graph.outputs.map(io)).toEqual(['logits:1:[batch_size,logits_length,512]', ...past('present', 'total_sequence_length')]);
    expect(info.opsetImports).toEqual([{ domain: '', version: 23 }]);
  });
});

// ---- every fixture variant against the CPU reference ----

describe('fixture variants against the CPU reference', () => {
  const prompt = [1, 17, 90, 33, 4, 121, 60, 8, 99, 45];
  for (const variant of FIXTURE_VARIANTS) {
    test(`${variant}: prefill, decode with the cache fed back, and a left-padded batch of 2`, async () => {
      const { config, tensors } = fixtureWeights(variant);
      const V = config.vocab;
      const lm = await Lm.create(config, (n) => tensors.get(n), { file: variant });
      const reference = () => createReferenceModel(config, (n) => tensors.get(n));

      // Prefill: the logits of every prompt position.
      const pre = await lm.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], lm.emptyPast(1));
      expectClose(`${variant} prefill (${prompt.length} tokens)`, pre.logits, reference().logitsAll(prompt, 0), TOL);
      // num_logits_to_keep 3: the last three positions' logits, the same numbers.
      const last3 = await lm.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], lm.emptyPast(1), 3);
      expect(maxAbsDiff(last3.logits, pre.logits.subarray((prompt.length - 3) * V))).toBeLessThan(1e-5);

      // Decode: 4 prompt tokens in one run, then one token per run with present fed back as past.
      const ref = reference();
      let r = await lm.run([prompt.slice(0, 4)], [[1, 1, 1, 1]], [[0, 1, 2, 3]], lm.emptyPast(1));
      let want = ref.forward(prompt.slice(0, 4), 0);
      let worst = maxAbsDiff(r.logits.subarray(3 * V), want);
      for (let p = 4; p < prompt.length; p++) {
        r = await lm.run([[prompt[p]]], [new Array(p + 1).fill(1)], [[p]], r.present);
        want = ref.forward([prompt[p]], p);
        worst = Math.max(worst, maxAbsDiff(r.logits, want));
      }
      console.log(`${variant} decode (${prompt.length - 4} steps): max abs error = ${worst.toExponential(2)}`);
      expect(worst).toBeLessThan(TOL);
      expect(r.present[0].dims).toEqual([1, config.kvHeads, prompt.length, config.headDim]);

      // Batch: row 0 holds 7 tokens, row 1 holds 4 after 3 padding slots; then one decode step for both.
      const a = prompt.slice(0, 7);
      const b = prompt.slice(5, 9);
      const batch = await lm.run([a, [0, 0, 0, ...b]], [[1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1]], [[0, 1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 1, 2, 3]], lm.emptyPast(2));
      const refA = reference();
      const refB = reference();
      const wantA = refA.logitsAll(a, 0);
      const wantB = refB.logitsAll(b, 0);
      expectClose(`${variant} batch row 0`, batch.logits.subarray(0, 7 * V), wantA, TOL);
      expectClose(`${variant} batch row 1 (left-padded)`, batch.logits.subarray(7 * V + 3 * V, 14 * V), wantB, TOL);
      const next = [argmax(wantA.subarray(6 * V)), argmax(wantB.subarray(3 * V))];
      const step = await lm.run([[next[0]], [next[1]]], [[1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]], [[7], [4]], batch.present);
      expectClose(`${variant} batch decode row 0`, step.logits.subarray(0, V), refA.forward([next[0]], 7), TOL);
      expectClose(`${variant} batch decode row 1`, step.logits.subarray(V), refB.forward([next[1]], 4), TOL);
    });
  }

  test('rope computed in the graph (f32, from position_ids) and external data give the same model', async () => {
    const { config, tensors } = fixtureWeights('llama3');
    const ref = createReferenceModel(config, (n) => tensors.get(n)).logitsAll(prompt, 0);
    const computed = await Lm.create(config, (n) => tensors.get(n), { ropeCache: 'compute' });
    const r = await computed.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], computed.emptyPast(1));
    expectClose('llama3 rope computed in-graph', r.logits, ref, TOL);

    const graph = await buildLlamaGraph(config, (n) => tensors.get(n), { externalData: 'model.onnx_data' });
    expect(graph.externalData?.path).toBe('model.onnx_data');
    const info = readOnnxModel(graph.model);
    expect(info.externalFiles).toEqual(['model.onnx_data']);
    const ext = info.graph.initializers.filter((t) => t.external);
    expect(ext.length).toBeGreaterThan(2 * config.layers);
    for (const t of ext) expect(t.external!.offset + t.external!.length).toBeLessThanOrEqual(graph.externalData!.data.length);
    expect(graph.model.length).toBeLessThan(graph.externalData!.data.length / 4);
    const external = await Lm.create(config, (n) => tensors.get(n), { externalData: 'model.onnx_data' });
    const e = await external.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], external.emptyPast(1));
    expectClose('llama3 weights in model.onnx_data', e.logits, ref, TOL);
  });

  test('a missing or misshaped weight is a ModelMismatchError naming the tensor', async () => {
    const { config, tensors } = fixtureWeights('qwen2');
    await expect(buildLlamaGraph(config, (n) => (n === 'blk.1.attn_k.bias' ? undefined : tensors.get(n)), { file: 'qwen2' })).rejects.toThrow(ModelMismatchError);
    await expect(buildLlamaGraph(config, (n) => (n === 'blk.1.attn_k.bias' ? undefined : tensors.get(n)), { file: 'qwen2' })).rejects.toThrow(/qwen2: tensor 'blk\.1\.attn_k\.bias'/);
    const short = (n: string) => (n === 'blk.0.ffn_up.weight' ? tensors.get(n)!.subarray(1) : tensors.get(n));
    await expect(buildLlamaGraph(config, short)).rejects.toMatchObject({ name: 'ModelMismatchError', field: "tensor 'blk.0.ffn_up.weight'" });
    await expect(buildLlamaGraph(config, (n) => tensors.get(n), { quantize: 'q4_0' })).rejects.toThrow(OnnxWriteError);
  });
});

// ---- block-quantized weights as MatMulNBits ----

describe('MatMulNBits (q4_0, q8_0) against the same weights dequantized', () => {
  const prompt = [1, 17, 90, 33, 4, 121, 60, 8];
  /** The variant's matrices quantized where K allows (vectors stay f32), as stored GGUF blocks. */
  const quantized = (variant: 'llama' | 'qwen2', dtype: 'q4_0' | 'q8_0') => {
    const { config, tensors } = fixtureWeights(variant);
    const blocks = new Map<string, GraphWeight>();
    const k = (name: string) => (/attn_output/.test(name) ? config.heads * config.headDim : /ffn_down/.test(name) ? config.ffn : config.hidden);
    for (const [name, data] of tensors) {
      const cols = k(name);
      const rows = data.length / cols;
      blocks.set(name, /\.weight$/.test(name) && rows > 1 && Number.isInteger(rows) && !/norm/.test(name) ? { dtype, data: quantize(dtype, data, rows, cols) } : data);
    }
    const dequantized = new Map<string, Float32Array>();
    for (const [name, w] of blocks) dequantized.set(name, w instanceof Float32Array ? w : dequantize(w.dtype, w.data, tensors.get(name)!.length / k(name), k(name)));
    return { config, blocks, dequantized };
  };

  for (const [variant, dtype] of [['llama', 'q4_0'], ['llama', 'q8_0'], ['qwen2', 'q4_0']] as const) {
    test(`${variant} ${dtype}: MatMulNBits logits ≈ the f32 graph of the dequantized blocks`, async () => {
      const { config, blocks, dequantized } = quantized(variant, dtype);
      const graph = await buildLlamaGraph(config, (n) => blocks.get(n), { matmulNBits: true });
      const info = readOnnxModel(graph.model);
      const nb = info.graph.nodes.filter((n) => n.opType === 'MatMulNBits' && n.domain === 'com.microsoft');
      // qkv, o, gate|up, down per layer, and the head (tied: the quantized embedding; untied: output.weight).
      expect(nb.length).toBe(4 * config.layers + 1);
      expect(info.graph.nodes.filter((n) => n.opType === 'MatMul')).toEqual([]);
      const packed = await Lm.create(config, (n) => blocks.get(n), { matmulNBits: true });
      const plain = await Lm.create(config, (n) => blocks.get(n), { matmulNBits: false });
      const a = await packed.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], packed.emptyPast(1));
      const b = await plain.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], plain.emptyPast(1));
      expectClose(`${variant} ${dtype} MatMulNBits vs dequantized f32`, a.logits, b.logits, TOL);
      // And the dequantized graph is the reference model of those weights (so the comparison is not vacuous).
      expectClose(`${variant} ${dtype} dequantized f32 vs reference`, b.logits, createReferenceModel(config, (n) => dequantized.get(n)).logitsAll(prompt, 0), TOL);
      // Smaller file: 4-bit blocks take about 1/8 of f32.
      const f32Graph = await buildLlamaGraph(config, (n) => blocks.get(n), { matmulNBits: false });
      expect(graph.weightBytes).toBeLessThan(f32Graph.weightBytes * (dtype === 'q4_0' ? 0.6 : 0.75));
    });
  }

  test('quantize: f32 weights become q8_0 MatMulNBits on the way', async () => {
    const { config, tensors } = fixtureWeights('llama');
    const lm = await Lm.create(config, (n) => tensors.get(n), { matmulNBits: true, quantize: 'q8_0' });
    const r = await lm.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], lm.emptyPast(1));
    // The reference of what the graph holds: every matrix through q8_0, the head too, but the embedding table f32.
    const q8 = (x: Float32Array, k: number) => dequantize('q8_0', quantize('q8_0', x, x.length / k, k), x.length / k, k);
    const held = new Map<string, Float32Array>();
    for (const [name, data] of tensors) {
      const k = /attn_output/.test(name) ? config.heads * config.headDim : /ffn_down/.test(name) ? config.ffn : config.hidden;
      held.set(name, /blk\.\d+\.(attn_[qkvo]|attn_output|ffn_\w+)\.weight$/.test(name) && !/norm/.test(name) ? q8(data, k) : data);
    }
    held.set('output.weight', q8(tensors.get('token_embd.weight')!, config.hidden));
    const untied = { ...config, tiedEmbeddings: false };
    expectClose('llama quantized to q8_0 on build', r.logits, createReferenceModel(untied, (n) => held.get(n)).logitsAll(prompt, 0), TOL);
    // It did quantize: the f32 model is measurably different.
    expect(maxAbsDiff(r.logits, createReferenceModel(config, (n) => tensors.get(n)).logitsAll(prompt, 0))).toBeGreaterThan(1e-3);
  });
});

// ---- block-quantized weights as int8 MatMulInteger ----

/** The weights of an opened model with every matrix whose rows split into 32-blocks stored as `dtype` blocks (vectors and other matrices f32). */
async function blockQuantized(m: ModelFiles, dtype: 'q4_0' | 'q8_0'): Promise<Map<string, GraphWeight>> {
  const out = new Map<string, GraphWeight>();
  for (const [name, t] of m.tensors) {
    const [n, k] = t.shape.length === 2 ? t.shape : [1, t.shape[0]];
    const data = dequantize(t.dtype as 'f32', await t.source.read(t.offset, t.byteLength), n, k);
    out.set(name, t.shape.length === 2 && k % 32 === 0 ? (t.dtype === dtype ? { dtype, data: await t.source.read(t.offset, t.byteLength) } : { dtype, data: quantize(dtype, data, n, k) }) : data);
  }
  return out;
}

/**
 * Least share of teacher-forced steps whose top-1 the int8 graph shares with the dequantized one. Measured: stories260K's
 * golden prompts 106/112 (q8_0) and 93/112 (q4_0), SmolLM2's shape 59/64 (q8_0) and 64/64 (q4_0). Not 1: the int8 graph
 * rounds (see LlamaGraphOptions.matmul), and stories260K's greedy ids part from the dequantized graph's within 5 tokens.
 */
const AGREE = { stories: 0.75, smollm2: 0.85 };

describe("int8 matmuls (matmul: 'int8') against the same blocks dequantized to f32", () => {
  /**
   * Teacher-forced on the dequantized graph's greedy ids (`steps` after the prompt): both graphs over prompt + ids in one
   * run, the last `steps` positions' logits. How many top-1 agree, the largest logit error, and the logits' scale.
   */
  const teacherForced = async (plain: Lm, i8: Lm, prompt: number[], steps: number) => {
    const want = await plain.greedy(prompt, steps);
    const ids = [...prompt, ...want.slice(0, steps - 1)];
    const all = (lm: Lm) => lm.run([ids], [ids.map(() => 1)], [ids.map((_, i) => i)], lm.emptyPast(1), steps).then((r) => r.logits);
    const [a, b] = [await all(plain), await all(i8)];
    const V = plain.config.vocab;
    let err = 0;
    let scale = 0;
    for (let i = 0; i < a.length; i++) (err = Math.max(err, Math.abs(a[i] - b[i]))), (scale = Math.max(scale, Math.abs(a[i])));
    let agree = 0;
    for (let t = 0; t < steps; t++) {
      const top = argmax(a.subarray(t * V, (t + 1) * V));
      expect(top, `the dequantized graph's own step ${t}`).toBe(want[t]); // one run over the ids = step by step
      if (argmax(b.subarray(t * V, (t + 1) * V)) === top) agree++;
    }
    return { agree, err, scale, greedyEqual: (await i8.greedy(prompt, steps)).join() === want.join() };
  };

  for (const dtype of ['q8_0', 'q4_0'] as const) {
    test(`stories260K as ${dtype}: the int8 graph's top-1 against the dequantized graph's, teacher-forced on every golden prompt`, async () => {
      const { gguf } = await stories();
      const blocks = await blockQuantized(gguf, dtype);
      const graph = await buildLlamaGraph(gguf.config, (n) => blocks.get(n), { matmul: 'int8' });
      const info = readOnnxModel(graph.model);
      const L = gguf.config.layers;
      // qkv, o and gate|up per layer (ffn_down's K = 172 has no 32-blocks: f32 MatMul), and the tied head.
      expect(info.graph.nodes.filter((n) => n.opType === 'MatMulInteger').length).toBe(3 * L + 1);
      expect(info.graph.nodes.filter((n) => n.opType === 'MatMul').length).toBe(L);
      expect(info.graph.initializers.filter((t) => t.dataType === 3 /* INT8 */).length).toBe(3 * L + 1);
      const plain = await Lm.create(gguf.config, (n) => blocks.get(n));
      const i8 = await Lm.create(gguf.config, (n) => blocks.get(n), { matmul: 'int8' });
      let agree = 0;
      let steps = 0;
      for (const c of golden.cases) {
        const r = await teacherForced(plain, i8, c.prompt, c.greedy.length);
        console.log(`stories260K ${dtype} int8, prompt ${c.prompt.join(',')}: ${r.agree}/${c.greedy.length} top-1 agree, greedy ids ${r.greedyEqual ? 'equal' : 'part'}, max logit error ${r.err.toFixed(3)} (logits up to ${r.scale.toFixed(1)})`);
        expect(r.err).toBeGreaterThan(0); // it did round: the int8 graph is not the f32 one
        agree += r.agree;
        steps += c.greedy.length;
      }
      expect(agree / steps).toBeGreaterThanOrEqual(AGREE.stories);
    });
  }

  for (const dtype of ['q4_0', 'q8_0'] as const) {
    test(`SmolLM2-135M's shape (2 layers, seeded) as ${dtype}: top-1 over 64 teacher-forced steps`, async () => {
      const shape = { ...SYNTHETIC_SHAPES['smollm2-135m'], layers: 2 };
      const m = await openGguf(bytesSource('smollm2.gguf', syntheticGguf(shape, dtype, 7)));
      const plain = await Lm.create(m.config, tensorWeights(m.tensors));
      const i8 = await Lm.create(m.config, tensorWeights(m.tensors), { matmul: 'int8' });
      const r = await teacherForced(plain, i8, [1, 512, 9000, 77, 31000, 4242, 15, 48000], 64);
      console.log(`smollm2 ${dtype} int8: ${r.agree}/64 top-1 agree, greedy ids ${r.greedyEqual ? 'equal' : 'part'}, max logit error ${r.err.toFixed(3)} (logits up to ${r.scale.toFixed(1)})`);
      expect(r.err).toBeGreaterThan(0);
      expect(r.agree / 64).toBeGreaterThanOrEqual(AGREE.smollm2);
    }, 120_000);
  }

  test("an untied head gets its own int8 matrix and the embedding its (V, C) table; 'int8' with matmulNBits is refused", async () => {
    const { config, blocks, dequantized } = (() => {
      const { config, tensors } = fixtureWeights('llama');
      const untied = { ...config, tiedEmbeddings: false };
      const blocks = new Map<string, GraphWeight>();
      const dequantized = new Map<string, Float32Array>();
      for (const [name, data] of tensors) {
        const k = /attn_output/.test(name) ? config.heads * config.headDim : /ffn_down/.test(name) ? config.ffn : config.hidden;
        const rows = data.length / k;
        const q = /\.weight$/.test(name) && rows > 1 && !/norm/.test(name) ? { dtype: 'q8_0' as const, data: quantize('q8_0', data, rows, k) } : data;
        blocks.set(name, q);
        dequantized.set(name, q instanceof Float32Array ? q : dequantize('q8_0', q.data, rows, k));
      }
      blocks.set('output.weight', blocks.get('token_embd.weight')!);
      dequantized.set('output.weight', dequantized.get('token_embd.weight')!);
      return { config: untied, blocks, dequantized };
    })();
    const graph = await buildLlamaGraph(config, (n) => blocks.get(n), { matmul: 'int8' });
    const info = readOnnxModel(graph.model);
    expect(info.graph.initializers.find((t) => t.name === 'token_embd.weight_i8')?.dims).toEqual([config.vocab, config.hidden]);
    expect(info.graph.nodes.filter((n) => n.opType === 'MatMulInteger').length).toBe(4 * config.layers + 1);
    const prompt = [1, 17, 90, 33, 4, 121, 60, 8];
    const lm = await Lm.create(config, (n) => blocks.get(n), { matmul: 'int8' });
    const r = await lm.run([prompt], [prompt.map(() => 1)], [prompt.map((_, i) => i)], lm.emptyPast(1));
    const want = createReferenceModel(config, (n) => dequantized.get(n)).logitsAll(prompt, 0);
    // int8 rounding of weights and activations: close, not exact.
    let err = 0;
    let scale = 0;
    for (let i = 0; i < want.length; i++) (err = Math.max(err, Math.abs(r.logits[i] - want[i]))), (scale = Math.max(scale, Math.abs(want[i])));
    console.log(`llama untied q8_0 as int8 vs reference: max abs error = ${err.toExponential(2)} (logits up to ${scale.toFixed(2)})`);
    expect(err).toBeGreaterThan(0);
    expect(err).toBeLessThan(0.05 * scale); // measured 0.011 of it
    let agree = 0;
    for (let t = 0; t < prompt.length; t++) if (argmax(r.logits.subarray(t * config.vocab, (t + 1) * config.vocab)) === argmax(want.subarray(t * config.vocab, (t + 1) * config.vocab))) agree++;
    expect(agree).toBeGreaterThanOrEqual(prompt.length - 1);
    await expect(buildLlamaGraph(config, (n) => blocks.get(n), { matmul: 'int8', matmulNBits: true })).rejects.toThrow(OnnxWriteError);
    await expect(buildLlamaGraph(config, (n) => blocks.get(n), { matmul: 'int4' as never })).rejects.toMatchObject({ name: 'OnnxWriteError', field: 'options.matmul' });
    await expect(buildLlamaGraph(config, (n) => blocks.get(n), { matmul: 'int8', quantize: 'q8_0' })).rejects.toThrow(/MatMulNBits, which is off/);
  });
});

// ---- decode speed, on request (printed, never asserted) ----

describe.skipIf(!process.env.INTAB_ONNX_BENCH)('bench', () => {
  test('stories260K decode tok/s on ORT wasm (1 thread)', async () => {
    const { gguf } = await stories();
    const q4 = new Map<string, GraphWeight>();
    for (const [name, t] of gguf.tensors) {
      const [n, k] = t.shape.length === 2 ? t.shape : [1, t.shape[0]];
      const data = dequantize(t.dtype as 'f32', await t.source.read(t.offset, t.byteLength), n, k);
      q4.set(name, t.shape.length === 2 && k % 32 === 0 ? { dtype: 'q4_0', data: quantize('q4_0', data, n, k) } : data);
    }
    const variants: [string, LlamaGraphOptions, (n: string) => GraphWeight | undefined | Promise<GraphWeight | undefined>][] = [
      ['f32', {}, tensorWeights(gguf.tensors)],
      ['f32 norm=primitive', { norm: 'primitive' }, tensorWeights(gguf.tensors)],
      ['f32 rope=compute', { ropeCache: 'compute' }, tensorWeights(gguf.tensors)],
      ['q4_0 dequantized to f32', {}, (n) => q4.get(n)],
      ['q4_0 MatMulNBits', { matmulNBits: true }, (n) => q4.get(n)],
      ['q4_0 MatMulNBits accuracy 4', { matmulNBits: true, accuracyLevel: 4 }, (n) => q4.get(n)],
      ['q4_0 int8 MatMulInteger', { matmul: 'int8' }, (n) => q4.get(n)],
    ];
    const lms: { label: string; nodes: number; lm: Lm; runs: number[] }[] = [];
    for (const [label, options, weights] of variants) {
      const graph = await buildLlamaGraph(gguf.config, weights, options);
      const lm = await Lm.create(gguf.config, weights, options);
      await lm.greedy([1], 100); // warm up (JIT, ORT's allocations)
      lms.push({ label, nodes: graph.nodeCount, lm, runs: [] });
    }
    // Interleaved rounds, so drift in the machine's load hits every variant alike.
    for (let round = 0; round < 5; round++) {
      for (const v of lms) {
        const t0 = performance.now();
        await v.lm.greedy([1], 400); // one prefill run, then 399 decode runs
        v.runs.push(Math.round(399 / ((performance.now() - t0) / 1000)));
      }
    }
    for (const v of lms) {
      const median = [...v.runs].sort((x, y) => x - y)[2];
      console.log(JSON.stringify({ bench: 'onnx-decode', model: 'stories260K', variant: v.label, nodes: v.nodes, tokPerS: median, runs: v.runs }));
    }
  }, 300_000);
});
