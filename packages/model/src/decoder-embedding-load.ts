// Opens a decoder embedding model's GGUF (Qwen3-Embedding: `qwen3` with a pooling_type; EmbeddingGemma:
// `gemma-embedding`) into its DecoderEmbeddingConfig and the tensor table the decoder's weight upload and the CPU
// reference read (canonical llama.cpp names, as a text generator's: the layers are the same), plus dense_2 / dense_3.
// Nothing is read but headers.

import { decoderEmbeddingConfigFromGguf, isDecoderEmbeddingGguf, type DecoderEmbeddingConfig } from './decoder-embedding-config.ts';
import { ModelMismatchError, UnsupportedModelError } from './errors.ts';
import type { GgufFile } from './formats/gguf.ts';
import { ggufTypeWarnings } from './formats/gguf-keys.ts';
import type { HfFolder } from './formats/hf-folder.ts';
import { parseGgufSources } from './load.ts';
import type { ByteSource, TensorInfo } from './types.ts';

export interface DecoderEmbeddingFiles {
  config: DecoderEmbeddingConfig;
  /** Canonical (llama.cpp) name → stored tensor: the decoder's, and dense_2 / dense_3 when the model has them. */
  tensors: Map<string, TensorInfo>;
  /** The parsed GGUF (its tokenizer lives there: openTokenizer). */
  gguf?: GgufFile;
  /** The parsed folder, when the model came from Hugging Face files. */
  hf?: HfFolder;
  /** What is wrong with the files but does not stop intab reading them. */
  warnings?: string[];
}

/**
 * Whether opened files are a decoder embedding model's.
 * @example
 * const files = await openAnyGguf(source);
 * if (isDecoderEmbeddingFiles(files)) console.log(files.config.pooling); // 'last'
 */
export function isDecoderEmbeddingFiles(files: { config: object }): files is DecoderEmbeddingFiles {
  return 'decoder' in files.config && 'attention' in files.config;
}

/**
 * A decoder embedding GGUF (one file or its splits): its config and tensors under canonical names, the projections'
 * shapes checked (the layers' are checked by the weight loaders, as for a text generator).
 * @example
 * const model = await openDecoderEmbeddingGguf(await pathSource('qwen3-embedding-0.6b-q8_0.gguf'));
 * const tokenizer = openTokenizer(model); // <|endoftext|> after every text
 */
export async function openDecoderEmbeddingGguf(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<DecoderEmbeddingFiles> {
  return ggufDecoderEmbeddingFiles(await parseGgufSources(sources, options));
}

/** A parsed GGUF's decoder embedding model. */
export function ggufDecoderEmbeddingFiles(gguf: GgufFile): DecoderEmbeddingFiles {
  const file = gguf.source.name;
  const metadata = Object.fromEntries(gguf.metadata);
  if (!isDecoderEmbeddingGguf(metadata)) {
    throw new UnsupportedModelError(file, 'general.architecture', String(metadata['general.architecture']), 'this is not a decoder embedding model (gemma-embedding, or a decoder GGUF with a pooling_type): open it as a text generator (openGguf) or an encoder (openEncoderGguf)');
  }
  const config = decoderEmbeddingConfigFromGguf(metadata, file, gguf.tensors);
  const tensors = new Map<string, TensorInfo>(gguf.tensors.map((t) => [t.name, t]));
  for (const d of config.dense) {
    const t = tensors.get(d.name);
    if (!t) throw new ModelMismatchError(file, d.name, `a tensor of shape [${d.rows}, ${d.cols}]`, 'missing');
  }
  const warnings = ggufTypeWarnings(gguf);
  return { config, tensors, gguf, ...(warnings.length ? { warnings } : {}) };
}
