import { describe, expect, test } from 'vitest';
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
    expect(out.join('\n')).toMatch(/unknown command 'frobnicate'/);
  });
});
