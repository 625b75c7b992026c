// A model's files opened as whichever kind they hold: a text generator's decoder (ModelFiles, load.ts) or an embedding
// model's encoder (EncoderFiles, encoder-load.ts), told apart by the GGUF's general.architecture or the folder's
// config.json model_type, so that one load path takes either. The GGUF's header is read once.

import { GGUF_ENCODER_ARCHS, HF_ENCODER_TYPES } from './encoder-config.ts';
import { ggufEncoderFiles, openEncoderHfFolder, type EncoderFiles } from './encoder-load.ts';
import { ModelFormatError } from './errors.ts';
import { folderLookup, type HfFiles } from './formats/hf-folder.ts';
import { ggufModelFiles, openHfFolder, parseGgufSources, type ModelFiles } from './load.ts';
import type { ByteSource } from './types.ts';

/** A decoder's files or an encoder's. */
export type AnyModelFiles = ModelFiles | EncoderFiles;

/** Whether opened files are an embedding model's encoder. */
export function isEncoderFiles(files: AnyModelFiles): files is EncoderFiles {
  return 'pooling' in files.config;
}

/**
 * A GGUF (one file or its splits) as the model it holds: an encoder for the encoder architectures (bert, nomic-bert;
 * those intab does not run are refused naming them as embedding models), else a decoder.
 * @example
 * const files = await openAnyGguf(await pathSource('all-minilm-l6.gguf'));
 * if (isEncoderFiles(files)) console.log(files.config.pooling); // 'mean'
 */
export async function openAnyGguf(sources: ByteSource | readonly ByteSource[], options: { signal?: AbortSignal } = {}): Promise<AnyModelFiles> {
  const gguf = await parseGgufSources(sources, options);
  const arch = gguf.metadata.get('general.architecture');
  return typeof arch === 'string' && GGUF_ENCODER_ARCHS.has(arch) ? ggufEncoderFiles(gguf) : ggufModelFiles(gguf);
}

/**
 * A Hugging Face folder as the model it holds: an encoder when config.json's model_type is one (bert, nomic_bert; a
 * sentence-transformers folder), else a decoder.
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
  return openHfFolder(files as Map<string, ByteSource>);
}
