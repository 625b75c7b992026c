// Opens a model from its files into what the Runner needs: a LlamaConfig and a table of tensors under
// canonical (GGUF-style) names, for a GGUF file (or its splits) or a Hugging Face folder. Nothing is
// read but headers and JSON; tensor bytes are streamed later by the weight upload.

import { configFromGguf, configFromHf, type LlamaConfig } from './config.ts';
import { ModelFormatError } from './errors.ts';
import { parseGguf, parseGgufSplits, type GgufFile } from './formats/gguf.ts';
import { ggufTypeWarnings } from './formats/gguf-keys.ts';
import { readHfFolder, type HfFolder } from './formats/hf-folder.ts';
import { canonicalHfName, fusedRows, hfValueOffset } from './tensor-names.ts';
import type { ByteSource, TensorInfo } from './types.ts';
import { fileBaseName } from './source.ts';
import { loadTokenizer, type Tokenizer } from './tokenizer/tokenizer.ts';
import { tokenizerFromGguf } from './tokenizer/gguf-tokenizer.ts';

export interface ModelFiles {
  config: LlamaConfig;
  /** Canonical name → stored tensor. */
  tensors: Map<string, TensorInfo>;
  /** The parsed GGUF, when the model came from one (tokenizer metadata lives there). */
  gguf?: GgufFile;
  /** The parsed folder, when the model came from Hugging Face files. */
  hf?: HfFolder;
  /**
   * An ONNX folder (onnx-community layout): the .onnx graph to run and the files its initializers may name as
   * external data, by name. `tensors` is then empty: the weights are the graph's (@intab/onnx runs it).
   */
  onnx?: { model: ByteSource; externalData: ReadonlyMap<string, ByteSource> };
  /** What is wrong with the files but does not stop intab reading them (a GGUF key in another type than the spec's). */
  warnings?: string[];
}

