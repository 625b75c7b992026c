// transformers.js (@huggingface/transformers 4.x) as an embedding system in this Node process, on the same weights as
// intab: an embedding model's encoder is written as a Hugging Face encoder export (@intab/onnx's encoderOnnxFolderFiles:
// config.json, tokenizer.json, onnx/model.onnx with last_hidden_state) and loaded by transformers.js's
// feature-extraction pipeline from that folder, offline. In Node, transformers.js runs onnxruntime-node's CPU provider:
// the backend of intab's Node CPU path, so `intab bench embed` compares like with like, with the same session options
// (threads, sequential execution, no spinning; passed through the pipeline's `session_options`).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { EncoderFiles } from '@intab/model';
import { encoderOnnxFolderFiles } from '@intab/onnx';

/** Writes `model` as a transformers.js model folder at `dir` (created); returns the files' paths, relative to it. */
export async function writeTransformersFolder(model: EncoderFiles, dir: string): Promise<string[]> {
  const files = await encoderOnnxFolderFiles(model);
  for (const [path, bytes] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  }
  return [...files.keys()];
}

/** transformers.js's feature-extraction pipeline over a local folder, mean-pooled and normalised, batched. */
export interface TransformersEmbedder {
  /** '@huggingface/transformers 4.3.2'. */
  version: string;
  /** onnxruntime-node's intra-op threads, as passed in the session options. */
  threads: number;
  /** One pipeline call over all the texts (padded to the longest): one vector per text. */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Tokens of each text as transformers.js's tokenizer (the folder's tokenizer.json) encodes them, [CLS] and [SEP] included. */
  tokens(texts: string[]): number[];
  close(): Promise<void>;
}

/**
 * Loads `dir` (writeTransformersFolder's) in transformers.js on onnxruntime-node's CPU provider, fp32, with
 * `sessionOptions` (intab's Node runtime's: intra-op threads and the rest) so that both run alike. Nothing is fetched
 * and nothing is cached: remote models are off.
 * @example
 * const t = await openTransformersEmbedder(dir, { threads: 1, sessionOptions: nodeOrt({ threads: 1 }).sessionOptions });
 * const [v] = await t.embed(['a cat']);
 */
export async function openTransformersEmbedder(dir: string, o: { threads: number; sessionOptions?: Record<string, unknown> }): Promise<TransformersEmbedder> {
  const { pipeline, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.useFSCache = false;
  env.useWasmCache = false;
  const session_options = { ...o.sessionOptions, intraOpNumThreads: o.threads };
  const extractor = await pipeline('feature-extraction', dir, { dtype: 'fp32', device: 'cpu', local_files_only: true, session_options });
  return {
    version: `@huggingface/transformers ${env.version}`,
    threads: o.threads,
    async embed(texts) {
      const out = await extractor(texts, { pooling: 'mean', normalize: true });
      const [B, C] = out.dims;
      const data = out.data as Float32Array;
      return Array.from({ length: B }, (_, i) => data.slice(i * C, (i + 1) * C));
    },
    tokens: (texts) => texts.map((t) => extractor.tokenizer.encode(t).length),
    async close() {
      await extractor.dispose();
    },
  };
}
