// Types of job.mjs for the TypeScript callers (the Node runtime, the tests): the page's Job, which job.mjs builds.
import type { Job, ModelRef } from '../page/shared.ts';

export declare function jobFromFlags(
  flags: Record<string, string | boolean>,
  mode: 'generate' | 'bench' | 'speculative',
  model: ModelRef,
  draft?: ModelRef,
): Job;
export declare function formatFromFlags(flags: Record<string, string | boolean>, mode: 'generate' | 'bench' | 'speculative'): Job['format'];
