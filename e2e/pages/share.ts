// The page e2e/share.spec.ts opens in several tabs of one browser: `window.share` loads stories260K with
// createEngine({ share }), runs greedy requests, starts one that runs long (and says when its first token came), and
// reads the engine's info and stats, so the spec can check that the tabs share one engine (e2e/device-loss.spec.ts
// takes the engine itself, to follow a device loss in every tab). It never calls serveOpenAI: a shared engine answers
// the Service Worker's relayed requests by itself.

import { createEngine, type IntabEngine } from '../../packages/intab/src/index.ts';

const MODEL = new URL(`/@fs${import.meta.env.INTAB_SHARED}/models/stories260K/stories260K-vocab-ud.gguf`, location.href).href;
let engine: IntabEngine | undefined;

async function greedy(promptIds: number[], maxTokens: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const chunk of engine!.generate({ promptIds, maxTokens, temperature: 0 })) ids.push(...chunk.ids);
  return ids;
}

const share = {
  /** Loads stories260K's GGUF, or `model` (a URL). */
  async load(share: 'origin' | false, model = MODEL) {
    engine = await createEngine({ model, share, backend: 'webgpu' });
    return engine.info;
  },
  greedy,
  /** Starts a request that runs for a long while; resolves once its first tokens came (the stream goes on). */
  async startLong(promptIds: number[]): Promise<number> {
    const it = engine!.generate({ promptIds, maxTokens: 400, temperature: 0, ignoreEos: true })[Symbol.asyncIterator]();
    const first = await it.next();
    void (async () => {
      while (!(await it.next()).done);
    })().catch(() => {});
    return first.done ? 0 : first.value.ids.length;
  },
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
