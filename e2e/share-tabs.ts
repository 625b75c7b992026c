// What the specs of an engine the origin's tabs share (share, share-election, share-fairness, share-device-loss) open:
// tabs of the page e2e/pages/share.html (`window.share`), stories260K's golden ids, and the relaying Service Worker's
// blank client page.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, type BrowserContext, type Page } from '@playwright/test';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** ../shared/models/stories260K (or under INTAB_SHARED). */
export const STORIES_DIR = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
export const golden = JSON.parse(readFileSync(join(STORIES_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];

/**
 * `page` on e2e/pages/share.html, ready, its page errors collected into `errors`. `hideSharedWorker`: the page sees no
 * SharedWorker (the flag that forces election mode, as on Chrome for Android).
 */
export async function openShareTab(page: Page, errors: string[], o: { hideSharedWorker?: boolean } = {}): Promise<Page> {
  page.on('pageerror', (e) => errors.push(e.message));
  if (o.hideSharedWorker) await page.addInitScript(() => delete (window as { SharedWorker?: unknown }).SharedWorker);
  await page.goto('/e2e/pages/share.html');
  await expect(page.locator('body')).toHaveAttribute('data-ready', 'true');
  return page;
}

/**
 * Registers, from `registrar`, the relaying Service Worker of the GPU tier (packages/intab/src/test-relay-sw.ts:
 * relayOpenAI on its folder's v1) and opens the blank page it controls there (relay-client.html), which has no intab
 * code: a page that can only reach an engine through the Service Worker. The engine tabs are outside its scope.
 */
export async function relayClient(registrar: Page, context: BrowserContext): Promise<Page> {
  await registrar.evaluate(async () => {
    const registration = await navigator.serviceWorker.register('/packages/intab/src/test-relay-sw.ts', { type: 'module', scope: '/packages/intab/src/' });
    const worker = registration.installing ?? registration.waiting ?? registration.active!;
    if (worker.state !== 'activated') await new Promise<void>((resolve) => worker.addEventListener('statechange', () => worker.state === 'activated' && resolve()));
  });
  const client = await context.newPage();
  await client.goto('/packages/intab/src/relay-client.html');
  expect(await client.evaluate(() => navigator.serviceWorker.controller !== null && !('share' in window))).toBe(true);
  return client;
}
