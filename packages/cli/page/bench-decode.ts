// `intab bench decode --batch 1,2,4` in the page: per batch size B, B streams at once through the one engine (after an
// unmeasured short round at that size), one 'bench' record each with the aggregate and per-stream decode speeds.
// Without --batch, bench decode is a single generate run (generate.ts).

import type { Engine, GenerateRequest } from '@intab/engine';
import { aggregateDecode, consume, mean, report, round, type Facts, type Job } from './shared.ts';

/** `intab bench decode --batch 1,2,4`: per batch size, that many streams at once (same prompt length and max tokens). */
export async function benchBatches(engine: Engine, job: Job, benchPrompt: () => number[], facts: Facts): Promise<void> {
  const base: GenerateRequest = { maxTokens: job.maxTokens, temperature: job.temperature, seed: job.seed, ignoreEos: true };
  for (const b of job.batch!) {
    const prompts = Array.from({ length: b }, () => benchPrompt());
    // One short unmeasured round at this batch size first: first-use allocations stay out of the figures.
    await Promise.all(prompts.map((p, i) => consume(engine, i, { ...base, maxTokens: 2, promptIds: p }, undefined)));
    const tStart = performance.now();
    const results = await Promise.all(prompts.map((p, i) => consume(engine, i, { ...base, promptIds: p }, undefined)));
    const wallMs = performance.now() - tStart;
    const perStream = results.map((r) => r.metrics?.decodeTokensPerSecond ?? 0);
    const ttft = results.map((r) => r.metrics?.ttftMs ?? 0);
    const agg = aggregateDecode(results);
    report({
      type: 'bench',
      bench: 'decode',
      batch: b,
      prompt_tokens: prompts[0].length,
      max_tokens: job.maxTokens,
      generated_tokens: results.reduce((s, r) => s + r.ids.length, 0),
      ...agg,
      per_stream_decode_tok_s: round(mean(perStream)),
      per_stream_decode_tok_s_min: round(Math.min(...perStream)),
      ttft_ms: round(mean(ttft)),
      ttft_ms_max: round(Math.max(...ttft)),
      prefill_tok_s: round(mean(results.map((r) => r.metrics?.prefillTokensPerSecond ?? 0))),
      wall_ms: round(wallMs),
      weight_bytes_per_token: facts.perToken,
      kv_bytes_4k: facts.kv4k,
      load_ms: round(facts.loadMs),
      model: facts.modelFacts,
      backend: facts.backend,
      adapter: facts.adapter,
    });
  }
}
