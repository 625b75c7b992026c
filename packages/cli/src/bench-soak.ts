// `intab bench soak`: mixed traffic against one engine for minutes (packages/cli/page/soak.ts runs it in headless
// Chromium, through createEngine: the engine in its Worker), and what the run leaves behind. At the end of every
// interval the traffic comes to rest (no new requests, those in flight finish), and one line gives the JS heap of the
// page and of the engine's worker (over CDP, after full garbage collections, so the figure is what is still
// reachable once nothing runs), the engine's live GPUBuffers and KV pages, the requests that ended (by outcome) and
// tok/s; then the traffic goes on. Measured at rest, a heap that grows from one interval to the next is held for good,
// not a working set caught mid-request. The summary compares the last interval with the second (the first still holds
// warm-up: code compiled, scratch buffers grown, the prefix caches filling). Flat: both within 5%. Exits 1 when the
// run is not flat, when a request ended in a way its kind should not, when a kind of request never ended, or when the
// engine at rest still holds pages.
import type { Page } from 'playwright';
import type { SoakSample } from '../page/soak.ts';
import { wholeFlag, type Flags } from './args.ts';
import { openPage } from './browser.ts';
import { DRAFT_PREFIX, resolveModel } from './model-files.ts';
import { progressLine, type PageRecord } from './records.ts';

/** How far the last interval may be from the second, either way, for the run to be flat (the issue's 5%). */
export const FLAT_TOLERANCE = 0.05;
/** Longest the model may take to load in the page. */
const LOAD_TIMEOUT_MS = 10 * 60_000;
/** Longest a CDP answer from the page or its worker may take (a full GC of a large heap is well under this). */
const CDP_TIMEOUT_MS = 60_000;

/** The run's settings from the flags, checked before any browser starts. */
export function soakOptions(flags: Flags) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required, e.g. --model ../shared/models/stories260K/stories260K-vocab-ud.gguf');
  if (flags.draft !== undefined && typeof flags.draft !== 'string') throw new Error('--draft needs a model: --draft <gguf file | HF folder | URL> (without it the model drafts for itself)');
  const number = (name: string, dflt: number, min: number, example: string) => {
    const v = flags[name];
    if (v === undefined) return dflt;
    const n = Number(v);
    if (typeof v !== 'string' || !Number.isFinite(n) || n < min) throw new Error(`--${name} needs a number of at least ${min}, e.g. --${name} ${example}`);
    return n;
  };
  const minutes = number('minutes', 20, 0.01, '20');
  const everyS = number('every-s', 60, 1, '60');
  const intervals = Math.floor((minutes * 60) / everyS + 1e-9);
  if (intervals < 3) {
    throw new Error(`--minutes ${minutes} with --every-s ${everyS} makes ${intervals} interval(s); the summary compares the last interval with the second, so give at least 3 (--minutes ≥ 3 × --every-s / 60, e.g. --minutes ${Math.ceil((3 * everyS) / 6) / 10})`);
  }
  return {
    model: flags.model,
    draft: typeof flags.draft === 'string' ? flags.draft : undefined,
    minutes,
    everyS,
    intervals,
    streams: wholeFlag(flags, 'streams', 8, 1, 256),
    seed: wholeFlag(flags, 'seed', 1, 0, 2 ** 31 - 1),
    kvMib: wholeFlag(flags, 'kv-mib', 16, 1, 65_536),
    maxBatch: wholeFlag(flags, 'max-batch', 8, 1, 256),
    json: Boolean(flags.json),
  };
}

// ---- heaps over CDP ----

/**
 * Measures the JS heaps of the page and of every dedicated worker it runs (the engine's), each after a full garbage
 * collection. Playwright gives CDP sessions to pages only; a worker is reached from the browser's session through
 * Target.attachToTarget without flattening, its commands wrapped in Target.sendMessageToTarget.
 */
