// `intab generate`, `intab bench decode` and `intab bench speculative`: serve the model's files (and a draft
// model's, for speculative decoding) to the headless page (packages/cli/page/run.html), run it there on
// WebGPU through the Engine, print its records. jobFromFlags turns the flags into the page's job (validated
// in job.ts, before any browser starts).
import type { Flags } from './args.ts';
import { runJob } from './browser.ts';
import { jobFromFlags, type JobMode } from './job.ts';
import { DRAFT_PREFIX, resolveModel } from './model-files.ts';
import { modelRecordPrinter } from './records.ts';

export { formatFromFlags, jobFromFlags } from './job.ts';

export async function generate(flags: Flags, mode: JobMode): Promise<number> {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
  const model = resolveModel(flags.model);
  if (flags.draft !== undefined && typeof flags.draft !== 'string') throw new Error('--draft needs a model: --draft <gguf file | HF folder | URL>');
  const draft = typeof flags.draft === 'string' ? resolveModel(flags.draft, { prefix: DRAFT_PREFIX, flag: 'draft' }) : undefined;
  const job = jobFromFlags(flags, mode, model, draft);
  const failed = await runJob({
    timeoutS: Number(flags.timeout ?? 3600),
    headed: Boolean(flags.headed),
    modelDir: model.dir,
    draftDir: draft?.dir,
    job,
    onRecord: modelRecordPrinter(flags, mode),
  });
  return failed ? 1 : 0;
}
