// @intab/model/reference: the CPU reference forward of the Llama family (the slow, obvious twin of the
// GPU forward, used by GPU tests and by engine tests as a reference runner), its config type, and
// tiny in-memory safetensors/GGUF readers that feed it from real files.
export {
  createReferenceModel,
  greedy,
  argmax,
  referenceInvFreq,
  canonicalHfName,
  fusedRows,
  splitFused,
  type ReferenceModel,
  type ReferenceModelOptions,
  type ReferenceKv,
  type WeightsFn,
  type FusedTensor,
} from './llama.ts';
export {
  configFromHf,
  configFromGguf,
  type LlamaConfig,
  type LlamaArch,
  type RopeSpec,
  type Activation,
  type TensorShapeLike,
} from '../config.ts';
export { readSafetensors, writeSafetensors, readGgufLite, type LiteTensor, type LiteGguf } from './safetensors-lite.ts';
export * from './fixtures.ts';
