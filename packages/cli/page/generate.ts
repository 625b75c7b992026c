// `intab generate` in the page, and the single-stream `intab bench decode` (no --batch), which is a generate run of
// seeded random prompt ids with EOS ignored: the job's request, N copies of it at once through the one engine
// (--concurrency), every token reported as it arrives, one 'done' record per stream with its figures, and with
// --concurrency a 'summary' record over the streams.

import { gpuStats } from '@intab/gpu';
import type { Engine, GenerateRequest, SpeculativeMetrics } from '@intab/engine';
import { createDetokenizer, type Tokenizer } from '@intab/model';
import { aggregateDecode, consume, mean, report, round, type Facts, type Job } from './shared.ts';

/** The request of the job (sampling and stopping options shared by every stream). */
export function requestOf(job: Job, tokenizer: Tokenizer | undefined, benchPrompt: () => number[]): GenerateRequest {
  if ((job.prompt !== undefined || job.chat !== undefined) && !tokenizer) {
    throw new Error('this model ships no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): pass --prompt-ids');
  }
  const options = {
    maxTokens: job.maxTokens,
    temperature: job.temperature,
    ...(job.topK !== undefined ? { topK: job.topK } : {}),
    ...(job.topP !== undefined ? { topP: job.topP } : {}),
    seed: job.seed,
    // bench decodes exactly maxTokens, as the kernels do not care what the ids mean
    ignoreEos: job.mode === 'bench' || Boolean(job.ignoreEos),
    ...(job.speculative !== undefined ? { speculative: job.speculative } : {}),
    ...(job.format ?? {}),
  };
  if (job.promptIds) return { ...options, promptIds: job.promptIds };
  if (job.prompt !== undefined) return { ...options, prompt: job.prompt };
  if (job.chat !== undefined) return { ...options, messages: [{ role: 'user', content: job.chat }] };
  if (job.mode === 'bench') return { ...options, promptIds: benchPrompt() };
  throw new Error('the prompt is empty: pass --prompt-ids, --prompt or --chat');
}

