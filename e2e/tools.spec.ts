// Tool calling on the two pages, in real Chromium. The offline assistant (examples/pwa): after a first visit online,
// offline, a message whose first reply must call the clock (`?tool_choice=get_current_time`) shows the call, runs it
// (in the browser's time zone, Asia/Tokyo here), sends the result back and gets an answer; a call that changes data
// (save_note) waits for the user: declined, nothing is saved and the model is told so; allowed, the note is saved and
// stays after a reload. The demo chat (examples/chat): `?tools=` makes the model's calls show as they stream, the name
// and then the arguments growing, as text (markup in them never runs), each answered "not run".
// The model: stories260K's Hugging Face folder (a context of 8192 here: the tool list is long, one token a character)
// with a tiny ChatML tokenizer that has Qwen's <tool_call> tokens and Qwen3's real chat template, which renders tools
// (the engine reads it as the 'hermes' format).
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startHubServer } from '@intab/testing/hub-server';
import { toolsChatFolder } from './chat-model.ts';
import { offline } from './chat-steps.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORIES = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
/** playwright.config.ts serves the assistant here (PWA_PORT). */
const APP = 'http://127.0.0.1:4319/';
const TIME_ZONE = 'Asia/Tokyo';

/** The model's folder (chat-model.ts): config.json, model.safetensors, tokenizer.json, tokenizer_config.json. */
let folder: string;
let hub: { url: string; close(): Promise<void> };
test.beforeAll(async () => {
  folder = toolsChatFolder(STORIES);
  hub = await startHubServer({ 'test/tools': folder });
});
test.afterAll(async () => hub?.close());

const modelUrl = () => `${hub.url}/test/tools/resolve/main/`;

/** Sends a message and waits until the whole answer is over (every round: the send button is back). */
async function send(page: Page, text: string): Promise<void> {
  await page.locator('#input').fill(text);
  await page.locator('#send').click();
  await expect(page.locator('#send')).toBeHidden();
  await expect(page.locator('#send')).toBeVisible({ timeout: 180_000 });
}

/** A result box's JSON (its text is `label: JSON`). */
async function resultOf(call: ReturnType<Page['locator']>): Promise<Record<string, unknown>> {
  const text = (await call.locator('.tool-result').textContent())!;
  return JSON.parse(text.slice(text.indexOf(':') + 1));
}

/** The prompt tokens an answer's stats line reports. */
async function promptTokens(message: ReturnType<Page['locator']>): Promise<number> {
  return Number(/of (\d+) prompt tokens/.exec((await message.locator('.stats').textContent())!)![1]);
}

