// Opens an embedding model's files into an EncoderConfig and a table of tensors under llama.cpp's names (the names
// the CPU reference and the WebGPU encoder read): a GGUF of architecture bert / nomic-bert, or a Hugging Face folder
// (config.json, model.safetensors, and sentence-transformers' modules.json and Pooling config), or a reranker's (a BERT /
// RoBERTa / XLM-R ...ForSequenceClassification folder: its head under llama.cpp's cls names, RoBERTa's position rows
// from pad_token_id + 1 on, as llama.cpp's converter cuts them). nomic-bert's fused
// q|k|v projection becomes three row ranges (attn_q, attn_k, attn_v), so both families read alike. Every tensor's
// shape is checked against the config here, once. Nothing is read but headers and JSON.

import { encoderConfigFromGguf, encoderConfigFromHf, robertaPositionOffset, type EncoderConfig } from './encoder-config.ts';
import { ModelFormatError, ModelMismatchError } from './errors.ts';
import type { GgufFile } from './formats/gguf.ts';
import { ggufTypeWarnings } from './formats/gguf-keys.ts';
import { folderLookup, readHfFolder, type HfFiles, type HfFolder } from './formats/hf-folder.ts';
import { parseGgufSources, splitRows } from './load.ts';
import type { ByteSource, TensorInfo } from './types.ts';

export interface EncoderFiles {
  config: EncoderConfig;
  /** Canonical (llama.cpp) name → stored tensor: see encoderTensorShapes. */
  tensors: Map<string, TensorInfo>;
  /** The parsed GGUF, when the model came from one (its tokenizer lives there: openTokenizer). */
  gguf?: GgufFile;
  /** The parsed folder, when the model came from Hugging Face files. */
  hf?: HfFolder;
  /** What is wrong with the files but does not stop intab reading them. */
  warnings?: string[];
}

/**
 * Every tensor the encoder reads, by canonical name, with its row-major shape: token_embd (V, C), token_types
 * (typeVocab, C) when the model has them, position_embd (maxPositions, C) for BERT, token_embd_norm, and per layer
 * attn_q/k/v and attn_output (C, C), attn_output_norm, ffn_up (F, C) (and ffn_gate for SwiGLU), ffn_down (C, F),
 * layer_output_norm; biases (N) on every projection where config.projectionBias; norms have weight and bias (C); a
 * reranker's head: cls.weight (C, C) and cls.bias (C) when config.classifier.dense, cls.output.weight (outputs, C) and
 * cls.output.bias (outputs) when it has outputs.
 * @example
 * encoderTensorShapes(config).get('blk.0.ffn_up.weight'); // [1536, 384]
 */
export function encoderTensorShapes(c: EncoderConfig): Map<string, number[]> {
  const { hidden: C, ffn: F } = c;
  const out = new Map<string, number[]>([['token_embd.weight', [c.vocab, C]]]);
  if (c.typeVocab > 0) out.set('token_types.weight', [c.typeVocab, C]);
  if (c.absolutePositions) out.set('position_embd.weight', [c.maxPositions, C]);
  const norm = (n: string) => {
    out.set(`${n}.weight`, [C]);
    out.set(`${n}.bias`, [C]);
  };
  const linear = (n: string, rows: number, cols: number) => {
    out.set(`${n}.weight`, [rows, cols]);
    if (c.projectionBias) out.set(`${n}.bias`, [rows]);
  };
  norm('token_embd_norm');
  for (let l = 0; l < c.layers; l++) {
    const b = `blk.${l}.`;
    for (const p of ['attn_q', 'attn_k', 'attn_v', 'attn_output']) linear(`${b}${p}`, C, C);
    norm(`${b}attn_output_norm`);
    linear(`${b}ffn_up`, F, C);
    if (c.activation === 'swiglu') linear(`${b}ffn_gate`, F, C);
    linear(`${b}ffn_down`, C, F);
    norm(`${b}layer_output_norm`);
  }
  if (c.classifier?.dense) {
    out.set('cls.weight', [C, C]);
    out.set('cls.bias', [C]);
  }
  if (c.classifier && c.classifier.outputs > 0) {
    out.set('cls.output.weight', [c.classifier.outputs, C]);
    out.set('cls.output.bias', [c.classifier.outputs]);
  }
  return out;
}

