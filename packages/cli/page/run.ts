// The page `intab generate` and the page-side benches (`intab bench decode|speculative|chat|store`, and the decode
// part of `intab bench grammar`) drive in headless Chromium. This file is the entry: it reads the job
// (window.__intabJob), opens the model the CLI serves (range requests, like a model hub) and a draft model beside it
// for speculative decoding, loads them into the Engine (@intab/engine, in this thread: the product path with its
// scheduler, continuous batching, speculation, sampling and cancellation), and hands the engine to the job's mode:
//   generate.ts           'generate', and 'bench' without --batch (one stream)
//   bench-decode.ts       'bench' with --batch
//   bench-speculative.ts  'speculative'
//   bench-grammar.ts      'grammar'
//   bench-chat.ts         'chat' (loads its own engines through `load`)
//   bench-store.ts        'store' (the public createEngine and model store; no model opened here)
// Modes report records through window.__intabReport (shared.ts: report) and import only shared.ts.

import { requestGpu } from '@intab/gpu';
import { mulberry32 } from '@intab/gpu/reference';
import { checkDraft } from '@intab/engine';
import { openTokenizer } from '@intab/model';
import { benchChat } from './bench-chat.ts';
import { benchBatches } from './bench-decode.ts';
import { benchGrammarDecode } from './bench-grammar.ts';
import { benchSpeculative } from './bench-speculative.ts';
import { benchStore } from './bench-store.ts';
import { generate, requestOf } from './generate.ts';
import { bytesPerToken, loadEngine, openModel, report, type Facts } from './shared.ts';

async function main(): Promise<void> {
  const job = window.__intabJob;
  if (!job) throw new Error('no job: this page is driven by the intab CLI');
  // The model store's figures go through the public API (createEngine, its worker, the store) on their own.
  if (job.mode === 'store') return benchStore(job, report);
  const gpu = await requestGpu();
  const t0 = performance.now();
  const model = await openModel(job);
  const tokenizer = openTokenizer(model);
  // The draft's files are checked (same vocabulary, same tokens) before either model is uploaded.
  const draftModel = job.draft ? await openModel(job.draft) : undefined;
  if (draftModel) checkDraft(model, tokenizer, draftModel, openTokenizer(draftModel));
  const widest = Math.max(1, job.concurrency ?? 1, ...(job.batch ?? []));
  // The benchmarks of decoding run the same prompts again and again: the prefix cache would skip their prefill.
  const prefixCache = job.mode === 'generate' || job.mode === 'chat';
  const load = () => loadEngine(gpu, job, model, tokenizer, draftModel, { maxBatch: Math.max(8, widest), kvBudgetBytes: 256 << 20, seed: job.seed, prefixCache, restoreCache: false });
  if (job.mode === 'chat') {
    try {
      await benchChat(job, tokenizer, load, report);
    } finally {
      gpu.destroy();
    }
    return;
  }
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
  const perToken = bytesPerToken(runner);
  const modelFacts = {
    arch: c.arch,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocab,
    dtype: runner.weights.layers[0]?.qkv[0].dtype,
    quantize: job.quantize ?? null,
    ...(draft ? { draft: { arch: draft.config.arch, layers: draft.config.layers, hidden: draft.config.hidden, dtype: draft.weights.layers[0]?.qkv[0].dtype } } : {}),
  };
  const facts: Facts = { perToken, modelFacts, adapter, loadMs, steps: () => steps };
  try {
    if (job.mode === 'grammar') await benchGrammarDecode(engine, job, tokenizer, facts);
    else if (job.mode === 'speculative') await benchSpeculative(engine, job, tokenizer, c.bosId, benchPrompt, facts);
    else if (job.mode === 'bench' && job.batch) await benchBatches(engine, job, benchPrompt, facts);
    // intab generate, and bench decode without --batch (one stream of seeded random ids)
    else await generate(engine, job, requestOf(job, tokenizer, benchPrompt), tokenizer, facts);
  } finally {
    await engine.destroy();
    gpu.destroy();
  }
}

main()
  .catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }))
  .finally(() => (window.__intabDone = true));
