// A checkpoint as an ONNX folder in the onnx-community layout: config.json (the checkpoint's own, or one written
// from its LlamaConfig for a GGUF), its tokenizer files (a GGUF's vocabulary as the tokenizer.json intab converts it
// to), and onnx/model.onnx with its weights in
// onnx/model.onnx_data. What transformers.js and our own ONNX loader read, so a GGUF runs on every ONNX runtime,
// and `intab bench compare` runs the peers on exactly the graph ours runs. An embedding model's folder
// (encoderOnnxFolderFiles) is the layout of a Hugging Face encoder export, which transformers.js's feature-extraction
// pipeline loads: `intab bench embed` runs it on the same weights. Pure: it returns the files' bytes.

import { openTokenizer, type EncoderConfig, type EncoderFiles, type LlamaConfig, type ModelFiles } from '@intab/model';
import { buildEncoderGraph } from './encoder-graph.ts';
import { OnnxWriteError } from './errors.ts';
import { keepQuantized } from './load.ts';
import { buildLlamaGraph, tensorWeights } from './llama-graph.ts';

const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v, null, 2) + '\n');

/**
 * The folder's files by path ('config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'tokenizer.json', ...).
 * @example
 * for (const [path, bytes] of await onnxFolderFiles(await openGguf(source))) writeFileSync(join(dir, path), bytes);
 */
export async function onnxFolderFiles(model: ModelFiles, options: { signal?: AbortSignal } = {}): Promise<Map<string, Uint8Array>> {
  // As loadOnnxRunner writes it: q4_0 / q8_0 kept as MatMulNBits where the f32 graph would not fit a wasm heap.
  const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors, options), { externalData: 'model.onnx_data', signal: options.signal, matmulNBits: keepQuantized(model) });
  const files = new Map<string, Uint8Array>([['config.json', json(model.hf?.config ?? hfConfig(model.config))]]);
  if (model.hf?.tokenizerJson) files.set('tokenizer.json', json(model.hf.tokenizerJson));
  if (model.hf?.tokenizerConfig) files.set('tokenizer_config.json', json(model.hf.tokenizerConfig));
  // A GGUF's embedded vocabulary, as the tokenizer.json intab converted it to, with its chat template.
  const tok = model.gguf ? openTokenizer(model) : undefined;
  if (tok) {
    files.set('tokenizer.json', json(tok.json));
    const template = typeof tok.chatTemplate === 'string' ? tok.chatTemplate : tok.chatTemplate?.map((t) => ({ name: t.name, template: t.template }));
    files.set('tokenizer_config.json', json({ add_bos_token: tok.addBos, bos_token: tok.bosToken ?? null, eos_token: tok.eosToken ?? null, ...(template ? { chat_template: template } : {}) }));
  }
  if (model.hf?.generationConfig) files.set('generation_config.json', json(model.hf.generationConfig));
  files.set('onnx/model.onnx', graph.model);
  if (graph.externalData) files.set(`onnx/${graph.externalData.path}`, graph.externalData.data);
  return files;
}

/** Each family's Hugging Face model_type and class, as transformers (and transformers.js) name its text model. */
const HF_NAMES: Readonly<Record<LlamaConfig['arch'], [modelType: string, cls: string]>> = {
  llama: ['llama', 'LlamaForCausalLM'],
  mistral: ['mistral', 'MistralForCausalLM'],
  qwen2: ['qwen2', 'Qwen2ForCausalLM'],
  qwen3: ['qwen3', 'Qwen3ForCausalLM'],
  phi3: ['phi3', 'Phi3ForCausalLM'],
  smollm3: ['smollm3', 'SmolLM3ForCausalLM'],
  // 'gemma3' is the multimodal model, whose language model sits in text_config.
  gemma3: ['gemma3_text', 'Gemma3ForCausalLM'],
  qwen35: ['qwen3_5_text', 'Qwen3_5ForCausalLM'],
};

/**
 * A Hugging Face config.json for a LlamaConfig (a GGUF's): the fields transformers.js and configFromHf read to size
 * the K/V inputs and the vocabulary, and each family's own (Gemma 3's local layers and their RoPE base, its query
 * scale; SmolLM3's NoPE layers), so configFromHf reads the same model back. The graph itself carries the weights.
 */
export function hfConfig(c: LlamaConfig): Record<string, unknown> {
  const [modelType, cls] = HF_NAMES[c.arch];
  const layers = Array.from({ length: c.layers }, (_, l) => l);
  const sliding = new Set(c.slidingLayers ?? (c.slidingWindow !== null ? layers : []));
  const noRope = new Set(c.rope.noRopeLayers ?? []);
  return {
    architectures: [cls],
    model_type: modelType,
    hidden_size: c.hidden,
    intermediate_size: c.ffn,
    num_hidden_layers: c.layers,
    num_attention_heads: c.heads,
    num_key_value_heads: c.kvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocab,
    rms_norm_eps: c.rmsEps,
    rope_theta: c.rope.theta,
    max_position_embeddings: c.maxContext,
    tie_word_embeddings: c.tiedEmbeddings,
    hidden_act: c.activation === 'gelu_tanh' ? 'gelu_pytorch_tanh' : 'silu',
    ...(c.slidingWindow !== null ? { sliding_window: c.slidingWindow } : {}),
    ...(c.arch === 'gemma3'
      ? {
          layer_types: layers.map((l) => (sliding.has(l) ? 'sliding_attention' : 'full_attention')),
          rope_local_base_freq: c.rope.localTheta ?? c.rope.theta,
          query_pre_attn_scalar: 1 / c.attnScale ** 2,
        }
      : {}),
    ...(c.arch === 'smollm3' ? { no_rope_layers: layers.map((l) => (noRope.has(l) ? 0 : 1)) } : {}),
    ...(c.bosId !== null ? { bos_token_id: c.bosId } : {}),
    ...(c.eosIds.length ? { eos_token_id: c.eosIds.length === 1 ? c.eosIds[0] : c.eosIds } : {}),
    torch_dtype: 'float32',
  };
}

