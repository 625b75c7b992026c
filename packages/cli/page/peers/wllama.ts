// wllama (@wllama/wllama, llama.cpp compiled to wasm) as a peer of `intab bench compare`: the GGUF fetched from its
// URL into a Blob, llama.cpp's single-thread wasm build, f32 KV cache, flash attention off (so f32 models reproduce
// a reference forward pass exactly). A run drives wllama's token-level API: decode the prompt ids as they are, then
// sample greedily and decode the sampled id, one token at a time. wllama 2.x is pinned because 3.x dropped that API
// (its completions go through llama-server's request handling, which takes the prompt as text only), and text
// cannot give a peer exactly the same prompt ids. The wasm binary is the package's own, served by the page's bundler.

// The package has no exports map and its "main" names a file it does not ship: the ESM build by path.
import { Wllama, type LoadModelConfig, type SamplingConfig } from '@wllama/wllama/esm/index.js';
import wllamaWasmUrl from '@wllama/wllama/esm/single-thread/wllama.wasm?url';
import { checkRunArgs, PeerError, timedRun, type Peer, type PeerRun } from './types.ts';

export interface WllamaOptions {
  /** llama.cpp's context size (prompt + generated tokens of one run) [2048]. */
  contextSize?: number;
}

/**
 * Greedy: the temperature-0 sampler keeps only the first highest logit; top-k / top-p / min-p off, so no sampler
 * before it sorts the vocabulary (llama.cpp's defaults would partial-sort for top-k 40 every token).
 */
const GREEDY: SamplingConfig = { temp: 0, top_k: 0, top_p: 1, min_p: 0, penalty_repeat: 1 };

/** wllama's own logging, errors only (its warnings say it runs single-threaded, which is the point). */
const QUIET = { debug: () => {}, log: () => {}, warn: () => {}, error: console.error.bind(console) };

/**
 * wllama on a GGUF (which must carry a tokenizer: llama.cpp refuses a model without one), single-threaded wasm.
 * @example
 * const peer = await loadWllama('http://127.0.0.1:5173/models/stories260K-vocab-ud.gguf');
 * const { ids, decodeTokS } = await peer.run([1, 403, 261], 32);
 * await peer.destroy();
 */
export async function loadWllama(ggufUrl: string, options: WllamaOptions = {}): Promise<Peer> {
  const contextSize = options.contextSize ?? 2048;
  // Only the single-thread build is named: the page is not cross-origin isolated, so wasm threads are out anyway.
  const wllama = new Wllama({ 'single-thread/wllama.wasm': new URL(wllamaWasmUrl, location.href).href }, { suppressNativeLog: true, logger: QUIET });
  let blob: Blob;
  try {
    const res = await fetch(ggufUrl);
    if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
    blob = await res.blob();
  } catch (err) {
    throw new PeerError('wllama', `could not fetch the GGUF ${ggufUrl}: ${(err as Error).message ?? err}`, { cause: err });
  }
  const config: LoadModelConfig = { n_ctx: contextSize, n_threads: 1, cache_type_k: 'f32', cache_type_v: 'f32', flash_attn: false };
  try {
    await wllama.loadModel([blob], config);
  } catch (err) {
    await wllama.exit().catch(() => {});
    throw new PeerError('wllama', `llama.cpp could not load ${ggufUrl}: ${(err as Error).message ?? err} (a GGUF without tokenizer.ggml.* keys is refused: add a vocabulary)`, { cause: err });
  }
  let destroyed = false;
  return {
    system: 'wllama',
    backend: 'wasm',
    async run(promptIds: number[], maxTokens: number): Promise<PeerRun> {
      if (destroyed) throw new PeerError('wllama', 'run() after destroy()');
      checkRunArgs('wllama', promptIds, maxTokens, contextSize);
      // A fresh sequence and sampler each run: no KV reuse from the run before.
      await wllama.kvClear();
      await wllama.samplingInit(GREEDY);
      const ids: number[] = [];
      const arrivals: number[] = [];
      const t0 = performance.now();
      try {
        // wllama splits a prompt longer than n_batch into batches itself; logits come back for its last token only.
        await wllama.decode(promptIds, {});
        for (;;) {
          // EOS is neither masked nor a stop: the run continues past it, as intab's ignoreEos does.
          const { token } = await wllama.samplingSample();
          ids.push(token);
          arrivals.push(performance.now());
          if (ids.length === maxTokens) break;
          await wllama.decode([token], {});
        }
      } catch (err) {
        throw new PeerError('wllama', `decoding failed: ${(err as Error).message ?? err}`, { cause: err });
      }
      return timedRun(promptIds.length, t0, ids, arrivals);
    },
    async destroy(): Promise<void> {
      if (destroyed) return;
      destroyed = true;
      await wllama.exit();
    },
  };
}
