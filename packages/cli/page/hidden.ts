// `intab bench hidden` and e2e/hidden-tab.spec.ts in the page: one engine through the public createEngine (its loop in
// the module worker), and one greedy decode at a time, timed as the page's code sees it (first token to last chunk)
// while the page records what it was: each chunk's document.visibilityState, and how often a setTimeout(0) chain and
// requestAnimationFrame ran meanwhile, which shows the browser did throttle the hidden page (timers ~1/s, no frames)
// while the decode went on. Node hides and shows the tab between decodes (packages/cli/src/hidden-tab.ts).

import type { Backend, ModelSource } from '@intab/engine/contract';
import { createEngine, type IntabEngine } from 'intab';

export interface HiddenLoad {
  model: ModelSource | string;
  backend?: Backend;
  quantize?: 'q8_0' | 'q4_0';
}

export interface HiddenDecode {
  promptIds: number[];
  maxTokens: number;
}

export interface HiddenRun {
  ids: number[];
  finishReason: string | null;
  /** Tokens after the first, per second from the first token to the last chunk, on this page's clock. */
  tokPerS: number;
  /** The engine's own figure (decode steps in the worker). */
  engineDecodeTokPerS: number;
  /** Time the engine held the sequence paused because this page did not pull. */
  pausedMs: number;
  /** Every document.visibilityState seen: at the start, at each chunk, at each visibilitychange. */
  visibility: string[];
  /** setTimeout(0) chain wake-ups and animation frames per second during the decode. */
  timerHz: number;
  rafHz: number;
}

declare global {
  interface Window {
    __hidden?: {
      load(job: HiddenLoad): Promise<{ backend: string; adapter: string }>;
      decode(req: HiddenDecode): Promise<HiddenRun>;
      destroy(): Promise<void>;
    };
  }
}

let engine: IntabEngine | undefined;

async function decode(req: HiddenDecode): Promise<HiddenRun> {
  if (!engine) throw new Error('load() the model first');
  const seen = new Set([document.visibilityState as string]);
  const onChange = () => seen.add(document.visibilityState);
  document.addEventListener('visibilitychange', onChange);
  let timers = 0;
  let frames = 0;
  let live = true;
  const tick = () => {
    timers++;
    if (live) setTimeout(tick, 0);
  };
  const frame = () => {
    frames++;
    if (live) requestAnimationFrame(frame);
  };
  setTimeout(tick, 0);
  requestAnimationFrame(frame);
  const ids: number[] = [];
  let first = 0;
  let last = 0;
  let finishReason: string | null = null;
  let metrics;
  const t0 = performance.now();
  try {
    for await (const c of engine.generate({ promptIds: req.promptIds, maxTokens: req.maxTokens, temperature: 0, ignoreEos: true })) {
      const now = performance.now();
      seen.add(document.visibilityState);
      if (c.error) throw c.error;
      if (c.ids.length && !ids.length) first = now;
      ids.push(...c.ids);
      last = now;
      finishReason = c.finishReason;
      metrics = c.metrics ?? metrics;
    }
  } finally {
    live = false;
    document.removeEventListener('visibilitychange', onChange);
  }
  const seconds = (performance.now() - t0) / 1000;
  return {
    ids,
    finishReason,
    tokPerS: ids.length > 1 && last > first ? (ids.length - 1) / ((last - first) / 1000) : 0,
    engineDecodeTokPerS: metrics?.decodeTokensPerSecond ?? 0,
    pausedMs: metrics?.pausedMs ?? 0,
    visibility: [...seen],
    timerHz: timers / seconds,
    rafHz: frames / seconds,
  };
}

window.__hidden = {
  async load(job) {
    await engine?.destroy();
    engine = await createEngine({ model: job.model, backend: job.backend ?? 'webgpu', quantize: job.quantize, cache: false });
    return { backend: engine.info.backend.name, adapter: engine.info.adapter };
  },
  decode,
  async destroy() {
    await engine?.destroy();
    engine = undefined;
  },
};
document.body.dataset.ready = 'true';