/** Checks that every tensor the config needs is there with its shape (1-D tensors may be stored as (1, N)). */
function checkTensors(config: EncoderConfig, tensors: ReadonlyMap<string, TensorInfo>, file: string): void {
  for (const [name, shape] of encoderTensorShapes(config)) {
    const t = tensors.get(name);
    if (!t) throw new ModelMismatchError(file, name, `a tensor of shape [${shape.join(', ')}]`, 'missing');
    const got = t.shape.length === 2 && shape.length === 1 && t.shape[0] === 1 ? [t.shape[1]] : t.shape;
    // The position table may hold more rows than the config's maxPositions (nomic's converter cuts the context).
    const ok = name === 'position_embd.weight' ? got[0] >= shape[0] && got[1] === shape[1] : got.length === shape.length && got.every((d, i) => d === shape[i]);
    if (!ok) throw new ModelMismatchError(file, `${name} shape`, `[${shape.join(', ')}]`, `[${t.shape.join(', ')}]`);
  }
}

/** A fused (3C, C) attn_qkv (and its bias) as attn_q, attn_k, attn_v row ranges. */
function splitQkv(config: EncoderConfig, tensors: Map<string, TensorInfo>): void {
  const C = config.hidden;
  for (let l = 0; l < config.layers; l++) {
    const b = `blk.${l}.`;
    for (const suffix of ['weight', 'bias']) {
      const t = tensors.get(`${b}attn_qkv.${suffix}`);
      if (!t) continue;
      const names = ['attn_q', 'attn_k', 'attn_v'].map((p) => `${b}${p}.${suffix}`);
      if (suffix === 'weight') splitRows(tensors, t, [C, C, C], names);
      else {
        // A bias is one row of 3C values: its thirds.
        if (t.shape.length !== 1 || t.shape[0] !== 3 * C || t.byteLength % 3 !== 0) throw new ModelMismatchError(t.source.name, `${t.name} shape`, `[${3 * C}]`, `[${t.shape.join(', ')}]`);
        tensors.delete(t.name);
        const third = t.byteLength / 3;
        names.forEach((name, i) => tensors.set(name, { ...t, name, shape: [C], offset: t.offset + i * third, byteLength: third }));
      }
    }
  }
}

/**
 * An encoder GGUF (one file or its splits): the config, and its tensors under canonical names, checked.
 * @example
 * const model = await openEncoderGguf(await pathSource('all-minilm-l6.gguf'));
 * const tokenizer = openTokenizer(model); // [CLS] ... [SEP] around every text
 */
