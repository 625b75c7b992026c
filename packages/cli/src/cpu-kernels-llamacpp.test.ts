// intab's CPU kernels (the CpuRunner that 'onnx-wasm' runs quantized GGUFs on) against llama.cpp's CPU path
// (node-llama-cpp's prebuilt build, one thread, K/V in f32), family by family, in q8_0 and q4_0: both quantize the
// activations to q8_0 before each matrix, so intab's next-token distribution after the prompt should be llama.cpp's to
// rounding, and llama.cpp's greedy ids intab's likeliest tokens (or within rounding of them) when fed the same text. The models are small random ones of
// each family with stories260K's vocabulary, q and k written large (sharp attention: positions, windows and RoPE show).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import type { WeightDtype } from '@intab/gpu';
import { openGguf, pathSource } from '@intab/model';
import { loadCpuRunner } from '@intab/onnx';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { llamaCppGreedy, logProbGap, storiesTokenizer } from './test-llamacpp.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-cpu-kernels-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PROMPT = [1, 403, 261, 310, 263, 411, 300, 290, 275, 301, 330, 266, 402, 283, 297, 320, 271, 288, 309];
const STEPS = 16;
const GREEDY = { temperature: 0, u: 0 };
const LAYER = { hidden: 64, ffn: 128, heads: 4, kvHeads: 2, headDim: 32, vocab: 0, context: 256 };
const FAMILIES: Record<string, SyntheticShape> = {
  llama: { ...LAYER, layers: 3, ropeTheta: 10000 },
  qwen3: { ...LAYER, layers: 3, ropeTheta: 1000000, arch: 'qwen3' },
  smollm3: { ...LAYER, layers: 4, ropeTheta: 5000000, arch: 'smollm3' },
  gemma3: { ...LAYER, layers: 6, kvHeads: 1, ropeTheta: 1000000, arch: 'gemma3', window: 4 },
};

describe("intab's CPU kernels give llama.cpp's ids and next-token distribution", () => {
  for (const [family, shape] of Object.entries(FAMILIES)) {
    for (const dtype of ['q8_0', 'q4_0'] as WeightDtype[]) {
      test(`${family} ${dtype}`, { timeout: 120_000 }, async () => {
        const file = join(dir, `${family}-${dtype}.gguf`);
        writeFileSync(file, syntheticGguf(shape, dtype, 11, { tokenizer: storiesTokenizer(), qkScale: 8 }));
        const model = await openGguf(await pathSource(file));
        const { runner } = await loadCpuRunner(model, { kvBudgetBytes: 4 << 20, maxBatch: 16 });
        const theirs = await llamaCppGreedy(file, PROMPT, STEPS);
        // Teacher-forced on llama.cpp's ids: every row's logits, so a near-tie at one step does not hide the rest.
        runner.alloc(0);
        const forced = [...PROMPT, ...theirs.ids.slice(0, -1)];
        const [r] = await runner.step([{ seq: 0, tokens: forced, verify: forced.map(() => GREEDY) }], { logits: true });
        runner.destroy();
        const V = storiesTokenizer().vocabSize;
        const rows = theirs.ids.map((_, i) => r.logits!.subarray((PROMPT.length - 1 + i) * V, (PROMPT.length + i) * V));
        const gap = logProbGap(theirs.probabilities, rows[0]);
        // How far below intab's likeliest token llama.cpp's pick is, per step (0 where they agree).
        const behind = rows.map((row, i) => Math.max(...row) - row[theirs.ids[i]]);
        const agree = behind.filter((b) => b === 0).length;
        console.log(JSON.stringify({ test: 'cpu-kernels', family, dtype, log_prob_gap: gap, steps: theirs.ids.length, agree, most_behind: Math.max(...behind) }));
        expect(theirs.ids.length).toBeGreaterThanOrEqual(8);
        expect(gap).toBeLessThan(0.03);
        expect(Math.max(...behind)).toBeLessThan(0.05);
      });
    }
  }
});
