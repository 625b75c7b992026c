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
import { readGgufLite, writeSafetensors } from './reference/safetensors-lite.ts';
import { hfValueTransform } from './tensor-names.ts';
import { openHfFolder } from './load.ts';

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

  for (const [heads, kHeads] of [['as many key as value heads', 4], ['2 key heads to 4 value heads (grouped order)', 2]] as const) {
  test(`a Hugging Face folder of the same weights (transformers names, values and head order; ${heads}) gives the GGUF's logits and ids`, async () => {
    const gpu = await testGpu();
    const shape: SyntheticShape = { ...SHAPE, linear: { ...SHAPE.linear!, kHeads, vHeads: 4 } };
    const bytes = syntheticGguf(shape, 'f32', 12, { qkScale: 8 });
    const gguf = await openGguf(bytesSource('qwen35.gguf', bytes));
    const c = gguf.config;
    // The GGUF's tensors as transformers holds them: (1 + w) norms stored as w (not the gated norm), A_log, (C, 1, K) taps.
    const HF: Record<string, string> = {
      attn_norm: 'input_layernorm', post_attention_norm: 'post_attention_layernorm', attn_q: 'self_attn.q_proj', attn_k: 'self_attn.k_proj',
      attn_v: 'self_attn.v_proj', attn_output: 'self_attn.o_proj', attn_q_norm: 'self_attn.q_norm', attn_k_norm: 'self_attn.k_norm',
      ffn_gate: 'mlp.gate_proj', ffn_up: 'mlp.up_proj', ffn_down: 'mlp.down_proj', attn_qkv: 'linear_attn.in_proj_qkv', attn_gate: 'linear_attn.in_proj_z',
      ssm_beta: 'linear_attn.in_proj_b', ssm_alpha: 'linear_attn.in_proj_a', ssm_conv1d: 'linear_attn.conv1d', ssm_norm: 'linear_attn.norm', ssm_out: 'linear_attn.out_proj',
      ssm_a: 'linear_attn.A_log', ssm_dt: 'linear_attn.dt_bias',
    };
    const hf: [string, { shape: number[]; data: Float32Array }][] = [];
    for (const [name, t] of readGgufLite(bytes, 'qwen35.gguf').tensors) {
      const m = /^blk\.(\d+)\.(\w+?)(\.weight|\.bias)?$/.exec(name);
      const hfName = m ? `model.layers.${m[1]}.${HF[m[2]]}${m[2] === 'ssm_a' || m[2] === 'ssm_dt' ? '' : '.weight'}` : { 'token_embd.weight': 'model.embed_tokens.weight', 'output_norm.weight': 'model.norm.weight', 'output.weight': 'lm_head.weight' }[name]!;
      let data = t.data;
      if (name.endsWith('norm.weight') && !name.endsWith('ssm_norm.weight')) data = data.map((v) => v - 1);
      // tiled → grouped value heads (with 2 key heads to 4 value heads the swap is its own inverse)
      if (/attn_qkv|attn_gate|ssm_(beta|alpha|conv1d|dt|out)/.test(name)) data = hfValueTransform(c, name, data);
      if (name.endsWith('.ssm_a')) data = hfValueTransform(c, name.replace('ssm_a', 'ssm_dt.bias'), data).map((v) => Math.log(-v));
      hf.push([hfName, { shape: name.endsWith('ssm_conv1d.weight') ? [t.shape[0], 1, t.shape[1]] : t.shape, data }]);
    }
    const la = c.linearAttention!;
    const config = {
      architectures: ['Qwen3_5ForCausalLM'], model_type: 'qwen3_5_text', vocab_size: c.vocab, hidden_size: c.hidden, intermediate_size: c.ffn,
      num_hidden_layers: c.layers, num_attention_heads: c.heads, num_key_value_heads: c.kvHeads, head_dim: c.headDim, attn_output_gate: true,
      linear_num_key_heads: la.kHeads, linear_num_value_heads: la.vHeads, linear_key_head_dim: la.kDim, linear_value_head_dim: la.vDim,
      linear_conv_kernel_dim: la.convKernel, rms_norm_eps: c.rmsEps, full_attention_interval: 4, max_position_embeddings: c.maxContext,
      rope_parameters: { rope_type: 'default', rope_theta: c.rope.theta, partial_rotary_factor: c.rope.rotaryDim / c.headDim }, tie_word_embeddings: c.tiedEmbeddings,
    };
    const folder = await openHfFolder(
      new Map([
        ['config.json', bytesSource('config.json', new TextEncoder().encode(JSON.stringify(config)))],
        ['model.safetensors', bytesSource('model.safetensors', writeSafetensors(hf))],
      ]),
    );
    const runners = [await Runner.load(gpu, c, gguf.tensors, { kvBudgetBytes: 1 << 20, maxBatch: 1 }), await Runner.load(gpu, folder.config, folder.tensors, { kvBudgetBytes: 1 << 20, maxBatch: 1 })];
    try {
      /** Greedy ids over 8 steps after a prompt, and the last step's logits. */
      const greedy = async (runner: Runner) => {
        runner.alloc(0);
        const ids: number[] = [];
        let [last] = await runner.step([{ seq: 0, tokens: [3, 40, 77, 121, 9, 200, 14] }], { logits: true });
        for (let s = 0; s < 8; s++) {
          ids.push(last.id);
          [last] = await runner.step([{ seq: 0, tokens: [last.id] }], { logits: true });
        }
        return { ids, logits: last.logits! };
      };
      const [fromGguf, fromHf] = [await greedy(runners[0]), await greedy(runners[1])];
      expect(folder.config.linearAttention!.headOrder).toBe(kHeads < 4 ? 'grouped' : undefined);
      expect(fromHf.ids).toEqual(fromGguf.ids);
      expect(relError(fromHf.logits, fromGguf.logits)).toBeLessThan(1e-5);
    } finally {
      for (const r of runners) r.destroy();
    }
  });
  }
});
