// `intab bench share` in each tab: createEngine({ share }) for the model (timed, as the page sees it), greedy decodes
// of one or several streams at once (timed from the first request to the last chunk, on this page's clock), and the
// engine's info and stats. Node opens the tabs and runs them together (packages/cli/src/bench-share.ts).

import type { Backend, EngineStats, ShareInfo } from '@intab/engine/contract';
import { createEngine, type IntabEngine } from 'intab';

export interface ShareLoad {
  model: string;
  share: 'origin' | false;
  backend?: Backend;
  quantize?: 'q8_0' | 'q4_0';
}

export interface ShareDecode {
  promptIds: number[];
  maxTokens: number;
  /** Streams started at once from this tab. */
  streams: number;
}

export interface ShareRun {
  /** Each stream's ids. */
  ids: number[][];
  /** From starting the streams to the last chunk of the last one, on this page's clock. */
  ms: number;
  /** When that was, on the epoch clock (Date.now()), so that Node can line tabs up. */
  startedAt: number;
  endedAt: number;
}

declare global {
  interface Window {
    __share?: {
      load(job: ShareLoad): Promise<{ loadMs: number; share: ShareInfo | undefined; backend: string; adapter: string; weightBytes: number }>;
      decode(req: ShareDecode): Promise<ShareRun>;
      stats(): Promise<EngineStats>;
      destroy(): Promise<void>;
    };
  }
}

let engine: IntabEngine | undefined;

async function stream(promptIds: number[], maxTokens: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const c of engine!.generate({ promptIds, maxTokens, temperature: 0, ignoreEos: true })) {
    if (c.error) throw c.error;
    ids.push(...c.ids);
  }
  return ids;
}

window.__share = {
  async load(job) {
    await engine?.destroy();
    const t0 = performance.now();
    engine = await createEngine({ model: job.model, share: job.share, backend: job.backend ?? 'webgpu', quantize: job.quantize, cache: false });
    const info = engine.info;
    return { loadMs: performance.now() - t0, share: info.share, backend: info.backend.name, adapter: info.adapter, weightBytes: info.weightBytes };
  },
  async decode(req) {
    if (!engine) throw new Error('load() the model first');
    const startedAt = Date.now();
    const t0 = performance.now();
    const ids = await Promise.all(Array.from({ length: req.streams }, () => stream(req.promptIds, req.maxTokens)));
    return { ids, ms: performance.now() - t0, startedAt, endedAt: Date.now() };
  },
  stats: () => engine!.stats(),
  async destroy() {
    await engine?.destroy();
    engine = undefined;
  },
};
document.body.dataset.ready = 'true';
