// LlamaConfig: the one description every Llama-family model (Llama 2/3/3.2, Mistral, Qwen2/2.5, Qwen3,
// SmolLM2, SmolLM3, Phi-3), Gemma 3 (a Llama layer with a few more fields) and Qwen3.5 (Gated DeltaNet layers beside
// gated attention ones: `linearAttention`, `attnOutputGate`) is run from. Family differences are
// fields, not subclasses, so the CPU reference, the GPU forward and the loaders all read the same object.
// configFromHf / configFromGguf build it from a Hugging Face config.json or GGUF metadata and throw typed errors
// naming the file and the key at fault.

import type { Llama3Scaling, LinearScaling, RopeStyle } from '@intab/gpu';
import { GGUF_ENCODER_ARCHS, HF_ENCODER_TYPES } from './encoder-config.ts';
import { ModelFormatError, UnsupportedModelError } from './errors.ts';

export type { Llama3Scaling, LinearScaling, RopeStyle };

/** The architectures this config describes, as named by GGUF's general.architecture. */
export type LlamaArch = 'llama' | 'mistral' | 'qwen2' | 'qwen3' | 'phi3' | 'smollm3' | 'gemma3' | 'qwen35';

/** Feed-forward activation: 'silu' is SwiGLU (silu(gate) * up), 'gelu_tanh' is GeGLU with the tanh approximation. */
export type Activation = 'silu' | 'gelu_tanh';

export interface RopeSpec {
  /** Base theta (HF rope_theta, GGUF rope.freq_base), e.g. 10000 or 500000. */
  theta: number;
  /** 'normal': adjacent pairs (2i, 2i+1), GGUF llama/mistral. 'neox': rotate-half (i, i + rot/2), HF and GGUF qwen2/qwen3/phi3. */
  style: RopeStyle;
  /** Rotated dimensions of each head (even, ≤ D); the rest pass through. */
  rotaryDim: number;
  /** Llama 3.1 frequency scaling, or linear scaling (positions divided by a factor), when the config asks for it. */
  scaling?: Llama3Scaling | LinearScaling;
  /** True when the weights hold `rope_freqs.weight` (rotaryDim/2): inv_freq[i] /= f[i] (llama.cpp's form of llama3 scaling). */
  freqFactors?: boolean;
  /** Layers (ascending) whose q and k take no RoPE at all (SmolLM3's NoPE layers: every fourth); absent: none. */
  noRopeLayers?: readonly number[];
  /**
   * Base theta of the sliding-window layers (Gemma 3's local layers: 10,000), which take no scaling; absent: `theta`
   * (and `scaling`) on every layer.
   */
  localTheta?: number;
}

/**
 * Gated DeltaNet (Qwen3.5's linear attention) on some layers: q|k|v from one projection through a causal depthwise
 * conv1d (K taps) and SiLU, q and k l2-normed, then the gated delta rule over a (Dk × Dv) state per value head, a gated
 * RMSNorm with silu(z) and an out projection (reference/qwen35.ts, @intab/gpu/reference gated-delta.ts).
 */
export interface LinearAttentionSpec {
  /** Layers (ascending) that run Gated DeltaNet; the others run (gated) attention. */
  layers: readonly number[];
  /** K: conv1d taps (HF linear_conv_kernel_dim, GGUF ssm.conv_kernel), 4 in Qwen3.5. */
  convKernel: number;
  /** Hk: key (and query) heads (linear_num_key_heads, GGUF ssm.group_count). */
  kHeads: number;
  /** Hv: value heads, each with its own state (linear_num_value_heads, GGUF ssm.time_step_rank); Hv % Hk == 0. */
  vHeads: number;
  /** Dk: key head dimension (linear_key_head_dim, GGUF ssm.state_size). */
  kDim: number;
  /** Dv: value head dimension (linear_value_head_dim; GGUF ssm.inner_size / Hv). */
  vDim: number;
  /**
   * Which key head value head h reads when Hk < Hv: absent, llama.cpp's tiled h % Hk (GGUF, and what hfValueTransform
   * makes of HF values); 'grouped', transformers' ⌊h / (Hv/Hk)⌋, where a Hugging Face folder's tensors are read as
   * stored (openHfFolder), every value-head-indexed tensor in that order.
   */
  headOrder?: 'grouped';
}