/** `intab generate` (and the single-stream `intab bench decode`): N copies of the request at once. */
export async function generate(engine: Engine, job: Job, request: GenerateRequest, tokenizer: Tokenizer | undefined, facts: Facts): Promise<void> {
  const tagged = job.concurrency !== undefined;
  const n = job.concurrency ?? 1;
  const tStart = performance.now();
  // GPU work per decode step, from the first token on (prefill is done by then): dispatches and bind groups.
  let tokens = 0;
  let from: { dispatches: number; bindGroups: number; steps: number; tokens: number } | undefined;
  const results = await Promise.all(
    Array.from({ length: n }, (_, stream) => {
      const detok = tokenizer ? createDetokenizer(tokenizer) : undefined;
      const tag = tagged ? { stream } : {};
      return consume(engine, stream, request, job.abortAfterTokens, (ids) => {
        tokens += ids.length;
        from ??= { ...gpuStats, steps: facts.steps(), tokens };
        // bench decode prints no tokens: each report crosses to the CLI (a CDP round trip on the same 2 cores), which
        // measured ~3× slower decode on onnx-wasm (~600 vs ~2,000 tok/s for stories260K).
        if (job.mode !== 'bench') for (const id of ids) report(detok ? { type: 'token', ...tag, id, text: detok.push(id) } : { type: 'token', ...tag, id });
      });
    }),
  );
  const wallMs = performance.now() - tStart;
  const steps = from ? facts.steps() - from.steps : 0;
  // Dispatches and bind groups are intab's kernels' figures; onnxruntime's backends have none to count.
  const kernels = facts.backend === 'webgpu';
  const perStep = kernels && from && steps > 0 ? { dispatches_per_step: round((gpuStats.dispatches - from.dispatches) / steps), bind_groups_per_step: round((gpuStats.bindGroups - from.bindGroups) / steps) } : {};
  const perToken = kernels && from && tokens > from.tokens ? { dispatches_per_token: round((gpuStats.dispatches - from.dispatches) / (tokens - from.tokens)) } : {};
  for (const r of results) {
    const m = r.metrics;
    const decoded = r.ids.length - 1;
    const decodeTokS = m && m.decodeTokensPerSecond > 0 ? m.decodeTokensPerSecond : null;
    report({
      type: 'done',
      done: true,
      ...(tagged ? { stream: r.stream } : {}),
      ids: r.ids,
      ...(tokenizer ? { text: tokenizer.decode(r.ids, { skipSpecialTokens: true }) } : {}),
      finish_reason: r.finishReason,
      prompt_tokens: m?.promptTokens ?? null,
      generated_tokens: r.ids.length,
      queue_ms: m ? round(m.queueMs) : null,
      ttft_ms: m ? round(m.ttftMs) : null,
      prefill_tok_s: m ? round(m.prefillTokensPerSecond) : null,
      decode_tok_s: decodeTokS !== null ? round(decodeTokS) : null,
      ...(r.abortLatencyMs !== undefined ? { abort_after_tokens: job.abortAfterTokens, aborted_at_tokens: r.abortedAtTokens, abort_latency_ms: r.abortLatencyMs } : {}),
      ...(m?.speculative ? { speculative: speculativeFigures(m.speculative, r.ids.length) } : {}),
      ...(job.format?.responseFormat && tokenizer ? { json: parsedOrNull(tokenizer.decode(r.ids, { skipSpecialTokens: true })) } : {}),
      weight_bytes_per_token: facts.perToken,
      kv_bytes_4k: facts.kv4k,
      ...perToken,
      ...perStep,
      decode_gbps: decodeTokS !== null && decoded > 0 ? round((facts.perToken * decodeTokS) / 1e9) : null,
      load_ms: round(facts.loadMs),
      model: facts.modelFacts,
      backend: facts.backend,
      adapter: facts.adapter,
    });
  }
  if (!tagged) return;
  const latencies = results.flatMap((r) => (r.abortLatencyMs !== undefined ? [r.abortLatencyMs] : []));
  report({
    type: 'summary',
    summary: true,
    streams: n,
    finish_reasons: results.map((r) => r.finishReason),
    identical_ids: results.every((r) => r.ids.length === results[0].ids.length && r.ids.every((id, i) => id === results[0].ids[i])),
    generated_tokens: results.reduce((s, r) => s + r.ids.length, 0),
    wall_ms: round(wallMs),
    aggregate_tok_s: round((results.reduce((s, r) => s + r.ids.length, 0) / wallMs) * 1000),
    ...aggregateDecode(results),
    ttft_ms_mean: round(mean(results.map((r) => r.metrics?.ttftMs ?? 0))),
    ttft_ms_max: round(Math.max(...results.map((r) => r.metrics?.ttftMs ?? 0))),
    ...(latencies.length ? { abort_latency_ms_mean: round(mean(latencies)), abort_latency_ms_max: round(Math.max(...latencies)) } : {}),
    backend: facts.backend,
      adapter: facts.adapter,
  });
}

/** A request's speculative metrics, rounded, with acceptance_rate and tokens_per_target_step = (generated − 1) / targetSteps. */
function speculativeFigures(s: SpeculativeMetrics, generated: number): Record<string, unknown> {
  return {
    method: s.method,
    proposed: s.proposed,
    accepted: s.accepted,
    targetSteps: s.targetSteps,
    verifySteps: s.verifySteps,
    draftSteps: s.draftSteps,
    targetMs: round(s.targetMs),
    verifyMs: round(s.verifyMs),
    draftMs: round(s.draftMs),
    acceptance_rate: s.proposed > 0 ? round(s.accepted / s.proposed) : null,
    tokens_per_target_step: s.targetSteps > 0 ? round((generated - 1) / s.targetSteps) : null,
  };
}

/** The JSON document of a constrained run, or null when it was cut short (max tokens, abort). */
function parsedOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
