// Steps both chat pages (examples/chat and examples/pwa, which share their conversation view) are driven through.
import { expect, type Page } from '@playwright/test';

/**
 * Blocks every request off localhost (the visitor is offline but for the page's own server) and collects the page's
 * errors; the returned lists must end empty.
 */
export async function offline(page: Page): Promise<{ offsite: string[]; errors: string[] }> {
  const offsite: string[] = [];
  const errors: string[] = [];
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || url.hostname === 'localhost' || url.protocol === 'blob:' || url.protocol === 'data:') return route.continue();
    offsite.push(url.href);
    return route.abort();
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return { offsite, errors };
}

/** Sends a message, checks the answer streams (it grows over several observations), stops it, and checks it stopped. */
export async function streamThenStop(page: Page, message: string): Promise<void> {
  await page.locator('#input').fill(message);
  await page.locator('#send').click();
  const answer = page.locator('.msg.assistant .body').last();
  await expect(answer).not.toBeEmpty({ timeout: 60_000 });
  const first = (await answer.textContent())!.length;
  await expect.poll(async () => (await answer.textContent())!.length, { timeout: 60_000 }).toBeGreaterThan(first);
  await page.locator('#stop').click();
  await expect(page.locator('#stop')).toBeHidden();
  await expect(page.locator('.msg.assistant .stats').last()).toContainText('stopped');
  const stoppedAt = (await answer.textContent())!.length;
  await page.waitForTimeout(500);
  expect((await answer.textContent())!.length).toBe(stoppedAt);
}
