// The Hugging Face → canonical (GGUF) tensor name map the loaders use, and the row split of fused tensors.
import { describe, expect, test } from 'vitest';
import { canonicalHfName, fusedRows } from './tensor-names.ts';

describe('canonicalHfName', () => {
  test('maps HF names to GGUF names and marks fused Phi-3 tensors', () => {
    expect(canonicalHfName('model.embed_tokens.weight')).toBe('token_embd.weight');
    expect(canonicalHfName('model.norm.weight')).toBe('output_norm.weight');
    expect(canonicalHfName('lm_head.weight')).toBe('output.weight');
    expect(canonicalHfName('model.layers.12.self_attn.q_proj.bias')).toBe('blk.12.attn_q.bias');
    expect(canonicalHfName('model.layers.0.self_attn.o_proj.weight')).toBe('blk.0.attn_output.weight');
    expect(canonicalHfName('model.layers.1.self_attn.k_norm.weight')).toBe('blk.1.attn_k_norm.weight');
    expect(canonicalHfName('model.layers.2.input_layernorm.weight')).toBe('blk.2.attn_norm.weight');
    expect(canonicalHfName('model.layers.2.post_attention_layernorm.weight')).toBe('blk.2.ffn_norm.weight');
    expect(canonicalHfName('model.layers.3.mlp.down_proj.weight')).toBe('blk.3.ffn_down.weight');
    expect(canonicalHfName('model.layers.4.self_attn.qkv_proj.weight')).toEqual({ fused: 'qkv', layer: 4, parts: ['blk.4.attn_q.weight', 'blk.4.attn_k.weight', 'blk.4.attn_v.weight'] });
    expect(canonicalHfName('model.layers.0.mlp.gate_up_proj.weight')).toEqual({ fused: 'gate_up', layer: 0, parts: ['blk.0.ffn_gate.weight', 'blk.0.ffn_up.weight'] });
    expect(canonicalHfName('model.layers.0.self_attn.rotary_emb.inv_freq')).toBeNull();
    expect(canonicalHfName('something.else')).toBeNull();
  });
});

describe('fusedRows', () => {
  test('qkv splits into H·D, Hkv·D, Hkv·D rows and gate_up into F, F', () => {
    const config = { heads: 6, kvHeads: 2, headDim: 16, ffn: 160 };
    expect(fusedRows(config, 'qkv')).toEqual([96, 32, 32]);
    expect(fusedRows(config, 'gate_up')).toEqual([160, 160]);
  });
});
