// Canonical tensor names: the forward and the loaders name every tensor as GGUF does ('blk.3.attn_k.weight'), and
// Hugging Face checkpoints are mapped onto those names here. Phi-3's fused projections (qkv_proj, gate_up_proj)
// map to the canonical parts they hold, split by rows (fusedRows) when a model is opened (load.ts). Qwen3.5's values
// change on the way as convert_hf_to_gguf.py changes them (hfValueTransform): (1 + w) norms, A_log → −exp(A_log), and
// value heads from grouped-by-key-head to tiled order.

import type { LlamaArch, LlamaConfig } from './config.ts';

/** A fused HF tensor (Phi-3's qkv_proj / gate_up_proj) that loaders split by rows into `parts`. */
export interface FusedTensor {
  readonly fused: 'qkv' | 'gate_up';
  readonly layer: number;
  /** Canonical names of the row blocks, in storage order: [attn_q, attn_k, attn_v] or [ffn_gate, ffn_up]. */
  readonly parts: readonly string[];
}

const HF_LAYER: Record<string, string | FusedTensor['fused']> = {
  'input_layernorm.weight': 'attn_norm.weight',
  'post_attention_layernorm.weight': 'ffn_norm.weight',
  'self_attn.q_proj.weight': 'attn_q.weight',
  'self_attn.k_proj.weight': 'attn_k.weight',
  'self_attn.v_proj.weight': 'attn_v.weight',
  'self_attn.q_proj.bias': 'attn_q.bias',
  'self_attn.k_proj.bias': 'attn_k.bias',
  'self_attn.v_proj.bias': 'attn_v.bias',
  'self_attn.o_proj.weight': 'attn_output.weight',
  'self_attn.q_norm.weight': 'attn_q_norm.weight',
  'self_attn.k_norm.weight': 'attn_k_norm.weight',
  'mlp.gate_proj.weight': 'ffn_gate.weight',
  'mlp.up_proj.weight': 'ffn_up.weight',
  'mlp.down_proj.weight': 'ffn_down.weight',
  'self_attn.qkv_proj.weight': 'qkv',
  'mlp.gate_up_proj.weight': 'gate_up',
};
/** Gemma 3's four norms a layer (its post_attention_layernorm is a post-norm, not the feed-forward's input norm). */
const HF_GEMMA3_LAYER: Record<string, string> = {
  'post_attention_layernorm.weight': 'post_attention_norm.weight',
  'pre_feedforward_layernorm.weight': 'ffn_norm.weight',
  'post_feedforward_layernorm.weight': 'post_ffw_norm.weight',
};
/** Qwen3.5: the Gated DeltaNet tensors (llama.cpp's names), and post_attention_layernorm as llama.cpp names it. */
const HF_QWEN35_LAYER: Record<string, string> = {
  'post_attention_layernorm.weight': 'post_attention_norm.weight',
  'linear_attn.in_proj_qkv.weight': 'attn_qkv.weight',
  'linear_attn.in_proj_z.weight': 'attn_gate.weight',
  'linear_attn.in_proj_b.weight': 'ssm_beta.weight',
  'linear_attn.in_proj_a.weight': 'ssm_alpha.weight',
  'linear_attn.conv1d.weight': 'ssm_conv1d.weight',
  'linear_attn.dt_bias': 'ssm_dt.bias',
  'linear_attn.A_log': 'ssm_a',
  'linear_attn.norm.weight': 'ssm_norm.weight',
  'linear_attn.out_proj.weight': 'ssm_out.weight',
};
const HF_GLOBAL: Record<string, string> = {
  'model.embed_tokens.weight': 'token_embd.weight',
  'model.norm.weight': 'output_norm.weight',
  'lm_head.weight': 'output.weight',
};

/**
 * Maps a Hugging Face tensor name to its canonical (GGUF) name, a FusedTensor marker for Phi-3's fused
 * projections, or null for tensors the forward does not use (rotary_emb.inv_freq, unknown names).
 * @example
 * canonicalHfName('model.layers.3.self_attn.k_proj.weight'); // 'blk.3.attn_k.weight'
 * canonicalHfName('model.layers.0.mlp.gate_up_proj.weight'); // { fused: 'gate_up', layer: 0, parts: ['blk.0.ffn_gate.weight', 'blk.0.ffn_up.weight'] }
 */
export function canonicalHfName(hfName: string, arch?: LlamaArch): string | FusedTensor | null {
  // Gemma3ForConditionalGeneration keeps its language model under language_model (transformers < 4.52: its own
  // model. and lm_head; later: model.language_model.); the vision tower's tensors map to nothing.
  const name = hfName.replace(/^(?:model\.language_model\.|language_model\.model\.)/, 'model.').replace(/^language_model\.lm_head\./, 'lm_head.');
  const global = HF_GLOBAL[name];
  if (global) return global;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(name);
  if (!m) return null;
  const layer = Number(m[1]);
  const own = arch === 'gemma3' ? HF_GEMMA3_LAYER : arch === 'qwen35' ? HF_QWEN35_LAYER : undefined;
  const mapped = own?.[m[2]] ?? HF_LAYER[m[2]];
  if (mapped === undefined) return null;
  const b = `blk.${layer}.`;
  if (mapped === 'qkv') return { fused: 'qkv', layer, parts: [`${b}attn_q.weight`, `${b}attn_k.weight`, `${b}attn_v.weight`] };
  if (mapped === 'gate_up') return { fused: 'gate_up', layer, parts: [`${b}ffn_gate.weight`, `${b}ffn_up.weight`] };
  return b + mapped;
}

