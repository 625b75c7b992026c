// Serves the repository with Vite on loopback and opens one of its pages in headless Chromium with
// WebGPU enabled; records the page sends through window.__intabReport reach `onRecord`. runPage runs a page to its
// end (intab generate, the benches); openPage keeps one open (intab serve).
import { join } from 'node:path';
import type { Plugin, ViteDevServer } from 'vite';
import type { Browser, Page } from 'playwright';
import type {} from '../page/shared.ts'; // window.__intabJob, __intabReport, __intabDone
import { chromiumArgs, chromiumPath } from './chromium.ts';
import { DRAFT_PREFIX, MODEL_PREFIX, ONNX_PREFIX, modelFilesMiddleware } from './model-files.ts';
import { progressLine, type PageRecord } from './records.ts';
import { ROOT } from './repo.ts';

/** A page to open, the model files to serve to it, and where its records go. */
export interface PageOptions {
  path: string;
  onRecord: (r: PageRecord) => void;
  headed?: boolean;
  modelDir?: string;
  draftDir?: string;
  onnxDir?: string;
  job?: unknown;
  args?: string[];
  /** The caller handles SIGINT/SIGTERM/SIGHUP itself (and closes the page); else Playwright closes the browser on them. */
  ownSignals?: boolean;
  /**
   * Serve every response with COOP same-origin and COEP require-corp, so the page is cross-origin isolated and has
   * SharedArrayBuffer (wasm threads: a job with cpuThreads > 1). Everything the page loads is same-origin.
   */
  isolated?: boolean;
  /** Headers every response carries besides (a Content-Security-Policy, in tests). */
  headers?: Record<string, string>;
}

/** An open page: the Vite server behind it, `failed` (rejects when the page throws or crashes), and close(). */
export interface OpenPage {
  page: Page;
  server: ViteDevServer;
  failed: Promise<never>;
  close: () => Promise<void>;
}

/**
 * Serves the repository with Vite (`modelDir` under MODEL_PREFIX, `draftDir` under DRAFT_PREFIX, `onnxDir` under
 * ONNX_PREFIX), launches headless Chromium and opens `path` there; records the page sends through
 * window.__intabReport reach `onRecord`. The page keeps running until close(); `failed` rejects when the page throws
 * an uncaught error (or crashes).
 */
export async function openPage(o: PageOptions): Promise<OpenPage> {
  const served: [string, string][] = [];
  if (o.modelDir) served.push([o.modelDir, MODEL_PREFIX]);
  if (o.draftDir) served.push([o.draftDir, DRAFT_PREFIX]);
  if (o.onnxDir) served.push([o.onnxDir, ONNX_PREFIX]);
  const plugins: Plugin[] = served.length
    ? [{ name: 'intab-model-files', configureServer: (s) => served.forEach(([dir, prefix]) => void s.middlewares.use(modelFilesMiddleware(dir, prefix))) }]
    : [];
  const headers = { ...(o.isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}), ...o.headers };
  if (Object.keys(headers).length) {
    // first in the chain, so the model files' responses carry the headers too
    plugins.unshift({
      name: 'intab-page-headers',
      configureServer: (s) =>
        void s.middlewares.use((_req, res, next) => {
          for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
          next();
        }),
    });
  }
  // Loaded here, not at the CLI's start: commands that drive no browser (--runtime node, make-model) never pay for them.
  const [{ createServer }, { chromium }] = await Promise.all([import('vite'), import('playwright')]);
  const sigterm = new Set(process.listeners('SIGTERM'));
  const stdinEnd = new Set(process.stdin.listeners('end'));
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    logLevel: 'error',
    // No watcher and no HMR: an edit under the repo must not reload the page in the middle of a run.
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
    plugins,
  });
  if (o.ownSignals) {
    // Vite's dev server exits the process on SIGTERM (and when stdin ends) once it has closed itself: a caller that
    // drains first takes those over.
    for (const l of process.listeners('SIGTERM')) if (!sigterm.has(l)) process.off('SIGTERM', l);
    for (const l of process.stdin.listeners('end')) if (!stdinEnd.has(l)) process.stdin.off('end', l as () => void);
  }
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close().catch(() => {});
    await server.close();
  };
  try {
    await server.listen();
    const base = server.resolvedUrls?.local[0];
    if (!base) throw new Error('the Vite server did not report its address');
    const signals = o.ownSignals ? { handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false } : {};
    browser = await chromium.launch({ executablePath: chromiumPath(), args: [...chromiumArgs(), ...(o.args ?? [])], headless: !o.headed, ...signals });
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') process.stderr.write(`[page] ${m.text()}\n`);
    });
    // An uncaught error in the page (a module that fails to load, say) ends the run at once instead of
    // leaving the CLI waiting for the page until its timeout.
    let failPage = (_e: Error) => {};
    const failed = new Promise<never>((_, reject) => (failPage = reject));
    failed.catch(() => {}); // a caller that never waits on it must not see an unhandled rejection
    page.on('pageerror', (e) => {
      process.stderr.write(`[page] ${e.message}\n`);
      failPage(new Error(`the page failed: ${e.message}`));
    });
    page.on('crash', () => failPage(new Error('the page crashed (out of memory, or the GPU process died)')));
    await page.exposeFunction('__intabReport', o.onRecord);
    if (o.job !== undefined) await page.addInitScript((job) => void Object.assign(window, { __intabJob: job }), o.job);
    await page.goto(new URL(o.path, base).href);
    return { page, server, failed, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Opens `o.path` (see openPage) and resolves when the page sets window.__intabDone. */
export async function runPage(o: PageOptions & { timeoutMs: number }): Promise<void> {
  const { page, failed, close } = await openPage(o);
  try {
    await Promise.race([page.waitForFunction(() => window.__intabDone === true, undefined, { timeout: o.timeoutMs, polling: 500 }), failed]);
  } finally {
    await close();
  }
}

/**
 * Runs a job on the CLI's model page (packages/cli/page/run.html), serving the model's files (and a draft's): loading
 * progress goes to stderr and a page error is printed as `intab: Name: message`; every other record reaches
 * `onRecord`. Resolves with true when the page reported an error. A job with cpuThreads > 1 gets a cross-origin
 * isolated page (wasm threads need SharedArrayBuffer); `headers` go on every response besides.
 */
export async function runJob(o: { job: unknown; modelDir?: string; draftDir?: string; onnxDir?: string; timeoutS: number; headed?: boolean; headers?: Record<string, string>; onRecord: (r: PageRecord) => void }): Promise<boolean> {
  let failed = false;
  const threads = (o.job as { cpuThreads?: number }).cpuThreads;
  await runPage({
    path: '/packages/cli/page/run.html',
    isolated: threads !== undefined && threads > 1,
    headers: o.headers,
    timeoutMs: o.timeoutS * 1000,
    headed: o.headed,
    modelDir: o.modelDir,
    draftDir: o.draftDir,
    onnxDir: o.onnxDir,
    job: o.job,
    onRecord(r) {
      if (r.type === 'error') {
        failed = true;
        console.error(`intab: ${r.name}: ${r.message}`);
      } else if (r.type === 'progress') {
        // stdout holds only the records; loading progress goes to stderr
        process.stderr.write(progressLine(r as { loaded: number; total: number }));
      } else o.onRecord(r);
    },
  });
  return failed;
}
