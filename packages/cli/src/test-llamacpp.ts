// llama.cpp as the node tier's oracle (node-llama-cpp's prebuilt CPU build): one instance per test file, its greedy ids
// and next-token distribution after a prompt, its embeddings; and the small real vocabulary the decoder tests write
// their models with. Test-only.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type LlamaContext, type LlamaModel, type Token } from 'node-llama-cpp';
import { tokenizerFromGguf, type Tokenizer } from '@intab/model';
import { readGgufLite } from '@intab/model/reference';
import { SHARED } from './repo.ts';

let llama: Promise<Llama> | undefined;

/** The one llama.cpp of this process (CPU only, never built from source, errors only in the log). */
export const llamaCpp = (): Promise<Llama> => (llama ??= getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error }));

/** Up to `n` greedy ids after `prompt` on a fresh sequence of `context` (fewer when llama.cpp reaches end-of-text). */
export async function greedyIds(context: LlamaContext, prompt: readonly number[], n: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const id of context.getSequence().evaluate([...prompt] as Token[], { temperature: 0 })) {
    ids.push(id);
    if (ids.length === n) break;
  }
  return ids;
}

/**
 * llama.cpp's `steps` greedy ids after `prompt` (fewer when it reaches end-of-text), and its next-token probabilities
 * after `prompt` (temperature 1, nothing cut). K and V in f32 (llama.cpp's default is f16), as intab keeps them; one
 * thread.
 */
export async function llamaCppGreedy(file: string, prompt: readonly number[], steps = 16): Promise<{ ids: number[]; probabilities: Map<number, number> }> {
  const model = await (await llamaCpp()).loadModel({ modelPath: file });
  try {
    const context = await model.createContext({ contextSize: 128, sequences: 2, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', threads: 1 });
    try {
      const ids = await greedyIds(context, prompt, steps);
      // The distribution comes with whichever token is sampled: an end-of-generation token too (yieldEogToken, else
      // llama.cpp ends the generator without a value), and a fixed seed so the run repeats.
      const sampled = context.getSequence().evaluateWithMetadata([...prompt] as Token[], { probabilities: true }, { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 0, yieldEogToken: true });
      const first = (await sampled.next()).value;
      await sampled.return();
      if (!first) throw new Error('llama.cpp gave no token');
      return { ids, probabilities: first.probabilities };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

/** The largest |log p - log q| over the `n` tokens llama.cpp finds likeliest (p: llama.cpp's; q: softmax of `logits`). */
export function logProbGap(probabilities: Map<number, number>, logits: Float32Array, n = 256): number {
  const max = logits.reduce((m, v) => Math.max(m, v), -Infinity);
  const logZ = max + Math.log(logits.reduce((sum, v) => sum + Math.exp(v - max), 0));
  let gap = 0;
  for (const [id, p] of [...probabilities].slice(0, n)) gap = Math.max(gap, Math.abs(Math.log(p) - (logits[id] - logZ)));
  return gap;
}

const STORIES_VOCAB = join(SHARED, 'models/stories260K/stories260K-vocab-ud.gguf');
let stories: Tokenizer | undefined;
/** stories260K's vocabulary (512 SentencePiece tokens, from its llama.cpp GGUF): llama.cpp needs one, and a small one keeps its per-token work small. */
export const storiesTokenizer = (): Tokenizer => (stories ??= tokenizerFromGguf(readGgufLite(new Uint8Array(readFileSync(STORIES_VOCAB)), STORIES_VOCAB).metadata, STORIES_VOCAB));

/**
 * llama.cpp's ids ([CLS] + its tokenization + [SEP], as its embedding context wraps a text) and pooled vectors (as it
 * returns them: unnormalised) of `texts`, one by one, for an embedding GGUF.
 */
export function llamaCppEmbeddings(file: string, texts: readonly string[]): Promise<{ ids: number[][]; vectors: number[][] }> {
  return embeddingsOf(file, texts, 512, (model, text) => [model.tokens.bos!, ...model.tokenize(text), model.tokens.sep!]);
}

/**
 * llama.cpp's ids and pooled vectors (unnormalised, after any dense projections) of `texts`, one by one, for a decoder
 * embedding GGUF (Qwen3-Embedding, EmbeddingGemma). The ids are what node-llama-cpp's embedding context evaluates:
 * the text's tokens, BOS first when the GGUF says add_bos_token, EOS last when it says add_eos_token.
 */
export function llamaCppDecoderEmbeddings(file: string, texts: readonly string[], contextSize = 512): Promise<{ ids: number[][]; vectors: number[][] }> {
  return embeddingsOf(file, texts, contextSize, (model, text) => {
    const { bos, eos, shouldPrependBosToken, shouldAppendEosToken } = model.tokens;
    const t = [...model.tokenize(text)] as number[];
    if (shouldPrependBosToken && bos !== null && t[0] !== bos) t.unshift(bos);
    if (shouldAppendEosToken && eos !== null && t.at(-1) !== eos) t.push(eos);
    return t;
  });
}

/**
 * `texts` embedded one by one in an embedding context of `contextSize` (a whole text must fit one batch: the model sees
 * it all at once), with the ids `idsOf` says the context evaluates. One thread: llama.cpp's default (every core,
 * spinning) is many times slower on a busy small machine.
 */
async function embeddingsOf(file: string, texts: readonly string[], contextSize: number, idsOf: (model: LlamaModel, text: string) => number[]): Promise<{ ids: number[][]; vectors: number[][] }> {
  const model = await (await llamaCpp()).loadModel({ modelPath: file });
  try {
    const context = await model.createEmbeddingContext({ contextSize, batchSize: contextSize, threads: 1 });
    try {
      const ids: number[][] = [];
      const vectors: number[][] = [];
      for (const text of texts) {
        ids.push(idsOf(model, text));
        vectors.push([...(await context.getEmbeddingFor(text)).vector]);
      }
      return { ids, vectors };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}
