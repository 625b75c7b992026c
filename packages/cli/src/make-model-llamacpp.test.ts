// What `intab make-model` writes is a GGUF llama.cpp loads: every --like shape (cut to one layer with --layers, Qwen3.5 to four, the
// widths and vocabulary kept) with a real tokenizer (each in turn), opened by llama.cpp itself (node-llama-cpp's prebuilt CPU build)
// and run greedily on a few ids. llama.cpp reads each key only in its spec type, so a key written in another type (as
// rope.freq_base was, u32) is refused here. A file without --tokenizer is not in this check: llama.cpp needs a vocabulary.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { SYNTHETIC_SHAPES } from '@intab/testing/synthetic';
import { MODEL_TOKENIZERS, writeSyntheticModel } from './make-model.ts';
import { greedyIds, llamaCpp as oracle } from './test-llamacpp.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-make-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('make-model files load in llama.cpp', () => {
  // Each shape once, the tokenizers taken in turn (every shape's keys, and every tokenizer's, are checked).
  for (const [i, like] of Object.keys(SYNTHETIC_SHAPES).entries()) {
    const tokenizer = MODEL_TOKENIZERS[i % MODEL_TOKENIZERS.length];
    // One layer; Qwen3.5 one period of its pattern (three DeltaNet layers and an attention one: llama.cpp needs one).
    const layers = SYNTHETIC_SHAPES[like].linear?.interval ?? 1;
    test(`--like ${like} --tokenizer ${tokenizer} --layers ${layers} --dtype q4_0`, { timeout: 120_000 }, async () => {
      const out = join(dir, `${like}-${tokenizer}.gguf`);
      const written = writeSyntheticModel({ like, dtype: 'q4_0', out, seed: 3, tokenizer, layers });
      const model = await (await oracle()).loadModel({ modelPath: out });
      try {
        expect(model.fileInfo.metadata.general.architecture).toBe(written.arch);
        expect(model.tokens.bos ?? model.tokens.eos).not.toBeNull();
        // One thread: llama.cpp's default (every core, spinning) is many times slower on a busy small machine.
        const context = await model.createContext({ contextSize: 64, threads: 1 });
        try {
          const ids = await greedyIds(context, [1, 2, 3], 4);
          expect(ids).toHaveLength(4);
          for (const id of ids) expect(id).toBeLessThan(written.vocab);
        } finally {
          await context.dispose();
        }
      } finally {
        await model.dispose();
        rmSync(out, { force: true });
      }
    });
  }
});