export async function openEncoderGguf(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<EncoderFiles> {
  return ggufEncoderFiles(await parseGgufSources(sources, options));
}

/** A parsed GGUF's encoder: its EncoderConfig and tensors under canonical names, checked. */
export function ggufEncoderFiles(gguf: GgufFile): EncoderFiles {
  const file = gguf.source.name;
  const config = encoderConfigFromGguf(Object.fromEntries(gguf.metadata), file, gguf.tensors);
  const tensors = new Map<string, TensorInfo>(gguf.tensors.map((t) => [t.name, t]));
  splitQkv(config, tensors);
  checkTensors(config, tensors, file);
  const warnings = ggufTypeWarnings(gguf);
  return { config, tensors, gguf, ...(warnings.length ? { warnings } : {}) };
}

// ---- Hugging Face names ----

/** BERT's checkpoint names (after an optional 'bert.' prefix) → llama.cpp's; tensor_mapping.py's BERT rows. */
const BERT_LAYER: readonly [RegExp, string][] = [
  [/^encoder\.layer\.(\d+)\.attention\.self\.query\.(weight|bias)$/, 'attn_q'],
  [/^encoder\.layer\.(\d+)\.attention\.self\.key\.(weight|bias)$/, 'attn_k'],
  [/^encoder\.layer\.(\d+)\.attention\.self\.value\.(weight|bias)$/, 'attn_v'],
  [/^encoder\.layer\.(\d+)\.attention\.output\.dense\.(weight|bias)$/, 'attn_output'],
  [/^encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|bias|gamma|beta)$/, 'attn_output_norm'],
  [/^encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias)$/, 'ffn_up'],
  [/^encoder\.layer\.(\d+)\.output\.dense\.(weight|bias)$/, 'ffn_down'],
  [/^encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|bias|gamma|beta)$/, 'layer_output_norm'],
];
/** nomic-bert's (contrastors) names: Wqkv is q|k|v rows, fc11 the up projection, fc12 the gate (y = fc11(x) · silu(fc12(x))). */
const NOMIC_LAYER: readonly [RegExp, string][] = [
  [/^encoder\.layers\.(\d+)\.attn\.Wqkv\.(weight|bias)$/, 'attn_qkv'],
  [/^encoder\.layers\.(\d+)\.attn\.out_proj\.(weight|bias)$/, 'attn_output'],
  [/^encoder\.layers\.(\d+)\.norm1\.(weight|bias)$/, 'attn_output_norm'],
  [/^encoder\.layers\.(\d+)\.mlp\.fc11\.(weight|bias)$/, 'ffn_up'],
  [/^encoder\.layers\.(\d+)\.mlp\.fc12\.(weight|bias)$/, 'ffn_gate'],
  [/^encoder\.layers\.(\d+)\.mlp\.fc2\.(weight|bias)$/, 'ffn_down'],
  [/^encoder\.layers\.(\d+)\.norm2\.(weight|bias)$/, 'layer_output_norm'],
];
const EMBEDDINGS: Readonly<Record<string, string>> = {
  'embeddings.word_embeddings.weight': 'token_embd.weight',
  'embeddings.token_type_embeddings.weight': 'token_types.weight',
  'embeddings.position_embeddings.weight': 'position_embd.weight',
  'embeddings.LayerNorm.weight': 'token_embd_norm.weight',
  'embeddings.LayerNorm.bias': 'token_embd_norm.bias',
  'embeddings.LayerNorm.gamma': 'token_embd_norm.weight',
  'embeddings.LayerNorm.beta': 'token_embd_norm.bias',
  'emb_ln.weight': 'token_embd_norm.weight',
  'emb_ln.bias': 'token_embd_norm.bias',
};

/**
 * A sequence classifier's head under llama.cpp's names: BERT's pooler (dense + tanh) and classifier, RoBERTa's
 * classifier.dense and classifier.out_proj (convert_hf_to_gguf.py's cls / cls.output).
 */
const CLASSIFIER: Readonly<Record<string, string>> = {
  'pooler.dense.weight': 'cls.weight',
  'pooler.dense.bias': 'cls.bias',
  'classifier.weight': 'cls.output.weight',
  'classifier.bias': 'cls.output.bias',
  'classifier.dense.weight': 'cls.weight',
  'classifier.dense.bias': 'cls.bias',
  'classifier.out_proj.weight': 'cls.output.weight',
  'classifier.out_proj.bias': 'cls.output.bias',
};

/**
 * llama.cpp's name for a Hugging Face BERT / RoBERTa / nomic-bert tensor (nomic's Wqkv: 'blk.N.attn_qkv.*', split
 * later), or null for one the encoder does not read (masked-LM heads, position_ids buffers, and the pooler unless
 * `classifier`: a sequence classifier's head is read, an embedding model's pooler is not).
 * @example
 * canonicalEncoderName('encoder.layer.3.intermediate.dense.weight', 'bert'); // 'blk.3.ffn_up.weight'
 * canonicalEncoderName('classifier.out_proj.weight', 'bert', true); // 'cls.output.weight'
 */
