// @intab/onnx: intab's backend on onnxruntime-web. ONNX graphs written from any checkpoint @intab/model opens
// (llama-graph.ts, over a small protobuf writer and reader), and the StepRunner that drives them and downloaded
// onnx-community exports alike.

export * from './errors.ts';

// ---- ONNX files: writing and checking ----
export {
  encodeModel,
  ExternalDataBuilder,
  DataType,
  dataTypeSize,
  attr,
  f32Tensor,
  i64Tensor,
  MAX_PROTO_BYTES,
  type OnnxModel,
  type OnnxGraph,
  type OnnxNode,
  type OnnxTensor,
  type OnnxValueInfo,
  type OnnxAttribute,
  type OpsetImport,
  type ExternalLocation,
  type DataTypeId,
} from './onnx-proto.ts';
export { readOnnxModel, type OnnxModelInfo, type OnnxValueInfoRead, type OnnxNodeRead, type OnnxInitializerRead } from './onnx-read.ts';

// ---- Llama-family graphs ----
export { buildLlamaGraph, tensorWeights, LLAMA_GRAPH_IO, type LlamaGraph, type LlamaGraphOptions, type GraphWeight, type GraphWeights } from './llama-graph.ts';

// ---- embedding models (BERT-family encoders) ----
export { buildEncoderGraph, ENCODER_GRAPH_IO, DEFAULT_ENCODER_ATTENTION, type EncoderGraph, type EncoderGraphOptions, type EncoderAttention } from './encoder-graph.ts';
export { OnnxEncoder, type OnnxEncoderOptions } from './encoder-runner.ts';
export { loadOnnxEncoder, type OnnxEncoderLoadOptions, type LoadedOnnxEncoder } from './load.ts';
export { OnnxDecoderEncoder, loadOnnxDecoderEncoder, onnxDecoderContext, type OnnxDecoderEncoderLoadOptions } from './decoder-encoder.ts';

// ---- running: the StepRunner over onnxruntime-web ----
export { OnnxRunner, type OnnxRunnerOptions, type OnnxModelConfig } from './onnx-runner.ts';
export { graphLayout, type GraphLayout, type GraphIO } from './graph-layout.ts';
export { createSession, loadOrt, providerOf, type OnnxBackend, type OnnxSession, type Ort, type OrtRuntime, type SessionOptions } from './session.ts';
export { loadOnnxRunner, type OnnxLoadOptions, type LoadedOnnx } from './load.ts';
export { sampleLogits } from './cpu-sampler.ts';
export { onnxFolderFiles, hfConfig, encoderOnnxFolderFiles, encoderHfConfig } from './onnx-folder.ts';
// intab's own CPU kernels (wasm SIMD128) for quantized GGUF decoders: what onnx-wasm runs where they apply.
export { CpuRunner, type CpuRunnerOptions } from './cpu/cpu-runner.ts';
export { loadCpuRunner, cpuRunnable, type CpuLoadOptions, type LoadedCpu } from './cpu/load-cpu.ts';
