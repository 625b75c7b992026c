// The demo chat page where there is no WebGPU at all (Chromium started without it, as Firefox or a locked-down
// Chrome would be): ?backend=onnx-wasm, and 'auto' by itself, load a local GGUF onto onnxruntime-web's wasm, and
// the visitor gets a streamed answer and a next turn, offline (every request off localhost is blocked: ORT's wasm
// comes from the app's own bundle, no CDN).
import { expect, test } from '@playwright/test';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumArgs, chromiumPath } from '../scripts/chromium.mjs';
import { offline } from './chat-steps.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K', 'stories260K-vocab-ud.gguf');

test.use({ launchOptions: { executablePath: chromiumPath(), args: chromiumArgs().filter((a) => a !== '--enable-unsafe-webgpu').concat('--disable-gpu') } });

for (const backend of ['onnx-wasm', 'auto']) {
  test(`chat page without WebGPU, ?backend=${backend}: a streamed answer on onnxruntime wasm, then a next turn`, async ({ page }) => {
    const { offsite, errors } = await offline(page);
    await page.goto(`/examples/chat/?backend=${backend}`);
    expect(await page.evaluate(async () => !('gpu' in navigator) || (await navigator.gpu.requestAdapter()) === null)).toBe(true);
    // 120 tokens: the next turn's prompt (this answer in it) still fits stories260K's 512 positions.
    await page.locator('#max-tokens').fill('120');
    await page.locator('#local-files').setInputFiles(MODEL);
    await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 120_000 });
    await expect(page.locator('#model-status')).toContainText('on onnx-wasm (onnxruntime-web wasm');
    if (backend === 'auto') expect(await page.locator('#model-status').getAttribute('title')).toMatch(/WebGPU is unavailable/);

    // A streamed answer: at ~1,400 tok/s stories260K finishes in a fraction of a second (too fast to stop by hand; the
    // stop button is the WebGPU chat test's), so the page counts the answer's updates as they land.
    await page.locator('#seed').fill('3');
    await page.evaluate(() => {
      const w = window as unknown as { __updates: number };
      w.__updates = 0;
      new MutationObserver(() => w.__updates++).observe(document.getElementById('messages')!, { subtree: true, characterData: true, childList: true });
    });
    await page.locator('#input').fill('Tell me a story');
    await page.locator('#send').click();
    await expect(page.locator('.msg.assistant .stats').first()).toContainText('TTFT', { timeout: 60_000 });
    const first = (await page.locator('.msg.assistant .body').first().textContent()) ?? '';
    expect(first.length).toBeGreaterThan(0);
    expect(await page.evaluate(() => (window as unknown as { __updates: number }).__updates)).toBeGreaterThan(3);
    await page.locator('#input').fill('And then?');
    await page.locator('#max-tokens').fill('12');
    await page.locator('#send').click();
    await expect(page.locator('.msg.assistant')).toHaveCount(2);
    await expect(page.locator('.msg.assistant .stats').last()).toContainText('TTFT', { timeout: 60_000 });
    await expect(page.locator('.msg.assistant .body').last()).not.toBeEmpty();
    expect(errors).toEqual([]);
    expect(offsite).toEqual([]);
  });
}