/**
 * What a reader adds to each value of a canonical tensor from a Hugging Face checkpoint: 1 for Gemma's RMSNorm
 * weights (transformers multiplies by 1 + w; GGUF files store 1 + w, as the forward uses them), else 0.
 */
export function hfValueOffset(arch: LlamaArch, canonicalName: string): number {
  if (arch === 'qwen35') return canonicalName.endsWith('norm.weight') && !canonicalName.endsWith('ssm_norm.weight') ? 1 : 0;
  return arch === 'gemma3' && canonicalName.endsWith('norm.weight') ? 1 : 0;
}

/** The name (the feed-forward's input RMSNorm) a family's GGUF gives it: Qwen3.5's is llama.cpp's post_attention_norm. */
export function ffnNormName(config: Pick<LlamaConfig, 'arch'>, layer: number): string {
  return `blk.${layer}.${config.arch === 'qwen35' ? 'post_attention_norm' : 'ffn_norm'}.weight`;
}

/**
 * A Hugging Face tensor's values as the canonical (GGUF) tensor holds them, as convert_hf_to_gguf.py writes them:
 * hfValueOffset's 1 + w; Qwen3.5's ssm_a = −exp(A_log); and, where Qwen3.5 has fewer key than value heads (Hk < Hv),
 * the value heads reordered from grouped (value head h reads key head ⌊h / (Hv/Hk)⌋, transformers' repeat_interleave)
 * to tiled (h reads key head h mod Hk, llama.cpp's broadcast): the v rows of attn_qkv and the v channels of
 * ssm_conv1d, the rows of attn_gate, ssm_beta, ssm_alpha, ssm_a and ssm_dt, and the columns of ssm_out. `data` is not
 * modified.
 * @example
 * const ssmA = hfValueTransform(config, 'blk.0.ssm_a', aLog); // −exp(A_log), heads tiled
 */
export function hfValueTransform(config: Pick<LlamaConfig, 'arch' | 'hidden' | 'linearAttention'>, canonicalName: string, data: Float32Array): Float32Array {
  const offset = hfValueOffset(config.arch, canonicalName);
  let out = offset ? data.map((v) => v + offset) : data;
  const la = config.linearAttention;
  if (config.arch !== 'qwen35' || !la) return out;
  const tensor = canonicalName.replace(/^blk\.\d+\./, '');
  if (tensor === 'ssm_a') out = data.map((v) => -Math.exp(v));
  const { kHeads: Hk, vHeads: Hv, kDim: Dk, vDim: Dv, convKernel: K } = la;
  if (Hk === Hv) return out;
  const qk = 2 * Hk * Dk; // rows of attn_qkv (channels of ssm_conv1d) that q and k take before v's
  switch (tensor) {
    case 'attn_qkv.weight': return tileRows(out, qk * config.hidden, Hk, Hv / Hk, Dv * config.hidden);
    case 'ssm_conv1d.weight': return tileRows(out, qk * K, Hk, Hv / Hk, Dv * K);
    case 'attn_gate.weight': return tileRows(out, 0, Hk, Hv / Hk, Dv * config.hidden);
    case 'ssm_beta.weight':
    case 'ssm_alpha.weight': return tileRows(out, 0, Hk, Hv / Hk, config.hidden);
    case 'ssm_a':
    case 'ssm_dt.bias': return tileRows(out, 0, Hk, Hv / Hk, 1);
    case 'ssm_out.weight': {
      // (C, Hv·Dv): each row's Hv·Dv columns are heads; tile them row by row.
      const cols = Hv * Dv;
      const res = new Float32Array(out.length);
      for (let r = 0; r < config.hidden; r++) res.set(tileRows(out.subarray(r * cols, (r + 1) * cols), 0, Hk, Hv / Hk, Dv), r * cols);
      return res;
    }
    default: return out;
  }
}

/**
 * Head blocks of `size` values from `start` on, grouped [k0v0, k0v1, …, k1v0, …] → tiled [k0v0, k1v0, …, k0v1, …]:
 * the block of (key head kh, replica r) moves from kh·R + r to r·Hk + kh. Values before `start` are kept.
 */
function tileRows(data: Float32Array, start: number, Hk: number, R: number, size: number): Float32Array {
  const out = data.slice();
  for (let kh = 0; kh < Hk; kh++) {
    for (let r = 0; r < R; r++) out.set(data.subarray(start + (kh * R + r) * size, start + (kh * R + r + 1) * size), start + (r * Hk + kh) * size);
  }
  return out;
}

/** Rows of each part of a fused tensor: qkv → [H·D, Hkv·D, Hkv·D], gate_up → [F, F]. */
export function fusedRows(config: Pick<LlamaConfig, 'heads' | 'kvHeads' | 'headDim' | 'ffn'>, fused: FusedTensor['fused']): number[] {
  const { heads: H, kvHeads: Hkv, headDim: D, ffn: F } = config;
  return fused === 'qkv' ? [H * D, Hkv * D, Hkv * D] : [F, F];
}
