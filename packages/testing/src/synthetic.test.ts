// Synthetic GGUFs (intab make-model): written with a real tokenizer embedded, they open with openGguf + openTokenizer,
// the model's vocabulary is the tokenizer's, and text round-trips. Small bodies keep the test fast (the rows of
// token_embd are the full vocabulary either way); the qwen3 shape's q/k norms reach the config.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesSource, loadTokenizer, openEncoderGguf, openGguf, openTokenizer, pathSource } from '@intab/model';
import { realTokenizerFiles, type RealTokenizerName } from './tokenizer-corpus.ts';
import { ENCODER_SHAPES, SYNTHETIC_SHAPES, syntheticEncoderGguf, syntheticGguf, type EncoderShape, type SyntheticShape } from './synthetic.ts';
import { wordPieceTokenizerFiles } from './wordpiece-vocab.ts';

const SMALL: SyntheticShape = { hidden: 64, ffn: 128, layers: 2, heads: 2, kvHeads: 1, headDim: 32, vocab: 1000, ropeTheta: 10000, context: 512 };
const TEXT = 'Hello, world! {"name": "Ada", "age": 36} 你好 🦙';

describe.each<[RealTokenizerName, number]>([['qwen3', 151669], ['llama3', 128256]])('synthetic GGUF with the %s tokenizer', (name, vocab) => {
  it('opens with openGguf + openTokenizer; the vocabulary is the tokenizer\'s and text round-trips', async () => {
    const original = loadTokenizer(realTokenizerFiles(name));
    const bytes = syntheticGguf(SMALL, 'q4_0', 3, { tokenizer: original });
    const dir = mkdtempSync(join(tmpdir(), 'intab-synthetic-'));
    try {
      const file = join(dir, `small-${name}.gguf`);
      writeFileSync(file, bytes);
      const model = await openGguf(await pathSource(file));
      expect(model.config.vocab).toBe(vocab);
      expect(model.config.vocab).toBe(original.vocabSize);
      expect(model.tensors.get('token_embd.weight')!.shape).toEqual([vocab, SMALL.hidden]);
      expect(model.config.tiedEmbeddings).toBe(true);
      const tok = openTokenizer(model)!;
      expect(tok).toBeDefined();
      expect(tok.vocabSize).toBe(vocab);
      const ids = tok.encode(TEXT, { addSpecialTokens: false });
      expect(ids).toEqual(original.encode(TEXT, { addSpecialTokens: false }));
      expect(tok.decode(ids)).toBe(TEXT);
      expect(tok.stopIds).toEqual(original.stopIds);
      for (const id of tok.stopIds) expect(model.config.eosIds.includes(id) || id === tok.eosId).toBe(true);
      expect(tok.chatTemplate).toEqual(original.chatTemplate);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('synthetic shapes', () => {
  it('without a tokenizer: no tokenizer.ggml.*, the vocabulary is the shape\'s', async () => {
    const model = await openGguf(bytesSource('small.gguf', syntheticGguf(SMALL, 'q8_0', 1)));
    expect(model.config.vocab).toBe(SMALL.vocab);
    expect(openTokenizer(model)).toBeUndefined();
  });

  it('qwen3-0.6b: a qwen3 architecture with per-head q/k norms, q and o wider than hidden', async () => {
    const q = SYNTHETIC_SHAPES['qwen3-0.6b'];
    expect(q).toMatchObject({ hidden: 1024, heads: 16, headDim: 128, kvHeads: 8, layers: 28, arch: 'qwen3' });
    // The same architecture at a test size (0.6B of q4_0 is ~400 MB to write).
    const model = await openGguf(bytesSource('q.gguf', syntheticGguf({ ...q, layers: 1, hidden: 64, ffn: 64, heads: 4, kvHeads: 2, headDim: 32, vocab: 256 }, 'q4_0', 1)));
    expect(model.config).toMatchObject({ arch: 'qwen3', qkNorm: true, hidden: 64, heads: 4, headDim: 32 });
    expect(model.tensors.get('blk.0.attn_q_norm.weight')!.shape).toEqual([32]);
    expect(model.tensors.get('blk.0.attn_q.weight')!.shape).toEqual([128, 64]);
  });
});

describe('synthetic encoders (embedding models)', () => {
  const tokenizer = loadTokenizer(wordPieceTokenizerFiles());
  // Each family's layout at a test size (the vocabulary stays the tokenizer's 30,522 rows).
  const small = (like: string): EncoderShape => ({ ...ENCODER_SHAPES[like], hidden: 64, ffn: 96, layers: 2, heads: 4 });

  it.each(['all-minilm-l6', 'nomic-embed-v1.5'])('%s: opens as an encoder with its WordPiece tokenizer; same seed, same bytes', async (like) => {
    const shape = small(like);
    const bytes = syntheticEncoderGguf(shape, 'q8_0', 4, { tokenizer });
    // (Buffer.equals: a deep toEqual over megabytes takes seconds.)
    expect(Buffer.from(syntheticEncoderGguf(shape, 'q8_0', 4, { tokenizer })).equals(bytes)).toBe(true);
    expect(Buffer.from(syntheticEncoderGguf(shape, 'q8_0', 5, { tokenizer })).equals(bytes)).toBe(false);
    const model = await openEncoderGguf(bytesSource(`${like}.gguf`, bytes));
    expect(model.warnings).toBeUndefined(); // every key in the type llama.cpp reads it in
    expect(model.config).toMatchObject({ arch: shape.arch, hidden: 64, ffn: 96, layers: 2, heads: 4, headDim: 16, vocab: 30522, maxPositions: shape.context, typeVocab: 2, pooling: 'mean' });
    expect(model.config.rope).toEqual(shape.arch === 'nomic-bert' ? { theta: 1000, rotaryDim: 16 } : null);
    expect(model.tensors.get('token_embd.weight')).toMatchObject({ dtype: 'q8_0', shape: [30522, 64] });
    expect(model.gguf!.tensors.some((t) => t.name === 'blk.0.attn_qkv.weight')).toBe(shape.arch === 'nomic-bert');
    const tok = openTokenizer(model)!;
    expect(tok.encode('Hello, world!')).toEqual(tokenizer.encode('Hello, world!'));
  });

  it('refuses what llama.cpp could not read or intab does not write', () => {
    const shape = small('all-minilm-l6');
    expect(() => syntheticEncoderGguf(shape, 'q4_K', 1, { tokenizer })).toThrow(/not q4_K/);
    expect(() => syntheticEncoderGguf({ ...shape, vocab: 1000 }, 'f32', 1, { tokenizer })).toThrow(/30522/);
    expect(() => syntheticEncoderGguf({ ...shape, hidden: 48 }, 'q8_0', 1, { tokenizer })).toThrow(/K % 32/);
    expect(() => syntheticEncoderGguf(shape, 'f32', 1, { tokenizer: loadTokenizer(realTokenizerFiles('qwen3')) })).toThrow(/WordPiece/);
  });
});
