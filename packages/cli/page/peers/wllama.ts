// wllama (@wllama/wllama 3.x, llama.cpp compiled to wasm) as a peer of `intab bench compare`: the GGUF fetched from
// its URL into a Blob, llama.cpp's wasm on one thread (the page is not cross-origin isolated) and on the CPU only
// (n_gpu_layers 0: a wasm peer, not ggml's WebGPU backend), f32 KV cache, flash attention off (so f32 models
// reproduce a reference forward pass exactly). The wasm binary is the package's own, served by the page's bundler;
// its compat build (for browsers without JSPI / Memory64) would come from a CDN and is switched off.
//
// wllama 3.x runs llama-server's request handling in the worker (createCompletion → a server task) and dropped 2.x's
// token-level API (decode ids, sample, decode one id). Its completion takes the prompt as text only — the task's
// `cli_prompt` is a string, which llama.cpp tokenizes with BOS added as the vocabulary says and special tokens
// parsed; a list of ids is refused — so a run hands over the text llama.cpp reads back as exactly the prompt ids:
// control and user-defined tokens as their piece (llama.cpp matches those first, whole), each run of other tokens
// decoded with the GGUF's vocabulary (intab's tokenizer) and checked to encode back to that run. Ids that do not
// survive (byte-level BPE merging random neighbours, partial UTF-8, ids past the vocabulary) are refused with a
// PeerError rather than run on another prompt, and llama.cpp's own prompt count is checked after each run. Each run
// streams: greedy (temperature 0, top-k 1), EOS no stop (ignore_eos, which in llama-server also masks end-of-
// generation ids out of the argmax: a run where intab picks EOS shows as ids_equal false), the prompt never reused
// from the run before (cache_prompt false). Each streamed chunk carries its token's id (n_probs 1 after sampling:
// the one top-k survivor, so no softmax over the vocabulary). Figures are from the page's clock at each chunk,
// the same clock as every other system; the server's `timings` (which leave out the worker's messaging) only
// cross-check the counts.

import { Wllama, type LoadModelParams, type RawCompletionChunk, type RawCompletionParams } from '@wllama/wllama';
import wllamaWasmUrl from '@wllama/wllama/esm/wasm/wllama.wasm?url';
import { blobSource, GGUF_TOKEN_TYPE, parseGguf, tokenizerFromGguf, type Tokenizer } from '@intab/model';
import { checkRunArgs, PeerError, timedRun, type Peer, type PeerRun } from './types.ts';

export interface WllamaOptions {
  /** llama.cpp's context size (prompt + generated tokens of one run) [2048]. */
  contextSize?: number;
}

/** The body of a completion as llama-server reads it (wllama passes it through): the keys its types lack. */
type CompletionBody = RawCompletionParams & {
  /** Start each run from an empty slot: no prefix of the run before reused. */
  cache_prompt: boolean;
  /** n_probs taken from the sampler's candidates after sampling (top-k 1 leaves one): the sampled id, cheaply. */
  post_sampling_probs: boolean;
};

/** A streamed chunk as llama-server writes it with n_probs: wllama's type says `logprobs: null`. */
interface StreamedChoice {
  logprobs: { content?: { id?: unknown }[] } | null;
  finish_reason: RawCompletionChunk['choices'][number]['finish_reason'];
}