export interface LlamaConfig {
  arch: LlamaArch;
  /** C: hidden size. */
  hidden: number;
  /** F: feed-forward inner size. */
  ffn: number;
  /** L: transformer blocks. */
  layers: number;
  /** H: query heads. */
  heads: number;
  /** Hkv: key/value heads (H % Hkv == 0; GQA when smaller). */
  kvHeads: number;
  /** D: head dimension; may differ from C/H (Qwen3, Mistral Nemo). */
  headDim: number;
  /** V: vocabulary size (rows of token_embd). */
  vocab: number;
  /** RMSNorm epsilon. */
  rmsEps: number;
  rope: RopeSpec;
  /** No output.weight: the lm_head is token_embd.weight. */
  tiedEmbeddings: boolean;
  /** attn_q/k/v carry biases (Qwen2). */
  qkvBias: boolean;
  /** RMSNorm (weights (D)) on each q and k head before rope (Qwen3). */
  qkNorm: boolean;
  /** q/k/v and gate/up are stored fused (Phi-3); loaders split them into the canonical tensors. */
  fusedProjections: boolean;
  /** Most positions the model was trained for. */
  maxContext: number;
  /** Attention looks back at most this many positions (pos - j < window), or null for full causal attention. */
  slidingWindow: number | null;
  /**
   * The layers (ascending) that use slidingWindow, the others attending to every position (Gemma 3: five local layers
   * to one global); absent: every layer.
   */
  slidingLayers?: readonly number[];
  /** Scale of the attention scores q·k (1/√headDim in most families; Gemma 3: 1/√query_pre_attn_scalar). */
  attnScale: number;
  /** The token embedding is multiplied by this before the first layer (Gemma: √hidden); 1 elsewhere. */
  embedScale: number;
  /**
   * An RMSNorm on the attention output and on the feed-forward output before each is added to the stream (Gemma 3's
   * post_attention_norm and post_ffw_norm).
   */
  postNorms: boolean;
  activation: Activation;
  /** Gated DeltaNet layers (Qwen3.5); absent: every layer is attention. */
  linearAttention?: LinearAttentionSpec;
  /**
   * The q projection yields (H, 2, D): each head's query and, after it, an output gate; the attention output is
   * multiplied by sigmoid(gate) before o_proj (Qwen3.5's attn_output_gate). Absent: false.
   */
  attnOutputGate?: boolean;
  /** Beginning-of-sequence id, or null when the model has none. */
  bosId: number | null;
  /** Every id that ends generation (Llama 3 instruct has several). */
  eosIds: number[];
}

/**
 * Each layer's attention window: config.slidingWindow on config.slidingLayers (on every layer when that is absent,
 * as Mistral), 0 (every earlier position) elsewhere. The forward, the CPU reference and the ONNX graph read this.
 * @example
 * layerWindows(gemma3_1b); // [512, 512, 512, 512, 512, 0, 512, ...]
 */
export function layerWindows(c: Pick<LlamaConfig, 'layers' | 'slidingWindow' | 'slidingLayers'>): number[] {
  const sliding = c.slidingLayers ? new Set(c.slidingLayers) : undefined;
  return Array.from({ length: c.layers }, (_, l) => (c.slidingWindow !== null && (!sliding || sliding.has(l)) ? c.slidingWindow : 0));
}

/** What configFromGguf needs of a tensor: its name and its row-major shape (TensorInfo fits). */
export interface TensorShapeLike {
  readonly name: string;
  readonly shape: readonly number[];
}

const ARCH_ADVICE = 'intab runs the Llama family (llama, mistral, qwen2, qwen3, phi3, smollm3; SmolLM2 is llama), Gemma 3 (gemma3, text only) and dense Qwen3.5 (qwen35, text only): pick a model of one of these architectures';
/** An encoder (embedding model) given to the decoder config: it is read by encoder-config.ts, for embeddings. */
const ENCODER_ADVICE = 'this is an embedding model (an encoder), not a text generator: load it for embeddings (encoderConfigFromGguf / encoderConfigFromHf, the engine\'s embed), or pick a generative model';
/** Qwen3.5's mixture-of-experts variant (GGUF qwen35moe, HF qwen3_5_moe): named so the refusal says what is missing. */
const MOE_ADVICE = 'intab runs the dense Qwen3.5 models (qwen35: 0.8B, 2B, 4B, 9B, 27B) but not mixture-of-experts ones (qwen35moe); it runs llama, mistral, qwen2, qwen3, phi3, smollm3, gemma3 and qwen35: pick a dense model';

// ---- field readers: each names the key that is missing or wrong ----

type Json = Record<string, unknown>;

/**
 * GGUF stores eps, theta and scaling factors as f32 (1e-5 reads back as 9.99999975e-6). An f32 value
 * becomes the shortest decimal that rounds to the same f32, so GGUF and config.json configs agree.
 */
function f32Decimal(v: number): number {
  if (Number.isInteger(v) || !Number.isFinite(v) || Math.fround(v) !== v) return v;
  for (let p = 1; p <= 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return f32Decimal(v);
  if (typeof v === 'bigint') return Number(v);
  return undefined;
}

function readNum(obj: Json, key: string, file: string, opts: { int?: boolean; min?: number; def?: number } = {}): number {
  const raw = obj[key];
  if (raw === undefined || raw === null) {
    if (opts.def !== undefined) return opts.def;
    throw new ModelFormatError(file, key, 'is missing');
  }
  const v = toNumber(raw);
  if (v === undefined || !Number.isFinite(v)) throw new ModelFormatError(file, key, `should be a number but is ${JSON.stringify(String(raw))}`);
  if (opts.int && !Number.isInteger(v)) throw new ModelFormatError(file, key, `should be an integer but is ${v}`);
  if (opts.min !== undefined && v < opts.min) throw new ModelFormatError(file, key, `should be at least ${opts.min} but is ${v}`);
  return v;
}

function readBool(obj: Json, key: string, file: string, def: boolean): boolean {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'boolean') throw new ModelFormatError(file, key, `should be true or false but is ${JSON.stringify(v)}`);
  return v;
}

function readIds(obj: Json, key: string, file: string): number[] {
  const v = obj[key];
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  return list.map((x, i) => {
    const n = toNumber(x);
    if (n === undefined || !Number.isInteger(n) || n < 0) throw new ModelFormatError(file, Array.isArray(v) ? `${key}[${i}]` : key, `should be a token id but is ${JSON.stringify(String(x))}`);
    return n;
  });
}