// ---- embedding models ----

/**
 * An embedding model (a GGUF's or a folder's encoder) as a Hugging Face encoder export: config.json (encoderHfConfig),
 * tokenizer.json (a GGUF's WordPiece vocabulary as intab converts it) and tokenizer_config.json (BERT's special tokens,
 * model_max_length = the trained positions), and onnx/model.onnx: the encoder graph with output 'last_hidden_state'
 * (B, T, C), inputs input_ids, attention_mask and, for BERT, token_type_ids. The weights are dequantized to f32 (as
 * onnxruntime runs them for intab too) and stay inline unless the model would pass protobuf's 2 GiB.
 * Throws OnnxWriteError when the model carries no tokenizer.
 * @example
 * const files = await encoderOnnxFolderFiles(await openEncoderGguf(await pathSource('all-minilm-l6.gguf')));
 * for (const [path, bytes] of files) writeFileSync(join(dir, path), bytes); // then pipeline('feature-extraction', dir)
 */
export async function encoderOnnxFolderFiles(model: EncoderFiles, options: { signal?: AbortSignal } = {}): Promise<Map<string, Uint8Array>> {
  const tok = openTokenizer(model);
  if (!tok) throw new OnnxWriteError('tokenizer.json', `the ${model.config.arch} model carries no tokenizer`, 'embed one in the GGUF (tokenizer.ggml.*) or put tokenizer.json in the folder');
  const graph = await buildEncoderGraph(model.config, tensorWeights(model.tensors, options), { output: 'last_hidden_state', signal: options.signal, file: 'weights' });
  const piece = (id: number | undefined) => (id === undefined ? undefined : tok.idToToken(id));
  const [cls, sep] = tok.encode('', { addSpecialTokens: true });
  const files = new Map<string, Uint8Array>([
    ['config.json', json(encoderHfConfig(model.config))],
    ['tokenizer.json', json(tok.json)],
    [
      'tokenizer_config.json',
      json({
        tokenizer_class: 'BertTokenizer',
        cls_token: piece(cls) ?? null,
        sep_token: piece(sep) ?? null,
        unk_token: piece(tok.unkId) ?? null,
        // Padded positions are masked; any id of the vocabulary pads, [SEP] where the vocabulary names no [PAD].
        pad_token: piece(tok.padId ?? tok.tokenToId('[PAD]')) ?? piece(sep) ?? null,
        mask_token: tok.tokenToId('[MASK]') !== undefined ? '[MASK]' : null,
        model_max_length: model.config.maxPositions,
        padding_side: 'right',
      }),
    ],
  ]);
  files.set('onnx/model.onnx', graph.model);
  if (graph.externalData) files.set(`onnx/${graph.externalData.path}`, graph.externalData.data);
  return files;
}

/**
 * A Hugging Face config.json for an EncoderConfig: BertModel's keys for 'bert', NomicBertModel's (GPT-2-style) for
 * 'nomic-bert', as encoderConfigFromHf reads them back. transformers.js reads model_type; the graph carries the rest.
 */
export function encoderHfConfig(c: EncoderConfig): Record<string, unknown> {
  if (c.arch === 'bert') {
    return {
      architectures: ['BertModel'],
      model_type: 'bert',
      hidden_size: c.hidden,
      num_hidden_layers: c.layers,
      num_attention_heads: c.heads,
      intermediate_size: c.ffn,
      vocab_size: c.vocab,
      max_position_embeddings: c.maxPositions,
      type_vocab_size: c.typeVocab,
      layer_norm_eps: c.eps,
      hidden_act: 'gelu',
      position_embedding_type: 'absolute',
      torch_dtype: 'float32',
    };
  }
  return {
    architectures: ['NomicBertModel'],
    model_type: 'nomic_bert',
    n_embd: c.hidden,
    n_layer: c.layers,
    n_head: c.heads,
    n_inner: c.ffn,
    vocab_size: c.vocab,
    n_positions: c.maxPositions,
    max_trained_positions: c.maxPositions,
    type_vocab_size: c.typeVocab,
    layer_norm_epsilon: c.eps,
    activation_function: 'swiglu',
    rotary_emb_base: c.rope?.theta ?? 10000,
    rotary_emb_fraction: c.rope ? c.rope.rotaryDim / c.headDim : 1,
    rotary_emb_interleaved: false,
    qkv_proj_bias: false,
    mlp_fc1_bias: false,
    mlp_fc2_bias: false,
    prenorm: false,
    causal: false,
    torch_dtype: 'float32',
  };
}
