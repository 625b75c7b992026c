// transformers.js on intab's weights: a `make-model --layers 2` embedding GGUF (all-minilm-l6: bert; nomic-embed-v1.5:
// nomic-bert), written as a transformers.js model folder (transformers-embed.ts, @intab/onnx's encoderOnnxFolderFiles),
// loads in transformers.js's feature-extraction pipeline (onnxruntime-node, CPU, offline), tokenizes the 20 texts of
// @intab/testing/embed-inputs as intab does, and its mean-pooled normalised vectors are within cosine 0.9999 of intab's
// engine's (the Node runtime on onnxruntime-node): what `intab bench embed` checks before it quotes a ratio.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { Engine, loadEncoderModel } from '@intab/engine';
import { openEncoderGguf, openTokenizer, pathSource } from '@intab/model';
import { readOnnxModel } from '@intab/onnx';
import { EMBED_INPUTS as INPUTS, cosine } from '@intab/testing/embed-inputs';
import { chooseNodeBackend } from '../node/backend.ts';
import { writeSyntheticModel } from './make-model.ts';
import { openTransformersEmbedder, writeTransformersFolder } from './transformers-embed.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-embed-transformers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CASES = [
  { like: 'all-minilm-l6', inputs: ['input_ids', 'attention_mask', 'token_type_ids'] },
  { like: 'nomic-embed-v1.5', inputs: ['input_ids', 'attention_mask', 'token_type_ids'] },
];

describe('transformers.js on the folder written from an embedding GGUF', () => {
  for (const c of CASES) {
    test(`make-model --like ${c.like} --dtype f32 --layers 2: same tokens, vectors within cosine 0.9999 of intab's`, { timeout: 60_000 }, async () => {
      const gguf = join(dir, `${c.like}.gguf`);
      writeSyntheticModel({ like: c.like, dtype: 'f32', out: gguf, seed: 3, layers: 2 });
      const files = await openEncoderGguf(await pathSource(gguf));
      const folder = join(dir, c.like);
      expect((await writeTransformersFolder(files, folder)).sort()).toEqual(['config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
      const graph = readOnnxModel(readFileSync(join(folder, 'onnx/model.onnx')));
      expect(graph.graph.inputs.map((v) => v.name)).toEqual(c.inputs);
      expect(graph.graph.outputs.map((v) => v.name)).toEqual(['last_hidden_state']);

      const ids = INPUTS.map((t) => openTokenizer(files)!.encode(t));
      const theirs = await openTransformersEmbedder(folder, { threads: 1 });
      const choice = await chooseNodeBackend('onnx-wasm', undefined, { threads: 1 });
      const { encoder, tokenizer, info } = await loadEncoderModel(files, choice);
      const engine = new Engine({ encoder, tokenizer, info });
      try {
        expect(theirs.tokens([...INPUTS])).toEqual(ids.map((s) => s.length));
        const ours = await engine.embed({ input: [...INPUTS] });
        expect(ours.tokens).toEqual(ids.map((s) => s.length));
        const vectors = await theirs.embed([...INPUTS]);
        const cos = vectors.map((v, i) => cosine(v, ours.embeddings[i]));
        // Different texts are far apart, so the bar is not met by accident.
        let apart = -1;
        for (let i = 0; i < INPUTS.length; i++) for (let j = 0; j < INPUTS.length; j++) if (i !== j) apart = Math.max(apart, cosine(vectors[i], ours.embeddings[j]));
        console.log(JSON.stringify({ test: 'embed-transformers', like: c.like, layers: 2, system: theirs.version, min_cosine_intab: Math.min(...cos), max_cosine_between_texts: apart }));
        for (const [i, v] of cos.entries()) expect(v, `input ${i}: ${JSON.stringify(INPUTS[i].slice(0, 40))}`).toBeGreaterThanOrEqual(0.9999);
        expect(apart).toBeLessThan(0.99);
      } finally {
        await theirs.close();
        await engine.destroy();
      }
    });
  }
});
