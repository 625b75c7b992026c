// The seeded random-weight Llama-family generator, with no Node imports and nothing from @intab/model, so that one
// copy serves both scripts/make-fixtures.mjs (which loads it through Vite's module runner) and fixtures.ts (browser
// GPU tests and Node tests build the same models in memory). Every config path (qkv bias, q/k norm, fused Phi-3
// projections, untied output, llama3 rope scaling, head_dim != hidden/heads, partial rotary, sliding window, GeGLU)
// has a tiny model here. Weights are drawn from the one seeded RNG and its normal samples: same seed, same bytes.

import { mulberry32, randn } from './random.ts';

/** A config.json object as the generator writes it (Hugging Face keys). */
export type FixtureConfigJson = Record<string, unknown> & {
  model_type: string;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  vocab_size: number;
  head_dim?: number;
  tie_word_embeddings: boolean;
};

/** One generated tensor: row-major shape, outermost first, and its f32 values. */
export interface FixtureTensor {
  shape: number[];
  data: Float32Array;
}

/** Each variant: HF config.json fields beyond the shared base. Shapes stay tiny so the CPU reference is fast. */
export const VARIANTS = {
  // Llama 2 style: tied embeddings, GQA, full rotary.
  llama: { model_type: 'llama', architectures: ['LlamaForCausalLM'], tie_word_embeddings: true },
  // Llama 3.1 style: llama3 rope scaling (all three frequency bands hit with D=16), untied lm_head.
  llama3: {
    model_type: 'llama',
    architectures: ['LlamaForCausalLM'],
    rope_theta: 500000,
    rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 },
    bos_token_id: 1,
    eos_token_id: [2, 3],
  },
  // GeGLU feed-forward (gelu_pytorch_tanh), tied.
  gelu: { model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_act: 'gelu_pytorch_tanh', tie_word_embeddings: true },
  // Qwen2: qkv bias, untied.
  qwen2: { model_type: 'qwen2', architectures: ['Qwen2ForCausalLM'], rope_theta: 1000000, use_sliding_window: false },
  // Qwen3: q/k RMSNorm, head_dim (24) != hidden/heads (16), tied.
  qwen3: { model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], head_dim: 24, tie_word_embeddings: true, attention_bias: false },
  // Mistral: multi-query (1 kv head), head_dim 20 != 16, sliding window 4.
  mistral: { model_type: 'mistral', architectures: ['MistralForCausalLM'], num_key_value_heads: 1, head_dim: 20, sliding_window: 4 },
  // Phi-3: fused qkv_proj and gate_up_proj, partial rotary (half of each head), untied.
  phi3: { model_type: 'phi3', architectures: ['Phi3ForCausalLM'], partial_rotary_factor: 0.5, sliding_window: null },
  // SmolLM3: the Llama layer, with no RoPE on every fourth layer (NoPE: layer 3 of 4), tied.
  smollm3: { model_type: 'smollm3', architectures: ['SmolLM3ForCausalLM'], num_hidden_layers: 4, no_rope_layer_interval: 4, tie_word_embeddings: true },
  // Gemma 3: √C embedding, (1 + w) norms (stored as w), q/k norms, post-norms, GeGLU; layers 0 and 1 slide a window of
  // 4 with their own RoPE base, layer 2 is global; scores scaled by 1/√24, not 1/√D; tied.
  gemma3: {
    model_type: 'gemma3_text',
    architectures: ['Gemma3ForCausalLM'],
    num_hidden_layers: 3,
    head_dim: 16,
    hidden_activation: 'gelu_pytorch_tanh',
    sliding_window: 4,
    sliding_window_pattern: 3,
    rope_theta: 1000000,
    rope_local_base_freq: 10000,
    query_pre_attn_scalar: 24,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: true,
  },
} as const satisfies Record<string, Record<string, unknown>>;

/** A generated variant's name. */
export type FixtureVariant = keyof typeof VARIANTS;

/** config.json fields every variant shares (a variant overrides some). */
export const BASE_CONFIG = {
  hidden_size: 64,
  intermediate_size: 96,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 128,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  tie_word_embeddings: false,
  hidden_act: 'silu',
  bos_token_id: 1,
  eos_token_id: 2,
  torch_dtype: 'float32',
};

/** The safetensors `__metadata__` every fixture carries. */
export const FIXTURE_METADATA = { format: 'pt', generator: 'intab scripts/make-fixtures.mjs' } as const;

/** The full config.json object of a variant; RangeError for an unknown name. */
export function fixtureConfig(name: string): FixtureConfigJson {
  if (!Object.hasOwn(VARIANTS, name)) throw new RangeError(`unknown fixture variant '${name}'; known: ${Object.keys(VARIANTS).join(', ')}`);
  return { ...BASE_CONFIG, ...VARIANTS[name as FixtureVariant] } as FixtureConfigJson;
}

