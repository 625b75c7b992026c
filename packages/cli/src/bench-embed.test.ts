// intab bench embed's flags and texts (the run itself, with transformers.js and llama.cpp, is measured by hand: it prints figures, it
// asserts nothing timed).
import { describe, expect, test } from 'vitest';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchEmbedOptions, benchTexts } from './bench-embed.ts';

/** A GGUF that exists (the flags are checked here; nothing is loaded). */
const M = join(resolve(process.env.INTAB_SHARED ?? fileURLToPath(new URL('../../../../shared', import.meta.url))), 'models', 'stories260K', 'stories260K.gguf');

describe('intab bench embed', () => {
  test('flags: batches, repeats, threads and backend are checked before anything loads', () => {
    const o = benchEmbedOptions({ model: M, batch: '1, 8,32', json: true });
    expect(o).toMatchObject({ batches: [1, 8, 32], repeats: 3, threads: 1, backend: 'auto', native: true, transformers: true, json: true });
    expect(benchEmbedOptions({ model: M, 'no-native': true }).native).toBe(false);
    expect(benchEmbedOptions({ model: M, 'no-transformers': true }).transformers).toBe(false);
    expect(() => benchEmbedOptions({})).toThrow(/--model <embedding GGUF> is required/);
    expect(() => benchEmbedOptions({ model: M, batch: '1,0' })).toThrow(/--batch takes/);
    expect(() => benchEmbedOptions({ model: M, batch: '4000' })).toThrow(/\[1, 2048\]/);
    expect(() => benchEmbedOptions({ model: M, backend: 'cuda' })).toThrow(/--backend takes auto, webgpu, onnx-wasm/);
  });

  test('texts: the embedding tests\' 20 in turn, numbered so that none repeats', () => {
    const texts = benchTexts(45);
    expect(texts).toHaveLength(45);
    expect(new Set(texts).size).toBe(45);
    expect(texts[0].startsWith('1. ')).toBe(true);
    expect(texts[20].slice(4)).toBe(texts[0].slice(3));
  });
});
