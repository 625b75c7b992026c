// Fairness between the tabs of a shared engine (createEngine({ share: 'origin' })), in real Chromium, read from the
// engine's step log (createEngine's `stepLog`), not from a timer. The scheduler's policy (packages/engine/src/
// scheduler.ts, head()): FIFO within a tab; between tabs, a free slot goes to the oldest waiting request of the tab with
// the fewest admitted requests: round-robin by tab, so a tab streaming many requests cannot starve another's one.
// With maxBatch 8, tab A runs 8 long streams of different lengths (a slot frees one at a time) and queues a 9th; then
// tab B starts one. B's request takes the first free slot, ahead of A's 9th that came before it (strict FIFO would give
// that slot to A's 9th), and its first token comes within 2 steps of its admission. Every request's ids are the solo
// run's, whose start is stories260K's golden ids.
import { expect, test } from '@playwright/test';
import type { StepLogEntry } from '../packages/intab/src/index.ts';
import { golden, openShareTab as open } from './share-tabs.ts';

/** The settings both tabs load with (part of the shared engine's key, so both must ask the same). */
const SETTINGS = {
  maxBatch: 8,
  // No stream pauses for backpressure (a paused stream leaves its batch slot): slots free only as streams finish.
  maxQueuedChunks: 4096,
  stepLog: 2048,
};
/** A's 8 long streams, of different lengths so that they finish 20 steps apart (the slots free one at a time). */
const LONG = Array.from({ length: 8 }, (_, k) => 200 + 20 * k);
const SHORT = 24;

test("a tab's one request among another tab's 8 running streams and 9th queued: admitted at the first free slot, ahead of the queue, its first token within 2 steps (from the step log); every tab's ids are the solo ones", async ({ context }) => {
  const errors: string[] = [];
  const [a, b] = [await open(await context.newPage(), errors), await open(await context.newPage(), errors)];
  expect((await a.evaluate((o) => window.share.load('origin', undefined, o), SETTINGS)).share).toMatchObject({ mode: 'shared-worker', attached: false });
  expect((await b.evaluate((o) => window.share.load('origin', undefined, o), SETTINGS)).share).toMatchObject({ mode: 'shared-worker', attached: true });
  const { prompt } = golden[1];

  // The solo run: one request alone, as long as the longest below.
  await a.evaluate(([ids, n]) => window.share.run(ids, n), [prompt, LONG.at(-1)!] as const);
  const [solo] = await a.evaluate(() => window.share.ran());
  expect(solo.slice(0, golden[1].greedy.length)).toEqual(golden[1].greedy);

  // A fills the batch with 8 streams, then queues a 9th; then B starts its one.
  await a.evaluate(([ids, lengths]) => lengths.forEach((n) => window.share.run(ids, n)), [prompt, LONG] as const);
  await expect.poll(() => a.evaluate(() => window.share.stats().then((s) => s.running)), { timeout: 60_000, intervals: [20] }).toBe(8);
  await a.evaluate(([ids, n]) => window.share.run(ids, n), [prompt, SHORT] as const);
  await expect.poll(() => a.evaluate(() => window.share.stats().then((s) => s.waiting)), { timeout: 60_000, intervals: [20] }).toBe(1);
  await b.evaluate(([ids, n]) => window.share.run(ids, n), [prompt, SHORT] as const);

  const [, ...ofA] = await a.evaluate(() => window.share.ran());
  const [ofB] = await b.evaluate(() => window.share.ran());
  expect(ofA).toEqual([...LONG, SHORT].map((n) => solo.slice(0, n)));
  expect(ofB).toEqual(solo.slice(0, SHORT));

  // The step log as B sees it: its own requests are session 0, A's session 1.
  const log = (await b.evaluate(() => window.share.stats())).stepLog!;
  const at = steps(log);
  const mine = [...at.session].filter(([, s]) => s === 0).map(([id]) => id);
  const theirs = [...at.session].filter(([, s]) => s === 1).map(([id]) => id).sort((x, y) => x - y).slice(-9); // the solo run's is older
  expect(mine).toHaveLength(1);
  const [late, longs, ninth] = [mine[0], theirs.slice(0, 8), theirs[8]];
  // A's 8 finish one at a time, the shortest first.
  const ends = longs.map((id) => at.finished.get(id)!);
  expect(ends).toEqual([...new Set(ends)].sort((x, y) => x - y));
  // B's request is admitted at the step after A's first stream finished, with A's 9th (older) still waiting...
  expect(at.admitted.get(late)).toBe(at.finished.get(longs[0])! + 1);
  expect(log.find((s) => s.step === at.admitted.get(late))!.waiting).toBe(1);
  // ...which takes the next free slot.
  expect(at.admitted.get(ninth)).toBe(at.finished.get(longs[1])! + 1);
  // B's first token within 2 steps of its admission (its 5-token prompt fits one step: in that very step).
  expect(at.firstToken.get(late)! - at.admitted.get(late)!).toBeLessThanOrEqual(2);
  console.log(JSON.stringify({ test: 'share-fairness', admitted_step: at.admitted.get(late), first_token_steps_after: at.firstToken.get(late)! - at.admitted.get(late)!, ninth_admitted_steps_after: at.admitted.get(ninth)! - at.admitted.get(late)! }));

  // A sees the same steps with the sessions the other way round.
  const seenByA = steps((await a.evaluate(() => window.share.stats())).stepLog!);
  expect([late, ...longs, ninth].map((id) => seenByA.session.get(id))).toEqual([1, ...longs.map(() => 0), 0]);

  for (const p of [a, b]) await p.evaluate(() => window.share.destroy());
  expect(errors).toEqual([]);
});

/** Per request (by stream id), from a step log: its session, and the steps that admitted it, gave its first token, and finished it. */
function steps(log: StepLogEntry[]) {
  const at = { session: new Map<number, number | undefined>(), admitted: new Map<number, number>(), firstToken: new Map<number, number>(), finished: new Map<number, number>() };
  for (const s of log) {
    for (const r of s.requests) {
      at.session.set(r.stream, r.session);
      if (r.admitted) at.admitted.set(r.stream, s.step);
      if (r.tokens && !at.firstToken.has(r.stream)) at.firstToken.set(r.stream, s.step);
      if (r.finish) at.finished.set(r.stream, s.step);
    }
  }
  return at;
}
