// bench compare's llama.cpp/native line: medians of its runs, and its ratios against intab both ways (llama.cpp ÷
// intab as every peer's line, intab ÷ llama.cpp as the share of native speed), only for the intab systems that ran.

import { describe, expect, test } from 'vitest';
import { llamaCppLine, type NativeRun } from './bench-llamacpp.ts';

const run = (decodeTokS: number, prefillTokS: number, ttftMs: number): NativeRun => ({ ids: [1, 2, 3], decodeTokS, prefillTokS, ttftMs });

describe('llamaCppLine', () => {
  test('medians, and the ratios against intab/onnx-wasm both ways', () => {
    const runs = [run(40, 600, 50), run(36, 500, 60), run(38, 550, 55)];
    const intab = new Map([['intab/onnx-wasm', { decode_tok_s: 76, prefill_tok_s: 275, ttft_ms: 110, ids: [1, 2, 3] }]]);
    const line = llamaCppLine(runs, { threads: 1, promptTokens: 32, rounds: 3, loadMs: 1000, intab });
    expect(line).toMatchObject({ system: 'llama.cpp', backend: 'native', threads: 1, decode_tok_s: 38, prefill_tok_s: 550, ttft_ms: 55, ids_equal: true });
    expect(line).toMatchObject({ decode_vs_intab_onnx_wasm: 0.5, prefill_vs_intab_onnx_wasm: 2, ttft_vs_intab_onnx_wasm: 0.5 });
    expect(line).toMatchObject({ intab_onnx_wasm_decode_vs_native: 2, intab_onnx_wasm_prefill_vs_native: 0.5 });
    expect(Object.keys(line).filter((k) => k.includes('webgpu'))).toEqual([]);
  });
});
