// The int8 graph (LlamaGraphOptions.matmul 'int8') on the browser's own onnxruntime-web wasm build, in headless
// Chromium: stories260K with its matrices as q8_0 blocks, the int8 graph against the same blocks dequantized to f32,
// teacher-forced on the golden prompts' greedy ids. The node tier (llama-graph.test.ts) runs the same graphs on the
// npm package's wasm in Node; this is the build 'onnx-wasm' loads in a page (createSession, one thread).
import { expect, test } from 'vitest';
import { dequantize, quantize } from '@intab/gpu';
import { bytesSource, openGguf } from '@intab/model';
import { argmax } from '@intab/model/reference';
import { fetchShared } from '@intab/testing/gpu';
import { buildLlamaGraph, type GraphWeight, type LlamaGraphOptions } from './llama-graph.ts';
import { createSession } from './session.ts';

test("stories260K as q8_0: the int8 graph's top-1 on onnx-wasm against the dequantized graph's", async () => {
  const model = await openGguf(bytesSource('stories260K.gguf', await fetchShared('models/stories260K/stories260K.gguf')));
  const golden: { cases: { prompt: number[]; greedy: number[] }[] } = JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));
  const c = model.config;
  const blocks = new Map<string, GraphWeight>();
  for (const [name, t] of model.tensors) {
    const [n, k] = t.shape.length === 2 ? t.shape : [1, t.shape[0]];
    const w = dequantize(t.dtype as 'f32', await t.source.read(t.offset, t.byteLength), n, k);
    blocks.set(name, t.shape.length === 2 && k % 32 === 0 ? { dtype: 'q8_0', data: quantize('q8_0', w, n, k) } : w);
  }
  /** Logits of every position of `ids` (one run, no past) of the graph built with `options`. */
  const logits = async (options: LlamaGraphOptions, ids: number[]) => {
    const graph = await buildLlamaGraph(c, (n) => blocks.get(n), options);
    const { ort, session, runs } = await createSession(graph.model, { backend: 'onnx-wasm' });
    expect(runs.provider).toBe('wasm');
    const big = (xs: number[]) => new ort.Tensor('int64', BigInt64Array.from(xs.map(BigInt)), [1, xs.length]);
    const feeds: Record<string, InstanceType<typeof ort.Tensor>> = {
      input_ids: big(ids),
      attention_mask: big(ids.map(() => 1)),
      position_ids: big(ids.map((_, i) => i)),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length)), []),
    };
    for (let l = 0; l < c.layers; l++) {
      for (const kind of ['key', 'value']) feeds[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [1, c.kvHeads, 0, c.headDim]);
    }
    const out = await session.run(feeds);
    const data = (out.logits.data as Float32Array).slice();
    await session.release();
    return data;
  };
  let agree = 0;
  let steps = 0;
  for (const g of golden.cases) {
    // Teacher-forced on the golden ids: position P−1+t of both graphs predicts step t.
    const ids = [...g.prompt, ...g.greedy.slice(0, -1)];
    const V = c.vocab;
    const want = await logits({}, ids);
    const got = await logits({ matmul: 'int8' }, ids);
    let err = 0;
    for (let t = 0; t < g.greedy.length; t++) {
      const at = (g.prompt.length - 1 + t) * V;
      if (argmax(got.subarray(at, at + V)) === argmax(want.subarray(at, at + V))) agree++;
      for (let i = at; i < at + V; i++) err = Math.max(err, Math.abs(got[i] - want[i]));
    }
    steps += g.greedy.length;
    expect(err, 'the int8 graph rounds').toBeGreaterThan(0);
    console.log(`onnx-wasm stories260K q8_0 int8, prompt ${g.prompt.join(',')}: max logit error ${err.toFixed(3)}`);
  }
  console.log(`onnx-wasm stories260K q8_0 int8: ${agree}/${steps} top-1 agree`);
  // Measured 103/112 (the node tier's teacher-forcing on the dequantized graph's own ids: 106/112, llama-graph.test.ts).
  expect(agree / steps).toBeGreaterThanOrEqual(0.75);
});
