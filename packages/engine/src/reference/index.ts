// @intab/engine/reference, for tests only: the CPU reference runner (a StepRunner over the CPU twins of
// @intab/model/reference and @intab/gpu/reference), so engine and intab tests run the Engine without a GPU. Kept
// out of '@intab/engine' so that the library, and the declarations it publishes, carry no test twin.

export { ReferenceRunner, type ReferenceRunnerOptions, type StepLogEntry } from './runner.ts';