test.describe('the offline assistant', () => {
  test.use({ timezoneId: TIME_ZONE });

  test('offline, a reply calls the clock, the call runs in the browser and the model answers with its result', async ({ page, context }) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${APP}?model=${encodeURIComponent(modelUrl())}&tool_choice=get_current_time`);
    await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
    await expect(page.locator('#model-status')).toContainText('into the model store');
    await context.setOffline(true);
    await page.reload();
    await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
    await expect(page.locator('#model-status')).toContainText('from the model store (verified)');
    await expect(page.locator('#tools-status')).toContainText('the model writes calls in the hermes format · first reply: tool_choice {"type":"function","function":{"name":"get_current_time"}}');

    // The call is ~50 tokens (a character a token, but the tags).
    await page.locator('#max-tokens').fill('160');
    const before = new Date();
    await send(page, 'What time is it?');
    const after = new Date();
    const replies = page.locator('.msg.assistant');
    // The first reply: the call (and nothing else), run; then the reply to its result, in text.
    const call = replies.first().locator('.tool-call');
    await expect(call).toHaveCount(1);
    await expect(call.locator('.tool-name')).toHaveText('⚙ get_current_time');
      expect(JSON.parse((await call.locator('.tool-args').textContent())!)).toEqual({});
    await expect(call).toHaveClass(/\bdone\b/);
    const { result } = (await resultOf(call)) as { result: Record<string, string> };
    const tokyoDate = (d: Date) => new Intl.DateTimeFormat('en-CA', { timeZone: TIME_ZONE }).format(d);
    expect(result).toMatchObject({ timeZone: TIME_ZONE, utcOffset: '+09:00' });
    expect([tokyoDate(before), tokyoDate(after)]).toContain(result.date);
    expect(Date.parse(result.iso)).toBeGreaterThanOrEqual(before.getTime() - 1000);
    expect(Date.parse(result.iso)).toBeLessThanOrEqual(after.getTime());

    await expect(replies).toHaveCount(2);
    const answer = replies.nth(1);
    await expect(answer.locator('.tool-call')).toHaveCount(0);
    expect((await answer.locator('.body').textContent())!.length).toBeGreaterThan(0);
    // The answer's prompt is the first reply's plus the call and its result (a character a token, but the tags).
    const resultText = (await call.locator('.tool-result').textContent())!.slice('result: '.length);
    expect(await promptTokens(answer)).toBeGreaterThan((await promptTokens(replies.first())) + resultText.length);
    await page.screenshot({ path: 'test-results/tools-pwa.png', fullPage: true });
    await context.setOffline(false);
    expect(errors).toEqual([]);
  });

  test('a call that changes data waits for the user: declined, nothing is saved and the model is told; allowed, the note is kept', async ({ page }) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${APP}?model=${encodeURIComponent(modelUrl())}&tool_choice=save_note`);
    await expect(page.locator('#input')).toBeEnabled({ timeout: 120_000 });
    await expect(page.locator('#notes-status')).toContainText('0 notes, kept on this device');
    // A note's title and text are up to 80 + 1000 characters, a token each.
    await page.locator('#max-tokens').fill('1400');

    /** Sends a message and answers each question of its calls ('required' allows several in a reply) the same way. */
    const ask = async (message: string, answer: 'allow' | 'decline' | 'stop') => {
      const first = await page.locator('.msg.assistant').count();
      let notes = await page.locator('#notes li').count();
      await page.locator('#input').fill(message);
      await page.locator('#send').click();
      await expect(page.locator('#send')).toBeHidden();
      const asked: { title: string; text: string }[] = [];
      const question = page.locator('.tool-confirm');
      for (;;) {
        // A question, or the answer's end (the send button back).
        await expect(page.locator('.tool-confirm, #send:not([hidden])').first()).toBeVisible({ timeout: 180_000 });
        if (!(await question.isVisible())) break;
        const call = page.locator('.tool-call', { has: question });
        const args = JSON.parse((await call.locator('.tool-args').textContent())!) as { title: string; text: string };
        asked.push(args);
        await expect(question.locator('.tool-question')).toHaveText(`Save a note titled ${JSON.stringify(args.title)} on this device?`);
        // Nothing runs before the user answers.
        await expect(page.locator('#notes li')).toHaveCount(notes);
        await page.locator(answer === 'allow' ? '.tool-allow' : answer === 'decline' ? '.tool-decline' : '#stop').click();
        if (answer === 'allow') await expect(page.locator('#notes li')).toHaveCount(++notes);
        await expect(call.locator('.tool-confirm')).toHaveCount(0);
      }
      expect(asked.length).toBeGreaterThan(0);
      // The calls of the message's first reply, and the replies it got.
      const replies = page.locator('.msg.assistant');
      return { asked, calls: replies.nth(first).locator('.tool-call'), replies: (await replies.count()) - first };
    };

    const declined = await ask('Remember that my locker code is 4512', 'decline');
    await expect(declined.calls).toHaveCount(declined.asked.length);
    for (const call of await declined.calls.all()) {
      await expect(call).toHaveClass(/\bdeclined\b/);
      expect(await resultOf(call)).toEqual({ declined: true, message: 'The user declined this call of save_note: it did not run and nothing was changed.' });
    }
    await expect(page.locator('#notes li')).toHaveCount(0);
    // The model got those results and replied.
    expect(declined.replies).toBeGreaterThanOrEqual(2);

    const allowed = await ask('Please do save it', 'allow');
    const titles = allowed.asked.map((a) => a.title.trim() || a.text.trim().slice(0, 40));
    for (const [i, call] of (await allowed.calls.all()).entries()) {
      await expect(call).toHaveClass(/\bdone\b/);
      expect(await resultOf(call)).toEqual({ result: { saved: true, title: titles[i] } });
    }
    // Newest first.
    await expect(page.locator('#notes li span')).toHaveText([...titles].reverse());

    // The stop button while the question is asked: the call does not run, and no reply follows.
    const stopped = await ask('And another one', 'stop');
    expect(stopped.asked).toHaveLength(1);
    await expect(stopped.calls.first()).toHaveClass(/\bnot-run\b/);
    expect(await resultOf(stopped.calls.first())).toEqual({ error: { code: 'stopped', message: 'The user stopped the answer before this call ran.' } });
    expect(stopped.replies).toBe(1);
    await expect(page.locator('#notes li')).toHaveCount(titles.length);
    // Kept on this device: a reload lists it.
    await page.reload();
    await expect(page.locator('#notes-status')).toContainText(`${titles.length} note${titles.length === 1 ? '' : 's'}, kept on this device`);
    await expect(page.locator('#notes li span')).toHaveText([...titles].reverse());
    expect(errors).toEqual([]);
  });
});

