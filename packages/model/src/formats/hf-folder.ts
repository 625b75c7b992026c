// A Hugging Face model folder: config.json, generation_config.json, tokenizer.json, tokenizer_config.json and
// the weights (model.safetensors, or shards through model.safetensors.index.json). The JSON files are returned
// parsed but uninterpreted (architectures and tokenizers read them); weights come back as TensorInfo with
// their shard as source. Every JSON failure is a ModelFormatError naming the file.

import { ModelFormatError, UnsupportedModelError } from '../errors.ts';
import type { ByteSource, TensorInfo } from '../types.ts';
import { parseSafetensors, parseSafetensorsIndex } from './safetensors.ts';

/** The files of a folder by name (e.g. from a directory picker, a URL base, or a Node directory). */
export type HfFiles = ReadonlyMap<string, ByteSource> | ((name: string) => ByteSource | undefined);

export interface HfFolder {
  /** config.json, parsed. */
  readonly config: Record<string, unknown>;
  readonly generationConfig?: Record<string, unknown>;
  /** tokenizer.json, parsed (hand it to @huggingface/tokenizers). */
  readonly tokenizerJson?: Record<string, unknown>;
  readonly tokenizerConfig?: Record<string, unknown>;
  /** Every tensor of the checkpoint, each with its own (shard) source. */
  readonly tensors: readonly TensorInfo[];
  /** `__metadata__` of the (first) safetensors file. */
  readonly safetensorsMetadata: Readonly<Record<string, string>>;
}

export interface ReadHfFolderOptions {
  /** Read the safetensors checkpoint's headers [true]; false for a folder whose weights are elsewhere (an ONNX graph). */
  weights?: boolean;
  signal?: AbortSignal;
}

/** JSON files above this are refused before reading (the largest real tokenizer.json files are ~30 MB). */
const MAX_JSON_BYTES = 256 * 1024 * 1024;

/**
 * A folder's file by its path in the folder ('config.json', '1_Pooling/config.json'). Keys may carry a folder prefix
 * ('stories/hf/config.json', with / or \\): a key matches when it is the path or ends with '/' + the path, and of several
 * the one in the fewest folders wins, so 'config.json' is the model's, never a module's '1_Pooling/config.json'.
 * @example
 * folderLookup(new Map([['m/1_Pooling/config.json', a], ['m/config.json', b]]))('config.json'); // b
 */
export function folderLookup(files: HfFiles): (path: string) => ByteSource | undefined {
  if (typeof files === 'function') return files;
  const keys = [...files.keys()].map((k) => [k.replace(/\\/g, '/'), k] as const);
  return (path) => {
    const exact = files.get(path);
    if (exact) return exact;
    let best: { key: string; depth: number } | undefined;
    for (const [norm, key] of keys) {
      if (norm !== path && !norm.endsWith(`/${path}`)) continue;
      const depth = norm.split('/').length;
      if (!best || depth < best.depth) best = { key, depth };
    }
    return best && files.get(best.key);
  };
}

async function readJson(src: ByteSource, file: string, signal: AbortSignal | undefined): Promise<Record<string, unknown>> {
  if (src.size > MAX_JSON_BYTES) throw new ModelFormatError(src.name, file, `${src.size} bytes is too large for a JSON file (limit ${MAX_JSON_BYTES})`);
  const bytes = await src.read(0, src.size, signal);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new ModelFormatError(src.name, file, `the JSON does not parse (${(e as Error).message})`, { cause: e });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ModelFormatError(src.name, file, 'the JSON is not an object');
  }
  return value as Record<string, unknown>;
}

/**
 * Reads a Hugging Face folder's configs and safetensors headers (not the weights).
 * @example
 * const files = new Map([['config.json', await pathSource('hf/config.json')],
 *   ['model.safetensors', await pathSource('hf/model.safetensors')]]);
 * const folder = await readHfFolder(files);
 */
export async function readHfFolder(files: HfFiles, options: ReadHfFolderOptions = {}): Promise<HfFolder> {
  const { signal } = options;
  const get = folderLookup(files);
  const optional = async (file: string) => {
    const src = get(file);
    return src ? readJson(src, file, signal) : undefined;
  };

  const configSrc = get('config.json');
  if (!configSrc) throw new ModelFormatError('config.json', 'config.json', 'the folder has no config.json; a Hugging Face model folder needs it');
  const config = await readJson(configSrc, 'config.json', signal);
  const generationConfig = await optional('generation_config.json');
  const tokenizerJson = await optional('tokenizer.json');
  const tokenizerConfig = await optional('tokenizer_config.json');

  if (options.weights === false) return { config, generationConfig, tokenizerJson, tokenizerConfig, tensors: [], safetensorsMetadata: {} };
  let tensors: readonly TensorInfo[];
  let safetensorsMetadata: Readonly<Record<string, string>>;
  const indexSrc = get('model.safetensors.index.json');
  const singleSrc = get('model.safetensors');
  if (indexSrc) {
    const index = await readJson(indexSrc, 'model.safetensors.index.json', signal);
    const parsed = await parseSafetensorsIndex(index, get, { name: indexSrc.name, signal });
    tensors = parsed.tensors;
    safetensorsMetadata = parsed.shards[0]?.metadata ?? {};
  } else if (singleSrc) {
    const st = await parseSafetensors(singleSrc, { signal });
    tensors = st.tensors;
    safetensorsMetadata = st.metadata;
  } else if (get('pytorch_model.bin') || get('pytorch_model.bin.index.json')) {
    throw new UnsupportedModelError('pytorch_model.bin', 'weights format', 'PyTorch pickle', 'intab reads safetensors only; use a repository revision with model.safetensors, or convert the checkpoint with transformers (save_pretrained(safe_serialization=True))');
  } else {
    throw new ModelFormatError('model.safetensors', 'weights', 'the folder has neither model.safetensors nor model.safetensors.index.json; add the safetensors file(s) next to config.json');
  }
  return { config, generationConfig, tokenizerJson, tokenizerConfig, tensors, safetensorsMetadata };
}
