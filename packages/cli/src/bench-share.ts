// `intab bench share`: one engine for an origin's tabs (createEngine({ share: 'origin' })). For each tab count of
// --tabs, in a fresh browser context (its own SharedWorker): the first tab loads the model, the others attach; then
// one greedy stream per tab, all at once, against the same streams from one tab. One line per tab count: the load
// time of the later tabs against the first's (target ≤ 5%), the GPU bytes the tabs hold (target: one model's), and the
// aggregate decode speed of one stream per tab against the same streams in one tab (target ≥ 0.95), with the greedy
// ids of every stream compared. The model loads with cache: false (from the CLI's server, no model store), so the
// first tab's load is the network read and the GPU upload, not a download.
import type { Page } from 'playwright';
import type { Backend, EngineStats } from '@intab/engine/contract';
import type { ShareDecode, ShareLoad, ShareRun } from '../page/share.ts';
import { backendFlags, promptIdsFlag, wholeFlag, type Flags } from './args.ts';
import { median } from './bench-tools.ts';
import { openPage } from './browser.ts';
import { resolveModel } from './model-files.ts';

const BACKENDS: readonly Backend[] = ['webgpu', 'onnx-wasm', 'onnx-webgpu'];
/** The targets: a later tab's load ≤ 5% of the first's; aggregate decode over tabs ≥ 0.95 of one tab's. */
export const SHARE_TARGETS = { next_load_ratio: 0.05, decode_ratio: 0.95 } as const;

/** The run's settings from the flags (checked before any browser starts). */
export function shareJobFromFlags(flags: Flags) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | URL> is required, e.g. --model ../shared/models/stories260K/stories260K-vocab-ud.gguf');
  const model = resolveModel(flags.model);
  if (model.kind !== 'gguf' || model.files.length !== 1) throw new Error(`--model ${flags.model}: bench share takes one GGUF file or a URL (the tabs name the model by its URL to share it)`);
  const rawTabs = flags.tabs ?? '1,2,4';
  const tabs = typeof rawTabs === 'string' ? rawTabs.split(',').map((s) => Number(s.trim())) : [];
  if (!tabs.length || tabs.some((n) => !Number.isInteger(n) || n < 1 || n > 16)) throw new Error('--tabs needs comma-separated tab counts from 1 to 16, e.g. --tabs 1,2,4');
  return {
    model,
    ...backendFlags(flags, BACKENDS),
    tabs,
    promptIds: promptIdsFlag(flags, [1]),
    tokens: wholeFlag(flags, 'tokens', 64, 2, 4096),
    rounds: wholeFlag(flags, 'rounds', 2, 1, 10),
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

export async function benchShare(flags: Flags): Promise<number> {
  const job = shareJobFromFlags(flags);
  const path = '/packages/cli/page/share.html';
  const opened = await openPage({ path, modelDir: job.model.dir, onRecord: () => {}, headed: Boolean(flags.headed) });
  const inPage = <T>(p: Promise<T>): Promise<T> => Promise.race([p, opened.failed]);
  try {
    const base = opened.page.url();
    const model = new URL(job.model.urls[0], base).href;
    const browser = opened.page.context().browser();
    if (!browser) throw new Error('the page has no browser to open more tabs in');
    const load: ShareLoad = { model, share: 'origin', backend: job.backend, quantize: job.quantize };
    const decode = (page: Page, streams: number) => inPage(page.evaluate((r: ShareDecode) => window.__share!.decode(r), { promptIds: job.promptIds, maxTokens: job.tokens, streams }));
    let failed = false;
    for (const tabs of job.tabs) {
      const context = await browser.newContext();
      try {
        const pages: Page[] = [];
        for (let i = 0; i < tabs; i++) {
          const page = await context.newPage();
          page.on('pageerror', (e) => process.stderr.write(`[tab ${i}] ${e.message}\n`));
          await inPage(page.goto(new URL(path, base).href));
          await inPage(page.waitForFunction(() => window.__share !== undefined, undefined, { timeout: 120_000 }));
          pages.push(page);
        }
        const loads = [];
        for (const page of pages) loads.push(await inPage(page.evaluate((j) => window.__share!.load(j), load)));
        const stats: EngineStats = await inPage(pages[0].evaluate(() => window.__share!.stats()));
        const buffers = await Promise.all(pages.map((p) => inPage(p.evaluate(() => window.__share!.stats().then((s) => s.gpuBuffers ?? null)))));
        await decode(pages[0], 1); // warm-up: every pipeline and step shape compiled before anything is timed
        const one: number[] = [];
        const all: number[] = [];
        const ids: number[][] = [];
        const tokensOf = (runs: ShareRun[]) => runs.reduce((n, r) => n + r.ids.reduce((m, s) => m + s.length, 0), 0);
        for (let r = 0; r < job.rounds; r++) {
          const single = await decode(pages[0], tabs);
          one.push(tokensOf([single]) / (single.ms / 1000));
          const runs = await Promise.all(pages.map((p) => decode(p, 1)));
          const span = Math.max(...runs.map((x) => x.endedAt)) - Math.min(...runs.map((x) => x.startedAt));
          all.push(tokensOf(runs) / (span / 1000));
          ids.push(...single.ids, ...runs.flatMap((x) => x.ids));
        }
        const share = stats.share;
        const nextLoadMs = tabs > 1 ? median(loads.slice(1).map((l) => l.loadMs)) : null;
        const nextLoadRatio = nextLoadMs === null ? null : round(nextLoadMs / loads[0].loadMs);
        const decodeRatio = round(median(all) / median(one));
        const identicalIds = ids.every((x) => x.join() === ids[0].join());
        const oneModel = share !== undefined && share.loads === 1 && share.sessions === tabs && loads.slice(1).every((l) => l.share?.attached === true) && buffers.every((b) => b === buffers[0]);
        const met = { next_load: nextLoadRatio === null || nextLoadRatio <= SHARE_TARGETS.next_load_ratio, one_model: oneModel, decode: decodeRatio >= SHARE_TARGETS.decode_ratio };
        process.stdout.write(
          `${JSON.stringify({
            bench: 'share',
            tabs,
            load_ms_first: round(loads[0].loadMs),
            load_ms_next: nextLoadMs === null ? null : round(nextLoadMs),
            next_load_ratio: nextLoadRatio,
            target_next_load_ratio: SHARE_TARGETS.next_load_ratio,
            sessions: share?.sessions ?? null,
            loads: share?.loads ?? null,
            gpu_bytes_held: share?.bytesHeld ?? null,
            gpu_bytes_if_separate: share?.bytesIfSeparate ?? null,
            gpu_buffers: buffers[0],
            one_model: oneModel,
            decode_tok_s_tabs: round(median(all)),
            decode_tok_s_one_tab: round(median(one)),
            decode_ratio: decodeRatio,
            target_decode_ratio: SHARE_TARGETS.decode_ratio,
            identical_ids: identicalIds,
            tokens: job.tokens,
            rounds: job.rounds,
            met,
            share_mode: loads[0].share?.mode ?? 'own',
            backend: loads[0].backend,
            adapter: loads[0].adapter,
            model: job.model.files[0],
          })}\n`,
        );
        if (!identicalIds) {
          console.error(`intab: with ${tabs} tabs the greedy ids differed between streams (every stream decodes the same prompt)`);
          failed = true;
        }
        for (const p of pages) await inPage(p.evaluate(() => window.__share!.destroy()));
      } finally {
        await context.close();
      }
    }
    return failed ? 1 : 0;
  } finally {
    await opened.close();
  }
}
