// `intab bench compare`'s llama.cpp/native system: llama.cpp natively on this machine's CPU (node-llama-cpp's prebuilt
// build, never compiled here), the engine a user would run outside the browser, on the same GGUF and the same seeded
// prompt ids as the page's systems, greedy, timed alike: the time to the first sampled token (the prompt's prefill),
// then decode tokens per second from the first token to the last.
import { median } from './bench-tools.ts';

export interface NativeRun {
  ids: number[];
  ttftMs: number;
  prefillTokS: number;
  decodeTokS: number;
}

/** `rounds` greedy runs of `maxTokens` after `promptIds` on a fresh sequence each, on `threads` threads. */
export async function llamaCppRuns(file: string, promptIds: readonly number[], maxTokens: number, rounds: number, threads: number): Promise<{ runs: NativeRun[]; loadMs: number }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const t0 = performance.now();
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: file });
  const loadMs = performance.now() - t0;
  const runs: NativeRun[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      // (a context of a few dozen tokens gave other ids than the same tokens in a larger one: at least 256)
      const context = await model.createContext({ contextSize: Math.max(256, promptIds.length + maxTokens + 8), threads, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
      try {
        const ids: number[] = [];
        const t0 = performance.now();
        let tFirst = t0;
        for await (const id of context.getSequence().evaluate([...promptIds] as never[], { temperature: 0 })) {
          if (ids.length === 0) tFirst = performance.now();
          ids.push(id);
          if (ids.length === maxTokens) break;
        }
        const tEnd = performance.now();
        const ttftMs = tFirst - t0;
        runs.push({ ids, ttftMs, prefillTokS: promptIds.length / (ttftMs / 1000), decodeTokS: ids.length > 1 ? (ids.length - 1) / ((tEnd - tFirst) / 1000) : 0 });
      } finally {
        await context.dispose();
      }
    }
  } finally {
    await model.dispose();
  }
  return { runs, loadMs };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/**
 * The llama.cpp/native line of bench compare: medians of `runs`, whether its ids equal intab's (the page's reference
 * system), and the ratios against intab's WebGPU kernels and intab on the CPU (onnx-wasm), when those ran: llama.cpp ÷
 * intab as every peer's line gives them ("decode_vs_intab_onnx_wasm"), and intab ÷ llama.cpp, the share of native
 * speed intab reaches ("intab_onnx_wasm_decode_vs_native", "intab_onnx_wasm_prefill_vs_native").
 */
export function llamaCppLine(runs: NativeRun[], o: { threads: number; promptTokens: number; rounds: number; loadMs: number; intab: Map<string, { decode_tok_s: number; prefill_tok_s: number; ttft_ms: number; ids?: number[] }> }): Record<string, unknown> {
  const decode = median(runs.map((r) => r.decodeTokS));
  const prefill = median(runs.map((r) => r.prefillTokS));
  const ttft = median(runs.map((r) => r.ttftMs));
  const ratios = (system: string, key: string) => {
    const s = o.intab.get(system);
    if (!s) return {};
    return {
      [`decode_vs_${key}`]: round(decode / s.decode_tok_s),
      [`prefill_vs_${key}`]: round(prefill / s.prefill_tok_s),
      [`ttft_vs_${key}`]: round(ttft / s.ttft_ms),
      [`${key}_decode_vs_native`]: round(s.decode_tok_s / decode),
      [`${key}_prefill_vs_native`]: round(s.prefill_tok_s / prefill),
    };
  };
  const reference = o.intab.get('intab/webgpu') ?? o.intab.get('intab/onnx-wasm');
  return {
    bench: 'compare',
    system: 'llama.cpp',
    backend: 'native',
    threads: o.threads,
    decode_tok_s: round(decode),
    prefill_tok_s: round(prefill),
    ttft_ms: round(ttft),
    ids_equal: reference?.ids ? runs[0].ids.length === reference.ids.length && runs[0].ids.every((id, i) => id === reference.ids![i]) : null,
    ids: runs[0].ids,
    prompt_tokens: o.promptTokens,
    generated_tokens: runs[0].ids.length,
    rounds: o.rounds,
    load_ms: round(o.loadMs),
    ...ratios('intab/webgpu', 'intab_webgpu'),
    ...ratios('intab/onnx-wasm', 'intab_onnx_wasm'),
  };
}
