// The CLI as a user runs it: `intab generate` and `intab bench decode` on stories260K in headless
// Chromium (WebGPU), checked against golden.json and for the figures they promise to print.
import { expect, test } from '@playwright/test';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL = join(SHARED, 'models', 'stories260K');
const run = promisify(execFile);

async function intab(...args: string[]): Promise<Record<string, unknown>[]> {
  const { stdout } = await run('node', [join(ROOT, 'packages/cli/bin/intab.mjs'), ...args, '--json'], { cwd: ROOT, timeout: 180_000 });
  return stdout.trim().split('\n').map((l) => JSON.parse(l));
}

test('intab generate: golden greedy ids from the GGUF, then a text prompt through its tokenizer', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const lines = await intab('generate', '--model', join(MODEL, 'stories260K.gguf'), '--prompt-ids', golden.prompt.join(','), '--max-tokens', '24', '--temperature', '0');
  const done = lines.at(-1)!;
  expect(done.done).toBe(true);
  expect(lines.slice(0, -1).map((l) => l.id)).toEqual(golden.greedy.slice(0, 24));
  expect(done.ids).toEqual(golden.greedy.slice(0, 24));
  expect(done.prompt_tokens).toBe(golden.prompt.length);
  for (const k of ['ttft_ms', 'prefill_tok_s', 'decode_tok_s']) expect(done[k]).toBeGreaterThan(0);
  expect(String(done.adapter)).not.toBe('');

  // The same prompt as text: the vocabulary GGUF's tokenizer maps <tNNN> pieces to ids, with BOS.
  const text = golden.prompt.slice(1).map((id: number) => `<t${id}>`).join('');
  const fromText = await intab('generate', '--model', join(MODEL, 'stories260K-vocab-ud.gguf'), '--prompt', text, '--max-tokens', '6', '--temperature', '0');
  const last = fromText.at(-1)!;
  expect(last.ids).toEqual(golden.greedy.slice(0, 6));
  expect(fromText[0].text).toBe(`<t${golden.greedy[0]}>`);
});

test('intab bench decode prints prefill and decode speeds and bytes per token', async () => {
  const [line] = await intab('bench', 'decode', '--model', join(MODEL, 'hf'), '--prompt-tokens', '16', '--max-tokens', '8');
  expect(line.bench).toBe('decode');
  for (const k of ['prefill_tok_s', 'decode_tok_s', 'weight_bytes_per_token']) expect(line[k]).toBeGreaterThan(0);
});

test('intab generate fails with a typed, actionable message on a missing prompt', async () => {
  await expect(intab('generate', '--model', join(MODEL, 'stories260K.gguf'))).rejects.toMatchObject({
    stderr: expect.stringMatching(/--prompt-ids, --prompt or --chat/),
  });
});
