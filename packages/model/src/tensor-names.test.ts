// The Hugging Face → canonical (GGUF) tensor name map the loaders use, and the row split of fused tensors.
import { describe, expect, test } from 'vitest';
import { canonicalHfName, fusedRows, hfValueOffset } from './tensor-names.ts';
import { configFromHf } from './config.ts';
import { UnsupportedModelError } from './errors.ts';

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

describe('Gemma 3 from Hugging Face', () => {
  test('four norms a layer, the multimodal checkpoint\'s language model, (1 + w) norms', () => {
    expect(canonicalHfName('model.layers.2.post_attention_layernorm.weight', 'gemma3')).toBe('blk.2.post_attention_norm.weight');
    expect(canonicalHfName('model.layers.2.pre_feedforward_layernorm.weight', 'gemma3')).toBe('blk.2.ffn_norm.weight');
    expect(canonicalHfName('model.layers.2.post_feedforward_layernorm.weight', 'gemma3')).toBe('blk.2.post_ffw_norm.weight');
    expect(canonicalHfName('model.layers.2.input_layernorm.weight', 'gemma3')).toBe('blk.2.attn_norm.weight');
    // Gemma3ForConditionalGeneration, before and after transformers 4.52; the vision tower maps to nothing.
    expect(canonicalHfName('language_model.model.layers.1.self_attn.q_norm.weight', 'gemma3')).toBe('blk.1.attn_q_norm.weight');
    expect(canonicalHfName('model.language_model.embed_tokens.weight', 'gemma3')).toBe('token_embd.weight');
    expect(canonicalHfName('language_model.lm_head.weight', 'gemma3')).toBe('output.weight');
    expect(canonicalHfName('model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight', 'gemma3')).toBeNull();
    expect(hfValueOffset('gemma3', 'blk.0.attn_q_norm.weight')).toBe(1);
    expect(hfValueOffset('gemma3', 'output_norm.weight')).toBe(1);
    expect(hfValueOffset('gemma3', 'blk.0.attn_q.weight')).toBe(0);
    expect(hfValueOffset('qwen3', 'blk.0.attn_q_norm.weight')).toBe(0);
  });

  // Gemma 3 1B's config.json keys (transformers 4.5x), its transformers 5 spelling, and the 4B multimodal layout.
  const GEMMA3_1B = {
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 1152, intermediate_size: 6912, num_hidden_layers: 26,
    num_attention_heads: 4, num_key_value_heads: 1, head_dim: 256, vocab_size: 262144, max_position_embeddings: 32768, rms_norm_eps: 1e-6,
    rope_theta: 1000000, rope_local_base_freq: 10000, rope_scaling: null, sliding_window: 512, sliding_window_pattern: 6, query_pre_attn_scalar: 256,
    hidden_activation: 'gelu_pytorch_tanh', final_logit_softcapping: null, attn_logit_softcapping: null, bos_token_id: 2, eos_token_id: [1, 106],
  };
  const local = Array.from({ length: 26 }, (_, i) => i).filter((i) => (i + 1) % 6 !== 0);

  test('Gemma 3 1B: window 512 on five layers of six, local base 10,000, tied, GeGLU, √C', () => {
    const c = configFromHf(GEMMA3_1B, 'config.json');
    expect(c).toMatchObject({ arch: 'gemma3', slidingWindow: 512, slidingLayers: local, tiedEmbeddings: true, qkNorm: true, postNorms: true, activation: 'gelu_tanh', attnScale: 1 / 16, embedScale: Math.fround(Math.sqrt(1152)), eosIds: [1, 106] });
    expect(c.rope).toEqual({ theta: 1000000, localTheta: 10000, style: 'neox', rotaryDim: 256 });
    // transformers 5: layer_types and one rope_parameters per kind; linear scaling on the global layers (4B and up).
    const layerTypes = Array.from({ length: 26 }, (_, i) => ((i + 1) % 6 ? 'sliding_attention' : 'full_attention'));
    const { rope_theta: _t, rope_local_base_freq: _l, sliding_window_pattern: _p, ...rest } = GEMMA3_1B;
    const v5 = configFromHf({ ...rest, layer_types: layerTypes, rope_parameters: { full_attention: { rope_type: 'linear', factor: 8, rope_theta: 1000000 }, sliding_attention: { rope_type: 'default', rope_theta: 10000 } } }, 'config.json');
    expect(v5).toMatchObject({ slidingLayers: local, rope: { theta: 1000000, localTheta: 10000, scaling: { type: 'linear', factor: 8 } } });
    // The 4B multimodal checkpoint: the text model's keys under text_config.
    const mm = configFromHf({ architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3', text_config: { ...GEMMA3_1B, model_type: 'gemma3_text' }, eos_token_id: [1, 106] }, 'config.json');
    expect(mm).toEqual(c);
  });

  test('soft-capping (Gemma 2) and a malformed layer_types are refused, naming the key', () => {
    expect(() => configFromHf({ ...GEMMA3_1B, final_logit_softcapping: 30 }, 'config.json')).toThrow(UnsupportedModelError);
    expect(() => configFromHf({ ...GEMMA3_1B, final_logit_softcapping: 30 }, 'config.json')).toThrow(/final_logit_softcapping/);
    expect(() => configFromHf({ ...GEMMA3_1B, layer_types: ['sliding_attention'] }, 'config.json')).toThrow(/layer_types: should be 26 entries/);
    expect(() => configFromHf({ model_type: 'gemma3' }, 'config.json')).toThrow(/text_config: is missing/);
  });
});

describe('fusedRows', () => {
  test('qkv splits into H·D, Hkv·D, Hkv·D rows and gate_up into F, F', () => {
    const config = { heads: 6, kvHeads: 2, headDim: 16, ffn: 160 };
    expect(fusedRows(config, 'qkv')).toEqual([96, 32, 32]);
    expect(fusedRows(config, 'gate_up')).toEqual([160, 160]);
  });
});
