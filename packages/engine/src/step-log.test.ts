// The scheduler's step log (LoadOptions.stepLog) on stories260K's CPU reference runner: off by default; on, each step
// lists the requests in it and what each did (admitted, prefilled, emitted, finished), numbered from 1, and the ring
// keeps only the last N steps. Fairness between a shared engine's tabs read from it: shared-host.test.ts and
// e2e/share-fairness.spec.ts.
import { beforeAll, describe, expect, test } from 'vitest';
import { Engine } from './engine.ts';
import { ReferenceRunner } from './reference/runner.ts';
import { StepLog } from './step-log.ts';
import { stories260K } from './test-models.ts';
import { collect } from './test-streams.ts';

let model: ReturnType<typeof stories260K>;
beforeAll(() => {
  model = stories260K();
});

function engine(stepLog?: number, maxTokensPerStep?: number) {
  const runner = new ReferenceRunner(model.config, (n) => model.tensors.get(n), { pages: 64, pageSize: 16 });
  return new Engine({ runner, options: { seed: 1, stepLog, maxTokensPerStep } });
}

describe('step log', () => {
  test('off by default: stats have no stepLog', async () => {
    const e = engine();
    await collect(e, await e.start({ promptIds: model.golden.cases[0].prompt, maxTokens: 4, temperature: 0 }));
    expect(e.stats().stepLog).toBeUndefined();
    await e.destroy();
  });

  test('each step: the requests in it, admitted, prompt chunks, tokens emitted, finished; numbered from 1', async () => {
    // A prompt of 9 tokens in chunks of 4: two steps prefill, the third prefills the last one and samples.
    const e = engine(64, 4);
    const { prompt: start, greedy } = model.golden.cases[1];
    const prompt = [...start, ...greedy.slice(0, 4)];
    const id = await e.start({ promptIds: prompt, maxTokens: 3, temperature: 0, ignoreEos: true });
    const out = await collect(e, id);
    expect(out.ids).toHaveLength(3);
    expect(e.stats().stepLog).toEqual([
      { step: 1, waiting: 0, requests: [{ stream: id, admitted: true, prefill: 4 }] },
      { step: 2, waiting: 0, requests: [{ stream: id, prefill: 4 }] },
      { step: 3, waiting: 0, requests: [{ stream: id, prefill: 1, tokens: 1 }] },
      { step: 4, waiting: 0, requests: [{ stream: id, tokens: 1 }] },
      { step: 5, waiting: 0, requests: [{ stream: id, tokens: 1, finish: 'length' }] },
    ]);
    await e.destroy();
  });

  test('the ring keeps the last N steps, oldest first; lengthening keeps what it has', () => {
    const log = new StepLog(3);
    const seq = { id: 7, session: undefined, prefillLeft: 0, generated: [] as number[], finishReason: null };
    const plan = [{ seq, tokens: [1], samples: true, lookahead: 0 }] as never[];
    for (let step = 1; step <= 5; step++) {
      const before = log.before(plan);
      seq.generated.push(step);
      log.add(step, plan, before, [], 0);
    }
    expect(log.entries().map((s) => s.step)).toEqual([3, 4, 5]);
    expect(log.entries()[0].requests).toEqual([{ stream: 7, tokens: 1 }]);
    log.lengthen(4);
    log.lengthen(2); // shorter: no change
    expect(log.capacity).toBe(4);
    log.add(6, plan, log.before(plan), [], 0);
    log.add(7, plan, log.before(plan), [], 0);
    expect(log.entries().map((s) => s.step)).toEqual([4, 5, 6, 7]);
  });
});