async function heapMeter(page: Page) {
  const browser = page.context().browser();
  if (!browser) throw new Error('no browser behind the page');
  const pageSession = await page.context().newCDPSession(page);
  const root = await browser.newBrowserCDPSession();
  /** worker targetId -> sessionId */
  const workers = new Map<string, string>();
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  root.on('Target.receivedMessageFromTarget', (e) => {
    const m = JSON.parse(e.message);
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.error) p.reject(new Error(`CDP ${m.error.message}`));
    else p.resolve(m.result);
  });
  root.on('Target.detachedFromTarget', (e) => {
    for (const [target, session] of workers) if (session === e.sessionId) workers.delete(target);
  });
  const timed = <T>(p: Promise<T>, what: string): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not answer within ${CDP_TIMEOUT_MS / 1000} s`)), CDP_TIMEOUT_MS)));
    return Promise.race([p, late]).finally(() => clearTimeout(timer));
  };
  const inWorker = (sessionId: string, method: string) =>
    timed(
      new Promise<any>((resolve, reject) => {
        const id = ++nextId;
        pending.set(id, { resolve, reject });
        root.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params: {} }) }).catch(reject);
      }),
      `the worker's ${method}`,
    );
  return {
    /** The heaps in bytes, and the workers measured. */
    async measure(): Promise<{ page: number; worker: number; embedder: number; workers: number }> {
      const { targetInfos } = await root.send('Target.getTargets');
      for (const t of targetInfos) {
        if (t.type !== 'worker' || workers.has(t.targetId)) continue;
        const { sessionId } = await root.send('Target.attachToTarget', { targetId: t.targetId, flatten: false });
        workers.set(t.targetId, sessionId);
      }
      const gcPage = () => timed(pageSession.send('HeapProfiler.collectGarbage'), "the page's HeapProfiler.collectGarbage");
      const gcWorkers = () => Promise.all([...workers.values()].map((s) => inWorker(s, 'HeapProfiler.collectGarbage')));
      // Twice each, alternating: what one side frees (a MessagePort's peer, a transferred object) can free more on the other.
      await gcWorkers();
      await gcPage();
      await gcWorkers();
      await gcPage();
      const p = await timed(pageSession.send('Runtime.getHeapUsage'), "the page's Runtime.getHeapUsage");
      const w = await Promise.all([...workers.values()].map((s) => inWorker(s, 'Runtime.getHeapUsage')));
      return {
        page: p.usedSize,
        worker: w.reduce((n, u) => n + u.usedSize, 0),
        embedder: p.embedderHeapUsedSize + w.reduce((n, u) => n + u.embedderHeapUsedSize, 0),
        workers: w.length,
      };
    },
  };
}

// ---- lines ----

const OUTCOMES = ['stop', 'length', 'abort', 'error'] as const;
const mib = (b: number) => (b / 2 ** 20).toFixed(2);
const round = (x: number) => Number(x.toPrecision(4));

/**
 * One interval's line from two samples of the page's counters and the heaps: `seconds` since the traffic started,
 * `dt` seconds between the two samples, `restMs` how long the requests in flight took to end.
 */
function intervalLine(interval: number, seconds: number, heap: { page: number; worker: number; embedder: number }, now: SoakSample, before: SoakSample, dt: number, restMs: number) {
  const c = now.counters;
  const s = now.stats;
  const requests = Object.fromEntries(OUTCOMES.map((o) => [o, c.requests[o] - before.counters.requests[o]]));
  return {
    bench: 'soak',
    interval,
    minute: round(seconds / 60),
    heap_bytes: heap.page + heap.worker,
    heap_page_bytes: heap.page,
    heap_worker_bytes: heap.worker,
    embedder_heap_bytes: heap.embedder,
    gpu_buffers: s.gpuBuffers ?? null,
    // At rest: the prefix cache's pages are in use, and none may be held (by a stream, or a pin).
    kv_pages_in_use: s.totalPages - s.freePages,
    kv_pages_held: s.totalPages - s.availablePages,
    kv_pages_total: s.totalPages,
    // The prefix caches' trees grow with their pages until full: heap growth before then is not a leak.
    cached_pages: s.prefixCache?.cachedPages ?? null,
    draft_cached_pages: s.draftPrefixCache?.cachedPages ?? null,
    streams: s.streams,
    rest_ms: Math.round(restMs),
    requests,
    paused_requests: c.paused - before.counters.paused,
    requests_total: OUTCOMES.reduce((n, o) => n + c.requests[o], 0),
    unexpected_errors: c.unexpected,
    tok_s: round((c.tokens - before.counters.tokens) / dt),
  };
}

