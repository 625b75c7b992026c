// A checkpoint written as an onnx-community folder and read back the way a downloaded one is: stories260K's GGUF
// (config.json written from its LlamaConfig) and its HF folder (its own config.json) become config.json +
// onnx/model.onnx + onnx/model.onnx_data; openOnnxFolder finds the graph and its external data, and the ONNX runner
// on ORT wasm gives golden.json's greedy ids; a folder without its external data file is refused naming it. An
// embedding model's config.json (encoderHfConfig) reads back as the same EncoderConfig.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { bytesSource, configFromHf, encoderConfigFromHf, openGguf, openHfFolder, openOnnxFolder, openTokenizer, pathSource, type ModelFiles } from '@intab/model';
import { loadOnnxRunner } from './load.ts';
import { encoderHfConfig, hfConfig, onnxFolderFiles } from './onnx-folder.ts';
import { syntheticGguf } from '@intab/testing/synthetic';
import { TINY_BERT, TINY_NOMIC } from './test-encoder.ts';
import { OnnxFormatError } from './errors.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');
const golden: { cases: { prompt: number[]; greedy: number[] }[] } = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8'));

const asSources = (files: Map<string, Uint8Array>) => new Map([...files].map(([name, bytes]) => [name, bytesSource(name, bytes)]));

async function greedyIds(model: ModelFiles, prompt: number[], n: number): Promise<number[]> {
  const { runner } = await loadOnnxRunner(model, { backend: 'onnx-wasm', kvBudgetBytes: 2 << 20, maxBatch: 2 });
  try {
    runner.alloc(1);
    const out: number[] = [];
    let next = prompt;
    for (let i = 0; i < n; i++) {
      const [r] = await runner.step([{ seq: 1, tokens: next }]);
      out.push(r.id);
      next = [r.id];
    }
    return out;
  } finally {
    runner.destroy();
  }
}

describe('onnxFolderFiles → openOnnxFolder', () => {
  test('from the GGUF: the layout, a config.json configFromHf reads as the same model, and the golden ids', async () => {
    const gguf = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
    const files = await onnxFolderFiles(gguf);
    expect([...files.keys()].sort()).toEqual(['config.json', 'onnx/model.onnx', 'onnx/model.onnx_data']);
    const config = configFromHf(JSON.parse(new TextDecoder().decode(files.get('config.json'))), 'config.json');
    for (const k of ['hidden', 'ffn', 'layers', 'heads', 'kvHeads', 'headDim', 'vocab', 'maxContext', 'tiedEmbeddings'] as const) expect(config[k], k).toEqual(gguf.config[k]);
    const folder = await openOnnxFolder(asSources(files));
    expect(folder.onnx!.model.name).toBe('onnx/model.onnx');
    expect([...folder.onnx!.externalData.keys()]).toEqual(['model.onnx_data']);
    const c = golden.cases[1];
    expect(await greedyIds(folder, c.prompt, c.greedy.length)).toEqual(c.greedy);
  });

  test("from a GGUF with a vocabulary: its tokenizer as tokenizer.json, which encodes as the GGUF's does", async () => {
    const gguf = await openGguf(await pathSource(join(STORIES, 'stories260K-vocab-ud.gguf')));
    const files = await onnxFolderFiles(gguf);
    expect([...files.keys()].sort()).toEqual(['config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'tokenizer.json', 'tokenizer_config.json']);
    const folder = await openOnnxFolder(asSources(files));
    const text = '<t403><t261><t310><t263>';
    expect(openTokenizer(folder)!.encode(text)).toEqual(openTokenizer(gguf)!.encode(text));
    expect(openTokenizer(folder)!.encode(text)).toEqual(golden.cases[1].prompt);
  });

  test('from the HF folder (its own config.json), then without its external data', async () => {
    const dir = join(STORIES, 'hf');
    const hf = await openHfFolder(new Map([['config.json', await pathSource(join(dir, 'config.json'))], ['model.safetensors', await pathSource(join(dir, 'model.safetensors'))]]));
    const files = await onnxFolderFiles(hf);
    expect(JSON.parse(new TextDecoder().decode(files.get('config.json')))).toEqual(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')));
    const c = golden.cases[0];
    expect(await greedyIds(await openOnnxFolder(asSources(files)), c.prompt, 24)).toEqual(c.greedy.slice(0, 24));
    files.delete('onnx/model.onnx_data');
    const err = await loadOnnxRunner(await openOnnxFolder(asSources(files)), { backend: 'onnx-wasm' }).catch((e) => e);
    expect(err).toBeInstanceOf(OnnxFormatError);
    expect(err.message).toContain("its weights are in 'model.onnx_data', which is not among the files given");
  });
});

test("a decoder's config.json reads back as the same LlamaConfig: Gemma 3's local layers, RoPE base and query scale, SmolLM3's NoPE layers", async () => {
  const base = { hidden: 64, ffn: 128, layers: 6, heads: 4, kvHeads: 2, headDim: 32, vocab: 256, context: 256 };
  for (const shape of [{ ...base, ropeTheta: 1000000, arch: 'gemma3', window: 4 }, { ...base, ropeTheta: 5000000, arch: 'smollm3' }, { ...base, ropeTheta: 1000000, arch: 'qwen3' }, { ...base, ropeTheta: 10000 }] as const) {
    const { config } = await openGguf(bytesSource('m.gguf', syntheticGguf(shape, 'q8_0', 1)));
    const back = configFromHf(hfConfig(config), 'config.json');
    // A GGUF llama's q/k rows are permuted for adjacent-pair RoPE, Hugging Face's are not: the style follows the
    // weights (the graph carries it), so it is the one field that differs.
    expect(back, config.arch).toEqual({ ...config, rope: { ...config.rope, style: back.rope.style }, fusedProjections: back.fusedProjections });
  }
});

test("an embedding model's config.json (bert, nomic_bert) reads back as the same EncoderConfig", () => {
  for (const c of [TINY_BERT, { ...TINY_NOMIC, rope: { theta: 1000, rotaryDim: 16 } }]) {
    const back = encoderConfigFromHf(encoderHfConfig(c), 'config.json');
    // Pooling and normalisation live in sentence-transformers' files, not in config.json.
    expect({ ...back, pooling: c.pooling, normalize: c.normalize }).toEqual(c);
  }
});
