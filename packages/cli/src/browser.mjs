// @ts-check
// Serves the repository with Vite on loopback and opens one of its pages in headless Chromium with
// WebGPU enabled; records the page sends through window.__intabReport reach `onRecord`.
import { join } from 'node:path';
import { createServer } from 'vite';
import { chromium } from 'playwright';
import { ROOT } from '../../../scripts/ensure-install.mjs';
import { chromiumArgs, chromiumPath } from '../../../scripts/chromium.mjs';
import { DRAFT_PREFIX, MODEL_PREFIX, ONNX_PREFIX, modelFilesMiddleware } from './model-files.mjs';
import { progressLine } from './records.mjs';

/**
 * `modelDir` is served under MODEL_PREFIX, `draftDir` (a draft model for speculative decoding) under DRAFT_PREFIX and
 * `onnxDir` (the ONNX folder of bench compare) under ONNX_PREFIX.
 * @param {{ path: string, onRecord: (r: any) => void, timeoutMs: number, headed?: boolean, modelDir?: string, draftDir?: string, onnxDir?: string, job?: unknown }} o
 * @returns {Promise<void>} resolves when the page sets window.__intabDone
 */
export async function runPage(o) {
  /** @type {[string, string][]} */
  const served = [];
  if (o.modelDir) served.push([o.modelDir, MODEL_PREFIX]);
  if (o.draftDir) served.push([o.draftDir, DRAFT_PREFIX]);
  if (o.onnxDir) served.push([o.onnxDir, ONNX_PREFIX]);
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    logLevel: 'error',
    // No watcher and no HMR: an edit under the repo must not reload the page in the middle of a run.
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
    plugins: served.length
      ? [{ name: 'intab-model-files', configureServer: (s) => served.forEach(([dir, prefix]) => void s.middlewares.use(modelFilesMiddleware(dir, prefix))) }]
      : [],
  });
  await server.listen();
  const base = server.resolvedUrls?.local[0];
  if (!base) throw new Error('the Vite server did not report its address');
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: chromiumArgs(), headless: !o.headed });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') process.stderr.write(`[page] ${m.text()}\n`);
    });
    // An uncaught error in the page (a module that fails to load, say) ends the run at once instead of
    // leaving the CLI waiting for window.__intabDone until its timeout.
    let failPage = (/** @type {Error} */ _e) => {};
    const pageFailed = new Promise((_, reject) => (failPage = reject));
    page.on('pageerror', (e) => {
      process.stderr.write(`[page] ${e.message}\n`);
      failPage(new Error(`the page failed: ${e.message}`));
    });
    await page.exposeFunction('__intabReport', o.onRecord);
    if (o.job !== undefined) await page.addInitScript((job) => void Object.assign(window, { __intabJob: job }), o.job);
    await page.goto(new URL(o.path, base).href);
    await Promise.race([page.waitForFunction(() => window.__intabDone === true, undefined, { timeout: o.timeoutMs, polling: 500 }), pageFailed]);
  } finally {
    await browser.close();
    await server.close();
  }
}

/**
 * Runs a job on the CLI's model page (packages/cli/page/run.html), serving the model's files (and a draft's): loading
 * progress goes to stderr and a page error is printed as `intab: Name: message`; every other record reaches
 * `onRecord`. Resolves with true when the page reported an error.
 * @param {{ job: unknown, modelDir?: string, draftDir?: string, onnxDir?: string, timeoutS: number, headed?: boolean, onRecord: (r: any) => void }} o
 * @returns {Promise<boolean>}
 */
export async function runJob(o) {
  let failed = false;
  await runPage({
    path: '/packages/cli/page/run.html',
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
        process.stderr.write(progressLine(r));
      } else o.onRecord(r);
    },
  });
  return failed;
}
