// @intab/model: model files (GGUF, safetensors, Hugging Face folders), the Llama-family config and GPU
// forward, the paged KV-cache and the Runner. The CPU reference lives in '@intab/model/reference'.

export * from './errors.ts';
export type { ByteSource, TensorInfo, GgufValue } from './types.ts';
export { bytesSource, blobSource, urlSource, pathSource, fileBaseName, type UrlSourceOptions } from './source.ts';
export { parseGguf, parseGgufSplits, parseGgufSplitName, type GgufFile, type GgufTensorInfo } from './formats/gguf.ts';
export { parseSafetensors, parseSafetensorsIndex, writeSafetensors, type SafetensorsWriteTensor } from './formats/safetensors.ts';
export { writeGguf, ggufTyped, type GgufWriteTensor, type GgufWriteValue, type GgufTypedValue } from './formats/gguf-writer.ts';
export { readHfFolder, type HfFolder } from './formats/hf-folder.ts';
export { configFromGguf, configFromHf, layerWindows, type LlamaConfig, type LlamaArch, type LinearAttentionSpec, type RopeSpec, type Activation } from './config.ts';
export { canonicalHfName, fusedRows, hfValueOffset, hfValueTransform, ffnNormName, type FusedTensor } from './tensor-names.ts';
export { openGguf, openHfFolder, openOnnxFolder, openTokenizer, type ModelFiles } from './load.ts';
export { PagedKvCache, type KvCacheShape, type KvCacheOptions } from './kv-cache.ts';
export { PagePool, checkStep, stepRows, type KvPages, type PageHolder } from './page-pool.ts';
export { loadLlamaWeights, LlamaForward, checkLayers, type LlamaWeights, type LayerWeights, type StepPlan, type TensorTable, type LoadProgress } from './arch/llama.ts';
export { Runner, type RunnerOptions } from './runner.ts';
export type { StepRunner, RunnerCapabilities, StepEntry, StepResult, StepOptions, KvKey, PageIO } from './step-runner.ts';
export { flatPageIO } from './step-runner.ts';
export type { EncoderRunner, EncoderFacts, EncodeOptions, Pooling } from './encoder-runner.ts';
export {
  encoderConfigFromGguf, encoderConfigFromHf, encoderFacts, classifierOutputs, sentenceTransformersPooling, GGUF_ENCODER_ARCHS, HF_ENCODER_TYPES,
  type EncoderConfig, type EncoderClassifier, type EncoderArch, type EncoderActivation, type SentenceTransformersFiles,
} from './encoder-config.ts';
export { rerankPair, pairTemplate, type RerankPair, type PairTemplate } from './rerank-pair.ts';
export { openEncoderGguf, openEncoderHfFolder, encoderTensorShapes, canonicalEncoderName, type EncoderFiles } from './encoder-load.ts';
export { openAnyGguf, openAnyHfFolder, isEncoderFiles, isEmbeddingModelFiles, type AnyModelFiles, type EmbeddingModelFiles } from './open-any.ts';
export { decoderEmbeddingConfigFromGguf, decoderEmbeddingFacts, isDecoderEmbeddingGguf, type DecoderEmbeddingConfig, type DenseProjection } from './decoder-embedding-config.ts';
export { poolStates, projectAndNormalize } from './embedding-head.ts';
export { openDecoderEmbeddingGguf, ggufDecoderEmbeddingFiles, isDecoderEmbeddingFiles, type DecoderEmbeddingFiles } from './decoder-embedding-load.ts';
export { createBertRunner, type BertRunnerOptions } from './arch/bert.ts';
export { createDecoderEmbedRunner, type DecoderEmbedRunnerOptions } from './arch/decoder-embed.ts';
export { uploadVector, readVector, type UploadOptions } from './upload.ts';
export * from './tokenizer/index.ts';
