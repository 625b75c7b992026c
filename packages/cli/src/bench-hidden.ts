// `intab bench hidden`: decode in a tab sent to the background against the same tab in front. The engine's loop runs
// in its module worker and the page only pulls chunks (promise-driven messages), so a hidden page, whose timers the
// browser throttles to about one wake-up a second and which gets no animation frames, should decode about as fast.
// One engine (createEngine, the public path) in one Chromium that really hides background tabs (hidden-tab.ts), the
// same greedy request decoded visible, then hidden, then visible again (--rounds times hidden then visible), after two
// unmeasured warm-up decodes; the page times each run and records what it saw (packages/cli/page/hidden.ts).
import { join } from 'node:path';
import type { Backend } from '@intab/engine/contract';
import type { HiddenLoad, HiddenRun } from '../page/hidden.ts';
import { backendFlags, promptIdsFlag, wholeFlag, type Flags } from './args.ts';
import { median } from './bench-tools.ts';
import { launchHideable, type HideableTab } from './hidden-tab.ts';
import { MODEL_PREFIX, modelFilesMiddleware, resolveModel } from './model-files.ts';
import { ROOT } from './repo.ts';

const BACKENDS: readonly Backend[] = ['webgpu', 'auto', 'onnx-wasm', 'onnx-webgpu'];
const WARMUPS = 2;

/** The run's settings from the flags (checked before any browser starts). */
export function hiddenJobFromFlags(flags: Flags) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required, e.g. --model ../shared/models/stories260K/stories260K-vocab-ud.gguf');
  return {
    model: resolveModel(flags.model),
    ...backendFlags(flags, BACKENDS),
    promptIds: promptIdsFlag(flags, [1]),
    tokens: wholeFlag(flags, 'tokens', 256, 2, 8192),
    rounds: wholeFlag(flags, 'rounds', 3, 1, 20),
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

export async function benchHidden(flags: Flags): Promise<number> {
  const job = hiddenJobFromFlags(flags);
  const { model } = job;
  const { createServer } = await import('vite');
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    logLevel: 'error',
    // No watcher and no HMR: an edit under the repo must not reload the page in the middle of a run.
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, watch: null },
    plugins: model.dir ? [{ name: 'intab-model-files', configureServer: (s) => void s.middlewares.use(modelFilesMiddleware(model.dir!, MODEL_PREFIX)) }] : [],
  });
  let tab: HideableTab | undefined;
  try {
    await server.listen();
    const base = server.resolvedUrls?.local[0];
    if (!base) throw new Error('the Vite server did not report its address');
    tab = await launchHideable({ headed: Boolean(flags.headed) });
    const { page } = tab;
    let failPage: (e: Error) => void = () => {};
    const failed = new Promise<never>((_, reject) => (failPage = reject));
    failed.catch(() => {});
    page.on('pageerror', (e) => failPage(new Error(`the page failed: ${e.message}`)));
    page.on('crash', () => failPage(new Error('the page crashed (out of memory, or the GPU process died)')));
    const inPage = <T>(p: Promise<T>): Promise<T> => Promise.race([p, failed]);
    await inPage(page.goto(new URL('/packages/cli/page/hidden.html', base).href));
    await inPage(page.waitForFunction(() => window.__hidden !== undefined, undefined, { timeout: 120_000 }));
    // Every file of the model by name (GGUF splits, a Hugging Face or ONNX folder); a remote folder URL as it is.
    const source: HiddenLoad['model'] = model.urls.length === model.files.length
      ? { kind: 'hf-urls', files: Object.fromEntries(model.files.map((f, i) => [f, new URL(model.urls[i], base).href])) }
      : { kind: 'url', url: model.urls[0] };
    const loaded = (await inPage(page.evaluate((j) => window.__hidden?.load(j), { model: source, backend: job.backend, quantize: job.quantize })))!;
    const request = { promptIds: job.promptIds, maxTokens: job.tokens };
    const decode = () => inPage(page.evaluate((r) => window.__hidden!.decode(r), request));
    for (let i = 0; i < WARMUPS; i++) await decode();
    const runs: { phase: 'visible' | 'hidden'; run: HiddenRun }[] = [];
    const measure = async (phase: 'visible' | 'hidden') => {
      const run = await decode();
      runs.push({ phase, run });
      if (flags.json) {
        const { ids, ...rest } = run;
        process.stdout.write(`${JSON.stringify({ bench: 'hidden-run', phase, index: runs.length - 1, tokens: ids.length, ...rest })}\n`);
      }
    };
    await measure('visible');
    for (let r = 0; r < job.rounds; r++) {
      await tab.hide();
      await measure('hidden');
      await tab.show();
      await measure('visible');
    }
    await inPage(page.evaluate(() => window.__hidden?.destroy()));
    const of = (phase: 'visible' | 'hidden') => runs.filter((r) => r.phase === phase).map((r) => r.run);
    const visible = of('visible');
    const hidden = of('hidden');
    const seen = [...new Set(hidden.flatMap((r) => r.visibility))];
    const visibleTokPerS = median(visible.map((r) => r.tokPerS));
    const hiddenTokPerS = median(hidden.map((r) => r.tokPerS));
    const identicalIds = runs.every((r) => r.run.ids.join() === runs[0].run.ids.join());
    process.stdout.write(
      `${JSON.stringify({
        bench: 'hidden',
        visibleTokPerS: round(visibleTokPerS),
        hiddenTokPerS: round(hiddenTokPerS),
        ratio: round(hiddenTokPerS / visibleTokPerS),
        visibilityState: seen.join(','),
        // The throttling the hidden page was under while it decoded, against the visible one.
        visibleTimerHz: round(median(visible.map((r) => r.timerHz))),
        hiddenTimerHz: round(median(hidden.map((r) => r.timerHz))),
        hiddenRafHz: round(median(hidden.map((r) => r.rafHz))),
        visibleEngineTokPerS: round(median(visible.map((r) => r.engineDecodeTokPerS))),
        hiddenEngineTokPerS: round(median(hidden.map((r) => r.engineDecodeTokPerS))),
        hiddenPausedMs: round(median(hidden.map((r) => r.pausedMs))),
        identicalIds,
        tokens: job.tokens,
        rounds: job.rounds,
        samples: runs.map((r) => [r.phase, round(r.run.tokPerS)]),
        backend: loaded.backend,
        adapter: loaded.adapter,
        model: model.files[0],
      })}\n`,
    );
    if (seen.join() !== 'hidden') {
      console.error(`intab: the page was ${seen.join(' and ')} during the hidden decodes, not hidden throughout: the ratio measures nothing`);
      return 1;
    }
    if (!identicalIds) {
      console.error('intab: the greedy ids differed between runs (visible and hidden must decode the same tokens)');
      return 1;
    }
    return 0;
  } finally {
    await tab?.close();
    await server.close();
  }
}
