// One model job, wherever it runs: given a GPU and a way to open the job's model files, it loads the model (and a
// draft beside it for speculative decoding) into the Engine (@intab/engine, in this thread: the product path with its
// scheduler, continuous batching, speculation, sampling and cancellation), and hands the engine to the job's mode:
//   generate.ts           'generate', and 'bench' without --batch (one stream)
//   bench-decode.ts       'bench' with --batch
//   bench-speculative.ts  'speculative'
//   bench-grammar.ts      'grammar'
//   bench-chat.ts         'chat' (loads its own engines through `load`)
// The page (run.ts: headless Chromium, files served by the CLI) and the Node runtime (packages/cli/node: Dawn, files
// read from disk) both run jobs through here, so `--runtime node` measures the same code as the browser.

import type { Gpu } from '@intab/gpu';
import { mulberry32 } from '@intab/gpu';
import { chooseBackend, openModels, type Backend, type BackendChoice } from '@intab/engine';
import { Runner, type ModelFiles } from '@intab/model';
import { benchChat } from './bench-chat.ts';
import { benchBatches } from './bench-decode.ts';
import { benchGrammarDecode } from './bench-grammar.ts';
import { benchSpeculative } from './bench-speculative.ts';
import { generate, requestOf } from './generate.ts';
import { bytesPerToken, kvBytes4k, loadEngine, report, type Facts, type Job, type ModelRef } from './shared.ts';

/**
 * Runs `job` (any mode but 'store') on the backend it names (--backend), opening its model files with `open` and
 * taking a GPU from `requestGpu` when the backend wants one; records go through shared.ts's report. A GPU taken stays
 * the caller's to destroy. `choose` resolves the backend [chooseBackend over requestGpu]: the Node runtime's knows
 * Dawn and onnxruntime-node.
 */
export async function runModelJob(
  job: Job,
  requestGpu: () => Promise<Gpu>,
  open: (ref: ModelRef) => Promise<ModelFiles>,
  choose: (asked: Backend, model: ModelFiles) => Promise<BackendChoice> = (asked, model) => chooseBackend(asked, model, requestGpu),
): Promise<void> {
  const t0 = performance.now();
  const opened = await openModels(open, job, job.draft);
  const backend = await choose(job.backend ?? 'webgpu', opened.model);
  const { model, tokenizer } = opened;
  const widest = Math.max(1, job.concurrency ?? 1, ...(job.batch ?? []));
  // The benchmarks of decoding run the same prompts again and again: the prefix cache would skip their prefill.
  const prefixCache = job.mode === 'generate' || job.mode === 'chat';
  const load = () => loadEngine(backend, job, opened, { maxBatch: Math.max(8, widest), kvBudgetBytes: 256 << 20, seed: job.seed, prefixCache, restoreCache: false });
  if (job.mode === 'chat') return benchChat(job, tokenizer, load, report);
  const { engine, runner, draft, info } = await load();
  let steps = 0;
  const step = runner.step.bind(runner);
  runner.step = (entries, options) => (steps++, step(entries, options));
  const loadMs = performance.now() - t0;
  const c = model.config;
  const adapter = info.adapter;
  const rng = mulberry32(job.seed);
  const benchPrompt = () =>
    Array.from({ length: job.promptTokens ?? 64 }, (_, i) => (i === 0 && c.bosId !== null ? c.bosId : 3 + Math.floor(rng() * (c.vocab - 3))));
  const perToken = bytesPerToken(runner, info);
  const modelFacts = {
    arch: c.arch,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocab,
    dtype: runner instanceof Runner ? runner.weights.layers[0]?.qkv[0].dtype : null,
    quantize: job.quantize ?? null,
    ...(draft && info.draft ? { draft: { arch: info.draft.arch, layers: info.draft.layers, hidden: info.draft.hidden, dtype: draft instanceof Runner ? draft.weights.layers[0]?.qkv[0].dtype : null } } : {}),
  };
  const facts: Facts = { perToken, kv4k: kvBytes4k(runner), modelFacts, backend: info.backend.name, adapter, loadMs, steps: () => steps };
  try {
    if (job.mode === 'grammar') await benchGrammarDecode(engine, job, tokenizer, facts);
    else if (job.mode === 'speculative') await benchSpeculative(engine, job, tokenizer, c.bosId, benchPrompt, facts);
    else if (job.mode === 'bench' && job.batch) await benchBatches(engine, job, benchPrompt, facts);
    // intab generate, and bench decode without --batch (one stream of seeded random ids)
    else await generate(engine, job, requestOf(job, tokenizer, benchPrompt), tokenizer, facts);
  } finally {
    await engine.destroy();
  }
}
