// Canonical tensor names: the forward and the loaders name every tensor as GGUF does ('blk.3.attn_k.weight'), and
// Hugging Face checkpoints are mapped onto those names here. Phi-3's fused projections (qkv_proj, gate_up_proj)
// map to the canonical parts they hold, split by rows (fusedRows) when a model is opened (load.ts).

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
  const mapped = (arch === 'gemma3' ? HF_GEMMA3_LAYER[m[2]] : undefined) ?? HF_LAYER[m[2]];
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
  return arch === 'gemma3' && canonicalName.endsWith('norm.weight') ? 1 : 0;
}

/** Rows of each part of a fused tensor: qkv → [H·D, Hkv·D, Hkv·D], gate_up → [F, F]. */
export function fusedRows(config: Pick<LlamaConfig, 'heads' | 'kvHeads' | 'headDim' | 'ffn'>, fused: FusedTensor['fused']): number[] {
  const { heads: H, kvHeads: Hkv, headDim: D, ffn: F } = config;
  return fused === 'qkv' ? [H * D, Hkv * D, Hkv * D] : [F, F];
}