type IntervalLine = ReturnType<typeof intervalLine>;

/** What the page reports once the model is loaded (soak.ts's 'soak-ready' record). */
interface SoakReady {
  kinds: string[];
  model: unknown;
  draft: unknown;
  backend: unknown;
  adapter: unknown;
  in_worker: unknown;
}

function readable(l: IntervalLine): string {
  const r = l.requests;
  return (
    `soak ${l.minute.toFixed(2)} min  heap ${mib(l.heap_bytes)} MiB (page ${mib(l.heap_page_bytes)}, worker ${mib(l.heap_worker_bytes)})  ` +
    `gpu buffers ${l.gpu_buffers ?? '-'}  kv pages ${l.kv_pages_in_use}/${l.kv_pages_total} (${l.kv_pages_held} held at rest)  ` +
    `requests +${r.stop + r.length + r.abort + r.error} (stop ${r.stop}, length ${r.length}, abort ${r.abort}, refused ${r.error}; ${l.paused_requests} paused)  ` +
    `unexpected ${l.unexpected_errors}  ${l.tok_s} tok/s`
  );
}

/**
 * The summary: the last interval against the second, what the run did, and what the idle engine holds. `drained` is
 * the page's sample after stop() (every request ended), `ready` its soak-ready record.
 */
export function summaryLine(lines: IntervalLine[], drained: SoakSample, ready: SoakReady, seconds: number) {
  const second = lines[1];
  const last = lines[lines.length - 1];
  const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : Math.round((a / b) * 10_000) / 10_000);
  const heapRatio = ratio(last.heap_bytes, second.heap_bytes);
  const buffersRatio = ratio(last.gpu_buffers, second.gpu_buffers);
  const within = (r: number | null) => r !== null && Math.abs(r - 1) <= FLAT_TOLERANCE;
  const c = drained.counters;
  const s = drained.stats;
  const kinds = c.kinds as Record<string, Record<string, number>>;
  const missing = ready.kinds.filter((k) => OUTCOMES.every((o) => kinds[k][o] === 0));
  // Pages held at any rest (an interval's end, and the end of the run) were never given back.
  const pagesLeaked = Math.max(s.totalPages - s.availablePages, ...lines.map((l) => l.kv_pages_held));
  const flat = within(heapRatio) && within(buffersRatio);
  // Once every request has ended nothing may hold a page (the prefix caches' pages are all evictable), nor a stream.
  const idle = { streams: Math.max(s.streams, ...lines.map((l) => l.streams)), running: s.running, waiting: s.waiting, pages_leaked: pagesLeaked };
  return {
    bench: 'soak',
    summary: true,
    minutes: round(seconds / 60),
    intervals: lines.length,
    compared: [second.interval, last.interval],
    heap_ratio: heapRatio,
    buffers_ratio: buffersRatio,
    embedder_heap_ratio: ratio(last.embedder_heap_bytes, second.embedder_heap_bytes),
    heap_bytes: [second.heap_bytes, last.heap_bytes],
    gpu_buffers: [second.gpu_buffers, last.gpu_buffers],
    tolerance: FLAT_TOLERANCE,
    flat,
    unexpected_errors: c.unexpected,
    ...(c.unexpected ? { unexpected_samples: c.unexpectedSamples } : {}),
    requests: c.requests,
    kinds: Object.fromEntries(ready.kinds.map((k) => [k, kinds[k]])),
    kinds_missing: missing,
    tokens: c.tokens,
    tok_s: round(c.tokens / seconds),
    paused_requests: c.paused,
    cached_tokens: c.cachedTokens,
    speculative_acceptance: c.proposed ? round(c.accepted / c.proposed) : null,
    idle,
    ok: flat && c.unexpected === 0 && idle.pages_leaked === 0 && idle.streams === 0 && missing.length === 0,
    model: ready.model,
    draft: ready.draft,
    backend: ready.backend,
    adapter: ready.adapter,
    in_worker: ready.in_worker,
  };
}

// ---- the run ----

