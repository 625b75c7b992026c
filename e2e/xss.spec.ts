// Model output is text, never HTML, on both chat pages (examples/chat and examples/pwa share their conversation view).
// The tiny real model is made to write markup through the pages' own structured-output option (`?schema=`, a JSON
// Schema whose `const` is the payload, enforced token by token: stories260K spells it with its byte pieces), and the
// payload calls a binding the test exposes; so do the visitor's message, a file name and a model id shown in the
// status line, and an error's text. Nothing may call it, the markup must show literally, and no element may appear.
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHubServer } from '@intab/testing/hub-server';
import { offline } from './chat-steps.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORIES = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
/** playwright.config.ts serves the assistant here (PWA_PORT). */
const APP = 'http://127.0.0.1:4319/';

/** Markup that runs `__xss(n)` if parsed as HTML: an image whose load fails, and a script. */
const payload = (n: number) => `<img src=x onerror=__xss(${n})><script>__xss(${n + 1})</script>`;
/** The pages' `?schema=`: every answer is this one JSON string, the payload. */
const schemaParam = (n: number) => `schema=${encodeURIComponent(JSON.stringify({ const: payload(n) }))}`;

/** Every call of `__xss` from any frame of the page, the page's errors, and its requests off localhost (blocked). */
async function watch(page: Page): Promise<{ calls: unknown[]; errors: string[]; offsite: string[] }> {
  const calls: unknown[] = [];
  await page.exposeBinding('__xss', (_source, n: unknown) => void calls.push(n));
  return { calls, ...(await offline(page)) };
}

/** Sends `text` and waits for the answer to end (its stats line, or its error). */
async function send(page: Page, text: string): Promise<void> {
  const before = await page.locator('.msg.assistant').count();
  await page.locator('#input').fill(text);
  await page.locator('#send').click();
  await expect(page.locator('.msg.assistant')).toHaveCount(before + 1);
  await expect(page.locator('#send')).toBeVisible({ timeout: 60_000 });
}

/**
 * Nothing the page shows is an element made from text, and `__xss` never ran. The image check waits for an image of
 * the same URL, made here after the answer, to fail: a payload's image, parsed earlier, would have failed first.
 */
async function expectNothingRan(page: Page, calls: unknown[]): Promise<void> {
  expect(await page.locator('#messages .body *, #model-status *').count()).toBe(0);
  await page.evaluate(() => new Promise((done) => Object.assign(new Image(), { onerror: done, onload: done, src: 'x' })));
  expect(calls).toEqual([]);
}

test('demo chat: markup the model writes, the visitor types and a file is named shows as text and never runs', async ({ page }) => {
  const { calls, errors, offsite } = await watch(page);
  // intab's WebGPU kernels, as e2e/chat.spec.ts loads the model.
  await page.goto(`/examples/chat/?backend=webgpu&${schemaParam(1)}`);
  const name = `${payload(3)}.gguf`;
  await page.locator('#local-files').setInputFiles({ name, mimeType: 'application/octet-stream', buffer: readFileSync(join(STORIES, 'stories260K-vocab-ud.gguf')) });
  await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 120_000 });
  await expect(page.locator('#model-status')).toContainText(name);
  await page.locator('#max-tokens').fill('80');
  await send(page, payload(5));
  await expect(page.locator('.msg.user .body')).toHaveText(payload(5));
  // The model's answer is the JSON string of the payload, markup and all.
  await expect(page.locator('.msg.assistant .body')).toHaveText(JSON.stringify(payload(1)));
  await expectNothingRan(page, calls);
  expect(errors).toEqual([]);
  expect(offsite).toEqual([]);
});

test('offline assistant: markup the model writes, a model id and an error\'s text show as text and never run', async ({ page }) => {
  const hub = await startHubServer({ 'test/stories': STORIES });
  try {
    const { calls, errors, offsite } = await watch(page);
    const model = `${hub.url}/test/stories/resolve/main/stories260K-vocab-ud.gguf`;
    // The assistant's default backend ('auto': onnxruntime's wasm on SwiftShader) enforces the schema as well.
    await page.goto(`${APP}?model=${encodeURIComponent(model)}&${schemaParam(1)}`);
    await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
    await page.locator('#max-tokens').fill('80');
    await send(page, 'Hello');
    await expect(page.locator('.msg.assistant .body')).toHaveText(JSON.stringify(payload(1)));
    await expectNothingRan(page, calls);

    // A schema that is not JSON: the answer is the error, whose message quotes the markup.
    await page.goto(`${APP}?model=${encodeURIComponent(model)}&schema=${encodeURIComponent(payload(3))}`);
    await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
    await send(page, 'Hello');
    await expect(page.locator('.msg.assistant')).toHaveClass(/error/);
    await expect(page.locator('.msg.assistant .body')).toContainText(`[InvalidRequestError: Invalid request: 'schema' should be a JSON Schema as JSON text`);
    await expect(page.locator('.msg.assistant .body')).toContainText(payload(3));
    await expectNothingRan(page, calls);

    // A model URL with markup in it: the status line says it could not load it, quoting it.
    const missing = `${hub.url}/test/stories/resolve/main/${payload(5)}.gguf`;
    await page.goto(`${APP}?model=${encodeURIComponent(missing)}`);
    await expect(page.locator('#model-status')).toContainText(`Could not load ${missing}: `, { timeout: 60_000 });
    await expectNothingRan(page, calls);
    expect(errors).toEqual([]);
    expect(offsite).toEqual([]);
  } finally {
    await hub.close();
  }
});
