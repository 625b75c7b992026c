// `intab bench speculative` in the page: plain greedy decoding against each speculative method (adaptive k and a
// fixed k), on a grounded and an open prompt, in the one engine, one 'bench' record per prompt, method and k.

import { resolveSpeculative, type Engine, type SpeculativeOptions } from '@intab/engine';
import type { Tokenizer } from '@intab/model';
import { consume, median, report, round, type Facts, type Job, type StreamResult } from './shared.ts';

/** bench speculative's open prompt for a model with a tokenizer (no --prompt). */
const OPEN_QUESTION = 'Why do cats like to sit in boxes?';

/**
 * `intab bench speculative`: per prompt (grounded, open), plain greedy decoding, then each method with
 * adaptive k and with a fixed k, same prompt and max tokens, all in this one engine. Every measured request
 * comes after an unmeasured short one of the same kind (shader compiles, first-use allocations, and the
 * engine's step-cost model, which adaptive k reads, has seen steps of that shape).
 */
export async function benchSpeculative(engine: Engine, job: Job, tokenizer: Tokenizer | undefined, bosId: number | null, randomPrompt: () => number[], facts: Facts): Promise<void> {
  const encode = (text: string, flag: string): number[] => {
    if (!tokenizer) {
      const instead = flag === '--prompt' ? 'pass --prompt-ids, or no prompt for seeded random ids' : 'drop it: the grounded prompt is then built from the open one';
      throw new Error(`this model ships no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): ${flag} needs one; ${instead}`);
    }
    return tokenizer.encode(text, { addSpecialTokens: true });
  };
  const open = job.promptIds ?? (job.prompt !== undefined ? encode(job.prompt, '--prompt') : tokenizer ? encode(OPEN_QUESTION, '--prompt') : randomPrompt());
  const run = (promptIds: number[], maxTokens: number, speculative: SpeculativeOptions | false) =>
    consume(engine, 0, { promptIds, maxTokens, temperature: 0, seed: job.seed, ignoreEos: true, speculative }, undefined);
  const warm = Math.min(8, job.maxTokens);
  await run(open, warm, false);
  let grounded: number[];
  if (job.groundedPrompt !== undefined) grounded = encode(job.groundedPrompt, '--grounded-prompt');
  else {
    // P + G + P: the continuation after the second P can copy G from the prompt. BOS only once, at the start.
    const g = await run(open, job.maxTokens, false);
    const bos = bosId !== null && open[0] === bosId ? 1 : 0;
    grounded = [...open, ...g.ids, ...open.slice(bos)];
  }
  const info = engine.modelInfo!;
  // Each line: `repeats` pairs of (plain run, speculative run), alternating so that the adapter's drift
  // (these machines are noisy) hits both alike; decode tok/s are medians, speedup is the median of the
  // pairs' ratios, and the counts come from the last speculative run.
  const repeats = job.repeats ?? 3;
  for (const [name, prompt] of [['grounded', grounded], ['open', open]] as const) {
    await run(prompt, warm, false);
    methods: for (const method of job.methods ?? ['ngram', 'self']) {
      for (const adaptive of [true, false]) {
        const spec: SpeculativeOptions = adaptive ? { method } : { method, k: job.specK ?? 4, adaptive: false };
        const resolved = resolveSpeculative(spec, { hasDraft: info.draft !== undefined, layers: info.layers })!;
        try {
          await run(prompt, warm, spec);
        } catch (err) {
          // The engine refuses a method this backend cannot run (self-speculation off intab's WebGPU kernels): the line
          // says why, and the other methods are measured.
          if ((err as { name?: string; field?: string }).name !== 'InvalidRequestError' || (err as { field?: string }).field !== 'speculative.method') throw err;
          report({ type: 'bench', bench: 'speculative', prompt: name, method, skipped: (err as Error).message, backend: facts.backend, adapter: facts.adapter });
          continue methods;
        }
        const plainTokS: number[] = [];
        const specTokS: number[] = [];
        const ratios: number[] = [];
        const plainMsPerStep: number[] = [];
        let identical = true;
        let r!: StreamResult;
        for (let i = 0; i < repeats; i++) {
          const plain = await run(prompt, job.maxTokens, false);
          r = await run(prompt, job.maxTokens, spec);
          const p = plain.metrics?.decodeTokensPerSecond ?? 0;
          const t = r.metrics?.decodeTokensPerSecond ?? 0;
          plainTokS.push(p);
          specTokS.push(t);
          if (p > 0 && t > 0) ratios.push(t / p);
          if (p > 0) plainMsPerStep.push(1000 / p);
          identical &&= r.ids.length === plain.ids.length && r.ids.every((id, j) => id === plain.ids[j]);
        }
        const s = r.metrics?.speculative;
        const msPerStep = median(plainMsPerStep);
        const tokS = median(specTokS);
        const plainMedian = median(plainTokS);
        report({
          type: 'bench',
          bench: 'speculative',
          prompt: name,
          method,
          k: resolved.k,
          adaptive,
          ...(method === 'self' ? { self_layers: resolved.layers } : {}),
          acceptance_rate: s && s.proposed > 0 ? round(s.accepted / s.proposed) : null,
          tokens_per_target_step: s && s.targetSteps > 0 ? round((r.ids.length - 1) / s.targetSteps) : null,
          verify_decode_cost_ratio: s && s.verifySteps > 0 && msPerStep > 0 ? round(s.verifyMs / s.verifySteps / msPerStep) : null,
          draft_ms_per_step: s && s.draftSteps > 0 ? round(s.draftMs / s.draftSteps) : null,
          decode_tok_s: tokS > 0 ? round(tokS) : null,
          plain_decode_tok_s: plainMedian > 0 ? round(plainMedian) : null,
          speedup: ratios.length ? round(median(ratios)) : null,
          speedup_min: ratios.length ? round(Math.min(...ratios)) : null,
          speedup_max: ratios.length ? round(Math.max(...ratios)) : null,
          repeats,
          identical_ids: identical,
          prompt_tokens: prompt.length,
          max_tokens: job.maxTokens,
          generated_tokens: r.ids.length,
          proposed: s?.proposed ?? 0,
          accepted: s?.accepted ?? 0,
          target_steps: s?.targetSteps ?? 0,
          verify_steps: s?.verifySteps ?? 0,
          draft_steps: s?.draftSteps ?? 0,
          model: facts.modelFacts,
          backend: facts.backend,
      adapter: facts.adapter,
        });
      }
    }
  }
}
