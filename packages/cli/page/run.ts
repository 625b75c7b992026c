// The page `intab generate` and the page-side benches (`intab bench decode|speculative|chat|store`, and the decode
// part of `intab bench grammar`) drive in headless Chromium. This file is the entry: it reads the job
// (window.__intabJob) and runs the job (run-job.ts) on the model the CLI serves (range
// requests, like a model hub), on the browser's GPU when its backend wants one; `intab bench store` goes through the public createEngine and model store on its own
// (bench-store.ts). Modes report records through window.__intabReport (shared.ts: report) and import only shared.ts.

import { requestGpu, type Gpu } from '@intab/gpu';
import { benchStore } from './bench-store.ts';
import { runModelJob } from './run-job.ts';
import { openModel, report } from './shared.ts';

async function main(): Promise<void> {
  const job = window.__intabJob;
  if (!job) throw new Error('no job: this page is driven by the intab CLI');
  // The model store's figures go through the public API (createEngine, its worker, the store) on their own.
  if (job.mode === 'store') return benchStore(job, report);
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