function checkShape(c: LlamaConfig, file: string, keys: { heads: string; kvHeads: string; rotary: string }): LlamaConfig {
  if (c.heads % c.kvHeads !== 0) throw new ModelFormatError(file, keys.kvHeads, `should divide the query head count ${c.heads} but is ${c.kvHeads}`);
  const r = c.rope.rotaryDim;
  if (!Number.isInteger(r) || r < 2 || r % 2 !== 0 || r > c.headDim) {
    throw new ModelFormatError(file, keys.rotary, `should give an even rotary dimension between 2 and the head dimension ${c.headDim} but gives ${r}`);
  }
  if (!(c.rope.theta > 0)) throw new ModelFormatError(file, 'rope theta', `should be positive but is ${c.rope.theta}`);
  return c;
}

function checkScaling(s: Llama3Scaling, file: string, key: string): Llama3Scaling {
  if (!(s.factor > 0 && s.lowFreqFactor > 0 && s.highFreqFactor > s.lowFreqFactor && s.originalMaxPositionEmbeddings > 0)) {
    throw new ModelFormatError(file, key, `needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0, got ${JSON.stringify(s)}`);
  }
  return s;
}

// ---- Hugging Face config.json ----

const HF_ARCH: Record<string, LlamaArch> = {
  llama: 'llama',
  mistral: 'mistral',
  qwen2: 'qwen2',
  qwen3: 'qwen3',
  phi3: 'phi3',
  smollm3: 'smollm3',
  gemma3_text: 'gemma3',
  gemma3: 'gemma3',
  qwen3_5_text: 'qwen35',
  qwen3_5: 'qwen35',
};
/** Mixture-of-experts relatives of Qwen3.5 (model types and classes), refused with MOE_ADVICE. */
const HF_MOE = new Set(['qwen3_5_moe', 'qwen3_5_moe_text', 'qwen3_next', 'Qwen3_5MoeForCausalLM', 'Qwen3_5MoeForConditionalGeneration', 'Qwen3NextForCausalLM']);
const HF_CLASS: Record<string, LlamaArch> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
  Phi3ForCausalLM: 'phi3',
  SmolLM3ForCausalLM: 'smollm3',
  Gemma3ForCausalLM: 'gemma3',
  Gemma3ForConditionalGeneration: 'gemma3',
  Qwen3_5ForCausalLM: 'qwen35',
  Qwen3_5ForConditionalGeneration: 'qwen35',
};

/**
 * Builds a LlamaConfig from a Hugging Face config.json (already parsed). Rope style is 'neox': HF
 * checkpoints store q/k rows permuted for rotate-half.
 * @example
 * const config = configFromHf(JSON.parse(await readFile('hf/config.json', 'utf8')), 'hf/config.json');
 */