/** wllama's own logging, errors only. */
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
  checkBrowser();
  let blob: Blob;
  try {
    const res = await fetch(ggufUrl);
    if (!res.ok) throw new Error(`HTTP ${res.status} ${res.statusText}`);
    blob = await res.blob();
  } catch (err) {
    throw new PeerError('wllama', `could not fetch the GGUF ${ggufUrl}: ${(err as Error).message ?? err}`, { cause: err });
  }
  const vocab = await vocabulary(blob, ggufUrl);
  // One wasm for every build since 3.x ('default'); threads come from n_threads, and 1 never spawns a pthread.
  const wllama = new Wllama({ default: new URL(wllamaWasmUrl, location.href).href }, { suppressNativeLog: true, logger: QUIET });
  wllama.setCompat(null);
  const config: LoadModelParams = {
    n_ctx: contextSize,
    n_threads: 1,
    n_gpu_layers: 0,
    n_parallel: 1,
    cache_type_k: 'f32',
    cache_type_v: 'f32',
    flash_attn: false,
  };
  try {
    await wllama.loadModel([blob], config);
  } catch (err) {
    await wllama.exit().catch(() => {});
    throw new PeerError('wllama', `llama.cpp could not load ${ggufUrl}: ${(err as Error).message ?? err}`, { cause: err });
  }
  const addBos = wllama.mustAddBosToken();
  const bos = wllama.getBOS();
  if (wllama.mustAddEosToken()) {
    await wllama.exit().catch(() => {});
    throw new PeerError('wllama', `${ggufUrl} says add_eos_token, so llama.cpp would end every text prompt with EOS, which the prompt ids do not have: this peer cannot run it`);
  }

  /** The text llama.cpp tokenizes back to exactly `promptIds` (its own BOS stands for a leading BOS id). */
  function promptText(promptIds: number[]): string {
    if (addBos && promptIds[0] !== bos) {
      throw new PeerError('wllama', `llama.cpp puts BOS (${bos}) before a text prompt, and these prompt ids start with ${promptIds[0]}: start them with BOS`);
    }
    const offset = addBos ? 1 : 0;
    const parts: string[] = [];
    let run: number[] = [];
    let runStart = offset;
    const flush = (): void => {
      if (run.length === 0) return;
      const text = vocab.tokenizer.decode(run);
      const back = vocab.tokenizer.encode(text, { addSpecialTokens: false });
      const at = firstDifference(run, back);
      if (at >= 0) {
        throw new PeerError(
          'wllama',
          `wllama 3.x takes a prompt as text only, and these prompt ids do not survive decoding to text: the id at position ${runStart + at} ` +
            `(${run[at] ?? 'none'}) comes back as ${back[at] ?? 'nothing'}. Pick prompt ids that are the encoding of a text (another ` +
            '--seed, or fewer --prompt-tokens), or leave wllama out of --systems',
        );
      }
      parts.push(text);
      run = [];
    };
    for (let i = offset; i < promptIds.length; i++) {
      const id = promptIds[i];
      if (id >= vocab.pieces.length) {
        throw new PeerError('wllama', `wllama 3.x takes a prompt as text only, and prompt id ${id} (position ${i}) is past the vocabulary of ${vocab.pieces.length} pieces: it has no text`);
      }
      if (vocab.literal[id]) {
        flush();
        runStart = i + 1;
        parts.push(vocab.pieces[id]);
      } else {
        if (run.length === 0) runStart = i;
        run.push(id);
      }
    }
    flush();
    return parts.join('');
  }

  let destroyed = false;
  return {
    system: 'wllama',
    backend: 'wasm',
    async run(promptIds: number[], maxTokens: number): Promise<PeerRun> {
      if (destroyed) throw new PeerError('wllama', 'run() after destroy()');
      checkRunArgs('wllama', promptIds, maxTokens, contextSize);
      const prompt = promptText(promptIds);
      const ids: number[] = [];
      const arrivals: number[] = [];
      let last: RawCompletionChunk | undefined;
      const body: CompletionBody = {
        prompt,
        max_tokens: maxTokens,
        temperature: 0,
        top_k: 1,
        top_p: 1,
        min_p: 0,
        ignore_eos: true,
        n_probs: 1,
        post_sampling_probs: true,
        cache_prompt: false,
      };
      const t0 = performance.now();
      try {
        await wllama.createCompletion({
          ...body,
          stream: true,
          onData: (chunk: RawCompletionChunk) => {
            const now = performance.now();
            last = chunk;
            for (const t of (chunk.choices[0] as StreamedChoice | undefined)?.logprobs?.content ?? []) {
              if (!Number.isInteger(t.id)) throw new PeerError('wllama', `a streamed token carries no integer id (${JSON.stringify(t).slice(0, 120)})`);
              ids.push(t.id as number);
              arrivals.push(now);
            }
          },
        });
      } catch (err) {
        if (err instanceof PeerError) throw err;
        throw new PeerError('wllama', `the completion failed: ${(err as Error).message ?? err}`, { cause: err });
      }
      const promptN = last?.timings?.prompt_n ?? last?.usage?.prompt_tokens;
      if (promptN !== promptIds.length) {
        throw new PeerError('wllama', `llama.cpp tokenized the prompt text to ${promptN ?? 'an unreported number of'} tokens, not the ${promptIds.length} prompt ids: its tokenizer and this GGUF's vocabulary (as intab reads it) disagree on this text, so the run would not be the same prompt`);
      }
      if (ids.length !== maxTokens) {
        throw new PeerError('wllama', `llama.cpp streamed ${ids.length} token ids for max_tokens ${maxTokens} (finish_reason ${last?.choices[0]?.finish_reason ?? 'none'})`);
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

// ---- helpers ----

/** wllama 3.x's wasm needs JSPI and Memory64; without them it would fetch its compat build from a CDN. */
function checkBrowser(): void {
  const missing: string[] = [];
  if (typeof (WebAssembly as { Suspending?: unknown }).Suspending !== 'function') missing.push('JSPI (WebAssembly.Suspending)');
  try {
    new WebAssembly.Memory({ address: 'i64', initial: 1n } as unknown as WebAssembly.MemoryDescriptor);
  } catch {
    missing.push('Memory64');
  }
  if (missing.length > 0) {
    throw new PeerError('wllama', `wllama 3.x's wasm needs ${missing.join(' and ')}, which this browser lacks (its compat build comes from a CDN, which the bench never uses): run a Chromium ≥ 137`);
  }
}

/** The GGUF's vocabulary: intab's tokenizer, the pieces, and which of them llama.cpp reads whole from text. */
interface Vocabulary {
  tokenizer: Tokenizer;
  /** tokenizer.ggml.tokens. */
  pieces: readonly string[];
  /** 1 for control and user-defined tokens: llama.cpp's text tokenizer matches their piece before anything else. */
  literal: Uint8Array;
}

/** The GGUF's vocabulary as intab reads it, to turn prompt ids into the text llama.cpp takes. */
async function vocabulary(blob: Blob, ggufUrl: string): Promise<Vocabulary> {
  const name = ggufUrl.split('/').pop() || 'model.gguf';
  try {
    const gguf = await parseGguf(blobSource(blob, name));
    const pieces = gguf.metadata.get('tokenizer.ggml.tokens');
    if (!Array.isArray(pieces) || !pieces.every((p) => typeof p === 'string')) throw new Error('it has no tokenizer.ggml.tokens');
    const types = gguf.metadata.get('tokenizer.ggml.token_type');
    const literal = new Uint8Array(pieces.length);
    if (Array.isArray(types)) {
      types.forEach((t, i) => {
        if (t === GGUF_TOKEN_TYPE.control || t === GGUF_TOKEN_TYPE.userDefined) literal[i] = 1;
      });
    }
    return { tokenizer: tokenizerFromGguf(gguf.metadata, name), pieces: pieces as string[], literal };
  } catch (err) {
    throw new PeerError('wllama', `${ggufUrl} has no vocabulary intab can read (${(err as Error).message ?? err}); llama.cpp refuses a GGUF without tokenizer.ggml.* keys too: add a vocabulary (make-model --tokenizer)`, { cause: err });
  }
}

/** First index where the two id lists differ (a length difference counts), -1 when equal. */
function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}
