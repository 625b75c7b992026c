// @intab/gpu: the WebGPU runtime and intab's kernels. Each kernel is a create*(gpu, options) factory
// returning { encode(pass, args) } that records and never submits; the CPU twins live in
// '@intab/gpu/reference' and test helpers in '@intab/testing/gpu'.

export { isSoftwareAdapter, requestGpu, type Gpu, type GpuFeatures, type GpuLimits, type RequestGpuOptions } from './device.ts';
export {
  IntabGpuError,
  WebGpuUnavailableError,
  DeviceLostError,
  ShapeError,
  UnsupportedError,
  LimitError,
  GpuValidationError,
  GpuOutOfMemoryError,
  type GpuMemoryNeeds,
  GPU_ERRORS,
  formatBytes,
} from './errors.ts';
export { PipelineCache, type KernelSpec, type BindingKind, type CachedPipeline } from './pipeline-cache.ts';
export { Readback, type ReadbackTicket } from './readback.ts';
export { UniformTable, PARAMS_SLOT_BYTES } from './uniforms.ts';
export { Profiler, type PassTiming } from './profiler.ts';
export { Params, dispatch, grid2d, gpuStats, type BufferRef } from './kernel.ts';
export {
  createWeight,
  rowsPerWeightPart,
  weightPartBytes,
  writeRows,
  weightFormatWgsl,
  weightDotWgsl,
  weightGemmWgsl,
  requireWeightDtype,
  kMultiple,
  CHUNK_ELEMS,
  type WeightTensor,
  type WeightPart,
  type CreateWeightOptions,
} from './weights.ts';
export { BLOCK, WEIGHT_DTYPES, GGML_TYPE_ID, rowBytes, isWeightDtype, type WeightDtype, type BlockLayout } from './formats/blocks.ts';
export { f32ToF16, f16ToF32, f32ToBf16, bf16ToF32 } from './formats/half.ts';
export { dequantize, dequantizeRow, quantize } from './formats/codecs.ts';
export { mulberry32 } from './random.ts';
export { biasEntries, DEFAULT_KMAX } from './sampling-params.ts';

// ---- kernels ----
export { createGemv, type Gemv, type GemvArgs, type GemvOptions, type GemvTuning } from './kernels/gemv.ts';
export { createGemm, type Gemm, type GemmArgs, type GemmOptions, type GemmVariant } from './kernels/gemm.ts';
export { createEmbedding, type Embedding, type EmbeddingArgs, type EmbeddingOptions } from './kernels/embedding.ts';
export { createRmsNorm, type RmsNorm, type RmsNormArgs } from './kernels/rmsnorm.ts';
export { createSwiglu, type SwigluArgs } from './kernels/swiglu.ts';
export { createGeluTanh } from './kernels/gelu-tanh.ts';
export { createGeluErf, type GeluErfArgs } from './kernels/gelu-erf.ts';
export { createLayerNorm, type LayerNorm, type LayerNormArgs, type LayerNormOptions } from './kernels/layernorm.ts';
export { createSigmoidGate } from './kernels/sigmoid-gate.ts';
export type { GatedArgs } from './kernels/activation.ts';
export { createStreamRead, streamReadOutBytes, type StreamReadArgs } from './kernels/stream-read.ts';
export {
  createRopeKvAppend,
  createRopeTable,
  ropeInvFreq,
  ropeTurnTable,
  type RopeKvAppend,
  type RopeKvAppendArgs,
  type RopeKvAppendOptions,
  type RopeConfig,
  type RopeStyle,
  type Llama3Scaling,
  type LinearScaling,
} from './kernels/rope-kv-append.ts';
export { DEFAULT_PAGE_SIZE, MAX_HEAD_DIM, type AttentionShape, type AttentionVariant, type PagedKv, type StepTokens } from './kernels/paged-kv.ts';
export {
  createAttentionDecode,
  type AttentionDecode,
  type AttentionDecodeArgs,
  type AttentionDecodeOptions,
} from './kernels/attention-decode.ts';
export {
  createAttentionPrefill,
  type AttentionPrefill,
  type AttentionPrefillArgs,
  type AttentionOptions,
} from './kernels/attention-prefill.ts';
export { type RecurrentStep } from './kernels/recurrent-state.ts';
export { createCausalConv1d, MAX_CONV_TAPS, type CausalConv1d, type CausalConv1dArgs, type CausalConv1dOptions } from './kernels/causal-conv1d.ts';
export {
  createGatedDelta,
  MAX_DELTA_KEY_DIM,
  type GatedDelta,
  type GatedDeltaArgs,
  type GatedDeltaOptions,
  type GatedDeltaShape,
  type DeltaHeadOrder,
} from './kernels/gated-delta.ts';
export {
  createSampler,
  packSamplingBatch,
  unpackSamples,
  writeSeqParams,
  SEQ_PARAMS_BYTES,
  MAX_HISTORY,
  NO_TOKEN,
  type Sampler,
  type SamplerOptions,
  type SampleArgs,
  type PackedSampling,
  type SeqSlices,
  type SamplingParams,
  type SampleResult,
} from './kernels/sample.ts';
export {
  createAccept,
  packAcceptSpans,
  unpackAcceptance,
  ACCEPT_OUT_WORDS,
  type Accept,
  type AcceptArgs,
  type AcceptOptions,
  type AcceptSpan,
  type Acceptance,
} from './kernels/accept.ts';
// ---- encoders (embedding models) ----
export {
  createAttentionEncoder,
  type AttentionEncoder,
  type AttentionEncoderArgs,
  type AttentionEncoderOptions,
  type EncoderAttentionShape,
  type PackedSequences,
  type TokenRows,
} from './kernels/attention-encoder.ts';
export { createRopeEncoder, type RopeEncoder, type RopeEncoderArgs, type RopeEncoderOptions } from './kernels/rope-encoder.ts';
export { createPool, type Pool, type PoolArgs, type PoolOptions, type PoolingMode } from './kernels/pool.ts';