export function configFromHf(configJson: unknown, file: string): LlamaConfig {
  if (typeof configJson !== 'object' || configJson === null || Array.isArray(configJson)) {
    throw new ModelFormatError(file, '(root)', 'should be a JSON object');
  }
  let j = configJson as Json;
  const cls = Array.isArray(j.architectures) ? j.architectures[0] : undefined;
  const moeField = HF_MOE.has(String(j.model_type)) ? 'model_type' : HF_MOE.has(String(cls)) ? 'architectures[0]' : undefined;
  if (moeField) throw new UnsupportedModelError(file, moeField, String(moeField === 'model_type' ? j.model_type : cls), MOE_ADVICE);
  // Gemma3ForConditionalGeneration and Qwen3_5ForConditionalGeneration (what the hub ships for Qwen3.5): the language
  // model's config is their text_config (the vision tower is not run).
  const multimodal = j.model_type === 'gemma3' || cls === 'Gemma3ForConditionalGeneration' ? 'gemma3_text' : j.model_type === 'qwen3_5' || cls === 'Qwen3_5ForConditionalGeneration' ? 'qwen3_5_text' : undefined;
  if (multimodal) {
    if (typeof j.text_config !== 'object' || j.text_config === null) throw new ModelFormatError(file, 'text_config', `is missing (a ${multimodal === 'gemma3_text' ? 'Gemma 3' : 'Qwen3.5'} multimodal config keeps its language model there)`);
    j = { tie_word_embeddings: j.tie_word_embeddings, eos_token_id: j.eos_token_id, bos_token_id: j.bos_token_id, ...(j.text_config as Json), model_type: multimodal };
  }
  let arch: LlamaArch | undefined;
  if (typeof j.model_type === 'string') {
    arch = HF_ARCH[j.model_type];
    if (!arch) throw new UnsupportedModelError(file, 'model_type', j.model_type, HF_ENCODER_TYPES.has(j.model_type) ? ENCODER_ADVICE : ARCH_ADVICE);
  } else if (Array.isArray(j.architectures) && typeof j.architectures[0] === 'string') {
    arch = HF_CLASS[j.architectures[0]];
    if (!arch) throw new UnsupportedModelError(file, 'architectures[0]', j.architectures[0], ARCH_ADVICE);
  } else {
    throw new ModelFormatError(file, 'model_type', 'is missing (and no architectures list names the model class)');
  }

  const hidden = readNum(j, 'hidden_size', file, { int: true, min: 1 });
  const heads = readNum(j, 'num_attention_heads', file, { int: true, min: 1 });
  const kvHeads = readNum(j, 'num_key_value_heads', file, { int: true, min: 1, def: heads });
  let headDim: number;
  if (j.head_dim !== undefined && j.head_dim !== null) headDim = readNum(j, 'head_dim', file, { int: true, min: 2 });
  else {
    if (hidden % heads !== 0) throw new ModelFormatError(file, 'num_attention_heads', `should divide hidden_size ${hidden} (or head_dim be given) but is ${heads}`);
    headDim = hidden / heads;
  }

  const activationName = j.hidden_activation ?? j.hidden_act ?? (arch === 'gemma3' ? 'gelu_pytorch_tanh' : 'silu');
  let activation: Activation;
  if (activationName === 'silu' || activationName === 'swish') activation = 'silu';
  else if (activationName === 'gelu_pytorch_tanh' || activationName === 'gelu_tanh') activation = 'gelu_tanh';
  else throw new UnsupportedModelError(file, j.hidden_activation !== undefined ? 'hidden_activation' : 'hidden_act', String(activationName), 'intab implements silu (SwiGLU) and gelu_pytorch_tanh feed-forwards');

  // transformers ≥ 5 moves rope_theta / rope_type into rope_parameters; older configs use rope_theta + rope_scaling.
  let ropeParams = (j.rope_parameters && typeof j.rope_parameters === 'object' ? j.rope_parameters : null) as Json | null;
  // Gemma 3 under transformers ≥ 5: one rope_parameters per layer type.
  const localRope = ropeParams?.sliding_attention as Json | undefined;
  if (ropeParams && typeof ropeParams.full_attention === 'object' && ropeParams.full_attention !== null) ropeParams = ropeParams.full_attention as Json;
  const theta = ropeParams && ropeParams.rope_theta !== undefined
    ? readNum(ropeParams, 'rope_theta', file, { min: 0 })
    : readNum(j, 'rope_theta', file, { min: 0, def: 10000 });
  const scalingObj = (ropeParams ?? (j.rope_scaling && typeof j.rope_scaling === 'object' ? j.rope_scaling : null)) as Json | null;
  const scalingKey = ropeParams ? 'rope_parameters' : 'rope_scaling';
  let scaling: Llama3Scaling | LinearScaling | undefined;
  if (j.rope_scaling !== undefined && j.rope_scaling !== null && typeof j.rope_scaling !== 'object') {
    throw new ModelFormatError(file, 'rope_scaling', 'should be an object or null');
  }
  if (scalingObj) {
    const type = scalingObj.rope_type ?? scalingObj.type ?? 'default';
    if (type === 'llama3') {
      scaling = checkScaling(
        {
          type: 'llama3',
          factor: readNum(scalingObj, 'factor', file),
          lowFreqFactor: readNum(scalingObj, 'low_freq_factor', file),
          highFreqFactor: readNum(scalingObj, 'high_freq_factor', file),
          originalMaxPositionEmbeddings: readNum(scalingObj, 'original_max_position_embeddings', file, { int: true }),
        },
        file,
        scalingKey,
      );
    } else if (type === 'linear') {
      scaling = { type: 'linear', factor: readNum(scalingObj, 'factor', file, { min: Number.MIN_VALUE }) };
    } else if (type !== 'default') {
      throw new UnsupportedModelError(file, `${scalingKey}.rope_type`, String(type), 'intab implements plain rope, linear and llama3 scaling: use a variant of the model without long-context rope scaling');
    }
  }
  // Qwen3.5 keeps partial_rotary_factor (0.25) in rope_parameters. Its mrope_section splits the rotary pairs between
  // text, height and width positions: for text all three are the token's position, which is plain neox rope.
  const partial = ropeParams && ropeParams.partial_rotary_factor !== undefined
    ? readNum(ropeParams, 'partial_rotary_factor', file, { min: 0 })
    : readNum(j, 'partial_rotary_factor', file, { min: 0, def: 1 });
  const rotaryDim = Math.floor(headDim * partial / 2) * 2; // transformers: int(head_dim * factor), even in practice

  // attention_bias also puts a bias on o_proj (llama, qwen3), mlp_bias on the feed-forward: not in the canonical tensor set.
  if (arch !== 'qwen2' && readBool(j, 'attention_bias', file, false)) {
    throw new UnsupportedModelError(file, 'attention_bias', 'true', 'intab implements q/k/v biases only as Qwen2 has them (no o_proj bias): use a model without attention biases');
  }
  if (readBool(j, 'mlp_bias', file, false)) throw new UnsupportedModelError(file, 'mlp_bias', 'true', 'intab implements bias-free feed-forwards: use a model without mlp biases');

  let slidingWindow: number | null = null;
  if (arch === 'mistral' || arch === 'phi3') {
    if (j.sliding_window !== undefined && j.sliding_window !== null) slidingWindow = readNum(j, 'sliding_window', file, { int: true, min: 1 });
  } else if (arch === 'qwen2' || arch === 'qwen3') {
    if (readBool(j, 'use_sliding_window', file, false)) {
      throw new UnsupportedModelError(file, 'use_sliding_window', 'true', 'intab does not implement per-layer sliding windows (max_window_layers): use the model with use_sliding_window false');
    }
  }

  const gemma = arch === 'gemma3' ? hfGemma3(j, file, headDim, localRope) : undefined;
  const qwen35 = arch === 'qwen35' ? hfQwen35(j, file) : undefined;
  if (gemma) slidingWindow = gemma.slidingWindow;
  const config: LlamaConfig = {
    arch,
    hidden,
    ffn: readNum(j, 'intermediate_size', file, { int: true, min: 1 }),
    layers: readNum(j, 'num_hidden_layers', file, { int: true, min: 1 }),
    heads,
    kvHeads,
    headDim,
    vocab: readNum(j, 'vocab_size', file, { int: true, min: 1 }),
    rmsEps: readNum(j, 'rms_norm_eps', file, { min: 0, def: arch === 'phi3' ? 1e-5 : 1e-6 }),
    rope: { theta, style: 'neox', rotaryDim, ...(scaling ? { scaling } : {}), ...hfNoRope(j, arch, file), ...(gemma ? { localTheta: gemma.localTheta } : {}) },
    tiedEmbeddings: readBool(j, 'tie_word_embeddings', file, arch === 'gemma3'),
    qkvBias: arch === 'qwen2',
    qkNorm: arch === 'qwen3' || arch === 'gemma3' || arch === 'qwen35',
    fusedProjections: arch === 'phi3',
    maxContext: readNum(j, 'max_position_embeddings', file, { int: true, min: 1 }),
    slidingWindow,
    ...(gemma ? { slidingLayers: gemma.slidingLayers } : {}),
    attnScale: 1 / Math.sqrt(gemma?.queryPreAttnScalar ?? headDim),
    embedScale: gemma ? Math.fround(Math.sqrt(hidden)) : 1,
    postNorms: arch === 'gemma3',
    activation,
    ...(qwen35 ? { linearAttention: qwen35.linearAttention, attnOutputGate: qwen35.attnOutputGate } : {}),
    bosId: readIds(j, 'bos_token_id', file)[0] ?? null,
    eosIds: readIds(j, 'eos_token_id', file),
  };
  return checkShape(config, file, { heads: 'num_attention_heads', kvHeads: 'num_key_value_heads', rotary: 'partial_rotary_factor' });
}

