// A model's bytes in the Node runtime: the files resolveModel found on disk, read in place (@intab/model's pathSource),
// or http(s) URLs read with range requests (urlSource), as the page reads them from the CLI's file server.
import { pathSource, urlSource, type AnyModelFiles, type ByteSource, type ModelFiles } from '@intab/model';
import type { ResolvedModel } from '../src/model-files.ts';
import { openAnyModel, openModel, type ModelRef } from '../page/shared.ts';

/** One of a job's urls: a path on disk, or an http(s) URL. */
export const sourceOf = (url: string): Promise<ByteSource> => (/^https?:\/\//.test(url) ? urlSource(url) : pathSource(url));

/** resolveModel's answer with its files' paths on disk as the job's urls (the page gets served URLs instead). */
export function onDisk<M extends ResolvedModel>(model: M): M {
  return model.dir ? { ...model, urls: model.files.map((f) => `${model.dir}/${f}`) } : model;
}

/**
 * Opens a model in Node: a GGUF, a Hugging Face or ONNX folder on disk, or their URLs.
 * @example
 * const files = await openOnDisk(resolveModel('../shared/models/stories260K/stories260K.gguf'));
 */
export function openOnDisk(model: ResolvedModel | ModelRef): Promise<ModelFiles> {
  return openModel(onDisk(model as ResolvedModel), sourceOf);
}

/** openOnDisk's files whichever model they hold: a text model's, or an embedding model's encoder (isEncoderFiles). */
export function openAnyOnDisk(model: ResolvedModel | ModelRef): Promise<AnyModelFiles> {
  return openAnyModel(onDisk(model as ResolvedModel), sourceOf);
}
