// aggregate() in a real page with the real engine (stories260K in its Worker): an answer streamed through it is
// reloaded away in the middle, and the reloaded page shows the stored partial record, marked incomplete, holding
// everything that had been shown; the same (greedy) request run to the end leaves a complete record equal to the
// streamed text, of which the partial record is a prefix. The page is e2e/pages/aggregate.html.
import { expect, test, type Page } from '@playwright/test';

const PAGE = '/e2e/pages/aggregate.html';

/** The stored responses the page shows once it has read them: { id: { status, complete, text } }. */
async function stored(page: Page): Promise<Record<string, { status: string; complete: string; text: string }>> {
  await expect(page.locator('#records')).toHaveAttribute('data-ready', 'true');
  return page.locator('#records .record').evaluateAll((items) =>
    Object.fromEntries(items.map((li) => [(li as HTMLElement).dataset.id!, { status: (li as HTMLElement).dataset.status!, complete: (li as HTMLElement).dataset.complete!, text: li.textContent ?? '' }])),
  );
}

test('aggregate: a reload mid-answer shows the partial record, marked incomplete; a finished answer is stored whole', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(PAGE);
  expect(await stored(page)).toEqual({});

  // Shown at 40 ms a chunk: the answer (200 tokens) is still streaming when the page reloads.
  await page.locator('#pace').fill('40');
  await page.locator('#start').click();
  const answer = page.locator('#answer');
  await expect.poll(async () => (await answer.textContent())!.length, { timeout: 120_000 }).toBeGreaterThan(40);
  const shown = (await answer.textContent())!;
  const id = (await answer.getAttribute('data-id'))!;
  expect(await answer.getAttribute('data-done')).toBeNull();
  await page.reload();

  const afterReload = await stored(page);
  expect(Object.keys(afterReload)).toEqual([id]);
  const partial = afterReload[id];
  expect(partial).toMatchObject({ status: 'incomplete', complete: 'false' });
  // Each chunk is stored before it is passed on: everything the page had shown is in the record.
  expect(partial.text.startsWith(shown)).toBe(true);

  // The same greedy request to the end: its record is complete and equals the streamed text.
  await page.locator('#pace').fill('0');
  await page.locator('#start').click();
  await expect(answer).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
  const full = (await answer.textContent())!;
  const id2 = (await answer.getAttribute('data-id'))!;
  expect(full.length).toBeGreaterThan(partial.text.length);
  expect(full.startsWith(partial.text)).toBe(true);
  await page.reload();
  const finished = await stored(page);
  expect(finished[id2]).toEqual({ status: 'completed', complete: 'true', text: full });
  expect(finished[id]).toEqual(partial);
  // Newest first.
  expect(await page.locator('#records .record').evaluateAll((items) => items.map((li) => (li as HTMLElement).dataset.id))).toEqual([id2, id]);
  expect(errors).toEqual([]);
});
