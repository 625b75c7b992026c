// The kernel lab as a visitor uses it: the page finds the GPU, every correctness check passes, and a
// quick benchmark fills the table with measured numbers.
import { expect, test } from '@playwright/test';

test('kernel lab: checks pass and a quick benchmark reports figures', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('/examples/kernel-lab/?run=all&quick=1&filter=attn.q');
  await expect(page.locator('#device')).toContainText('features:', { timeout: 30_000 });
  await page.waitForFunction(() => (window as { __intabDone?: boolean }).__intabDone === true, undefined, { timeout: 200_000 });

  const checkRows = page.locator('#checks tbody tr');
  expect(await checkRows.count()).toBeGreaterThan(5);
  await expect(page.locator('#checks .bad')).toHaveCount(0);
  await expect(page.locator('#status')).toContainText('Benchmarks done');

  const benchRows = page.locator('#results tbody tr');
  expect(await benchRows.count()).toBeGreaterThan(0);
  const gbps = Number(await benchRows.first().locator('td').nth(5).textContent());
  expect(gbps).toBeGreaterThan(0);
  await page.screenshot({ path: 'test-results/kernel-lab.png', fullPage: true });
  expect(errors).toEqual([]);
});
