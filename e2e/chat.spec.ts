// The demo chat page as a visitor uses it, offline: a local GGUF picked with the file input (every
// request off localhost is blocked), a streamed answer that grows, the stop button, and a next turn whose
// prompt comes mostly from the prefix cache (the preloaded system prompt and the first turn).
import { expect, test } from '@playwright/test';
import { offline, streamThenStop } from './chat-steps.ts';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MODEL = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K', 'stories260K-vocab-ud.gguf');

test('chat page: local model offline, streaming, stop, next message', async ({ page }) => {
  const { offsite, errors } = await offline(page);
  // intab's WebGPU kernels ('auto' takes onnxruntime on SwiftShader; the ONNX backends' prefix cache is tested apart).
  await page.goto('/examples/chat/?backend=webgpu');
  // The page's default of 512 new tokens on stories260K's 512-token context: clamped to what is left, never refused.
  await expect(page.locator('#max-tokens')).toHaveValue('512');
  await page.locator('#local-files').setInputFiles(MODEL);
  await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 120_000 });
  await expect(page.locator('#input')).toBeEnabled();

  // Streaming: the answer grows over several observations, then stop halts it.
  await streamThenStop(page, 'Tell me a story');

  // The first answer's prompt started with the preloaded system prompt.
  const cached = async (i: number) => {
    const m = /cached (\d+) of (\d+) prompt tokens/.exec((await page.locator('.msg.assistant .stats').nth(i).textContent()) ?? '');
    expect(m, `answer ${i}: a "cached N of M prompt tokens" stat`).not.toBeNull();
    return { cached: Number(m![1]), prompt: Number(m![2]) };
  };
  const turn1 = await cached(0);
  expect(turn1.cached).toBeGreaterThan(0);

  // The next turn works, carries TTFT / tok/s, and reuses the first turn from the cache.
  await page.locator('#input').fill('And then?');
  await page.locator('#max-tokens').fill('12');
  await page.locator('#send').click();
  await expect(page.locator('.msg.assistant')).toHaveCount(2);
  await expect(page.locator('.msg.assistant .stats').last()).toContainText('TTFT', { timeout: 60_000 });
  const second = await cached(1);
  expect(second.prompt).toBeGreaterThan(turn1.prompt);
  expect(second.cached).toBeGreaterThanOrEqual(turn1.prompt);
  expect(second.cached).toBeLessThan(second.prompt);
  await page.screenshot({ path: 'test-results/chat.png', fullPage: true });
  expect(errors).toEqual([]);
  expect(offsite).toEqual([]);
});
