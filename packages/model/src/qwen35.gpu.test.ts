// Qwen3.5 on WebGPU (Gated DeltaNet layers beside gated attention) against the CPU reference (which equals
// llama.cpp: packages/cli/src/families-llamacpp.test.ts), on a small random qwen35 GGUF written by make-model's
// writer: 4 layers (three DeltaNet, the fourth gated attention), 2 key heads to 4 value heads. Logits after a prefill,
// over decode steps, in a batch of sequences of different lengths (each with its own state slot); a verify step whose
// rejected proposals are rewound (the state restored and the kept tokens replayed); a fork mid-sequence; a freed slot
// reused from zero.
import { describe, expect, test } from 'vitest';
import { testGpu } from '@intab/testing/gpu';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { Runner } from './runner.ts';
import { openGguf } from './load.ts';
import { bytesSource } from './source.ts';
import { argmax, createReferenceModel, type ReferenceModel } from './reference/llama.ts';
import { readGgufLite } from './reference/safetensors-lite.ts';

const SHAPE: SyntheticShape = {
  hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 32, vocab: 256, ropeTheta: 10000000, context: 256, arch: 'qwen35',
  rotaryDim: 8, linear: { interval: 4, convKernel: 4, kHeads: 2, vHeads: 4, headDim: 16 },
};
/** max |gpu − ref| ≤ TOL · max |ref| over a logits row (f32 against float64; a wrong gate or head order is off by > 0.1). */
const TOL = 1e-3;

function relError(gpu: Float32Array, ref: Float32Array): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < ref.length; i++) {
    err = Math.max(err, Math.abs(gpu[i] - ref[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  return gpu.some(Number.isNaN) ? Infinity : err / scale;
}

describe('Qwen3.5 on WebGPU = the CPU reference', () => {
  test('prefill, decode, a batch of four, a rewound verify step, a fork and a reused slot', async () => {
    const gpu = await testGpu();
    const bytes = syntheticGguf(SHAPE, 'f32', 11, { qkScale: 8 });
    const files = await openGguf(bytesSource('qwen35.gguf', bytes));
    expect(files.config.linearAttention?.layers).toEqual([0, 1, 2]);
    const lite = readGgufLite(bytes, 'qwen35.gguf');
    const reference = (): ReferenceModel => createReferenceModel(files.config, (n) => lite.tensors.get(n)?.data);
    const runner = await Runner.load(gpu, files.config, files.tensors, { kvBudgetBytes: 1 << 20, pageSize: 8, maxBatch: 5, maxTokensPerStep: 64 });
    expect(runner.capabilities).toMatchObject({ sharedPages: false, earlyExit: false });
    expect(runner.kv.keepsKv).toEqual([false, false, false, true]); // the DeltaNet layers hold no K/V
    await runner.warmup(); // a throwaway sequence of its own: its slot comes back
    expect(runner.freeSequenceSlots).toBe(5);
    const V = files.config.vocab;
    const refs = new Map<number, ReferenceModel>();
    const history = new Map<number, number[]>();
    /** The reference of `seq` runs `tokens` from `start` (its length by default); returns the last row's logits. */
    const feed = (seq: number, tokens: number[], start?: number) => {
      const ref = refs.get(seq)!;
      const at = start ?? ref.length;
      history.set(seq, [...(history.get(seq) ?? []).slice(0, at), ...tokens]);
      return ref.forward(tokens, at);
    };
    const errors: Record<string, number> = {};
    const note = (phase: string, e: number) => (errors[phase] = Math.max(errors[phase] ?? 0, e));
    /** One step; each entry's last row against its reference fed the same tokens (from `start`, a rewind); the reference's next tokens. */
    const step = async (phase: string, entries: { seq: number; tokens: number[]; start?: number }[]) => {
      const got = await runner.step(entries.map(({ seq, tokens }) => ({ seq, tokens })), { logits: true });
      return entries.map(({ seq, tokens, start }, i) => {
        const want = feed(seq, tokens, start);
        note(phase, relError(got[i].logits!, want));
        return argmax(want);
      });
    };
    const prompt = (n: number, s: number) => Array.from({ length: n }, (_, i) => (3 + 37 * i + 11 * s) % V);
    try {
      for (const s of [0, 1, 2, 3]) (runner.alloc(s), refs.set(s, reference()));
      let [next] = await step('prefill', [{ seq: 0, tokens: prompt(13, 0) }]);
      for (let i = 0; i < 5; i++) [next] = await step('decode', [{ seq: 0, tokens: [next] }]);
      let nexts = await step('batch', [{ seq: 0, tokens: [next] }, { seq: 1, tokens: prompt(2, 1) }, { seq: 2, tokens: prompt(7, 2) }, { seq: 3, tokens: prompt(20, 3) }]);
      for (let i = 0; i < 3; i++) nexts = await step('batch', nexts.map((t, seq) => ({ seq, tokens: [t] })));

      // a verify step of 4 tokens; 2 are kept: the state goes back and the 2 run again before the next step
      const L = runner.kv.length(0);
      const proposals = [nexts[0], 5, 6, 7];
      const verify = await runner.step([{ seq: 0, tokens: proposals, verify: proposals.map(() => ({ temperature: 0, u: 0 })) }]);
      expect(verify[0].accepted).toBeDefined();
      runner.rewind(0, 2);
      expect(() => runner.rewind(0, 5)).toThrow(/last verify step/);
      feed(0, proposals.slice(0, 2), L);
      [next] = await step('rewind', [{ seq: 0, tokens: [9] }]);
      // and one more, to a length right at the verify step's start (nothing to replay)
      const M = runner.kv.length(0);
      await runner.step([{ seq: 0, tokens: [next, 3, 4], verify: [0, 1, 2].map(() => ({ temperature: 0, u: 0 })) }]);
      runner.rewind(0, 3);
      [next] = await step('rewind', [{ seq: 0, tokens: [next], start: M }]);

      // a fork: the copy continues as the original would
      runner.fork(2, 4);
      refs.set(4, reference());
      feed(4, history.get(2)!, 0);
      runner.free(1);
      refs.set(1, reference());
      history.delete(1);
      runner.alloc(1); // the freed slot, reused: it starts from zero
      await step('fork', [{ seq: 2, tokens: [7] }, { seq: 4, tokens: [8] }, { seq: 1, tokens: prompt(5, 9) }]);
      console.log(JSON.stringify({ test: 'qwen35 gpu', maxRelError: errors }));
      for (const [phase, e] of Object.entries(errors)) expect(e, phase).toBeLessThanOrEqual(TOL);
    } finally {
      runner.destroy();
    }
  });
});