/**
 * Gemma 3's own keys: the sliding window and which layers use it (`layer_types`, else every
 * `sliding_window_pattern`-th layer is global, 6 by default), the local layers' RoPE base (`rope_local_base_freq`,
 * 10,000), `query_pre_attn_scalar`; soft-capped logits (Gemma 2's) are refused.
 */
function hfGemma3(j: Json, file: string, headDim: number, localRope: Json | undefined): { slidingWindow: number; slidingLayers: number[]; localTheta: number; queryPreAttnScalar: number } {
  const layers = readNum(j, 'num_hidden_layers', file, { int: true, min: 1 });
  for (const key of ['final_logit_softcapping', 'attn_logit_softcapping']) {
    if (j[key] !== undefined && j[key] !== null) throw new UnsupportedModelError(file, key, String(j[key]), 'intab runs Gemma 3, which has no soft-capping (Gemma 2 has): use a Gemma 3 checkpoint');
  }
  const slidingLayers = typedLayers(j, file, layers, 'sliding_attention') ?? everyNthLayer(readNum(j, 'sliding_window_pattern', file, { int: true, min: 1, def: 6 }), layers, false);
  return {
    slidingWindow: readNum(j, 'sliding_window', file, { int: true, min: 1, def: 4096 }),
    slidingLayers,
    localTheta: localRope?.rope_theta !== undefined ? readNum(localRope, 'rope_theta', file, { min: 0 }) : readNum(j, 'rope_local_base_freq', file, { min: 0, def: 10000 }),
    queryPreAttnScalar: readNum(j, 'query_pre_attn_scalar', file, { min: Number.MIN_VALUE, def: headDim }),
  };
}

/**
 * SmolLM3's NoPE layers from its config: `no_rope_layers` (one flag per layer, 1 where the layer uses RoPE), else
 * every `no_rope_layer_interval`-th layer (4 by default) counting from 1, as transformers derives the list.
 */
function hfNoRope(j: Json, arch: LlamaArch, file: string): { noRopeLayers?: number[] } {
  if (arch !== 'smollm3') return {};
  const layers = readNum(j, 'num_hidden_layers', file, { int: true, min: 1 });
  const flags = j.no_rope_layers;
  if (flags !== undefined && flags !== null) {
    if (!Array.isArray(flags) || flags.length !== layers || flags.some((f) => f !== 0 && f !== 1)) {
      throw new ModelFormatError(file, 'no_rope_layers', `should be ${layers} flags of 0 or 1 (one per layer)`);
    }
    return { noRopeLayers: flags.flatMap((f, i) => (f === 0 ? [i] : [])) };
  }
  const interval = readNum(j, 'no_rope_layer_interval', file, { int: true, min: 1, def: 4 });
  return { noRopeLayers: everyNthLayer(interval, layers) };
}

/**
 * The layers whose `layer_types` entry is `kind` (the others being 'full_attention'), or undefined when the config has
 * no layer_types.
 */
function typedLayers(j: Json, file: string, layers: number, kind: 'sliding_attention' | 'linear_attention'): number[] | undefined {
  const types = j.layer_types;
  if (types === undefined || types === null) return undefined;
  if (!Array.isArray(types) || types.length !== layers || types.some((t) => t !== kind && t !== 'full_attention')) {
    throw new ModelFormatError(file, 'layer_types', `should be ${layers} entries of '${kind}' or 'full_attention' (one per layer)`);
  }
  return types.flatMap((t, i) => (t === kind ? [i] : []));
}