export async function benchSoak(flags: Flags): Promise<number> {
  const o = soakOptions(flags);
  const model = resolveModel(o.model);
  const draft = o.draft ? resolveModel(o.draft, { prefix: DRAFT_PREFIX, flag: 'draft' }) : undefined;
  const job = {
    kind: model.kind,
    files: model.files,
    urls: model.urls,
    ...(draft ? { draft: { kind: draft.kind, files: draft.files, urls: draft.urls } } : {}),
    streams: o.streams,
    seed: o.seed,
    kvBudgetBytes: o.kvMib * 2 ** 20,
    maxBatch: o.maxBatch,
  };
  const print = (line: object, text: string) => process.stdout.write(`${o.json ? JSON.stringify(line) : text}\n`);

  let onReady: (r: SoakReady) => void = () => {};
  let onFail: (e: Error) => void = () => {};
  const ready = new Promise<SoakReady>((resolve) => (onReady = resolve));
  const failed = new Promise<never>((_, reject) => (onFail = reject));
  failed.catch(() => {});
  const page = await openPage({
    path: '/packages/cli/page/soak.html',
    modelDir: model.dir,
    draftDir: draft?.dir,
    job,
    headed: Boolean(flags.headed),
    // Minutes of work in a tab nobody looks at: its timers must not be throttled as a background tab's.
    args: ['--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
    onRecord(r) {
      if (r.type === 'error') onFail(new Error(`${r.name}: ${r.message}`));
      else if (r.type === 'progress') process.stderr.write(progressLine(r as { loaded: number; total: number }));
      else if (r.type === 'soak-ready') onReady(r as SoakReady);
    },
  });
  page.failed.catch(onFail);
  const orFail = <T>(p: Promise<T>): Promise<T> => Promise.race([p, failed]);
  try {
    let loadTimer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (loadTimer = setTimeout(() => reject(new Error(`the model did not load within ${LOAD_TIMEOUT_MS / 60_000} minutes`)), LOAD_TIMEOUT_MS)));
    const info = await orFail(Promise.race([ready, late])).finally(() => clearTimeout(loadTimer));
    if (!info.kinds.includes('constrained')) {
      process.stderr.write('intab: the model has no tokenizer, so the mix leaves constrained requests out (stories260K-vocab-ud.gguf is stories260K with a vocabulary)\n');
    }
    const meter = await heapMeter(page.page);
    const sample = () => orFail(page.page.evaluate(() => window.__soak!.sample()));
    const rest = () => orFail(page.page.evaluate(() => window.__soak!.rest()));
    const resume = () => orFail(page.page.evaluate(() => window.__soak!.resume()));

    const t0 = performance.now();
    let before = await sample();
    let beforeAt = t0;
    const lines: IntervalLine[] = [];
    for (let i = 1; i <= o.intervals; i++) {
      const wait = t0 + i * o.everyS * 1000 - performance.now();
      if (wait > 0) await orFail(new Promise((r) => setTimeout(r, wait)));
      const restAt = performance.now();
      await rest();
      const at = performance.now();
      const heap = await orFail(meter.measure());
      const now = await sample();
      const line = intervalLine(i, (at - t0) / 1000, heap, now, before, (at - beforeAt) / 1000, at - restAt);
      lines.push(line);
      print(line, readable(line));
      [before, beforeAt] = [now, performance.now()];
      // The last rest is the end: stop() below finds nothing in flight.
      if (i < o.intervals) await resume();
    }
    const seconds = (beforeAt - t0) / 1000;
    const drained = await orFail(page.page.evaluate(() => window.__soak!.stop()));
    const summary = summaryLine(lines, drained, info, seconds);
    print(
      summary,
      `soak summary: heap ×${summary.heap_ratio}, gpu buffers ×${summary.buffers_ratio} (interval ${summary.compared[1]} against ${summary.compared[0]}): ${summary.flat ? 'flat' : 'NOT flat'}; ` +
        `${summary.unexpected_errors} unexpected errors${summary.unexpected_errors ? ` (${summary.unexpected_samples?.join('; ')})` : ''}; ` +
        `${OUTCOMES.reduce((n, k) => n + summary.requests[k], 0)} requests, ${summary.tok_s} tok/s; idle: ${summary.idle.pages_leaked} pages held` +
        `${summary.kinds_missing.length ? `; kinds that never ended: ${summary.kinds_missing.join(', ')}` : ''}`,
    );
    return summary.ok ? 0 : 1;
  } finally {
    await page.close();
  }
}