export function canonicalEncoderName(name: string, arch: EncoderConfig['arch'], classifier = false): string | null {
  if (classifier && CLASSIFIER[name]) return CLASSIFIER[name];
  const n = name.replace(/^(bert|roberta|model)\./, '');
  if (EMBEDDINGS[n]) return EMBEDDINGS[n];
  if (classifier && CLASSIFIER[n]) return CLASSIFIER[n];
  for (const [re, canonical] of arch === 'bert' ? BERT_LAYER : NOMIC_LAYER) {
    const m = re.exec(n);
    if (m) return `blk.${m[1]}.${canonical}.${m[2] === 'gamma' ? 'weight' : m[2] === 'beta' ? 'bias' : m[2]}`;
  }
  return null;
}

/** A table's first `rows` rows cut off (RoBERTa's position rows before pad_token_id + 1, which no position reads). */
function dropLeadingRows(tensors: Map<string, TensorInfo>, name: string, rows: number): void {
  const t = tensors.get(name);
  if (!t || t.shape.length !== 2) return; // checkTensors names what is missing or misshapen
  if (t.shape[0] <= rows) throw new ModelMismatchError(t.source.name, `${name} shape`, `more than ${rows} rows (positions start at pad_token_id + 1)`, `[${t.shape.join(', ')}]`);
  const perRow = t.byteLength / t.shape[0];
  tensors.set(name, { ...t, shape: [t.shape[0] - rows, t.shape[1]], offset: t.offset + rows * perRow, byteLength: t.byteLength - rows * perRow });
}

async function readJsonFile(src: ByteSource, file: string, signal?: AbortSignal): Promise<unknown> {
  if (src.size > 1 << 20) throw new ModelFormatError(src.name, file, `${src.size} bytes is too large for a sentence-transformers config`);
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(await src.read(0, src.size, signal)));
  } catch (e) {
    throw new ModelFormatError(src.name, file, `the JSON does not parse (${(e as Error).message})`, { cause: e });
  }
}

/**
 * An embedding model's Hugging Face folder: config.json (bert or nomic_bert), model.safetensors (or shards), the
 * tokenizer files, and sentence-transformers' modules.json with its Pooling module's config.json (e.g.
 * '1_Pooling/config.json') and Normalize module. Tensors come back under canonical names, checked against the config.
 * @example
 * const model = await openEncoderHfFolder(new Map([['config.json', cfg], ['model.safetensors', st],
 *   ['modules.json', modules], ['1_Pooling/config.json', pooling], ['tokenizer.json', tok]]));
 */
export async function openEncoderHfFolder(files: HfFiles, options: { signal?: AbortSignal } = {}): Promise<EncoderFiles> {
  const { signal } = options;
  const hf = await readHfFolder(files, { signal });
  const get = folderLookup(files);
  const modulesSrc = get('modules.json');
  const modules = modulesSrc ? await readJsonFile(modulesSrc, 'modules.json', signal) : undefined;
  let pooling: unknown;
  let poolingFile: string | undefined;
  const poolingModule = Array.isArray(modules) ? modules.find((m) => typeof m?.type === 'string' && m.type.endsWith('Pooling')) : undefined;
  if (poolingModule && typeof poolingModule.path === 'string') {
    poolingFile = `${poolingModule.path.replace(/\/$/, '')}/config.json`;
    const src = get(poolingFile);
    pooling = src ? await readJsonFile(src, poolingFile, signal) : undefined;
  }
  const config = encoderConfigFromHf(hf.config, 'config.json', { modules, pooling, poolingFile });
  const tensors = new Map<string, TensorInfo>();
  for (const t of hf.tensors) {
    const canonical = canonicalEncoderName(t.name, config.arch, !!config.classifier);
    if (canonical !== null) tensors.set(canonical, { ...t, name: canonical });
  }
  const modelType = (hf.config as Record<string, unknown>).model_type;
  if (modelType === 'roberta' || modelType === 'xlm-roberta') dropLeadingRows(tensors, 'position_embd.weight', robertaPositionOffset(hf.config as Record<string, unknown>));
  splitQkv(config, tensors);
  checkTensors(config, tensors, 'model.safetensors');
  return { config, tensors, hf };
}
