// @intab/gpu/reference, for tests and the kernel lab only: the CPU twin of every kernel (plain loops, float64
// accumulation) and seeded inputs. Production code never imports it (scripts/layering.test.ts checks).
export * from './random.ts';
export * from './matmul.ts';
export * from './norm.ts';
export * from './elementwise.ts';
export * from './embedding.ts';
export * from './rope.ts';
export * from './attention.ts';
export * from './encoder.ts';
export * from './sampling.ts';
export * from './accept.ts';
export * from './gated-delta.ts';

// Production definitions the twins use, re-exported so tests written against this entry keep compiling;
// they live in (and new code imports them from) '@intab/gpu'.
export { BLOCK, WEIGHT_DTYPES, GGML_TYPE_ID, rowBytes, isWeightDtype, type WeightDtype, type BlockLayout } from '../formats/blocks.ts';
export { f32ToF16, f16ToF32, f32ToBf16, bf16ToF32 } from '../formats/half.ts';
export { dequantize, dequantizeRow, quantize } from '../formats/codecs.ts';
export { mulberry32 } from '../random.ts';
export { biasEntries, DEFAULT_KMAX, NO_TOKEN, type SamplingParams, type SampleResult } from '../sampling-params.ts';
export { ACCEPT_OUT_WORDS, packAcceptSpans, unpackAcceptance, type AcceptSpan, type Acceptance } from '../kernels/accept.ts';
