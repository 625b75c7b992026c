// Qwen3.5 (qwen35) in the CPU reference and the config readers: Qwen/Qwen3.5-0.8B's config.json read as its GGUF says,
// the hybrid forward one-shot = token-by-token = after a rewind = after a draft, the Hugging Face → GGUF value transforms
// (convert_hf_to_gguf.py's), and typed errors for the malformed and the unsupported (mixture-of-experts) variants.
// Agreement with llama.cpp itself is packages/cli/src/families-llamacpp.test.ts.

import { describe, expect, test } from 'vitest';
import { syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { ModelFormatError, UnsupportedModelError } from '../errors.ts';
import { openHfFolder } from '../load.ts';
import { bytesSource } from '../source.ts';
import { canonicalHfTensors, configFromGguf, configFromHf, createReferenceModel, hfValueTransform, readGgufLite, writeSafetensors, type LlamaConfig } from './index.ts';

/** Qwen/Qwen3.5-0.8B's config.json as the hub ships it (the multimodal wrapper; vision_config left out). */
const QWEN35_08B = {
  architectures: ['Qwen3_5ForConditionalGeneration'],
  model_type: 'qwen3_5',
  tie_word_embeddings: true,
  text_config: {
    model_type: 'qwen3_5_text',
    vocab_size: 248320,
    hidden_size: 1024,
    intermediate_size: 3584,
    num_hidden_layers: 24,
    num_attention_heads: 8,
    num_key_value_heads: 2,
    head_dim: 256,
    attention_bias: false,
    attn_output_gate: true,
    linear_num_key_heads: 16,
    linear_num_value_heads: 16,
    linear_key_head_dim: 128,
    linear_value_head_dim: 128,
    linear_conv_kernel_dim: 4,
    rms_norm_eps: 1e-6,
    full_attention_interval: 4,
    max_position_embeddings: 262144,
    layer_types: Array.from({ length: 24 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')),
    rope_parameters: { mrope_interleaved: true, mrope_section: [11, 11, 10], rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25 },
    eos_token_id: 248044,
  },
};

/** A small qwen35 (3 DeltaNet layers, 1 attention; 2 key heads to 4 value heads), as make-model writes it, in f32. */
const SHAPE: SyntheticShape = {
  hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 32, vocab: 96, ropeTheta: 10000000, context: 256, arch: 'qwen35',
  rotaryDim: 8, linear: { interval: 4, convKernel: 4, kHeads: 2, vHeads: 4, headDim: 16 },
};

function small(): { config: LlamaConfig; tensors: Map<string, Float32Array> } {
  const gguf = readGgufLite(syntheticGguf(SHAPE, 'f32', 5, { qkScale: 8 }), 'qwen35.gguf');
  return { config: configFromGguf(gguf.metadata, 'qwen35.gguf', gguf.tensorInfos), tensors: new Map([...gguf.tensors].map(([n, t]) => [n, t.data])) };
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('qwen35 configs', () => {
  test("Qwen3.5-0.8B's config.json (its text_config): the DeltaNet layers and widths, the gate, a quarter rotated", () => {
    const c = configFromHf(QWEN35_08B, 'config.json');
    expect(c).toMatchObject({
      arch: 'qwen35', hidden: 1024, ffn: 3584, layers: 24, heads: 8, kvHeads: 2, headDim: 256, vocab: 248320, rmsEps: 1e-6,
      tiedEmbeddings: true, qkNorm: true, attnOutputGate: true, fusedProjections: false, eosIds: [248044],
      rope: { theta: 10000000, style: 'neox', rotaryDim: 64 },
      linearAttention: { convKernel: 4, kHeads: 16, vHeads: 16, kDim: 128, vDim: 128 },
    });
    expect(c.linearAttention!.layers).toEqual([0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 16, 17, 18, 20, 21, 22]);
    // The bare text config (Qwen3_5ForCausalLM), with the pattern from full_attention_interval alone, reads the same.
    const { layer_types: _, ...text } = QWEN35_08B.text_config;
    expect(configFromHf({ ...text, architectures: ['Qwen3_5ForCausalLM'], tie_word_embeddings: true }, 'config.json')).toEqual(c);
  });

  test("a GGUF make-model writes with Qwen3.5-0.8B's heads (narrow): the keys read back as the config.json says", () => {
    const shape: SyntheticShape = { ...SHAPE, hidden: 64, ffn: 64, layers: 4, heads: 8, kvHeads: 2, headDim: 256, vocab: 32, rotaryDim: 64, linear: { interval: 4, convKernel: 4, kHeads: 16, vHeads: 16, headDim: 128 } };
    const meta = readGgufLite(syntheticGguf(shape, 'f16', 1), 'x.gguf');
    const c = configFromGguf(meta.metadata, 'x.gguf', meta.tensorInfos);
    expect(meta.metadata['qwen35.rope.dimension_sections']).toEqual([11, 11, 10, 0]);
    expect(c).toMatchObject({ arch: 'qwen35', rope: { rotaryDim: 64, style: 'neox' }, attnOutputGate: true, qkNorm: true, fusedProjections: false, linearAttention: { layers: [0, 1, 2], kHeads: 16, vHeads: 16, kDim: 128, vDim: 128, convKernel: 4 } });
  });

  test('malformed and unsupported configs: typed errors naming the key and what to do', async () => {
    const text = QWEN35_08B.text_config;
    const hf = (patch: Record<string, unknown>) => () => configFromHf({ ...text, ...patch }, 'config.json');
    expect(hf({ layer_types: ['linear_attention'] })).toThrow(ModelFormatError);
    expect(hf({ layer_types: ['linear_attention'] })).toThrow(/layer_types.*24 entries/);
    expect(hf({ linear_num_value_heads: 24, linear_num_key_heads: 16 })).toThrow(/linear_num_value_heads.*multiple of the key head count 16/);
    expect(hf({ linear_key_head_dim: undefined })).toThrow(/linear_key_head_dim: is missing/);
    expect(() => configFromHf({ text_config: undefined, architectures: ['Qwen3_5ForConditionalGeneration'] }, 'config.json')).toThrow(/text_config.*Qwen3.5/);
    // Mixture-of-experts Qwen3.5 names itself and lists what runs.
    for (const moe of [{ ...text, model_type: 'qwen3_5_moe_text' }, { architectures: ['Qwen3_5MoeForConditionalGeneration'], text_config: text }]) {
      expect(() => configFromHf(moe, 'config.json')).toThrow(UnsupportedModelError);
      expect(() => configFromHf(moe, 'config.json')).toThrow(/qwen35moe.*llama, mistral, qwen2, qwen3, phi3, smollm3, gemma3 and qwen35/);
    }
    // A Hugging Face folder with more value than key heads: read in transformers' grouped head order as stored.
    const wider = { ...QWEN35_08B, text_config: { ...QWEN35_08B.text_config, linear_num_value_heads: 32 } };
    const folder = new Map([
      ['config.json', bytesSource('config.json', new TextEncoder().encode(JSON.stringify(wider)))],
      ['model.safetensors', bytesSource('model.safetensors', writeSafetensors([['model.language_model.norm.weight', { shape: [1024], data: new Float32Array(1024) }]]))],
    ]);
    expect((await openHfFolder(folder)).config.linearAttention).toMatchObject({ kHeads: 16, vHeads: 32, headOrder: 'grouped' });
    const { metadata, tensorInfos } = readGgufLite(syntheticGguf(SHAPE, 'f32', 1), 'x.gguf');
    expect(() => configFromGguf({ ...metadata, 'general.architecture': 'qwen35moe' }, 'x.gguf')).toThrow(/qwen35moe is not supported.*dense/);
    const { ['qwen35.ssm.group_count']: _, ...noGroups } = metadata;
    expect(() => configFromGguf(noGroups, 'x.gguf', tensorInfos)).toThrow(/qwen35\.ssm\.group_count: is missing/);
    expect(() => configFromGguf({ ...metadata, 'qwen35.ssm.inner_size': 65 }, 'x.gguf', tensorInfos)).toThrow(/ssm\.inner_size.*multiple of qwen35\.ssm\.time_step_rank 4/);
    // A converter's MTP block (block_count includes it) is not a decoder layer.
    expect(configFromGguf({ ...metadata, 'qwen35.block_count': 5, 'qwen35.nextn_predict_layers': 1 }, 'x.gguf', tensorInfos)).toMatchObject({ layers: 4, linearAttention: { layers: [0, 1, 2] } });
  });
});

describe('qwen35 reference forward', () => {
  const { config, tensors } = small();
  const tokens = [3, 17, 42, 5, 88, 1, 60, 23, 9, 71];

  test('one-shot = token-by-token; a rewind and a draft (first layers only) leave the state exact', () => {
    const model = createReferenceModel(config, (n) => tensors.get(n));
    const all = model.logitsAll(tokens, 0);
    const V = config.vocab;
    model.reset();
    for (let t = 0; t < tokens.length; t++) expect(maxDiff(model.forward([tokens[t]], t), all.subarray(t * V, (t + 1) * V))).toBe(0);
    // Rewind to position 4 with other tokens, then back to the original ones: the recurrent state follows.
    model.forward([7, 7, 7], 4);
    expect(maxDiff(model.forward(tokens.slice(4), 4), all.subarray((tokens.length - 1) * V))).toBe(0);
    // A one-layer draft advances only layer 0's state; the next full forward replays to where it starts.
    model.forward([9, 9], tokens.length, 1);
    expect(maxDiff(model.forward(tokens.slice(6), 6), all.subarray((tokens.length - 1) * V))).toBe(0);
    expect(() => model.forward([1], model.length + 1)).toThrow(/startPos/);
  });

  test('every part of the layer reaches the logits (the conv state, the decay, both gates)', () => {
    const base = createReferenceModel(config, (n) => tensors.get(n)).forward(tokens, 0);
    const edits: Record<string, RegExp> = { conv: /ssm_conv1d/, decay: /ssm_a$/, z_gate: /attn_gate/, output_gate: /blk\.3\.attn_q\.weight/ };
    for (const [what, name] of Object.entries(edits)) {
      const changed = new Map([...tensors].map(([n, d]) => [n, name.test(n) ? d.map((v) => v * 0.5) : d]));
      expect(maxDiff(createReferenceModel(config, (n) => changed.get(n)).forward(tokens, 0), base), what).toBeGreaterThan(1e-3);
    }
  });

  test('a Hugging Face checkpoint of the same weights (transformers names and values) gives the same logits', () => {
    // The GGUF tensors written back as transformers holds them: names, (1 + w) norms as w, A_log, grouped value heads
    // (with Hk 2, Hv 4 the grouped ↔ tiled swap is its own inverse, so hfValueTransform's reorder undoes itself).
    const HF: Record<string, string> = {
      attn_norm: 'input_layernorm', post_attention_norm: 'post_attention_layernorm', attn_q: 'self_attn.q_proj', attn_k: 'self_attn.k_proj',
      attn_v: 'self_attn.v_proj', attn_output: 'self_attn.o_proj', attn_q_norm: 'self_attn.q_norm', attn_k_norm: 'self_attn.k_norm',
      ffn_gate: 'mlp.gate_proj', ffn_up: 'mlp.up_proj', ffn_down: 'mlp.down_proj', attn_qkv: 'linear_attn.in_proj_qkv', attn_gate: 'linear_attn.in_proj_z',
      ssm_beta: 'linear_attn.in_proj_b', ssm_alpha: 'linear_attn.in_proj_a', ssm_conv1d: 'linear_attn.conv1d', ssm_norm: 'linear_attn.norm', ssm_out: 'linear_attn.out_proj',
    };
    const hf: [string, { data: Float32Array }][] = [['model.visual.blocks.0.attn.qkv.weight', { data: new Float32Array(4) }], ['mtp.layers.0.mlp.gate_proj.weight', { data: new Float32Array(4) }]];
    for (const [name, data] of tensors) {
      const m = /^blk\.(\d+)\.(\w+)(?:\.weight|\.bias)?$/.exec(name);
      let hfName: string;
      let values = data;
      if (!m) hfName = { 'token_embd.weight': 'model.language_model.embed_tokens.weight', 'output_norm.weight': 'model.language_model.norm.weight' }[name]!;
      else if (m[2] === 'ssm_a') hfName = `model.language_model.layers.${m[1]}.linear_attn.A_log`;
      else if (m[2] === 'ssm_dt') hfName = `model.language_model.layers.${m[1]}.linear_attn.dt_bias`;
      else hfName = `model.language_model.layers.${m[1]}.${HF[m[2]]}.weight`;
      if (name.endsWith('norm.weight') && !name.endsWith('ssm_norm.weight')) values = data.map((v) => v - 1);
      if (/attn_qkv|attn_gate|ssm_(beta|alpha|conv1d|dt|out)/.test(name)) values = hfValueTransform(config, name, data); // grouped again
      if (name.endsWith('ssm_a')) values = hfValueTransform(config, name.replace('ssm_a', 'ssm_dt.bias'), data).map((v) => Math.log(-v));
      hf.push([hfName, { data: values }]);
    }
    const back = canonicalHfTensors(config, hf);
    expect([...back.keys()].sort()).toEqual([...tensors.keys()].sort());
    const a = createReferenceModel(config, (n) => tensors.get(n)).forward(tokens, 0);
    const b = createReferenceModel(config, (n) => back.get(n)).forward(tokens, 0);
    expect(maxDiff(a, b)).toBeLessThan(1e-4);
  });

  test('Hugging Face values become llama.cpp\'s: 1 + w norms (not the gated one), −exp(A_log), value heads grouped → tiled', () => {
    const la = config.linearAttention!; // Hk 2, Hv 4: grouped [k0v0, k0v1, k1v0, k1v1] → tiled [k0v0, k1v0, k0v1, k1v1]
    const aLog = Float32Array.from([0, 1, 2, 3]);
    expect(Array.from(hfValueTransform(config, 'blk.0.ssm_a', aLog))).toEqual([0, 2, 1, 3].map((i) => Math.fround(-Math.exp(i))));
    expect(Array.from(hfValueTransform(config, 'blk.0.ssm_dt.bias', aLog))).toEqual([0, 2, 1, 3]);
    expect(Array.from(hfValueTransform(config, 'blk.0.attn_norm.weight', Float32Array.from([0.5])))).toEqual([1.5]);
    expect(Array.from(hfValueTransform(config, 'blk.0.ssm_norm.weight', Float32Array.from([0.5])))).toEqual([0.5]);
    // The conv's v channels move by head (Dv rows of K taps each); its q and k channels stay.
    const K = la.convKernel;
    const qk = 2 * la.kHeads * la.kDim;
    const conv = Float32Array.from({ length: (qk + la.vHeads * la.vDim) * K }, (_, i) => i);
    const tiled = hfValueTransform(config, 'blk.0.ssm_conv1d.weight', conv);
    expect(Array.from(tiled.subarray(0, qk * K))).toEqual(Array.from(conv.subarray(0, qk * K)));
    const head = (d: Float32Array, h: number) => Array.from(d.subarray((qk + h * la.vDim) * K, (qk + (h + 1) * la.vDim) * K));
    expect([0, 1, 2, 3].map((h) => head(tiled, h))).toEqual([0, 2, 1, 3].map((h) => head(conv, h)));
    // ssm_out: columns by head, in every row.
    const C = config.hidden;
    const cols = la.vHeads * la.vDim;
    const out = Float32Array.from({ length: C * cols }, (_, i) => i % cols);
    const row = Array.from(hfValueTransform(config, 'blk.0.ssm_out.weight', out).subarray(cols, 2 * cols));
    expect(row).toEqual([0, 2, 1, 3].flatMap((h) => Array.from({ length: la.vDim }, (_, i) => h * la.vDim + i)));
  });
});
