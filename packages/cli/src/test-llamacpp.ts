// llama.cpp as the node tier's oracle (node-llama-cpp's prebuilt CPU build): one instance per test file, and its
// greedy ids after a prompt. Test-only.
import { getLlama, LlamaLogLevel, type Llama, type LlamaContext, type Token } from 'node-llama-cpp';

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