/** The weight seed of a variant for a run seed: each variant gets its own stream (seed + 1000 * index). */
export function variantSeed(name: string, seed: number): number {
  return seed + 1000 * Object.keys(VARIANTS).indexOf(name);
}

/** HF tensors of one variant, in generation order: name → { shape, data }. */
export function makeTensors(config: FixtureConfigJson, seed: number): Map<string, FixtureTensor> {
  const rng = mulberry32(seed);
  const C = config.hidden_size;
  const F = config.intermediate_size;
  const H = config.num_attention_heads;
  const Hkv = config.num_key_value_heads;
  const D = config.head_dim ?? C / H;
  const V = config.vocab_size;
  const tensors = new Map<string, FixtureTensor>();
  const normal = (shape: number[], std: number, mean = 0): FixtureTensor => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = mean + std * randn(rng);
    return { shape, data };
  };
  const matrix = (n: number, k: number) => normal([n, k], 1 / Math.sqrt(k));
  // Gemma's checkpoints store w of its (1 + w) norms: near 0 there, near 1 elsewhere.
  const gemma = config.model_type === 'gemma3_text';
  const norm = (n: number) => normal([n], 0.1, gemma ? 0 : 1);
  const concatRows = (...parts: FixtureTensor[]): FixtureTensor => {
    const data = new Float32Array(parts.reduce((a, p) => a + p.data.length, 0));
    let o = 0;
    for (const p of parts) {
      data.set(p.data, o);
      o += p.data.length;
    }
    return { shape: [parts.reduce((a, p) => a + p.shape[0], 0), parts[0].shape[1]], data };
  };
  const phi3 = config.model_type === 'phi3';
  const bias = config.model_type === 'qwen2' || config.attention_bias === true;

  tensors.set('model.embed_tokens.weight', normal([V, C], 1));
  for (let l = 0; l < config.num_hidden_layers; l++) {
    const b = `model.layers.${l}.`;
    tensors.set(`${b}input_layernorm.weight`, norm(C));
    const q = matrix(H * D, C);
    const k = matrix(Hkv * D, C);
    const v = matrix(Hkv * D, C);
    if (phi3) tensors.set(`${b}self_attn.qkv_proj.weight`, concatRows(q, k, v));
    else {
      tensors.set(`${b}self_attn.q_proj.weight`, q);
      tensors.set(`${b}self_attn.k_proj.weight`, k);
      tensors.set(`${b}self_attn.v_proj.weight`, v);
    }
    if (bias) {
      tensors.set(`${b}self_attn.q_proj.bias`, normal([H * D], 0.2));
      tensors.set(`${b}self_attn.k_proj.bias`, normal([Hkv * D], 0.2));
      tensors.set(`${b}self_attn.v_proj.bias`, normal([Hkv * D], 0.2));
    }
    if (config.model_type === 'qwen3' || gemma) {
      tensors.set(`${b}self_attn.q_norm.weight`, norm(D));
      tensors.set(`${b}self_attn.k_norm.weight`, norm(D));
    }
    tensors.set(`${b}self_attn.o_proj.weight`, matrix(C, H * D));
    tensors.set(`${b}post_attention_layernorm.weight`, norm(C));
    if (gemma) {
      tensors.set(`${b}pre_feedforward_layernorm.weight`, norm(C));
      tensors.set(`${b}post_feedforward_layernorm.weight`, norm(C));
    }
    const gate = matrix(F, C);
    const up = matrix(F, C);
    if (phi3) tensors.set(`${b}mlp.gate_up_proj.weight`, concatRows(gate, up));
    else {
      tensors.set(`${b}mlp.gate_proj.weight`, gate);
      tensors.set(`${b}mlp.up_proj.weight`, up);
    }
    tensors.set(`${b}mlp.down_proj.weight`, matrix(C, F));
  }
  tensors.set('model.norm.weight', norm(C));
  if (!config.tie_word_embeddings) tensors.set('lm_head.weight', matrix(V, C));
  return tensors;
}

/**
 * safetensors bytes for the CLI: u64 header length, JSON header (FIXTURE_METADATA, then tensors by sorted
 * name, padded with spaces to 8 bytes), F32 little-endian data. fixtures.ts writes the same bytes with
 * formats/safetensors.ts (a Node test checks that the two agree byte for byte).
 */
export function encodeSafetensors(tensors: Map<string, FixtureTensor>): Uint8Array {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = { __metadata__: FIXTURE_METADATA };
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + json.length) % 8)) % 8);
  const head = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + head.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(head.length), true);
  out.set(head, 8);
  let p = 8 + head.length;
  for (const name of names) {
    const { data } = tensors.get(name)!;
    for (let i = 0; i < data.length; i++) view.setFloat32(p + 4 * i, data[i], true);
    p += data.length * 4;
  }
  return out;
}
