// The page `intab generate` and the page-side benches (`intab bench decode|speculative|chat|store|compare`, and the
// decode part of `intab bench grammar`) drive in headless Chromium. This file is the entry: it reads the job
// (window.__intabJob) and runs it (run-job.ts) on the model the CLI serves (range requests, like a model hub), on the
// browser's GPU when its backend wants one. `intab bench store` goes through the public createEngine and model store
// on its own (bench-store.ts); `intab bench compare` loads intab's backends and the peers side by side
// (bench-systems.ts). Modes report records through window.__intabReport (shared.ts: report).

import { requestGpu, type Gpu } from '@intab/gpu';
import { benchStore } from './bench-store.ts';
import { benchSystems, type CompareJob } from './bench-systems.ts';
import { runModelJob } from './run-job.ts';
import { openModel, report } from './shared.ts';

async function main(): Promise<void> {
  const job = window.__intabJob;
  if (!job) throw new Error('no job: this page is driven by the intab CLI');
  // The model store's figures go through the public API (createEngine, its worker, the store) on their own.
  if (job.mode === 'store') return benchStore(job, report);
  // intab's backends and the peers side by side, each taking the GPU (or not) as it needs.
  if (job.mode === 'compare') return benchSystems(job as typeof job & CompareJob, openModel);
  let gpu: Gpu | undefined;
  try {
    await runModelJob(job, async () => (gpu = await requestGpu()), openModel);
  } finally {
    gpu?.destroy();
  }
}

main()
  .catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }))
  .finally(() => (window.__intabDone = true));
