// What the engine needs of a model runner: @intab/model's Runner implements it on the GPU, and a CPU
// reference runner (tests) implements it on plain loops, so the scheduler is tested without a GPU.

import type { SampleResult, SamplingParams } from '@intab/gpu';

export interface RunnerEntry {
  seq: number;
  tokens: readonly number[];
  sampling?: SamplingParams;
}

export interface StepRunner {
  readonly config: { vocab: number; maxContext: number; eosIds: number[]; bosId: number | null };
  readonly maxBatch: number;
  readonly kv: { readonly pages: number; readonly pageSize: number; readonly freePageCount: number; length(seq: number): number; pagesNeeded(seq: number, length: number): number; has(seq: number): boolean };
  alloc(seq: number): void;
  free(seq: number): void;
  rewind(seq: number, n: number): void;
  fork(src: number, dst: number): void;
  step(entries: readonly RunnerEntry[]): Promise<SampleResult[]>;
  destroy(): void;
}
