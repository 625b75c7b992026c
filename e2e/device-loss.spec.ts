// A real GPU crash, mid-stream: the test kills its own browser's GPU process (found as the `--type=gpu-process`
// descendant of the browser started with this file's unique --crash-dumps-dir, never any other process), and the page's
// WebGPU device is lost with reason 'unknown', as after a driver crash. Through the API (the engine in its worker): the
// stream ends with finishReason 'error' and a DeviceLostError after the tokens it had, the engine fires 'recovering'
// then 'ready' by itself, and the next request gives stories260K's golden ids. In the demo chat: the answer shows the
// error, the status line says the model is reloading and then that it recovered, and the next message is answered.
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.mjs';
import { crashMarker, killGpuProcessOf } from './gpu-crash.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const golden = JSON.parse(readFileSync(join(SHARED, 'models', 'stories260K', 'golden.json'), 'utf8')).cases[1] as { prompt: number[]; greedy: number[] };

// This file's browser, and only it, carries this flag: the GPU process to kill is found under it (gpu-crash.ts).
const MARKER = crashMarker('device-loss');
test.use({ launchOptions: { executablePath: chromiumPath(), args: [...chromiumArgs(), MARKER] } });
const killGpuProcess = () => killGpuProcessOf(MARKER);

/** Resolves once the page has seen `count` chunks of the stream it runs (window.stream). */
async function chunksSeen(page: Page, count: number): Promise<void> {
  await expect.poll(() => page.evaluate(() => (window as unknown as { stream: { chunks: unknown[] } }).stream.chunks.length), { timeout: 60_000 }).toBeGreaterThanOrEqual(count);
}

test('API: a GPU-process crash ends the stream with DeviceLostError; the engine recovers and gives the golden ids', async ({ page }) => {
  await page.goto('/e2e/pages/remote.html');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
  await page.evaluate(async () => {
    const w = window as unknown as Record<string, any>;
    const model = w.MODEL.replace('stories260K-vocab-ud.gguf', 'stories260K.gguf');
    const engine = await w.intab.createEngine({ model, backend: 'webgpu', cache: false, kvBudgetBytes: 4 << 20 });
    w.engine = engine;
    w.events = [] as string[];
    for (const type of ['recovering', 'ready', 'failed']) engine.addEventListener(type, (e: CustomEvent) => w.events.push(`${type}:${e.detail.losses}`));
  });
  const { prompt, greedy } = golden;
  // A long greedy stream, read slowly enough that the crash lands mid-way.
  await page.evaluate(
    ({ prompt }) => {
      const w = window as unknown as Record<string, any>;
      w.stream = { chunks: [] as unknown[], done: false };
      void (async () => {
        try {
          for await (const c of w.engine.generate({ promptIds: prompt, maxTokens: 400, temperature: 0, ignoreEos: true })) {
            w.stream.chunks.push({ ids: c.ids, finishReason: c.finishReason, error: c.error ? { name: c.error.name, message: c.error.message, isDeviceLost: c.error instanceof w.intab.DeviceLostError } : undefined });
            await new Promise((r) => setTimeout(r, 20));
          }
        } catch (err) {
          w.stream.thrown = String(err);
        }
        w.stream.done = true;
      })();
    },
    { prompt },
  );
  await chunksSeen(page, 2);
  killGpuProcess();
  await expect.poll(() => page.evaluate(() => (window as unknown as { stream: { done: boolean } }).stream.done), { timeout: 60_000 }).toBe(true);
  const stream = await page.evaluate(() => (window as unknown as { stream: { chunks: { ids: number[]; finishReason: string | null; error?: Record<string, unknown> }[]; thrown?: string } }).stream);
  expect(stream.thrown).toBeUndefined();
  const last = stream.chunks.at(-1)!;
  expect(last.finishReason).toBe('error');
  expect(last.error).toMatchObject({ name: 'DeviceLostError', isDeviceLost: true });
  expect(String(last.error?.message)).toContain('(unknown:');
  const ids = stream.chunks.flatMap((c) => c.ids);
  expect(ids.length).toBeLessThan(400);
  expect(ids.slice(0, greedy.length)).toEqual(greedy.slice(0, Math.min(ids.length, greedy.length))); // what arrived is right

  // The engine recovers by itself; the next request gives the golden ids.
  await expect.poll(() => page.evaluate(() => (window as unknown as { engine: { state: string } }).engine.state), { timeout: 120_000 }).toBe('ready');
  expect(await page.evaluate(() => (window as unknown as { events: string[] }).events)).toEqual(['recovering:1', 'ready:1']);
  const after = await page.evaluate(async ({ prompt, n }) => {
    const w = window as unknown as Record<string, any>;
    const ids: number[] = [];
    for await (const c of w.engine.generate({ promptIds: prompt, maxTokens: n, temperature: 0, ignoreEos: true })) ids.push(...c.ids);
    return { ids, status: w.engine.status };
  }, { prompt, n: greedy.length });
  expect(after.ids).toEqual(greedy);
  expect(after.status).toMatchObject({ state: 'ready', losses: 1, recoveries: 1 });
  console.log(JSON.stringify({ deviceLoss: { tokensBeforeLoss: ids.length, recoveryMs: Math.round(after.status.recoveryMs) } }));
  await page.evaluate(() => (window as unknown as { engine: { destroy(): Promise<void> } }).engine.destroy());
});

test('demo chat: a GPU-process crash mid-answer shows the error, the status line follows the recovery, and the next message is answered', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/examples/chat/?backend=webgpu');
  // The GGUF with a tokenizer (the chat sends text).
  await page.locator('#local-files').setInputFiles(join(SHARED, 'models', 'stories260K', 'stories260K-vocab-ud.gguf'));
  await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 120_000 });
  await page.locator('#max-tokens').fill('400');
  await page.locator('#input').fill('Tell me a story');
  // stories260K answers in well under a second here: with the page's CPU slowed, the answer is still streaming (the
  // engine pauses it while the page is slow to pull) when the GPU process dies.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 50 });
  await page.locator('#send').click();
  const answer = page.locator('.msg.assistant .body').last();
  await expect(answer).not.toBeEmpty({ timeout: 60_000 });
  killGpuProcess();
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  await expect(answer).toContainText('DeviceLostError', { timeout: 60_000 });
  await expect(page.locator('#model-status')).toContainText(/reloading the model|recovered from a lost GPU device/, { timeout: 60_000 });
  await expect(page.locator('#model-status')).toContainText('recovered from a lost GPU device', { timeout: 120_000 });
  await expect(page.locator('#send')).toBeVisible();
  await page.locator('#max-tokens').fill('12');
  await page.locator('#input').fill('And then?');
  await page.locator('#send').click();
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
  await expect(page.locator('.msg.assistant .stats').last()).toContainText('TTFT', { timeout: 60_000 });
  await expect(page.locator('.msg.assistant').last()).not.toHaveClass(/error/);
  expect(await page.locator('.msg.assistant .body').last().textContent()).not.toBe('');
  expect(errors).toEqual([]);
});