/**
 * Qwen3.5's own keys: which layers are Gated DeltaNet (`layer_types`, else all but every `full_attention_interval`-th,
 * 4 by default, as transformers derives the list), the DeltaNet widths, and the attention output gate.
 */
function hfQwen35(j: Json, file: string): { linearAttention: LinearAttentionSpec; attnOutputGate: boolean } {
  const layers = readNum(j, 'num_hidden_layers', file, { int: true, min: 1 });
  const linear = typedLayers(j, file, layers, 'linear_attention') ?? everyNthLayer(readNum(j, 'full_attention_interval', file, { int: true, min: 1, def: 4 }), layers, false);
  if (j.num_experts !== undefined && j.num_experts !== null && readNum(j, 'num_experts', file, { int: true, min: 0 }) > 0) {
    throw new UnsupportedModelError(file, 'num_experts', String(j.num_experts), MOE_ADVICE);
  }
  const spec: LinearAttentionSpec = {
    layers: linear,
    convKernel: readNum(j, 'linear_conv_kernel_dim', file, { int: true, min: 1, def: 4 }),
    kHeads: readNum(j, 'linear_num_key_heads', file, { int: true, min: 1 }),
    vHeads: readNum(j, 'linear_num_value_heads', file, { int: true, min: 1 }),
    kDim: readNum(j, 'linear_key_head_dim', file, { int: true, min: 1 }),
    vDim: readNum(j, 'linear_value_head_dim', file, { int: true, min: 1 }),
  };
  checkLinear(spec, file, { kHeads: 'linear_num_key_heads', vHeads: 'linear_num_value_heads' });
  return { linearAttention: spec, attnOutputGate: readBool(j, 'attn_output_gate', file, true) };
}

function checkLinear(spec: LinearAttentionSpec, file: string, keys: { kHeads: string; vHeads: string }): void {
  if (spec.vHeads % spec.kHeads !== 0) {
    throw new ModelFormatError(file, keys.vHeads, `should be a multiple of the key head count ${spec.kHeads} (${keys.kHeads}) but is ${spec.vHeads}`);
  }
}

/**
 * Layers i with (i + 1) % step === 0, counting from 1 (`nth` true), or all the others (`nth` false): SmolLM3's NoPE
 * layers (llama.cpp's n_no_rope_layer_step, transformers' no_rope_layer_interval) and Gemma 3's sliding layers
 * (llama.cpp's set_swa_pattern, transformers' sliding_window_pattern).
 */
function everyNthLayer(step: number, layers: number, nth = true): number[] {
  return Array.from({ length: layers }, (_, i) => i).filter((i) => ((i + 1) % step === 0) === nth);
}

// ---- GGUF metadata ----

const GGUF_ARCH: Record<string, LlamaArch> = { llama: 'llama', mistral: 'mistral', qwen2: 'qwen2', qwen3: 'qwen3', phi3: 'phi3', smollm3: 'smollm3', gemma3: 'gemma3', qwen35: 'qwen35' };
/** llama.cpp's n_no_rope_layer_step, which it sets from the architecture (no GGUF key says it). */
const GGUF_NO_ROPE_STEP: Partial<Record<LlamaArch, number>> = { smollm3: 4 };
/** llama.cpp's LLAMA_ROPE_TYPE_NEOX list, restricted to what intab runs; the rest use adjacent pairs. */
// qwen35 is LLAMA_ROPE_TYPE_IMROPE (interleaved multimodal rope): for text every section takes the token's position,
// which is neox rope over rope.dimension_count dimensions.
const GGUF_NEOX: ReadonlySet<LlamaArch> = new Set<LlamaArch>(['qwen2', 'qwen3', 'phi3', 'gemma3', 'qwen35']);

/**
 * Builds a LlamaConfig from GGUF metadata. `tensors` (names and row-major shapes, e.g. the reader's
 * TensorInfo list) decide what metadata does not say: tied embeddings (no output.weight), qkv biases,
 * q/k norms, rope_freqs, and the vocabulary when the file has no tokenizer. Without them the
 * architecture's usual layout is assumed.
 * @example
 * const config = configFromGguf(gguf.metadata, 'model.gguf', gguf.tensors);
 */
