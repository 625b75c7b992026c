// A GPU-process crash under an engine two tabs share (createEngine({ share: 'origin' })): both tabs' streams end with
// DeviceLostError after the tokens they had, the engine in the SharedWorker recovers once (each tab sees 'recovering'
// then 'ready'), and both tabs' next requests give stories260K's golden ids. Its own browser (gpu-crash.ts): Chromium
// stops starting a GPU process after a few crashes, and device-loss.spec.ts crashes its browser's twice.
import { expect, test, type Page } from '@playwright/test';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.mjs';
import { crashMarker, killGpuProcessOf } from './gpu-crash.ts';
import { golden, openShareTab } from './share-tabs.ts';

const MARKER = crashMarker('share-device-loss');
test.use({ launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs(), MARKER] } });

test('two tabs on one shared engine: a GPU-process crash ends both streams with DeviceLostError, the engine recovers once for both, and both answer with the golden ids', async ({ context }) => {
  const errors: string[] = [];
  const tabs: Page[] = [];
  for (let i = 0; i < 2; i++) {
    const page = await openShareTab(await context.newPage(), errors);
    const info = await page.evaluate(() => window.share.load('origin'));
    expect(info.share).toMatchObject({ mode: 'shared-worker', attached: i === 1 });
    tabs.push(page);
  }
  const { prompt, greedy } = golden[1];
  for (const page of tabs) {
    await page.evaluate(({ prompt }) => {
      const w = window as unknown as Record<string, any>;
      const engine = w.share.engine();
      w.events = [] as string[];
      for (const type of ['recovering', 'ready', 'failed']) engine.addEventListener(type, (e: CustomEvent) => w.events.push(`${type}:${e.detail.losses}`));
      w.stream = { chunks: [] as unknown[], done: false };
      void (async () => {
        for await (const c of engine.generate({ promptIds: prompt, maxTokens: 400, temperature: 0, ignoreEos: true })) {
          w.stream.chunks.push({ ids: c.ids, finishReason: c.finishReason, error: c.error?.name });
          await new Promise((r) => setTimeout(r, 20));
        }
        w.stream.done = true;
      })();
    }, { prompt });
  }
  for (const page of tabs) await expect.poll(() => page.evaluate(() => (window as unknown as { stream: { chunks: unknown[] } }).stream.chunks.length), { timeout: 60_000 }).toBeGreaterThanOrEqual(2);
  killGpuProcessOf(MARKER);
  for (const page of tabs) {
    await expect.poll(() => page.evaluate(() => (window as unknown as { stream: { done: boolean } }).stream.done), { timeout: 60_000 }).toBe(true);
    const chunks = await page.evaluate(() => (window as unknown as { stream: { chunks: { ids: number[]; finishReason: string | null; error?: string }[] } }).stream.chunks);
    expect(chunks.at(-1)).toMatchObject({ finishReason: 'error', error: 'DeviceLostError' });
    const ids = chunks.flatMap((c) => c.ids);
    expect(ids.slice(0, greedy.length)).toEqual(greedy.slice(0, Math.min(ids.length, greedy.length)));
  }
  for (const page of tabs) {
    await expect.poll(() => page.evaluate(() => window.share.engine().state), { timeout: 120_000 }).toBe('ready');
    expect(await page.evaluate(() => (window as unknown as { events: string[] }).events)).toEqual(['recovering:1', 'ready:1']);
    expect(await page.evaluate(([ids, n]) => window.share.greedy(ids, n), [prompt, greedy.length] as const)).toEqual(greedy);
  }
  expect((await tabs[0].evaluate(() => window.share.stats())).share).toMatchObject({ sessions: 2, loads: 1 });
  for (const page of tabs) await page.evaluate(() => window.share.destroy());
  expect(errors).toEqual([]);
});
