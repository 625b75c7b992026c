// @intab/model/reference, for tests only: the CPU reference forward of the Llama family (the slow, obvious twin of
// the GPU forward, used by GPU tests and by engine tests as a reference runner) and of the BERT encoders, and tiny
// in-memory safetensors/GGUF readers that feed it from real files. The random-weight models it runs are @intab/testing's (fixtures, synthetic).
// Production code never imports it (scripts/layering.test.ts checks).
export {
  createReferenceModel,
  greedy,
  argmax,
  referenceInvFreq,
  splitFused,
  canonicalHfTensors,
  type ReferenceModel,
  type ReferenceModelOptions,
  type ReferenceKv,
  type WeightsFn,
} from './llama.ts';
export { readSafetensors, writeSafetensors, readGgufLite, type LiteTensor, type LiteGguf } from './safetensors-lite.ts';
// The BERT encoders (embedding models): the twin of the WebGPU encoder, and a CPU EncoderRunner.
export { loadEncoderWeights, encodeReference, createReferenceEncoder, type EncoderWeights, type EncodeResult } from './bert.ts';
// The decoders that embed (Qwen3-Embedding, EmbeddingGemma): the Llama-family forward's states, pooled and projected.
export { loadDecoderEmbeddingWeights, encodeDecoderReference, createReferenceDecoderEncoder, type DecoderEmbeddingWeights } from './decoder-embedding.ts';
export { erf, geluErf } from './ops.ts';

// Production definitions the twin uses (the config it runs, the names it reads weights by), re-exported so tests
// written against this entry keep compiling; they live in (and new code imports them from) '@intab/model'.
export { canonicalHfName, fusedRows, hfValueOffset, hfValueTransform, ffnNormName, type FusedTensor } from '../tensor-names.ts';
export {
  configFromHf,
  configFromGguf,
  type LlamaConfig,
  type LlamaArch,
  type LinearAttentionSpec,
  type RopeSpec,
  type Activation,
  type TensorShapeLike,
} from '../config.ts';
