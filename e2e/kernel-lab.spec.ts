// The kernel lab as a visitor uses it: the page finds the GPU, every kernel's check against its CPU twin is within its
// tolerance (the table shows the error each record carries), and a quick benchmark fills the table with figures that
// agree with what the kernel must read and compute (bytes, flops) and with the baselines they are ratios of. The page's
// records are read through window.__intabReport, the hook `intab bench kernels` uses.
import { expect, test } from '@playwright/test';

/** Every check the lab runs (examples/kernel-lab/src/checks.ts), in order. */
const CHECKS = [
  ...['f32', 'f16', 'bf16', 'q8_0', 'q4_0', 'q4_K', 'q6_K'].map((d) => `gemv ${d}`),
  'gemm q4_0 T=7',
  'gemm q4_K T=7',
  'embedding q6_K',
  'rope + kv-append neox llama3, q/k norm',
  'attention decode (paged, GQA)',
  'attention prefill (paged, GQA)',
  'sampling (greedy, top-k/top-p, penalties)',
  'sampling logprobs (log-softmax, top logprobs)',
  'rmsnorm',
  'swiglu',
];

/** SmolLM2-135M's attn.q GEMV (N = 9 heads × 64 = 576, K = 576) in the two dtypes of a quick run: bytes = weight rows + x. */
const N = 576;
const K = 576;
const ATTN_Q: Record<string, number> = { q4_0: N * (K / 32) * 18 + K * 4, q8_0: N * (K / 32) * 34 + K * 4 };

type Rec = Record<string, unknown> & { type: string };

/** a ≈ b to the 4 significant digits the lab rounds to (both sides rounded: 2 parts in 10^3). */
function agrees(a: number, b: number, what: string): void {
  expect(Math.abs(a - b) / Math.abs(b), `${what}: ${a} vs ${b}`).toBeLessThan(2e-3);
}

test('kernel lab: every check within tolerance, and benchmark figures that agree with the kernel\'s bytes and flops', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.addInitScript(() => {
    const w = window as unknown as { __records: unknown[]; __intabReport: (r: unknown) => void };
    w.__records = [];
    w.__intabReport = (r) => w.__records.push(r);
  });
  await page.goto('/examples/kernel-lab/?run=all&quick=1&filter=attn.q');
  await expect(page.locator('#device')).toContainText('features:', { timeout: 30_000 });
  await page.waitForFunction(() => (window as { __intabDone?: boolean }).__intabDone === true, undefined, { timeout: 200_000 });
  const records = (await page.evaluate(() => (window as unknown as { __records: unknown[] }).__records)) as Rec[];
  expect(records.filter((r) => r.type === 'error')).toEqual([]);

  // ---- checks: each kernel against its CPU twin ----
  const checks = records.filter((r) => r.type === 'check') as (Rec & { name: string; maxError: number; tolerance: number; ok: boolean })[];
  expect(checks.map((c) => c.name)).toEqual(CHECKS);
  for (const c of checks) {
    expect(c.maxError, `${c.name}: max error ${c.maxError} over tolerance ${c.tolerance}`).toBeLessThanOrEqual(c.tolerance);
    expect(c.ok, c.name).toBe(true);
  }
  const rows = page.locator('#checks tbody tr');
  await expect(rows).toHaveCount(CHECKS.length);
  for (const [i, c] of checks.entries()) {
    await expect(rows.nth(i).locator('td')).toHaveText([c.name, c.maxError.toExponential(2), String(c.tolerance), 'pass']);
  }
  await expect(page.locator('#status')).toContainText('Benchmarks done');

  // ---- benchmark: the attn.q GEMV in q4_0 and q8_0, its figures tied to its bytes and flops and to the baselines ----
  const copy = records.find((r) => r.type === 'baseline' && r.kernel === 'copyBufferToBuffer')!;
  expect(copy).toBeDefined();
  const cases = records.filter((r) => r.type === 'case') as (Rec & Record<string, number>)[];
  expect(cases.map((c) => `${c.kernel} ${c.dtype} ${c.model}.${c.op} ${c.shape}`)).toEqual(['gemv q4_0 SmolLM2-135M.attn.q 576x576', 'gemv q8_0 SmolLM2-135M.attn.q 576x576']);
  const table = page.locator('#results tbody tr');
  await expect(table).toHaveCount(cases.length);
  for (const [i, c] of cases.entries()) {
    const what = `${c.dtype} attn.q`;
    expect(c.bytes, what).toBe(ATTN_Q[c.dtype as unknown as string]);
    expect(c.median_ms, what).toBeGreaterThan(0);
    agrees(c.gbps, c.bytes / 1e6 / c.median_ms, `${what} gbps = bytes / time`);
    agrees(c.gflops, (2 * N * K) / 1e6 / c.median_ms, `${what} gflops = 2·N·K / time`);
    agrees(c.roofline_ratio, c.gbps / (copy.gbps as number), `${what} roofline_ratio = gbps / copy gbps`);
    agrees(c.read_ratio, c.gbps / c.read_gbps, `${what} read_ratio = gbps / read gbps`);
    // The table shows the record's figures.
    const cells = table.nth(i).locator('td');
    await expect(cells.nth(3)).toHaveText(`${c.shape}`);
    await expect(cells.nth(4)).toHaveText(String(c.median_ms));
    await expect(cells.nth(5)).toHaveText(String(c.gbps));
  }
  expect(records.at(-1)).toEqual({ type: 'finished' });
  await page.screenshot({ path: 'test-results/kernel-lab.png', fullPage: true });
  expect(errors).toEqual([]);
});
