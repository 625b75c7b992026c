// transformers.js (@huggingface/transformers) as a peer of `intab bench compare`: AutoModelForCausalLM on an ONNX
// folder in the onnx-community layout (config.json, onnx/model.onnx, onnx/model.onnx_data), on onnxruntime-web's
// 'wasm' or 'webgpu' execution provider, generate() greedy with the prompt ids as the input tensor, first-token time
// from a streamer. Nothing comes from a CDN or the Hub: the folder is read from its URL as a "local model", and ORT's
// wasm binary is the one in node_modules, served by the page's bundler (transformers.js would fetch it from jsDelivr).

import { AutoModelForCausalLM, BaseStreamer, env, LogLevel, Tensor, type TextStreamer } from '@huggingface/transformers';
// transformers.js runs every device on onnxruntime-web/webgpu, whose wasm is the asyncify build. The CLI's
// onnxruntime-web devDependency is pinned to the version transformers.js depends on (versions.test.ts checks it),
// so this is the very binary its ORT expects.
import ortWasmUrl from 'onnxruntime-web/ort-wasm-simd-threaded.asyncify.wasm?url';
import { checkRunArgs, PeerError, timedRun, type Peer, type PeerRun } from './types.ts';

type Model = Awaited<ReturnType<typeof AutoModelForCausalLM.from_pretrained>>;

/**
 * transformers.js on an ONNX folder, on ORT's wasm or WebGPU execution provider (fp32, one wasm thread).
 * @example
 * const peer = await loadTransformersJs('wasm', 'http://127.0.0.1:5173/models/stories-onnx/');
 * const { ids, decodeTokS } = await peer.run([1, 403, 261], 32);
 * await peer.destroy();
 */
export async function loadTransformersJs(device: 'wasm' | 'webgpu', onnxFolderUrl: string): Promise<Peer> {
  if (!onnxFolderUrl.endsWith('/')) throw new PeerError('transformers.js', `the ONNX folder URL must end with '/', got ${onnxFolderUrl}`);
  if (device === 'webgpu' && !(await navigator.gpu?.requestAdapter())) {
    throw new PeerError('transformers.js', 'device webgpu needs a WebGPU adapter and this browser has none: run device wasm');
  }
  const { parent, id } = splitFolder(onnxFolderUrl);
  configure(parent);
  // Optimum exports keep big weights in onnx/model.onnx_data; transformers.js only fetches it when told to.
  const externalData = await exists(onnxFolderUrl + 'onnx/model.onnx_data');
  let model: Model;
  try {
    model = await AutoModelForCausalLM.from_pretrained(id, {
      device,
      dtype: 'fp32',
      use_external_data_format: externalData,
      local_files_only: true,
    });
  } catch (err) {
    throw new PeerError('transformers.js', `loading ${onnxFolderUrl} on ${device} failed: ${(err as Error).message ?? err}`, { cause: err });
  }
  const contextSize = Number((model.config as { max_position_embeddings?: number }).max_position_embeddings) || Infinity;
  let destroyed = false;
  return {
    system: 'transformers.js',
    backend: device,
    async run(promptIds: number[], maxTokens: number): Promise<PeerRun> {
      if (destroyed) throw new PeerError('transformers.js', 'run() after destroy()');
      checkRunArgs('transformers.js', promptIds, maxTokens, contextSize);
      const T = promptIds.length;
      const inputIds = new Tensor('int64', BigInt64Array.from(promptIds, (x) => BigInt(x)), [1, T]); // (1, T)
      const attentionMask = new Tensor('int64', new BigInt64Array(T).fill(1n), [1, T]); // (1, T)
      const streamer = new ArrivalStreamer();
      const t0 = performance.now();
      try {
        await model.generate({
          inputs: inputIds,
          attention_mask: attentionMask,
          max_new_tokens: maxTokens,
          // No EOS ids: nothing stops the run early and nothing is masked (min_new_tokens would mask EOS out of the
          // argmax, giving other ids than intab's ignoreEos wherever EOS is the greedy pick).
          eos_token_id: [],
          do_sample: false,
          num_beams: 1,
          // generate() takes any BaseStreamer; its typings intersect that with GenerationConfig's TextStreamer.
          streamer: streamer as BaseStreamer as TextStreamer,
        });
      } catch (err) {
        throw new PeerError('transformers.js', `generate on ${device} failed: ${(err as Error).message ?? err}`, { cause: err });
      }
      if (streamer.ids.length !== maxTokens) {
        throw new PeerError('transformers.js', `generate gave ${streamer.ids.length} tokens where ${maxTokens} were asked for`);
      }
      return timedRun(T, t0, streamer.ids, streamer.arrivals);
    },
    async destroy(): Promise<void> {
      if (destroyed) return;
      destroyed = true;
      await model.dispose();
    },
  };
}

// ---- settings ----

/**
 * transformers.js' process-wide settings for a load: the model files come from `parent` (a URL on the page's own
 * servers) and nowhere else, nothing goes to the Cache API (a bench reads the same bytes every run), ORT's wasm
 * from node_modules, one wasm thread (the page is not cross-origin isolated; ORT would warn and use one anyway).
 */
function configure(parent: string): void {
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = parent;
  env.useBrowserCache = false;
  env.useWasmCache = false;
  env.logLevel = LogLevel.ERROR;
  const wasm = env.backends.onnx.wasm;
  if (!wasm) throw new PeerError('transformers.js', 'its onnxruntime-web build has no wasm backend settings (env.backends.onnx.wasm)');
  // Only the binary: the asyncify glue (.mjs) is bundled into ORT's module and imports nothing.
  wasm.wasmPaths = { wasm: new URL(ortWasmUrl, location.href).href };
  wasm.numThreads = 1;
  wasm.proxy = false;
}

/**
 * transformers.js takes a model id under env.localModelPath, not a URL: the folder's parent becomes the local
 * path and its last segment the id ('http://h/a/main/' → 'http://h/a/' and 'main').
 */
function splitFolder(url: string): { parent: string; id: string } {
  const u = new URL(url, location.href);
  const id = decodeURIComponent(u.pathname.split('/').at(-2) ?? '');
  // transformers.js' own check of a model id (one name of word characters, '-' and '.', no '--' or '..').
  if (!/^\b[\w\-.]{1,96}\b$/.test(id) || id.includes('--') || id.includes('..')) {
    throw new PeerError('transformers.js', `the ONNX folder's name '${id}' (from ${url}) is not one transformers.js takes as a model id: serve the folder under a name of letters, digits, '_', '-' and '.'`);
  }
  return { parent: new URL('..', u).href, id };
}

async function exists(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { method: 'HEAD' })).ok;
  } catch {
    return false;
  }
}

// ---- timing ----

/** Records each generated id and when it arrived; generate() first hands over the prompt, which is skipped. */
class ArrivalStreamer extends BaseStreamer {
  readonly ids: number[] = [];
  readonly arrivals: number[] = [];
  private promptSeen = false;

  override put(value: bigint[][]): void {
    const now = performance.now();
    if (!this.promptSeen) {
      this.promptSeen = true;
      return;
    }
    for (const id of value[0] ?? []) {
      this.ids.push(Number(id));
      this.arrivals.push(now);
    }
  }

  override end(): void {}
}
