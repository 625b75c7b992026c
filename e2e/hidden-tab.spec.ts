// Decode in a hidden tab: the engine's loop runs in its Worker and nothing waits on requestAnimationFrame or on timers a
// hidden page throttles, so a tab behind another keeps decoding, the same greedy tokens. The page is hidden the real
// way, a second tab in front, in a Chromium that backgrounds tabs (hidden-tab.ts: Playwright's launch and its focus
// emulation keep every page 'visible'): the test checks the page was 'hidden' through the decode and got no animation
// frame, and prints the speed ratio as a JSON line (a report, not an assertion: `intab bench hidden` measures it).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test, type Page } from '@playwright/test';
import { launchHideable } from '../packages/cli/src/hidden-tab.ts';
import type { HiddenDecode, HiddenRun } from '../packages/cli/page/hidden.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL_DIR = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
const golden = (JSON.parse(readFileSync(join(MODEL_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[])[0]!;
/** Longer than the golden ids, so the decode lasts a while; greedy, so its first ids are the golden ones. */
const TOKENS = 256;

const decode = (page: Page, req: HiddenDecode): Promise<HiddenRun> => page.evaluate((r) => window.__hidden!.decode(r), req);

test('a tab behind another decodes the golden greedy ids while hidden, with no animation frame', async ({ baseURL }) => {
  const tab = await launchHideable();
  try {
    const { page } = tab;
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${baseURL}/packages/cli/page/hidden.html`);
    await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
    const model = new URL(`/@fs${join(MODEL_DIR, 'stories260K-vocab-ud.gguf')}`, baseURL).href;
    const loaded = await page.evaluate((m) => window.__hidden!.load({ model: m, backend: 'webgpu' }), model);
    expect(loaded.backend).toBe('webgpu');
    const request = { promptIds: golden.prompt, maxTokens: TOKENS };
    await decode(page, request); // warm-up: pipelines compiled, buffers allocated

    const visible = await decode(page, request);
    await tab.hide();
    const hidden = await decode(page, request);
    await tab.show();
    const again = await decode(page, request);

    expect(visible.visibility).toEqual(['visible']);
    expect(hidden.visibility).toEqual(['hidden']);
    expect(again.visibility).toEqual(['visible']);
    // A hidden page gets no animation frames: had the decode waited on one, it would not have finished.
    expect(hidden.rafHz).toBe(0);
    expect(hidden.finishReason).toBe('length');
    expect(hidden.ids.slice(0, golden.greedy.length)).toEqual(golden.greedy);
    expect(hidden.ids).toEqual(visible.ids);
    expect(again.ids).toEqual(visible.ids);
    const visibleTokPerS = (visible.tokPerS + again.tokPerS) / 2;
    const round = (x: number) => Math.round(x * 1000) / 1000;
    console.log(
      JSON.stringify({
        test: 'hidden-tab',
        visibleTokPerS: round(visibleTokPerS),
        hiddenTokPerS: round(hidden.tokPerS),
        ratio: round(hidden.tokPerS / visibleTokPerS),
        visibleTimerHz: round(visible.timerHz),
        hiddenTimerHz: round(hidden.timerHz),
        hiddenPausedMs: hidden.pausedMs,
      }),
    );
    await page.evaluate(() => window.__hidden!.destroy());
    expect(errors).toEqual([]);
  } finally {
    await tab.close();
  }
});
