// The GGUF spec's key types: the writer stores plain numbers in them (rope.freq_base 10000 as f32, not u32), and a
// file that stores a standard key in another type still opens, with a warning that names the key and what to do.

import { describe, expect, it } from 'vitest';
import { bytesSource } from '../source.ts';
import { openGguf } from '../load.ts';
import { parseGguf } from './gguf.ts';
import { ggufKeyTypes, ggufTypeWarnings } from './gguf-keys.ts';
import { ggufTyped, writeGguf, type GgufWriteValue } from './gguf-writer.ts';

const TINY = { hidden: 64, ffn: 128, heads: 2, kvHeads: 1, headDim: 32, vocab: 256 };

function tinyLlama(metadata: Record<string, GgufWriteValue>): Uint8Array {
  const f32 = (name: string, ...shape: number[]) => ({ name, type: 'f32' as const, shape, data: new Uint8Array(4 * shape.reduce((a, b) => a * b, 1)) });
  const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = TINY;
  return writeGguf({
    metadata: {
      'general.architecture': 'llama',
      'llama.context_length': 512,
      'llama.embedding_length': C,
      'llama.feed_forward_length': F,
      'llama.block_count': 1,
      'llama.attention.head_count': H,
      'llama.attention.head_count_kv': Hkv,
      'llama.attention.layer_norm_rms_epsilon': 1e-5,
      'llama.rope.dimension_count': D,
      'llama.vocab_size': V,
      ...metadata,
    },
    tensors: [
      f32('token_embd.weight', V, C),
      f32('output_norm.weight', C),
      f32('blk.0.attn_norm.weight', C),
      f32('blk.0.attn_q.weight', H * D, C),
      f32('blk.0.attn_k.weight', Hkv * D, C),
      f32('blk.0.attn_v.weight', Hkv * D, C),
      f32('blk.0.attn_output.weight', C, H * D),
      f32('blk.0.ffn_norm.weight', C),
      f32('blk.0.ffn_gate.weight', F, C),
      f32('blk.0.ffn_up.weight', F, C),
      f32('blk.0.ffn_down.weight', C, F),
    ],
  });
}

describe('GGUF key types', () => {
  it('the spec types keys under the architecture prefix and in full; other keys are free', () => {
    expect(ggufKeyTypes('llama.rope.freq_base', 'llama')).toEqual(['f32']);
    expect(ggufKeyTypes('qwen3.attention.head_count', 'qwen3')).toContain('u32');
    expect(ggufKeyTypes('tokenizer.ggml.eos_token_id', 'llama')).toEqual(['u32']);
    expect(ggufKeyTypes('llama.rope.freq_base', 'qwen3')).toBeUndefined(); // not this file's architecture
    expect(ggufKeyTypes('intab.anything', 'llama')).toBeUndefined();
  });

  it('the writer stores a whole-number rope.freq_base as f32 and the counts as u32; the file has no warning', async () => {
    const gguf = await parseGguf(bytesSource('m.gguf', tinyLlama({ 'llama.rope.freq_base': 500000, 'tokenizer.ggml.bos_token_id': 1 })));
    expect(gguf.metadataTypes.get('llama.rope.freq_base')).toBe('f32');
    expect(gguf.metadata.get('llama.rope.freq_base')).toBe(500000);
    expect(gguf.metadataTypes.get('llama.block_count')).toBe('u32');
    expect(gguf.metadataTypes.get('llama.attention.layer_norm_rms_epsilon')).toBe('f32');
    expect(gguf.metadataTypes.get('tokenizer.ggml.bos_token_id')).toBe('u32');
    expect(ggufTypeWarnings(gguf)).toEqual([]);
    // A type spelled out is written as given (bad-input fixtures rely on it).
    const typed = await parseGguf(bytesSource('m.gguf', tinyLlama({ 'llama.rope.freq_base': ggufTyped('u32', 10000) })));
    expect(typed.metadataTypes.get('llama.rope.freq_base')).toBe('u32');
  });

  it('a key in another type than the spec still opens, with a warning naming the key, both types and what to do', async () => {
    const bytes = tinyLlama({ 'llama.rope.freq_base': ggufTyped('u32', 10000), 'llama.context_length': ggufTyped('u64', 512) });
    const model = await openGguf(bytesSource('old.gguf', bytes));
    expect(model.config.rope.theta).toBe(10000);
    expect(model.warnings).toHaveLength(2);
    // In the file's key order: context_length is written before rope.freq_base.
    expect(model.warnings![1]).toBe(
      "old.gguf: llama.rope.freq_base is stored as u32, where the GGUF spec and llama.cpp expect f32. intab reads it, but llama.cpp refuses this file and other GGUF readers may fail on it: write it again with a current converter.",
    );
    expect(model.warnings![0]).toMatch(/^old\.gguf: llama\.context_length is stored as u64, where the GGUF spec and llama\.cpp expect u32\./);
    // A file written right has none.
    expect((await openGguf(bytesSource('new.gguf', tinyLlama({ 'llama.rope.freq_base': 10000 })))).warnings).toBeUndefined();
  });
});