export function configFromGguf(metadata: Record<string, unknown>, file: string, tensors?: readonly TensorShapeLike[]): LlamaConfig {
  const archName = metadata['general.architecture'];
  if (archName === undefined) throw new ModelFormatError(file, 'general.architecture', 'is missing');
  if (typeof archName !== 'string') throw new ModelFormatError(file, 'general.architecture', 'should be a string');
  const arch = GGUF_ARCH[archName];
  if (!arch) throw new UnsupportedModelError(file, 'general.architecture', archName, archName === 'qwen35moe' || archName === 'qwen3next' ? MOE_ADVICE : GGUF_ENCODER_ARCHS.has(archName) ? ENCODER_ADVICE : ARCH_ADVICE);
  const p = `${archName}.`;
  const m = metadata as Json;

  const experts = readNum(m, `${p}expert_count`, file, { int: true, min: 0, def: 0 });
  if (experts > 0) throw new UnsupportedModelError(file, `${p}expert_count`, String(experts), 'intab does not run mixture-of-experts models: pick a dense model');

  const hidden = readNum(m, `${p}embedding_length`, file, { int: true, min: 1 });
  const heads = readNum(m, `${p}attention.head_count`, file, { int: true, min: 1 });
  const kvKey = `${p}attention.head_count_kv`;
  let kvHeads = heads;
  const kvRaw = m[kvKey];
  if (Array.isArray(kvRaw)) {
    const vals = kvRaw.map(toNumber);
    if (vals.length === 0 || vals.some((v) => v !== vals[0])) throw new UnsupportedModelError(file, kvKey, JSON.stringify(kvRaw.map(String)), 'intab needs the same key/value head count in every layer');
    kvHeads = readNum({ [kvKey]: vals[0] }, kvKey, file, { int: true, min: 1 });
  } else kvHeads = readNum(m, kvKey, file, { int: true, min: 1, def: heads });
  let headDim: number;
  if (m[`${p}attention.key_length`] !== undefined) headDim = readNum(m, `${p}attention.key_length`, file, { int: true, min: 2 });
  else {
    if (hidden % heads !== 0) throw new ModelFormatError(file, `${p}attention.head_count`, `should divide ${p}embedding_length ${hidden} (or ${p}attention.key_length be given) but is ${heads}`);
    headDim = hidden / heads;
  }
  const valueLength = readNum(m, `${p}attention.value_length`, file, { int: true, min: 1, def: headDim });
  if (valueLength !== headDim) throw new UnsupportedModelError(file, `${p}attention.value_length`, String(valueLength), `intab needs value heads as wide as key heads (${headDim})`);

  const names = tensors ? new Set(tensors.map((t) => t.name)) : undefined;
  let vocab: number;
  const tokens = m['tokenizer.ggml.tokens'];
  if (Array.isArray(tokens)) vocab = tokens.length;
  else if (m[`${p}vocab_size`] !== undefined) vocab = readNum(m, `${p}vocab_size`, file, { int: true, min: 1 });
  else {
    const embd = tensors?.find((t) => t.name === 'token_embd.weight');
    if (!embd) throw new ModelFormatError(file, 'token_embd.weight', 'is needed for the vocabulary size (the file has no tokenizer.ggml.tokens): pass the tensor list to configFromGguf');
    vocab = embd.shape[0];
  }

  let scaling: Llama3Scaling | LinearScaling | undefined;
  const scalingType = m[`${p}rope.scaling.type`];
  if (scalingType !== undefined && scalingType !== 'none') {
    if (scalingType === 'linear') {
      scaling = { type: 'linear', factor: readNum(m, `${p}rope.scaling.factor`, file, { min: Number.MIN_VALUE }) };
    } else if (scalingType === 'llama3') {
      scaling = checkScaling(
        {
          type: 'llama3',
          factor: readNum(m, `${p}rope.scaling.factor`, file),
          lowFreqFactor: readNum(m, `${p}rope.scaling.low_freq_factor`, file, { def: 1 }),
          highFreqFactor: readNum(m, `${p}rope.scaling.high_freq_factor`, file, { def: 4 }),
          originalMaxPositionEmbeddings: readNum(m, `${p}rope.scaling.original_context_length`, file, { int: true }),
        },
        file,
        `${p}rope.scaling`,
      );
    } else {
      throw new UnsupportedModelError(file, `${p}rope.scaling.type`, String(scalingType), 'intab implements plain rope, linear and llama3 scaling (rope_freqs): use a variant of the model without long-context rope scaling');
    }
  }
  if (names && (names.has('rope_factors_long.weight') || names.has('rope_factors_short.weight'))) {
    throw new UnsupportedModelError(file, 'rope_factors_long.weight', 'present', 'intab does not implement LongRoPE: use the model\'s short-context (4k) variant');
  }
  const freqFactors = names?.has('rope_freqs.weight') ?? false;
  for (const bias of ['blk.0.attn_output.bias', 'blk.0.ffn_gate.bias', 'blk.0.ffn_up.bias', 'blk.0.ffn_down.bias']) {
    if (names?.has(bias)) throw new UnsupportedModelError(file, bias, 'present', 'intab implements q/k/v biases only (as Qwen2 has them): use a model without output or feed-forward biases');
  }

  const swaKey = `${p}attention.sliding_window`;
  const sw = m[swaKey] === undefined ? 0 : readNum(m, swaKey, file, { int: true, min: 0 });
  // Multi-token-prediction blocks (Qwen3.5's MTP, nextn_predict_layers) are stored after the decoder's as extra blocks
  // that the forward does not run (llama.cpp's n_layer() leaves them out too).
  const blocks = readNum(m, `${p}block_count`, file, { int: true, min: 1 });
  const nextn = readNum(m, `${p}nextn_predict_layers`, file, { int: true, min: 0, def: 0 });
  if (nextn >= blocks) throw new ModelFormatError(file, `${p}nextn_predict_layers`, `should be less than ${p}block_count ${blocks} but is ${nextn}`);
  const layers = blocks - nextn;
  const gemma = arch === 'gemma3';
  if (gemma) {
    for (const key of [`${p}final_logit_softcapping`, `${p}attn_logit_softcapping`]) {
      if (m[key] !== undefined && readNum(m, key, file) !== 0) throw new UnsupportedModelError(file, key, String(m[key]), 'intab runs Gemma 3, which has no soft-capping: use a Gemma 3 file');
    }
  }

  const qwen35 = arch === 'qwen35' ? ggufQwen35(m, p, file, layers) : undefined;

  const bos = m['tokenizer.ggml.bos_token_id'];
  const eosIds = [...readIds(m, 'tokenizer.ggml.eos_token_id', file), ...readIds(m, 'tokenizer.ggml.eot_token_id', file)];

  const config: LlamaConfig = {
    arch,
    hidden,
    ffn: readNum(m, `${p}feed_forward_length`, file, { int: true, min: 1 }),
    layers,
    heads,
    kvHeads,
    headDim,
    vocab,
    rmsEps: readNum(m, `${p}attention.layer_norm_rms_epsilon`, file, { min: 0 }),
    rope: {
      theta: readNum(m, `${p}rope.freq_base`, file, { min: 0, def: 10000 }),
      style: GGUF_NEOX.has(arch) ? 'neox' : 'normal',
      rotaryDim: readNum(m, `${p}rope.dimension_count`, file, { int: true, def: headDim }),
      ...(scaling ? { scaling } : {}),
      ...(freqFactors ? { freqFactors } : {}),
      ...(GGUF_NO_ROPE_STEP[arch] ? { noRopeLayers: everyNthLayer(GGUF_NO_ROPE_STEP[arch], layers) } : {}),
      // llama.cpp's fixed base of Gemma 3's local layers (rope_freq_base_train_swa; no GGUF key says it).
      ...(gemma ? { localTheta: 10000 } : {}),
    },
    tiedEmbeddings: names ? !names.has('output.weight') : false,
    qkvBias: names ? names.has('blk.0.attn_q.bias') : arch === 'qwen2',
    // Qwen3.5: layer 0 is a DeltaNet layer (whose q|k|v projection is also named attn_qkv); its attention layers
    // always have q/k norms.
    qkNorm: qwen35 ? true : names ? names.has('blk.0.attn_q_norm.weight') : arch === 'qwen3' || gemma,
    fusedProjections: qwen35 ? false : names ? names.has('blk.0.attn_qkv.weight') : arch === 'phi3',
    maxContext: readNum(m, `${p}context_length`, file, { int: true, min: 1 }),
    slidingWindow: sw > 0 ? sw : null,
    // Gemma 3: llama.cpp's fixed pattern of five local layers to one global (set_swa_pattern(6)).
    ...(gemma && sw > 0 ? { slidingLayers: everyNthLayer(6, layers, false) } : {}),
    // llama.cpp's f_attention_scale: 1/√(C/H) for the 62-layer (27B) Gemma 3, else 1/√D, as everywhere.
    attnScale: gemma && layers === 62 ? 1 / Math.sqrt(hidden / heads) : 1 / Math.sqrt(headDim),
    embedScale: gemma ? Math.fround(Math.sqrt(hidden)) : 1,
    postNorms: gemma,
    activation: gemma ? 'gelu_tanh' : 'silu',
    ...(qwen35 ? { linearAttention: qwen35, attnOutputGate: true } : {}),
    bosId: bos === undefined ? null : readIds(m, 'tokenizer.ggml.bos_token_id', file)[0],
    eosIds: [...new Set(eosIds)],
  };
  return checkShape(config, file, { heads: `${p}attention.head_count`, kvHeads: kvKey, rotary: `${p}rope.dimension_count` });
}

