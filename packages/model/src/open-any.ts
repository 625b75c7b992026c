// A model's files opened as whichever kind they hold: a text generator's decoder (ModelFiles, load.ts), an embedding
// model's encoder (EncoderFiles, encoder-load.ts), or a decoder trained to embed (DecoderEmbeddingFiles: Qwen3-Embedding,
// `qwen3` with a pooling_type; EmbeddingGemma, `gemma-embedding`), told apart by the GGUF's general.architecture and
// pooling_type or the folder's config.json model_type, so that one load path takes any. The GGUF's header is read once.

import { isDecoderEmbeddingGguf } from './decoder-embedding-config.ts';
import { ggufDecoderEmbeddingFiles, type DecoderEmbeddingFiles } from './decoder-embedding-load.ts';
import { GGUF_ENCODER_ARCHS, HF_ENCODER_TYPES } from './encoder-config.ts';
import { ggufEncoderFiles, openEncoderHfFolder, type EncoderFiles } from './encoder-load.ts';
import { ModelFormatError, UnsupportedModelError } from './errors.ts';
import { folderLookup, type HfFiles } from './formats/hf-folder.ts';
import { ggufModelFiles, openHfFolder, parseGgufSources, type ModelFiles } from './load.ts';
import type { ByteSource } from './types.ts';

/** A text generator's files, an encoder's, or a decoder embedding model's. */
export type AnyModelFiles = ModelFiles | EncoderFiles | DecoderEmbeddingFiles;

/** The files of a model that embeds (or reranks): an encoder's or a decoder embedding model's. */
export type EmbeddingModelFiles = EncoderFiles | DecoderEmbeddingFiles;

/** Whether opened files are an encoder's (BERT family: an embedding model or a reranker). */
export function isEncoderFiles(files: AnyModelFiles): files is EncoderFiles {
  return 'pooling' in files.config && !('decoder' in files.config);
}

/** Whether opened files are a model that embeds or reranks (an encoder, or a decoder trained to embed), not a text generator. */
export function isEmbeddingModelFiles(files: AnyModelFiles): files is EmbeddingModelFiles {
  return 'pooling' in files.config;
}

/**
 * A GGUF (one file or its splits) as the model it holds: an encoder for the encoder architectures (bert, nomic-bert;
 * those intab does not run are refused naming them as embedding models), a decoder embedding model (gemma-embedding,
 * or a decoder with a pooling_type), else a text generator's decoder.
 * @example
 * const files = await openAnyGguf(await pathSource('all-minilm-l6.gguf'));
 * if (isEmbeddingModelFiles(files)) console.log(files.config.pooling); // 'mean'
 */
export async function openAnyGguf(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<AnyModelFiles> {
  const gguf = await parseGgufSources(sources, options);
  if (isDecoderEmbeddingGguf(Object.fromEntries(gguf.metadata))) return ggufDecoderEmbeddingFiles(gguf);
  const arch = gguf.metadata.get('general.architecture');
  return typeof arch === 'string' && GGUF_ENCODER_ARCHS.has(arch) ? ggufEncoderFiles(gguf) : ggufModelFiles(gguf);
}

/**
 * A Hugging Face folder as the model it holds: an encoder when config.json's model_type is one (bert, nomic_bert; a
 * sentence-transformers folder), else a decoder. A decoder's sentence-transformers folder (modules.json with a Pooling
 * module: Qwen3-Embedding's, EmbeddingGemma's) is refused, saying to convert it to GGUF: intab reads these models from
 * GGUF only.
 */
export async function openAnyHfFolder(files: HfFiles, options: { signal?: AbortSignal } = {}): Promise<AnyModelFiles> {
  const config = folderLookup(files)('config.json');
  if (!config) return openHfFolder(files as Map<string, ByteSource>); // its own error names what is missing
  let modelType: unknown;
  try {
    modelType = (JSON.parse(new TextDecoder().decode(await config.read(0, Math.min(config.size, 1 << 20), options.signal))) as { model_type?: unknown }).model_type;
  } catch (err) {
    throw new ModelFormatError(config.name, 'config.json', `the JSON does not parse (${(err as Error).message})`, { cause: err });
  }
  if (typeof modelType === 'string' && HF_ENCODER_TYPES.has(modelType)) return openEncoderHfFolder(files, options);
  const modules = folderLookup(files)('modules.json');
  if (modules) {
    let pooled = false;
    try {
      const list: unknown = JSON.parse(new TextDecoder().decode(await modules.read(0, Math.min(modules.size, 1 << 20), options.signal)));
      pooled = Array.isArray(list) && list.some((m) => typeof m?.type === 'string' && m.type.endsWith('Pooling'));
    } catch (err) {
      throw new ModelFormatError(modules.name, 'modules.json', `the JSON does not parse (${(err as Error).message})`, { cause: err });
    }
    if (pooled) {
      throw new UnsupportedModelError('modules.json', '(Pooling module)', `a ${String(modelType)} decoder trained to embed`, "intab reads decoder embedding models (Qwen3-Embedding, EmbeddingGemma) from GGUF only: convert this folder with llama.cpp's convert_hf_to_gguf.py (with --sentence-transformers-dense-modules, so that EmbeddingGemma's 2_Dense and 3_Dense come along) and load the .gguf");
    }
  }
  return openHfFolder(files as Map<string, ByteSource>);
}
