// The value types the GGUF spec and llama.cpp give the standard metadata keys. llama.cpp reads a key only in its own
// type ("key llama.rope.freq_base has wrong type u32 but expected type f32" refuses the file), and other readers
// (wllama's) break on a number in an unexpected width. The writer stores untyped numbers in these types (gguf-writer.ts);
// the reader's ggufTypeWarnings names every key a file stores otherwise, which intab still reads.

import type { GgufFile, GgufValueTypeName } from './gguf.ts';

/** A key's type: a scalar type, or `array<item>`; several where llama.cpp takes either (per-layer arrays). */
type KeyType = GgufValueTypeName | `array<${GgufValueTypeName}>`;

/** Keys under the architecture's prefix (`llama.`, `qwen3.`, …). */
const ARCH_KEYS: Readonly<Record<string, readonly KeyType[]>> = {
  context_length: ['u32'],
  embedding_length: ['u32'],
  block_count: ['u32'],
  feed_forward_length: ['u32', 'array<u32>', 'array<i32>'],
  vocab_size: ['u32'],
  expert_count: ['u32'],
  expert_used_count: ['u32'],
  logit_scale: ['f32'],
  attn_logit_softcapping: ['f32'],
  final_logit_softcapping: ['f32'],
  'attention.head_count': ['u32', 'array<u32>', 'array<i32>'],
  'attention.head_count_kv': ['u32', 'array<u32>', 'array<i32>'],
  'attention.key_length': ['u32'],
  'attention.value_length': ['u32'],
  'attention.layer_norm_epsilon': ['f32'],
  'attention.layer_norm_rms_epsilon': ['f32'],
  'attention.sliding_window': ['u32'],
  'attention.causal': ['bool'],
  'rope.dimension_count': ['u32'],
  'rope.freq_base': ['f32'],
  'rope.freq_base_swa': ['f32'],
  'rope.scaling.type': ['string'],
  'rope.scaling.factor': ['f32'],
  'rope.scaling.attn_factor': ['f32'],
  'rope.scaling.original_context_length': ['u32'],
  'rope.dimension_sections': ['array<i32>', 'array<u32>'],
  // State-space / linear-attention widths (Mamba, Qwen3.5's Gated DeltaNet).
  'ssm.conv_kernel': ['u32'],
  'ssm.inner_size': ['u32'],
  'ssm.state_size': ['u32'],
  'ssm.time_step_rank': ['u32'],
  'ssm.group_count': ['u32'],
  full_attention_interval: ['u32'],
  nextn_predict_layers: ['u32'],
  // Embedding models: llama_pooling_type (1 mean, 2 cls, 3 last, 4 rank).
  pooling_type: ['u32'],
};

/** Keys spelled in full. */
const FULL_KEYS: Readonly<Record<string, readonly KeyType[]>> = {
  'general.architecture': ['string'],
  'general.alignment': ['u32'],
  'general.name': ['string'],
  'general.file_type': ['u32'],
  'general.quantization_version': ['u32'],
  'tokenizer.ggml.model': ['string'],
  'tokenizer.ggml.pre': ['string'],
  'tokenizer.ggml.tokens': ['array<string>'],
  'tokenizer.ggml.token_type': ['array<i32>'],
  'tokenizer.ggml.scores': ['array<f32>'],
  'tokenizer.ggml.merges': ['array<string>'],
  'tokenizer.ggml.bos_token_id': ['u32'],
  'tokenizer.ggml.eos_token_id': ['u32'],
  'tokenizer.ggml.unknown_token_id': ['u32'],
  'tokenizer.ggml.padding_token_id': ['u32'],
  'tokenizer.ggml.eot_token_id': ['u32'],
  'tokenizer.ggml.eom_token_id': ['u32'],
  'tokenizer.ggml.add_bos_token': ['bool'],
  'tokenizer.ggml.add_eos_token': ['bool'],
  'tokenizer.ggml.add_space_prefix': ['bool'],
  // BERT's WordPiece ('bert'): the separator (llama.cpp's spelling), [CLS], [MASK], segment count and normalizer.
  'tokenizer.ggml.seperator_token_id': ['u32'],
  'tokenizer.ggml.cls_token_id': ['u32'],
  'tokenizer.ggml.mask_token_id': ['u32'],
  'tokenizer.ggml.add_sep_token': ['bool'],
  'tokenizer.ggml.token_type_count': ['u32'],
  'tokenizer.ggml.normalizer.lowercase': ['bool'],
  'tokenizer.ggml.normalizer.strip_accents': ['bool'],
  'tokenizer.chat_template': ['string'],
};

/**
 * The types the spec gives `key` (first: the one a writer uses), or undefined for a key it does not list. `arch` is the
 * file's general.architecture, whose prefix the model's keys carry.
 * @example
 * ggufKeyTypes('llama.rope.freq_base', 'llama'); // ['f32']
 */
export function ggufKeyTypes(key: string, arch: string | undefined): readonly KeyType[] | undefined {
  const full = FULL_KEYS[key];
  if (full) return full;
  if (arch && key.startsWith(`${arch}.`)) return ARCH_KEYS[key.slice(arch.length + 1)];
  return undefined;
}

/**
 * One line per metadata key the file stores in another type than the spec's: intab reads such a file (a number is a
 * number), but llama.cpp refuses it and other readers may fail on it, so the user is told which key and what to do.
 * @example
 * ggufTypeWarnings(await parseGguf(source)); // ["model.gguf: llama.rope.freq_base is stored as u32, …"]
 */
export function ggufTypeWarnings(file: Pick<GgufFile, 'metadata' | 'metadataTypes' | 'source'>): string[] {
  const arch = file.metadata.get('general.architecture');
  const out: string[] = [];
  for (const [key, stored] of file.metadataTypes) {
    const expected = ggufKeyTypes(key, typeof arch === 'string' ? arch : undefined);
    if (!expected || expected.includes(stored as KeyType)) continue;
    out.push(
      `${file.source.name}: ${key} is stored as ${stored}, where the GGUF spec and llama.cpp expect ${expected.join(' or ')}. ` +
        'intab reads it, but llama.cpp refuses this file and other GGUF readers may fail on it: write it again with a current converter.',
    );
  }
  return out;
}