/**
 * Qwen3.5's DeltaNet keys as llama.cpp reads them (llama_model_qwen35::load_arch_hparams): ssm.conv_kernel,
 * ssm.state_size (Dk), ssm.group_count (Hk), ssm.time_step_rank (Hv), ssm.inner_size (Hv·Dv); the recurrent layers
 * from attention.recurrent_layers (one flag a layer) or, as llama.cpp does without it, all but every
 * full_attention_interval-th layer (4 by default).
 */
function ggufQwen35(m: Json, p: string, file: string, layers: number): LinearAttentionSpec {
  let linear: number[];
  const flags = m[`${p}attention.recurrent_layers`];
  if (flags !== undefined) {
    if (!Array.isArray(flags) || flags.length < layers) throw new ModelFormatError(file, `${p}attention.recurrent_layers`, `should be ${layers} flags (one per layer)`);
    linear = flags.slice(0, layers).flatMap((f, i) => (f === true || f === 1 ? [i] : []));
  } else linear = everyNthLayer(readNum(m, `${p}full_attention_interval`, file, { int: true, min: 1, def: 4 }), layers, false);
  const vHeads = readNum(m, `${p}ssm.time_step_rank`, file, { int: true, min: 1 });
  const inner = readNum(m, `${p}ssm.inner_size`, file, { int: true, min: 1 });
  if (inner % vHeads !== 0) throw new ModelFormatError(file, `${p}ssm.inner_size`, `should be a multiple of ${p}ssm.time_step_rank ${vHeads} (value heads × their width) but is ${inner}`);
  const spec: LinearAttentionSpec = {
    layers: linear,
    convKernel: readNum(m, `${p}ssm.conv_kernel`, file, { int: true, min: 1 }),
    kHeads: readNum(m, `${p}ssm.group_count`, file, { int: true, min: 1 }),
    vHeads,
    kDim: readNum(m, `${p}ssm.state_size`, file, { int: true, min: 1 }),
    vDim: inner / vHeads,
  };
  checkLinear(spec, file, { kHeads: `${p}ssm.group_count`, vHeads: `${p}ssm.time_step_rank` });
  return spec;
}
