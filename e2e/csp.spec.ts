// intab under a strict Content-Security-Policy, as an app's production build is served: e2e/pages/csp.html built by
// Vite (csp.vite.config.ts) and served here with `script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'` as a real
// HTTP header on every response (the worker's script gets its own policy from its response, as in production) and
// no COOP/COEP. createEngine, its module worker and greedy generation must reproduce stories260K's golden ids on
// intab's WebGPU kernels and on onnxruntime's wasm, with no violation: none reported by the browser (report-uri
// takes the worker's too), none seen by the page, none in the console. The page's own eval is refused and reported,
// so the policy is known to be on and the reports to arrive.
import { expect, test } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STORIES = join(resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared')), 'models', 'stories260K');
const golden = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
/** The policy under test, and where the browser reports what it refuses ('report-sample' quotes what was refused). */
const CSP = "script-src 'self' 'wasm-unsafe-eval' 'report-sample'; worker-src 'self'; report-uri /csp-report";
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

let dist: string;
let server: Server;
let origin: string;
/** The browser's CSP reports (report-uri's JSON bodies), from the page and its workers. */
const reports: Record<string, unknown>[] = [];

test.beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), 'intab-csp-'));
  const vite = join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js');
  const build = spawnSync(process.execPath, [vite, 'build', '--config', join(ROOT, 'e2e', 'pages', 'csp.vite.config.ts'), '--outDir', dist], { cwd: ROOT, encoding: 'utf8' });
  expect(build.status, build.stderr).toBe(0);
  // The built page at /, stories260K's files at /models/ (with HTTP Range, as static hosts answer), reports at /csp-report.
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    if (req.method === 'POST' && path === '/csp-report') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        reports.push((JSON.parse(body) as { 'csp-report': Record<string, unknown> })['csp-report']);
        res.writeHead(204).end();
      });
      return;
    }
    const file = path.startsWith('/models/') ? join(STORIES, normalize(path.slice('/models/'.length))) : join(dist, normalize(path === '/' ? '/csp.html' : path));
    if (!file.startsWith(STORIES) && !file.startsWith(dist)) return void res.writeHead(403).end();
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return void res.writeHead(404, { 'content-security-policy': CSP }).end();
    }
    const headers = { 'content-security-policy': CSP, 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'accept-ranges': 'bytes' };
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(range[2] ? Number(range[2]) : size - 1, size - 1);
      res.writeHead(206, { ...headers, 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}` });
      return void createReadStream(file, { start, end }).pipe(res);
    }
    res.writeHead(200, { ...headers, 'content-length': size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

test.afterAll(async () => {
  await new Promise((done) => server?.close(done));
  if (dist) rmSync(dist, { recursive: true, force: true });
});

for (const backend of ['webgpu', 'onnx-wasm'] as const) {
  test(`${backend}: createEngine, its worker and greedy generation under script-src 'self' 'wasm-unsafe-eval', no COOP/COEP`, async ({ page }) => {
    reports.length = 0;
    const consoleErrors: string[] = [];
    const watchConsole = (where: string) => (m: { type(): string; text(): string }) => m.type() === 'error' && consoleErrors.push(`${where}: ${m.text()}`);
    page.on('console', watchConsole('page'));
    page.on('worker', (w) => w.on('console', watchConsole(`worker ${w.url()}`)));
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    const workerScripts: { url: string; csp?: string }[] = [];
    page.on('response', (r) => /\/assets\/worker-[^/]*\.js$/.test(r.url()) && workerScripts.push({ url: r.url(), csp: r.headers()['content-security-policy'] }));

    const response = await page.goto(`${origin}/?backend=${backend}`);
    expect(response!.headers()['content-security-policy']).toBe(CSP);
    expect(response!.headers()['cross-origin-opener-policy']).toBeUndefined();
    await expect(page.locator('body')).toHaveAttribute('data-done', 'true', { timeout: 120_000 });
    const result = JSON.parse((await page.locator('#status').textContent())!);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(false);

    expect(result.error).toBeUndefined();
    expect(result.backend).toBe(backend);
    expect(result.runs).toEqual(golden.map((c) => c.greedy));
    // The policy is enforced: the page's own eval was refused, and its report (the last violation) came in.
    expect(result.sentinel).toBe('EvalError');
    const sentinel = (r: Record<string, unknown>) => r['blocked-uri'] === 'eval' && String(r['script-sample']).includes('csp-sentinel');
    await expect.poll(() => reports.some(sentinel), { timeout: 10_000 }).toBe(true);
    expect(reports.filter((r) => !sentinel(r))).toEqual([]);
    expect(result.violations).toEqual([]);
    expect(consoleErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
    // The worker's script came with the policy too: it held the worker to it.
    expect(workerScripts.length).toBeGreaterThan(0);
    for (const s of workerScripts) expect(s.csp, s.url).toBe(CSP);
  });
}
