// @intab/engine: the worker-side engine (continuous batching, sampling policy, stops, backpressure,
// cancellation) behind the EngineApi contract, and its typed errors and their serialization across the worker.
// worker.ts (exposed as '@intab/engine/worker') wraps Engine in Comlink; the CPU reference runner that tests run
// the Engine on is '@intab/engine/reference'.

export * from './contract.ts';
export type { StepRunner, StepEntry, StepResult, StepOptions, KvKey, PageIO } from '@intab/model';
export { Speculator, SequenceSpeculation, StepCosts, resolveSpeculative, ngramProposals, chooseK, expectedTokens, MAX_SPECULATIVE_K, type SpeculationConfig, type SpeculationItem } from './speculator.ts';
export { Engine, type EngineOptions, type EngineInit } from './engine.ts';
export { openModel, describeModel, modelFacts, checkDraft } from './open-model.ts';
export { chooseBackend, isSoftwareAdapter, loadEncoderModel, loadModel, loadOnBackend, loadOnnxModel, loadRunners, openModels, type BackendChoice, type LoadedEncoder, type LoadedModel, type LoadedOnnxModel, type OpenedModels, type RunnersOptions } from './load.ts';
export { PrefixCache, type CacheNode, type PrefixMatch, type Pin, type CacheRunner } from './prefix-cache.ts';
export { Scheduler, waterFill, plainAdmission, type Admission, type SchedulerLimits, type PlannedEntry } from './scheduler.ts';
export { Sequence, resolveOptions, DEFAULT_MAX_TOKENS, MAX_TOP_LOGPROBS, type ResolvedOptions, type SequenceInit, type SequenceState } from './sequence.ts';
export { StopMatcher, type StopPush } from './stop.ts';
// The engine's error classes (ENGINE_ERRORS lists them) and how every error crosses the worker.
export * from './errors.ts';