/** Markup that runs `__xss(n)` if parsed as HTML. */
const payload = (n: number) => `<img src=x onerror=__xss(${n})><script>__xss(${n + 1})</script>`;

test('the demo chat shows the calls of ?tools= as they stream, the arguments growing, as text', async ({ page }) => {
  const calls: unknown[] = [];
  await page.exposeBinding('__xss', (_source, n: unknown) => void calls.push(n));
  const { errors, offsite } = await offline(page);
  // The markup is forced (a const: the engine writes it at once); the note is sampled, a token a step.
  const parameters = { type: 'object', properties: { html: { const: payload(1) }, note: { type: 'string', minLength: 8, maxLength: 40 } }, required: ['html', 'note'], additionalProperties: false };
  const tools = [{ type: 'function', function: { name: 'show_html', description: 'Shows HTML.', parameters } }];
  await page.goto(`/examples/chat/?backend=webgpu&tools=${encodeURIComponent(JSON.stringify(tools))}&tool_choice=required`);
  const files = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'];
  await page.locator('#local-files').setInputFiles(files.map((f) => ({ name: f, mimeType: 'application/octet-stream', buffer: readFileSync(join(folder, f)) })));
  await expect(page.locator('#model-status')).toContainText('llama, 5 layers', { timeout: 180_000 });
  await expect(page.locator('#input')).toBeEnabled();
  // A call is ~140 tokens, and 'required' allows several in a row (a random model stops at about the second).
  await page.locator('#max-tokens').fill('2000');
  // Every state the arguments go through, from the first box on.
  await page.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { argsSeen: string[] }).argsSeen = seen;
    new MutationObserver(() => {
      const args = document.querySelector('.tool-call .tool-args');
      const name = document.querySelector('.tool-call .tool-name')?.textContent ?? '';
      if (args && seen.at(-1) !== `${name}|${args.textContent}`) seen.push(`${name}|${args.textContent}`);
    }).observe(document.getElementById('messages')!, { subtree: true, childList: true, characterData: true });
  });
  await page.locator('#input').fill(payload(3));
  await page.locator('#send').click();
  await expect(page.locator('#send')).toBeVisible({ timeout: 120_000 });

  const call = page.locator('.tool-call');
  await expect(call.first().locator('.tool-name')).toHaveText('⚙ show_html');
  const args = (await call.first().locator('.tool-args').textContent())!;
  expect(JSON.parse(args)).toEqual({ html: payload(1), note: expect.any(String) });
  // Streamed: the name from the first state on, then the arguments growing to the end, each state a prefix of the next.
  const seen = (await page.evaluate(() => (window as unknown as { argsSeen: string[] }).argsSeen)).map((s) => [s.slice(0, s.indexOf('|')), s.slice(s.indexOf('|') + 1)]);
  for (const [name] of seen) expect(name).toBe('⚙ show_html');
  const states = seen.map(([, a]) => a);
  expect(states.length).toBeGreaterThan(3);
  for (let i = 1; i < states.length; i++) expect(states[i].startsWith(states[i - 1])).toBe(true);
  expect(states.at(-1)).toBe(args);
  // This page runs no tools: each call is answered "not run", and the answer ends there.
  await expect(call.first()).toHaveClass(/\bnot-run\b/);
  await expect(call.first().locator('.tool-result')).toHaveText('not run: {"error":{"code":"not_run","message":"This page shows calls but does not run them."}}');
  await expect(page.locator('.msg.assistant')).toHaveCount(1);
  await page.screenshot({ path: 'test-results/tools-chat.png', fullPage: true });
  // Markup in the arguments shows as text: no element made from it, and nothing ran.
  expect(await page.locator('#messages .tool-call img, #messages .tool-call script, #messages .body *').count()).toBe(0);
  await page.evaluate(() => new Promise((done) => Object.assign(new Image(), { onerror: done, onload: done, src: 'x' })));
  expect(calls).toEqual([]);
  expect(errors).toEqual([]);
  expect(offsite).toEqual([]);
});
