// The page e2e/share.spec.ts and e2e/share-election.spec.ts open in several tabs of one browser: `window.share` loads
// stories260K with createEngine({ share }), runs greedy requests, starts one that runs long (and says when its first
// token came, and later how it ended), runs greedy requests in the background (e2e/share-fairness.spec.ts: many at once,
// pulled as they come), and reads the engine's info and stats, so the spec can check that the tabs share one engine
// (e2e/device-loss.spec.ts takes the engine itself, to follow a device loss in every tab). It never calls serveOpenAI:
// a shared engine answers the Service Worker's relayed requests by itself.

import { createEngine, type CreateEngineOptions, type IntabEngine } from '../../packages/intab/src/index.ts';

const MODEL = new URL(`/@fs${import.meta.env.INTAB_SHARED}/models/stories260K/stories260K-vocab-ud.gguf`, location.href).href;
let engine: IntabEngine | undefined;
let long: Promise<{ ids: number; error?: string }> | undefined;
/** The requests run() started, in order: each resolves with its ids. */
const background: Promise<number[]>[] = [];

async function greedy(promptIds: number[], maxTokens: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const chunk of engine!.generate({ promptIds, maxTokens, temperature: 0 })) ids.push(...chunk.ids);
  return ids;
}

const share = {
  /** Loads stories260K's GGUF, or `model` (a URL); `options`: more of createEngine's (maxBatch, stepLog...). */
  async load(share: 'origin' | false, model = MODEL, options: Omit<CreateEngineOptions, 'model' | 'share'> = {}) {
    engine = await createEngine({ model, share, backend: 'webgpu', ...options });
    return engine.info;
  },
  greedy,
  /** Starts a greedy request (EOS ignored) that runs in the background, its output pulled as it comes. */
  run(promptIds: number[], maxTokens: number): void {
    background.push(
      (async () => {
        const ids: number[] = [];
        for await (const chunk of engine!.generate({ promptIds, maxTokens, temperature: 0, ignoreEos: true })) ids.push(...chunk.ids);
        return ids;
      })(),
    );
  },
  /** The ids of every request run() started, in order, once all have ended. */
  ran: () => Promise.all(background),
  /** Starts a request that runs for a long while; resolves once its first tokens came (the stream goes on). */
  async startLong(promptIds: number[]): Promise<number> {
    const it = engine!.generate({ promptIds, maxTokens: 400, temperature: 0, ignoreEos: true })[Symbol.asyncIterator]();
    const first = await it.next();
    let ids = first.done ? 0 : first.value.ids.length;
    long = (async () => {
      for (let r = await it.next(); !r.done; r = await it.next()) ids += r.value.ids.length;
      return { ids };
    })().catch((e: Error) => ({ ids, error: e.name }));
    return ids;
  },
  /** A long request aborted once its first tokens came: the finishReason its stream ended with. */
  async abortAfterFirst(promptIds: number[]): Promise<string | null> {
    const abort = new AbortController();
    let last: string | null = null;
    for await (const chunk of engine!.generate({ promptIds, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: abort.signal })) {
      abort.abort();
      last = chunk.finishReason;
    }
    return last;
  },
  /** How the last startLong's stream ended: the ids it delivered, and the name of the error it ended with. */
  endLong: () => long!,
  stats: () => engine!.stats(),
  /** The engine itself, for specs that follow its events and state. */
  engine: () => engine!,
  destroy: () => engine?.destroy(),
};
Object.assign(window, { share });
document.getElementById('status')!.textContent = 'ready';
document.body.dataset.ready = 'true';

declare global {
  interface Window {
    share: typeof share;
  }
}