/** A GGUF model from one file or its splits (`*-00001-of-0000N.gguf`, in any order). */
export async function openGguf(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<ModelFiles> {
  return ggufModelFiles(await parseGgufSources(sources, options));
}

/** One GGUF file, or the splits of one, parsed (headers only). */
export async function parseGgufSources(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<GgufFile> {
  const list = Array.isArray(sources) ? sources : [sources as ByteSource];
  return list.length === 1 ? parseGguf(list[0], options) : parseGgufSplits(list, options);
}

/** A parsed GGUF's decoder model: its LlamaConfig and tensors under canonical names. */
export function ggufModelFiles(gguf: GgufFile): ModelFiles {
  const config = configFromGguf(Object.fromEntries(gguf.metadata), gguf.source.name, gguf.tensors);
  const tensors = new Map<string, TensorInfo>();
  for (const t of gguf.tensors) tensors.set(t.name, t);
  if (config.fusedProjections) {
    // Phi-3 GGUFs keep llama.cpp's fused blk.N.attn_qkv.weight and a (2F, C) blk.N.ffn_up.weight (gate rows first).
    for (let i = 0; i < config.layers; i++) {
      const b = `blk.${i}.`;
      const qkv = tensors.get(`${b}attn_qkv.weight`);
      if (qkv) splitRows(tensors, qkv, fusedRows(config, 'qkv'), [`${b}attn_q.weight`, `${b}attn_k.weight`, `${b}attn_v.weight`]);
      const up = tensors.get(`${b}ffn_up.weight`);
      if (up && !tensors.has(`${b}ffn_gate.weight`)) splitRows(tensors, up, fusedRows(config, 'gate_up'), [`${b}ffn_gate.weight`, `${b}ffn_up.weight`]);
    }
  }
  const warnings = ggufTypeWarnings(gguf);
  return { config, tensors, gguf, ...(warnings.length ? { warnings } : {}) };
}

/** Replace a fused (rows, K) tensor by row ranges under canonical names (rows of a matrix are contiguous). */
export function splitRows(tensors: Map<string, TensorInfo>, t: TensorInfo, parts: number[], names: readonly string[]): void {
  const [rows, cols] = t.shape;
  if (t.shape.length !== 2 || parts.reduce((a, b) => a + b, 0) !== rows || t.byteLength % rows !== 0) {
    throw new ModelFormatError(t.source.name, `tensor '${t.name}' shape`, `[${t.shape.join(', ')}] does not split into ${parts.join(' + ')} rows`);
  }
  const rowBytes = t.byteLength / rows;
  tensors.delete(t.name);
  let row = 0;
  names.forEach((name, i) => {
    tensors.set(name, { ...t, name, shape: [parts[i], cols], offset: t.offset + row * rowBytes, byteLength: parts[i] * rowBytes });
    row += parts[i];
  });
}

/**
 * A Hugging Face folder: config.json and model.safetensors (or shards with model.safetensors.index.json).
 * Fused projections (Phi-3's qkv_proj and gate_up_proj) become row ranges of the stored tensor.
 */
export async function openHfFolder(files: Map<string, ByteSource> | ((name: string) => ByteSource | undefined)): Promise<ModelFiles> {
  const hf = await readHfFolder(files);
  let config = configFromHf(hf.config, 'config.json');
  // Qwen3.5 with fewer key than value heads: its tensors stay in transformers' grouped value-head order (llama.cpp's
  // converter reorders them to tiled, by rows and columns), and the forward reads key heads in that order.
  if (config.linearAttention && config.linearAttention.kHeads !== config.linearAttention.vHeads) config = { ...config, linearAttention: { ...config.linearAttention, headOrder: 'grouped' } };
  const la = config.linearAttention;
  const tensors = new Map<string, TensorInfo>();
  for (const t of hf.tensors) {
    const canonical = canonicalHfName(t.name, config.arch);
    if (canonical === null) continue; // not a weight the forward uses (e.g. rotary inv_freq buffers)
    if (typeof canonical === 'string') {
      const valueOffset = hfValueOffset(config.arch, canonical);
      let info: TensorInfo = valueOffset ? { ...t, valueOffset } : t;
      // Qwen3.5 (llama.cpp's values, as hfValueTransform gives them): ssm_a = −exp(A_log); the conv's (C, 1, K) taps as (C, K)
      if (la && canonical.endsWith('.ssm_a')) info = { ...info, valueTransform: 'negExp' };
      if (la && canonical.endsWith('.ssm_conv1d.weight') && t.shape.length === 3) info = { ...info, shape: [t.shape[0], t.shape[2]] };
      tensors.set(canonical, info);
      continue;
    }
    tensors.set(t.name, t);
    splitRows(tensors, t, fusedRows(config, canonical.fused), canonical.parts);
  }
  return { config, tensors, hf };
}

/** The .onnx files of an onnx-community folder, most widely runnable first: f32 runs on every backend (SwiftShader has no f16). */
const ONNX_PREFERENCE = ['model.onnx', 'model_quantized.onnx', 'model_int8.onnx', 'model_uint8.onnx', 'model_fp16.onnx', 'model_q4.onnx', 'model_q4f16.onnx', 'model_bnb4.onnx'];

/**
 * An ONNX folder in the layout onnx-community and transformers.js use: config.json, the tokenizer files, and
 * onnx/model*.onnx with its external data (model.onnx_data, ...). Keys may carry folder prefixes ('onnx/model.onnx').
 * `onnxFile` picks the graph (a base name such as 'model_q4.onnx'); else model.onnx, then the others by
 * ONNX_PREFERENCE. The graph's weights are read when it runs (@intab/onnx), so `tensors` is empty.
 * @example
 * const model = await openOnnxFolder(new Map([['config.json', cfg], ['onnx/model.onnx', graph], ['onnx/model.onnx_data', data]]));
 */
export async function openOnnxFolder(files: ReadonlyMap<string, ByteSource>, options: { onnxFile?: string; signal?: AbortSignal } = {}): Promise<ModelFiles> {
  const hf = await readHfFolder(new Map(files), { weights: false, signal: options.signal });
  const config = configFromHf(hf.config, 'config.json');
  const graphs = [...files.keys()].filter((k) => /\.onnx$/i.test(k));
  const rank = (k: string) => {
    const i = ONNX_PREFERENCE.indexOf(fileBaseName(k));
    return i < 0 ? ONNX_PREFERENCE.length : i;
  };
  const chosen = options.onnxFile
    ? graphs.find((k) => k === options.onnxFile || fileBaseName(k) === fileBaseName(options.onnxFile!))
    : graphs.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))[0];
  if (!chosen) {
    throw new ModelFormatError(options.onnxFile ?? 'onnx/model.onnx', 'ONNX graph', `${options.onnxFile ? 'it is not' : 'no .onnx file is'} among the folder's files (${[...files.keys()].join(', ')}); an ONNX folder holds onnx/model*.onnx beside config.json`);
  }
  // External data is named relative to the .onnx file: its base name and the files beside it.
  const stem = fileBaseName(chosen);
  const externalData = new Map<string, ByteSource>();
  for (const [k, v] of files) if (k !== chosen && fileBaseName(k).startsWith(stem)) externalData.set(fileBaseName(k), v);
  return { config, tensors: new Map(), hf, onnx: { model: files.get(chosen)!, externalData } };
}

/**
 * The model's tokenizer: tokenizer.json (+ tokenizer_config.json) of a Hugging Face folder, or the
 * vocabulary embedded in a GGUF; undefined when the files carry none (drive such a model with ids).
 */
export function openTokenizer(model: Pick<ModelFiles, 'gguf' | 'hf'>): Tokenizer | undefined {
  if (model.gguf) {
    if (!model.gguf.metadata.has('tokenizer.ggml.model')) return undefined;
    return tokenizerFromGguf(model.gguf.metadata, model.gguf.source.name);
  }
  if (model.hf?.tokenizerJson) {
    return loadTokenizer({
      tokenizerJson: model.hf.tokenizerJson,
      tokenizerConfig: model.hf.tokenizerConfig,
      generationConfig: model.hf.generationConfig,
      file: 'tokenizer.json',
    });
  }
  return undefined;
}
