// A checkpoint as an ONNX folder in the onnx-community layout: config.json (the checkpoint's own, or one written
// from its LlamaConfig for a GGUF), its tokenizer files (a GGUF's vocabulary as the tokenizer.json intab converts it
// to), and onnx/model.onnx with its weights in
// onnx/model.onnx_data. What transformers.js and our own ONNX loader read, so a GGUF runs on every ONNX runtime,
// and `intab bench compare` runs the peers on exactly the graph ours runs. Pure: it returns the files' bytes.

import { openTokenizer, type LlamaConfig, type ModelFiles } from '@intab/model';
import { buildLlamaGraph, tensorWeights } from './llama-graph.ts';

/**
 * The folder's files by path ('config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'tokenizer.json', ...).
 * @example
 * for (const [path, bytes] of await onnxFolderFiles(await openGguf(source))) writeFileSync(join(dir, path), bytes);
 */
export async function onnxFolderFiles(model: ModelFiles, options: { signal?: AbortSignal } = {}): Promise<Map<string, Uint8Array>> {
  const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors, options), { externalData: 'model.onnx_data', signal: options.signal });
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v, null, 2) + '\n');
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

/**
 * A Hugging Face config.json for a LlamaConfig (a GGUF's): the fields transformers.js and configFromHf read to size
 * the K/V inputs and the vocabulary. The graph itself carries the rope, norms and weights.
 */
export function hfConfig(c: LlamaConfig): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: c.arch,
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
    ...(c.bosId !== null ? { bos_token_id: c.bosId } : {}),
    ...(c.eosIds.length ? { eos_token_id: c.eosIds.length === 1 ? c.eosIds[0] : c.eosIds } : {}),
    torch_dtype: 'float32',
  };
}
