// `intab bench soak` for real, briefly: the CLI as a user runs it (a child process: headless Chromium, createEngine's
// worker, intab's WebGPU kernels on SwiftShader, stories260K with its synthetic vocabulary so constrained requests
// join the mix), three 5-second intervals. Checked: every line parses and has its fields, the heaps of the page and
// of the engine's worker were read, every kind of request ended and ended as its kind may, nothing was unexpected,
// the idle engine holds no page, and the summary's verdict and exit status agree with its own figures. Whether the
// figures are flat over 15 seconds is the run's business, not this test's: the verdict is checked for consistency.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { FLAT_TOLERANCE, soakOptions } from './bench-soak.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL = join(SHARED, 'models', 'stories260K', 'stories260K-vocab-ud.gguf');
const KINDS = ['plain', 'abort-signal', 'abort-break', 'speculative', 'constrained', 'slow', 'prefix', 'refused'];

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(ROOT, 'packages/cli/bin/intab.mjs'), ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('intab bench soak', () => {
  test('flags: intervals, numbers and the model are checked before anything starts', () => {
    expect(soakOptions({ model: 'm.gguf' })).toMatchObject({ minutes: 20, everyS: 60, intervals: 20, streams: 8, seed: 1, kvMib: 16, json: false });
    expect(soakOptions({ model: 'm.gguf', minutes: '0.25', 'every-s': '5' }).intervals).toBe(3);
    expect(() => soakOptions({})).toThrow(/--model <gguf file/);
    expect(() => soakOptions({ model: 'm.gguf', minutes: '1', 'every-s': '30' })).toThrow(/makes 2 interval\(s\); .* at least 3 .*--minutes 1\.5/);
    expect(() => soakOptions({ model: 'm.gguf', minutes: 'ten' })).toThrow(/--minutes needs a number/);
    expect(() => soakOptions({ model: 'm.gguf', 'every-s': '0.5' })).toThrow(/--every-s needs a number of at least 1/);
    expect(() => soakOptions({ model: 'm.gguf', streams: '0' })).toThrow(/--streams needs a whole number from 1/);
  });

  test('a short run: every line, every kind, nothing unexpected, nothing left held', { timeout: 240_000 }, async () => {
    const { code, stdout, stderr } = await run(['bench', 'soak', '--model', MODEL, '--minutes', '0.25', '--every-s', '5', '--seed', '3', '--json']);
    const lines = stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.length, stderr).toBe(4);
    const intervals = lines.slice(0, 3);
    const summary = lines[3];

    intervals.forEach((l, i) => {
      expect(l).toMatchObject({ bench: 'soak', interval: i + 1 });
      for (const f of ['heap_bytes', 'heap_page_bytes', 'heap_worker_bytes', 'embedder_heap_bytes', 'gpu_buffers', 'kv_pages_total']) {
        expect(Number.isInteger(l[f]) && l[f] > 0, `${f}: ${l[f]}`).toBe(true);
      }
      expect(l.heap_bytes).toBe(l.heap_page_bytes + l.heap_worker_bytes);
      expect(l.kv_pages_held).toBeLessThanOrEqual(l.kv_pages_in_use);
      expect(l.kv_pages_in_use).toBeLessThanOrEqual(l.kv_pages_total);
      expect(Object.keys(l.requests).sort()).toEqual(['abort', 'error', 'length', 'stop']);
      expect(l.unexpected_errors).toBe(0);
      expect(l.tok_s).toBeGreaterThan(0);
      if (i > 0) expect(l.minute).toBeGreaterThan(intervals[i - 1].minute);
    });
    // requests_total is cumulative: each line adds its interval's requests.
    for (let i = 1; i < 3; i++) {
      const added = Object.values(intervals[i].requests as Record<string, number>).reduce((a, b) => a + b, 0);
      expect(intervals[i].requests_total - intervals[i - 1].requests_total).toBe(added);
    }

    expect(summary).toMatchObject({ bench: 'soak', summary: true, intervals: 3, compared: [2, 3], unexpected_errors: 0, kinds_missing: [], backend: 'webgpu', in_worker: true });
    expect(summary.idle).toEqual({ streams: 0, running: 0, waiting: 0, pages_leaked: 0 });
    // Every kind ended at least once, each as its kind may: a break is counted as an abort, refusals as errors.
    expect(Object.keys(summary.kinds).sort()).toEqual([...KINDS].sort());
    for (const k of KINDS) expect(Object.values(summary.kinds[k] as Record<string, number>).reduce((a, b) => a + b, 0), k).toBeGreaterThan(0);
    expect(summary.kinds['abort-break']).toMatchObject({ stop: 0, length: 0, error: 0 });
    expect(summary.kinds.refused).toMatchObject({ stop: 0, length: 0, abort: 0 });
    for (const k of KINDS.filter((k) => k !== 'refused')) expect(summary.kinds[k].error, k).toBe(0);
    expect(summary.kinds['abort-break'].abort).toBeGreaterThan(0);
    expect(summary.tokens).toBeGreaterThan(0);
    // Speculative requests ended (above), so proposals were made: a share of them accepted (greedy ones drafted by the
    // model itself accept every proposal), never null (no proposals counted) nor more than all of them.
    expect(summary.speculative_acceptance).toBeGreaterThan(0);
    expect(summary.speculative_acceptance).toBeLessThanOrEqual(1);

    // The verdict follows from the figures, and the exit status from the verdict.
    expect(summary.heap_ratio).toBeCloseTo(intervals[2].heap_bytes / intervals[1].heap_bytes, 3);
    expect(summary.buffers_ratio).toBeCloseTo(intervals[2].gpu_buffers / intervals[1].gpu_buffers, 3);
    expect(summary.flat).toBe(Math.abs(summary.heap_ratio - 1) <= FLAT_TOLERANCE && Math.abs(summary.buffers_ratio - 1) <= FLAT_TOLERANCE);
    expect(summary.ok).toBe(summary.flat);
    expect(code, stderr).toBe(summary.ok ? 0 : 1);
  });
});
