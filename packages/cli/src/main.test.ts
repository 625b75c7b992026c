import { describe, expect, test } from 'vitest';
import { jobFromFlags } from './generate.mjs';
import { main, parseArgs } from './main.mjs';

describe('intab CLI arguments', () => {
  test('flags with values, boolean flags and positionals', () => {
    expect(parseArgs(['bench', 'kernels', '--json', '--filter', 'lm_head', '--timeout=30'])).toEqual({
      positional: ['bench', 'kernels'],
      flags: { json: true, filter: 'lm_head', timeout: '30' },
    });
    // boolean flags never swallow the next word
    expect(parseArgs(['--quick', 'bench'])).toEqual({ positional: ['bench'], flags: { quick: true } });
  });

  test('no command prints usage and exits 2; an unknown command exits 2', async () => {
    const log = console.log;
    const err = console.error;
    const out: string[] = [];
    console.log = console.error = (...a: unknown[]) => void out.push(a.join(' '));
    try {
      expect(await main([])).toBe(2);
      expect(await main(['frobnicate'])).toBe(2);
      expect(await main(['--help'])).toBe(0);
    } finally {
      console.log = log;
      console.error = err;
    }
    expect(out.join('\n')).toMatch(/usage:\n\s+intab generate --model/);
    for (const cmd of ['intab bench decode', 'intab bench kernels', 'intab make-model']) expect(out.join('\n')).toContain(cmd);
    for (const flag of ['--concurrency N', '--abort-after-tokens K', '--batch 1,2,4,8']) expect(out.join('\n')).toContain(flag);
    expect(out.join('\n')).toMatch(/unknown command 'frobnicate'/);
  });

  const model = { kind: 'gguf' as const, files: ['m.gguf'], urls: ['/__intab_model/m.gguf'] };

  test('generate --concurrency and --abort-after-tokens reach the page job as numbers', () => {
    const { flags } = parseArgs(['generate', '--prompt-ids', '1,2,3', '--concurrency', '3', '--abort-after-tokens=5', '--temperature', '0']);
    const job = jobFromFlags(flags, 'generate', model);
    expect(job).toMatchObject({ mode: 'generate', promptIds: [1, 2, 3], concurrency: 3, abortAfterTokens: 5, temperature: 0, maxTokens: 128 });
    expect(job.batch).toBeUndefined();
    // without the flags the job is the single-stream one it always was
    const single = jobFromFlags(parseArgs(['--prompt-ids', '1']).flags, 'generate', model);
    expect(single.concurrency).toBeUndefined();
    expect(single.abortAfterTokens).toBeUndefined();
  });

  test('bench decode --batch takes a list of batch sizes', () => {
    const job = jobFromFlags(parseArgs(['--batch', '1,2, 4,8', '--prompt-tokens', '16', '--max-tokens', '16']).flags, 'bench', model);
    expect(job).toMatchObject({ mode: 'bench', batch: [1, 2, 4, 8], promptTokens: 16, maxTokens: 16, temperature: 0 });
  });

  test('bad counts and lists fail with a message that says what to pass', () => {
    const flags = (argv: string[]) => parseArgs(argv).flags;
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--concurrency', '0']), 'generate', model)).toThrow(/--concurrency needs a whole number of at least 1/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--concurrency', '2.5']), 'generate', model)).toThrow(/--concurrency needs a whole number/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--abort-after-tokens', 'x']), 'generate', model)).toThrow(/--abort-after-tokens needs a number/);
    expect(() => jobFromFlags(flags(['--batch', '1,0']), 'bench', model)).toThrow(/--batch needs comma-separated batch sizes, e\.g\. --batch 1,2,4,8/);
    expect(() => jobFromFlags(flags(['--batch']), 'bench', model)).toThrow(/--batch needs/);
    expect(() => jobFromFlags(flags(['--prompt-ids', '1', '--batch', '2']), 'generate', model)).toThrow(/--batch is for intab bench decode/);
    expect(() => jobFromFlags(flags(['--concurrency', '2']), 'bench', model)).toThrow(/--concurrency is for intab generate/);
  });
});
