// The decode part of `intab bench grammar` in the page (mode 'grammar'; the Node part is packages/cli/src): one prompt
// decoded unconstrained and under a JSON schema, alternated, and the grammar's own work per step replayed in this
// page's JS engine. One 'bench' record; each constrained document's text goes to the CLI, which validates it.

import type { Engine, GenerateRequest } from '@intab/engine';
import { tokenBytes, type Tokenizer } from '@intab/model';
// The grammar package by path (the CLI does not depend on it; the engine does): the replay drives a matcher itself.
import { TokenMatcher, TokenVocabulary, compileJsonSchema } from '@intab/grammar';
import { consume, median, report, round, type Facts, type Job, type StreamResult } from './shared.ts';

/** Decode figures of one run: tok/s (every generated token after the first) and ms per step (chunk arrivals after the first). */
function decodeFigures(r: StreamResult): { tokS: number; msPerStep: number; steps: number } {
  const a = r.arrivals;
  const steps = Math.max(0, a.length - 1);
  return {
    tokS: r.metrics?.decodeTokensPerSecond ?? 0,
    msPerStep: steps > 0 ? (a[a.length - 1].at - a[0].at) / steps : 0,
    steps,
  };
}

/**
 * The decode part of `intab bench grammar`: the same prompt decoded unconstrained (ignoring EOS) and constrained by
 * the job's JSON schema, in this one engine, alternated `repeats` times after an unmeasured short run of each.
 * Constrained runs add the grammar's work to every step (the mask, accepting the token, the forced tokens that follow
 * a sample, which join the next step's input): `ms_per_step` compares steps, `decode_tok_s` tokens (forced tokens
 * count as generated, so a schema with long fixed keys can decode more tokens per second than no schema). Each
 * constrained document's text goes to the CLI ({ type: 'grammar-text' }), which validates it with ajv.
 */
export async function benchGrammarDecode(engine: Engine, job: Job, tokenizer: Tokenizer | undefined, facts: Facts): Promise<void> {
  if (!tokenizer) throw new Error('bench grammar decodes under a JSON schema: the model needs a tokenizer (intab make-model --tokenizer qwen3 writes one)');
  const format = job.format?.responseFormat;
  if (!format) throw new Error('bench grammar: the job has no responseFormat');
  const promptIds = tokenizer.encode(job.prompt ?? '', { addSpecialTokens: true });
  const base = { promptIds, temperature: job.temperature, seed: job.seed };
  const plain = (maxTokens: number) => consume(engine, 0, { ...base, maxTokens, ignoreEos: true }, undefined);
  const constrained = (maxTokens: number) => consume(engine, 0, { ...base, maxTokens, responseFormat: format }, undefined);
  const warm = Math.min(8, job.maxTokens);
  await plain(warm);
  await constrained(warm);
  const u: ReturnType<typeof decodeFigures>[] = [];
  const c: ReturnType<typeof decodeFigures>[] = [];
  let last!: StreamResult;
  let lastPlain!: StreamResult;
  for (let i = 0; i < (job.repeats ?? 3); i++) {
    lastPlain = await plain(job.maxTokens);
    last = await constrained(job.maxTokens);
    u.push(decodeFigures(lastPlain));
    c.push(decodeFigures(last));
    report({ type: 'grammar-text', text: tokenizer.decode(last.ids, { skipSpecialTokens: true }) });
  }
  const replay = replayGrammar(format, last.ids, tokenizer, engine.modelInfo?.vocab);
  const tokRatios = u.flatMap((x, i) => (x.tokS > 0 && c[i].tokS > 0 ? [c[i].tokS / x.tokS] : []));
  const stepRatios = u.flatMap((x, i) => (x.msPerStep > 0 && c[i].msPerStep > 0 ? [c[i].msPerStep / x.msPerStep] : []));
  const stepRatio = stepRatios.length ? median(stepRatios) : 0;
  report({
    type: 'bench',
    bench: 'grammar',
    kind: 'decode',
    tokenizer: job.tokenizerName ?? null,
    vocab: engine.modelInfo?.vocab ?? null,
    schema: job.schemaId ?? null,
    prompt_tokens: promptIds.length,
    max_tokens: job.maxTokens,
    temperature: job.temperature,
    repeats: u.length,
    decode_tok_s: round(median(u.map((x) => x.tokS))),
    constrained_decode_tok_s: round(median(c.map((x) => x.tokS))),
    tok_s_ratio: tokRatios.length ? round(median(tokRatios)) : null,
    decode_slowdown: tokRatios.length ? round(1 - median(tokRatios)) : null,
    ms_per_step: round(median(u.map((x) => x.msPerStep))),
    constrained_ms_per_step: round(median(c.map((x) => x.msPerStep))),
    step_slowdown: stepRatios.length ? round(stepRatio - 1) : null,
    step_slowdown_min: stepRatios.length ? round(Math.min(...stepRatios) - 1) : null,
    step_slowdown_max: stepRatios.length ? round(Math.max(...stepRatios) - 1) : null,
    grammar_ms_per_step: replay ? round(replay.msPerStep) : null,
    grammar_share_of_step: replay && u.length ? round(replay.msPerStep / median(u.map((x) => x.msPerStep))) : null,
    generated_tokens: lastPlain.ids.length,
    constrained_tokens: last.ids.length,
    constrained_steps: c[c.length - 1].steps + 1,
    constrained_finish_reason: last.finishReason,
    ttft_ms: round(lastPlain.metrics?.ttftMs ?? 0),
    constrained_ttft_ms: round(last.metrics?.ttftMs ?? 0),
    target_slowdown: 0.05,
    model: facts.modelFacts,
    load_ms: round(facts.loadMs),
    backend: facts.backend,
      adapter: facts.adapter,
  });
}

/**
 * The grammar's own work on a constrained run's tokens, in this page's JS engine: a fresh grammar compiled from the
 * same schema (the engine compiles one per request: every mask is cold) and matcher, driven as the engine drives it
 * (a mask before each sampled token, the token accepted, the forced tokens that follow accepted). `msPerStep` is
 * that work per sampled token, timed as one interval (the page's clock is coarse: single masks are not timed);
 * undefined when the run is not a json_schema one.
 */
function replayGrammar(format: NonNullable<GenerateRequest['responseFormat']>, ids: readonly number[], tokenizer: Tokenizer, vocabSize: number | undefined): { msPerStep: number; steps: number } | undefined {
  if (format.type !== 'json_schema' || ids.length === 0) return undefined;
  const vocab = TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds.filter((id) => vocabSize === undefined || id < vocabSize), size: vocabSize });
  const m = new TokenMatcher(compileJsonSchema(format.schema, { strict: format.strict ?? true }), vocab);
  let steps = 0;
  const t0 = performance.now();
  for (let i = 0; i < ids.length; ) {
    m.mask();
    if (!m.accept(ids[i++])) return undefined;
    steps++;
    // The forced tokens the engine appended after that sample (the ids that follow, as many as forced() gives).
    for (;;) {
      const f = m.done ? [] : m.forced();
      if (f.length === 0 || i + f.length > ids.length) break;
      for (const id of f) m.accept(id);
      i += f.length;
    }
  }
  return { msPerStep: (performance.now() - t0) / steps, steps };
}
