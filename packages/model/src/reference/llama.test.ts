// The CPU reference forward against real trained weights: stories260K from its GGUF (normal rope,
// unpermuted q/k) and its HF folder (neox rope, permuted q/k) must both reproduce golden.json's greedy
// ids exactly. Random-weight fixtures from scripts/make-fixtures.mjs cover every config variant: finite
// logits, one-shot vs token-by-token vs rewind agreement (KV cache and positions), and rope-style equivalence;
// the in-memory builders of fixtures.ts must write the CLI's bytes, and their GGUF layout the same model.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { mulberry32, ropeInvFreq, ShapeError } from '@intab/gpu';
import { configFromGguf, configFromHf, type LlamaConfig } from '../config.ts';
import { ModelFormatError, ModelMismatchError, UnsupportedModelError } from '../errors.ts';
import { argmax, canonicalHfTensors, createReferenceModel, greedy, referenceInvFreq, splitFused, type ReferenceModel } from './llama.ts';
import { readGgufLite, readSafetensors, writeSafetensors } from './safetensors-lite.ts';
import { FIXTURE_VARIANTS, fixtureFiles, fixtureGguf, fixtureWeights } from '@intab/testing/fixtures';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');
const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}
const golden: Golden = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8'));

// ---- loading with the lite readers ----

interface Loaded {
  config: LlamaConfig;
  tensors: Map<string, Float32Array>; // canonical name → data
}

function loadGguf(path: string): Loaded {
  const gguf = readGgufLite(new Uint8Array(readFileSync(path)), path);
  const config = configFromGguf(gguf.metadata, path, gguf.tensorInfos);
  return { config, tensors: new Map([...gguf.tensors].map(([n, t]) => [n, t.data])) };
}

function loadHf(dir: string): Loaded {
  const config = configFromHf(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), join(dir, 'config.json'));
  const file = join(dir, 'model.safetensors');
  return { config, tensors: canonicalHfTensors(config, readSafetensors(new Uint8Array(readFileSync(file)), file), file) };
}

const modelOf = (m: Loaded, config = m.config) => createReferenceModel(config, (n) => m.tensors.get(n));

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Runs `tokens` one call at a time and returns the last logits. */
function tokenByToken(model: ReferenceModel, tokens: number[]): Float32Array {
  model.reset();
  let logits: Float32Array = new Float32Array();
  tokens.forEach((t, i) => (logits = model.forward([t], i)));
  return logits;
}

// ---- stories260K: real weights, golden ids ----

describe('stories260K', () => {
  const gguf = loadGguf(join(STORIES, 'stories260K.gguf'));
  const hf = loadHf(join(STORIES, 'hf'));

  test('configs from GGUF metadata and config.json describe the same model', () => {
    const common = { arch: 'llama', hidden: 64, ffn: 172, layers: 5, heads: 8, kvHeads: 4, headDim: 8, vocab: 512, rmsEps: 1e-5, tiedEmbeddings: true, qkvBias: false, qkNorm: false, fusedProjections: false, maxContext: 512, slidingWindow: null, activation: 'silu' };
    expect(gguf.config).toMatchObject({ ...common, rope: { theta: 10000, style: 'normal', rotaryDim: 8 } });
    expect(hf.config).toMatchObject({ ...common, rope: { theta: 10000, style: 'neox', rotaryDim: 8 }, bosId: 1, eosIds: [2] });
    expect(gguf.config.rope.scaling).toBeUndefined();
    expect(gguf.tensors.has('output.weight')).toBe(false);
  });

  for (const [layout, loaded] of [['GGUF', gguf], ['HF', hf]] as const) {
    golden.cases.forEach((c, i) => {
      test(`${layout}: greedy ids equal golden case ${i} exactly`, () => {
        expect(greedy(modelOf(loaded), c.prompt, c.greedy.length)).toEqual(c.greedy);
      });
    });
  }

  test('both layouts give the same logits at every position (normal rope on unpermuted q/k = neox on permuted)', () => {
    const prompt = [...golden.cases[1].prompt, ...golden.cases[1].greedy.slice(0, 20)];
    const a = modelOf(gguf).logitsAll(prompt, 0);
    const b = modelOf(hf).logitsAll(prompt, 0);
    expect(maxAbsDiff(a, b)).toBeLessThan(1e-4);
  });

  test('logitsAll rows, forward, token-by-token and rewind agree', () => {
    const model = modelOf(gguf);
    const prompt = golden.cases[1].prompt;
    const all = model.logitsAll(prompt, 0);
    const V = gguf.config.vocab;
    expect(model.length).toBe(prompt.length);
    const last = all.subarray((prompt.length - 1) * V);
    expect(maxAbsDiff(modelOf(gguf).forward(prompt, 0), last)).toBe(0);
    expect(maxAbsDiff(tokenByToken(model, prompt), last)).toBeLessThan(1e-5);
    // Rewind: continue with a different token, then go back to position 2 and replay the original tail.
    model.forward([77, 78], prompt.length);
    const replay = model.forward(prompt.slice(2), 2);
    expect(model.length).toBe(prompt.length);
    expect(maxAbsDiff(replay, last)).toBeLessThan(1e-5);
    // The first logits row depends on BOS alone.
    expect(argmax(all.subarray(0, V))).toBe(golden.cases[0].greedy[0]);
  });

  test('bad calls throw typed errors', () => {
    const model = modelOf(gguf);
    expect(() => model.forward([1], 1)).toThrow(ShapeError); // gap in the cache
    expect(() => model.forward([512], 0)).toThrow(ShapeError); // id past the vocab
    expect(() => model.forward([], 0)).toThrow(ShapeError);
    expect(() => model.forward(new Array(513).fill(1), 0)).toThrow(/maxContext 512/);
    const missing = () => createReferenceModel(gguf.config, (n) => (n === 'blk.3.ffn_up.weight' ? undefined : gguf.tensors.get(n)), { file: 'x.gguf' });
    expect(missing).toThrow(ModelMismatchError);
    expect(missing).toThrow(/x\.gguf: blk\.3\.ffn_up\.weight/);
    const short = () => createReferenceModel(gguf.config, (n) => (n === 'output_norm.weight' ? new Float32Array(3) : gguf.tensors.get(n)));
    expect(short).toThrow(/output_norm\.weight should be 64 values but is 3 values/);
  });
});

// ---- generated fixtures: every variant ----

const VARIANT_FLAGS: Record<string, Partial<LlamaConfig>> = {
  llama: { arch: 'llama', tiedEmbeddings: true, qkvBias: false, qkNorm: false, headDim: 16 },
  llama3: { arch: 'llama', tiedEmbeddings: false, bosId: 1, eosIds: [2, 3] },
  gelu: { activation: 'gelu_tanh', tiedEmbeddings: true },
  qwen2: { arch: 'qwen2', qkvBias: true, tiedEmbeddings: false, slidingWindow: null },
  qwen3: { arch: 'qwen3', qkNorm: true, qkvBias: false, headDim: 24, tiedEmbeddings: true },
  mistral: { arch: 'mistral', kvHeads: 1, headDim: 20, slidingWindow: 4 },
  gemma3: { arch: 'gemma3', activation: 'gelu_tanh', qkNorm: true, postNorms: true, embedScale: 8, attnScale: 1 / Math.sqrt(24), slidingWindow: 4, slidingLayers: [0, 1], tiedEmbeddings: true },
  phi3: { arch: 'phi3', fusedProjections: true, headDim: 16, tiedEmbeddings: false },
};

describe('generated fixtures (scripts/make-fixtures.mjs)', () => {
  let dir = '';
  const load = (name: string) => loadHf(join(dir, name));
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'intab-fixtures-'));
    execFileSync(process.execPath, [join(REPO, 'scripts/make-fixtures.mjs'), dir, '--seed', '7'], { stdio: 'pipe' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Long enough to pass the sliding window (4) and to exercise the KV cache growth (16 → 32).
  const rng = mulberry32(99);
  const prompt = Array.from({ length: 21 }, () => Math.floor(rng() * 128));

  for (const [name, flags] of Object.entries(VARIANT_FLAGS)) {
    test(`${name}: config flags, finite logits, one-shot = token-by-token = rewind`, () => {
      const m = load(name);
      expect(m.config).toMatchObject(flags);
      const model = modelOf(m);
      const all = model.logitsAll(prompt, 0);
      expect(all.every(Number.isFinite)).toBe(true);
      const V = m.config.vocab;
      const last = all.subarray((prompt.length - 1) * V);
      // Logits must depend on the input (not a constant row).
      expect(maxAbsDiff(all.subarray(0, V), last)).toBeGreaterThan(1e-3);
      expect(maxAbsDiff(tokenByToken(model, prompt), last)).toBeLessThan(1e-5);
      const half = modelOf(m);
      half.forward(prompt.slice(0, 9), 0);
      expect(maxAbsDiff(half.forward(prompt.slice(9), 9), last)).toBeLessThan(1e-5);
      half.forward([5, 6, 7], 4); // rewind to 4 with other tokens, then replay from 4
      expect(maxAbsDiff(half.forward(prompt.slice(4), 4), last)).toBeLessThan(1e-5);
      expect(greedy(model, prompt.slice(0, 3), 8).every((id) => id >= 0 && id < V)).toBe(true);
    });
  }

  test('llama3 scaling: the inverse frequencies match @intab/gpu ropeInvFreq and differ from plain rope', () => {
    const { config } = load('llama3');
    expect(config.rope.scaling).toEqual({ type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 64 });
    const ours = referenceInvFreq(config);
    const gpu = ropeInvFreq({ headDim: config.headDim, rotaryDim: config.rope.rotaryDim, theta: config.rope.theta, scaling: config.rope.scaling });
    expect([...ours]).toEqual([...gpu]);
    const plain = referenceInvFreq({ ...config, rope: { ...config.rope, scaling: undefined } });
    expect(ours[0]).toBe(plain[0]); // high frequency: kept
    expect(ours[7]).toBeCloseTo(plain[7] / 8, 15); // low frequency: divided by factor
    expect(ours[1]).toBeLessThan(plain[1]); // the smooth band in between
    expect(ours[1]).toBeGreaterThan(plain[1] / 8);
  });

  test('rope_freqs.weight factors divide the frequencies (llama.cpp form of llama3 scaling)', () => {
    const m = load('llama');
    const factors = new Float32Array(m.config.rope.rotaryDim / 2).map((_, i) => 1 + i);
    const config: LlamaConfig = { ...m.config, rope: { ...m.config.rope, freqFactors: true } };
    const model = createReferenceModel(config, (n) => (n === 'rope_freqs.weight' ? factors : m.tensors.get(n)));
    expect(referenceInvFreq(config, factors)[3]).toBeCloseTo(referenceInvFreq(m.config)[3] / 4, 15);
    expect(maxAbsDiff(model.forward(prompt, 0), modelOf(m).forward(prompt, 0))).toBeGreaterThan(1e-4);
  });

  // HF stores q/k rows permuted so rotate-half applies; undoing the permutation (rows of the first
  // rotaryDim dims of each head) and switching to 'normal' must give the same logits. This checks both
  // rope styles, partial rotary, q/k biases and q/k norm weights against each other.
  for (const name of ['phi3', 'qwen2', 'qwen3', 'llama3']) {
    test(`${name}: neox on HF rows = normal on llama.cpp rows`, () => {
      const m = load(name);
      const { headDim: D, hidden: C, rope } = m.config;
      const rot = rope.rotaryDim;
      const toNormal = (t: Float32Array, heads: number, cols: number) => {
        const out = t.slice();
        for (let h = 0; h < heads; h++) {
          for (let i = 0; i < rot / 2; i++) {
            for (let j = 0; j < 2; j++) {
              const src = h * D + j * (rot / 2) + i; // neox row
              const dst = h * D + 2 * i + j; // normal row
              out.set(t.subarray(src * cols, (src + 1) * cols), dst * cols);
            }
          }
        }
        return out;
      };
      const permuted = new Map(m.tensors);
      for (let l = 0; l < m.config.layers; l++) {
        for (const [n, heads, cols] of [
          ['attn_q.weight', m.config.heads, C],
          ['attn_k.weight', m.config.kvHeads, C],
          ['attn_q.bias', m.config.heads, 1],
          ['attn_k.bias', m.config.kvHeads, 1],
          ['attn_q_norm.weight', 1, 1],
          ['attn_k_norm.weight', 1, 1],
        ] as const) {
          const t = m.tensors.get(`blk.${l}.${n}`);
          if (t) permuted.set(`blk.${l}.${n}`, toNormal(t, heads, cols));
        }
      }
      if (name === 'phi3') expect(rot).toBe(D / 2);
      const normal = createReferenceModel({ ...m.config, rope: { ...rope, style: 'normal' } }, (n) => permuted.get(n));
      const a = modelOf(m).logitsAll(prompt, 0);
      const b = normal.logitsAll(prompt, 0);
      expect(maxAbsDiff(a, b)).toBeLessThan(1e-4);
      // And the wrong style on HF rows does change the result (the test is not vacuous).
      const wrong = createReferenceModel({ ...m.config, rope: { ...rope, style: 'normal' } }, (n) => m.tensors.get(n));
      expect(maxAbsDiff(a, wrong.logitsAll(prompt, 0))).toBeGreaterThan(1e-3);
    });
  }

  test('sliding window: with one layer, logits at p depend only on the last `window` tokens', () => {
    const m = load('mistral');
    const one: LlamaConfig = { ...m.config, layers: 1 };
    const a = createReferenceModel(one, (n) => m.tensors.get(n)).forward(prompt, 0);
    const changed = prompt.map((t, i) => (i < prompt.length - 4 ? (t + 1) % 128 : t));
    const b = createReferenceModel(one, (n) => m.tensors.get(n)).forward(changed, 0);
    expect(maxAbsDiff(a, b)).toBeLessThan(1e-5);
    const inWindow = prompt.map((t, i) => (i === prompt.length - 4 ? (t + 1) % 128 : t));
    const c = createReferenceModel(one, (n) => m.tensors.get(n)).forward(inWindow, 0);
    expect(maxAbsDiff(a, c)).toBeGreaterThan(1e-4);
    const full = createReferenceModel({ ...one, slidingWindow: null }, (n) => m.tensors.get(n)).forward(changed, 0);
    expect(maxAbsDiff(a, full)).toBeGreaterThan(1e-4);
  });

  test('the script is deterministic and the lite writer round-trips', () => {
    const again = mkdtempSync(join(tmpdir(), 'intab-fixtures-'));
    try {
      execFileSync(process.execPath, [join(REPO, 'scripts/make-fixtures.mjs'), again, '--seed', '7', '--only', 'phi3'], { stdio: 'pipe' });
      const a = readFileSync(join(dir, 'phi3/model.safetensors'));
      expect(readFileSync(join(again, 'phi3/model.safetensors')).equals(a)).toBe(true);
      const tensors = readSafetensors(new Uint8Array(a), 'phi3');
      const back = readSafetensors(writeSafetensors(tensors), 'rewritten');
      expect([...back.keys()]).toEqual([...tensors.keys()]);
      for (const [n, t] of tensors) expect(back.get(n)).toEqual(t);
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
  });
});

describe('fixtures.ts (in-memory builders)', () => {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'intab-fixtures-'));
    execFileSync(process.execPath, [join(REPO, 'scripts/make-fixtures.mjs'), dir, '--seed', '7'], { stdio: 'pipe' });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const rng = mulberry32(5);
  const prompt = Array.from({ length: 11 }, () => Math.floor(rng() * 128));

  test('fixtureFiles writes the CLI\'s bytes (config.json and model.safetensors) for every variant', () => {
    expect(FIXTURE_VARIANTS).toEqual(['llama', 'llama3', 'gelu', 'qwen2', 'qwen3', 'mistral', 'phi3', 'smollm3', 'gemma3']);
    for (const name of FIXTURE_VARIANTS) {
      const { configJson, safetensorsBytes } = fixtureFiles(name, 7);
      expect(configJson, name).toBe(readFileSync(join(dir, name, 'config.json'), 'utf8'));
      expect(Buffer.from(safetensorsBytes).equals(readFileSync(join(dir, name, 'model.safetensors'))), name).toBe(true);
    }
    // Another seed, other weights.
    expect(Buffer.from(fixtureFiles('llama', 8).safetensorsBytes).equals(Buffer.from(fixtureFiles('llama', 7).safetensorsBytes))).toBe(false);
  });

  test('fixtureWeights gives the loaded HF folder\'s config and canonical tensors', () => {
    for (const name of FIXTURE_VARIANTS) {
      const mem = fixtureWeights(name, 7);
      const disk = loadHf(join(dir, name));
      expect(mem.config, name).toEqual({ ...disk.config });
      expect([...mem.tensors.keys()].sort(), name).toEqual([...disk.tensors.keys()].sort());
      for (const [n, t] of disk.tensors) expect(mem.tensors.get(n), `${name} ${n}`).toEqual(t);
    }
  });

  // The GGUF layout of a variant is the same model: configs agree and the CPU reference gives the same
  // logits from llama.cpp's rows (permuted q/k under 'normal' rope, fused Phi-3 tensors) as from HF's.
  for (const name of FIXTURE_VARIANTS.filter((n) => n !== 'gelu' && n !== 'gemma3')) {
    test(`fixtureGguf(${name}): same config and logits as the HF layout`, () => {
      const hf = fixtureWeights(name, 7);
      const gguf = readGgufLite(fixtureGguf(name, 7), `${name}.gguf`);
      const config = configFromGguf(gguf.metadata, `${name}.gguf`, gguf.tensorInfos);
      const normal = name === 'llama' || name === 'llama3' || name === 'mistral' || name === 'smollm3';
      expect(config).toMatchObject({
        ...hf.config,
        rmsEps: expect.closeTo(hf.config.rmsEps, 12),
        rope: { ...hf.config.rope, style: normal ? 'normal' : 'neox' },
        eosIds: hf.config.eosIds.slice(0, 1),
      });
      const tensors = new Map([...gguf.tensors].map(([n, t]) => [n, t.data]));
      if (config.fusedProjections) {
        for (let l = 0; l < config.layers; l++) {
          const b = `blk.${l}.`;
          const qkv = { fused: 'qkv' as const, layer: l, parts: [`${b}attn_q.weight`, `${b}attn_k.weight`, `${b}attn_v.weight`] };
          const gateUp = { fused: 'gate_up' as const, layer: l, parts: [`${b}ffn_gate.weight`, `${b}ffn_up.weight`] };
          for (const [n, d] of [...splitFused(config, qkv, tensors.get(`${b}attn_qkv.weight`)!), ...splitFused(config, gateUp, tensors.get(`${b}ffn_up.weight`)!)]) tensors.set(n, d);
        }
      }
      const a = createReferenceModel(config, (n) => tensors.get(n)).logitsAll(prompt, 0);
      const b = createReferenceModel(hf.config, (n) => hf.tensors.get(n)).logitsAll(prompt, 0);
      expect(maxAbsDiff(a, b)).toBeLessThan(1e-4);
      if (normal) {
        // Without the permutation, the same file would be a different model (the permutation is needed).
        const unpermuted = createReferenceModel({ ...config, rope: { ...config.rope, style: 'normal' } }, (n) => hf.tensors.get(n));
        expect(maxAbsDiff(unpermuted.logitsAll(prompt, 0), b)).toBeGreaterThan(1e-3);
      }
    });
  }

  test('fixtureGguf rejects GeGLU (no GGUF spelling) and fixtureConfig unknown names', () => {
    expect(() => fixtureGguf('gelu')).toThrow(UnsupportedModelError);
    expect(() => fixtureGguf('gelu')).toThrow(/gelu\.gguf: hidden_act/);
    expect(() => fixtureGguf('gemma3')).toThrow(/gemma3\.gguf: general\.architecture/);
    expect(() => fixtureFiles('gpt2' as never)).toThrow(/unknown fixture variant 'gpt2'/);
  });
});

// ---- names and configs ----

describe('config errors name the file and the key', () => {
  const base = JSON.parse(readFileSync(join(STORIES, 'hf/config.json'), 'utf8'));
  const hfError = (patch: Record<string, unknown>) => {
    try {
      configFromHf({ ...base, ...patch }, 'cfg.json');
    } catch (e) {
      return e;
    }
    throw new Error('expected an error');
  };

  test('Hugging Face config.json', () => {
    expect(hfError({ model_type: 'gpt2' })).toMatchObject({ name: 'UnsupportedModelError', file: 'cfg.json', field: 'model_type', value: 'gpt2' });
    expect(hfError({ hidden_size: undefined })).toMatchObject({ name: 'ModelFormatError', field: 'hidden_size' });
    expect(hfError({ num_hidden_layers: 'five' })).toMatchObject({ name: 'ModelFormatError', field: 'num_hidden_layers' });
    expect(hfError({ num_key_value_heads: 3 })).toMatchObject({ name: 'ModelFormatError', field: 'num_key_value_heads' });
    expect(hfError({ rope_scaling: { rope_type: 'yarn', factor: 4 } })).toMatchObject({ name: 'UnsupportedModelError', field: 'rope_scaling.rope_type', value: 'yarn' });
    expect(hfError({ rope_scaling: { rope_type: 'llama3', factor: 8 } })).toMatchObject({ name: 'ModelFormatError', field: 'low_freq_factor' });
    expect(hfError({ hidden_act: 'relu' })).toMatchObject({ name: 'UnsupportedModelError', field: 'hidden_act' });
    expect(hfError({ eos_token_id: [2, -1] })).toMatchObject({ name: 'ModelFormatError', field: 'eos_token_id[1]' });
    expect(hfError({ attention_bias: true })).toMatchObject({ name: 'UnsupportedModelError', field: 'attention_bias' });
    expect(hfError({ mlp_bias: true })).toMatchObject({ name: 'UnsupportedModelError', field: 'mlp_bias' });
    expect(hfError({ model_type: 'qwen2', use_sliding_window: true })).toMatchObject({ name: 'UnsupportedModelError', field: 'use_sliding_window' });
    expect(() => configFromHf([], 'cfg.json')).toThrow(ModelFormatError);
    expect(String((hfError({ model_type: 'gpt2' }) as Error).message)).toMatch(/^cfg\.json: model_type = gpt2 is not supported/);
  });

  test('Hugging Face defaults and transformers-5 rope_parameters', () => {
    const c = configFromHf({ ...base, model_type: undefined, rope_theta: undefined, rope_parameters: { rope_type: 'default', rope_theta: 5e5 }, num_key_value_heads: undefined, head_dim: 16, tie_word_embeddings: undefined }, 'cfg.json');
    expect(c).toMatchObject({ arch: 'llama', kvHeads: 8, headDim: 16, tiedEmbeddings: false, rope: { theta: 5e5, style: 'neox', rotaryDim: 16 } });
    expect(configFromHf({ ...base, model_type: 'qwen2' }, 'c')).toMatchObject({ qkvBias: true, rmsEps: 1e-5 });
  });

  test('GGUF metadata', () => {
    const { metadata, tensorInfos } = readGgufLite(new Uint8Array(readFileSync(join(STORIES, 'stories260K.gguf'))), 'a.gguf');
    const ggufError = (patch: Record<string, unknown>, tensors = tensorInfos) => {
      try {
        configFromGguf({ ...metadata, ...patch }, 'a.gguf', tensors);
      } catch (e) {
        return e;
      }
      throw new Error('expected an error');
    };
    expect(ggufError({ 'general.architecture': 'gpt2' })).toMatchObject({ name: 'UnsupportedModelError', field: 'general.architecture', value: 'gpt2' });
    expect(ggufError({ 'general.architecture': undefined })).toMatchObject({ name: 'ModelFormatError', field: 'general.architecture' });
    expect(ggufError({ 'llama.block_count': undefined })).toMatchObject({ name: 'ModelFormatError', field: 'llama.block_count' });
    expect(ggufError({ 'llama.attention.layer_norm_rms_epsilon': 'x' })).toMatchObject({ name: 'ModelFormatError', field: 'llama.attention.layer_norm_rms_epsilon' });
    expect(ggufError({ 'llama.expert_count': 8 })).toMatchObject({ name: 'UnsupportedModelError', field: 'llama.expert_count' });
    expect(ggufError({ 'llama.rope.scaling.type': 'yarn' })).toMatchObject({ name: 'UnsupportedModelError', field: 'llama.rope.scaling.type' });
    expect(ggufError({ 'llama.vocab_size': undefined }, [])).toMatchObject({ name: 'ModelFormatError', field: 'token_embd.weight' });
    expect(ggufError({ 'llama.vocab_size': undefined }, [])).toBeInstanceOf(ModelFormatError);
    expect(configFromGguf({ ...metadata, 'llama.vocab_size': undefined }, 'a.gguf', tensorInfos).vocab).toBe(512);
    expect(ggufError({ 'general.architecture': 'gpt2' })).toBeInstanceOf(UnsupportedModelError);

    // Rope style follows llama.cpp's NEOX list; bigint values (u64) are accepted; tensors decide the flags.
    const qwen: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(metadata)) qwen[k.replace(/^llama\./, 'qwen2.')] = v;
    qwen['general.architecture'] = 'qwen2';
    qwen['qwen2.block_count'] = 5n;
    qwen['tokenizer.ggml.tokens'] = new Array(512).fill('x');
    const withBias = [...tensorInfos, { name: 'blk.0.attn_q.bias', shape: [64] }, { name: 'output.weight', shape: [512, 64] }];
    expect(configFromGguf(qwen, 'q.gguf', withBias)).toMatchObject({ arch: 'qwen2', layers: 5, vocab: 512, qkvBias: true, tiedEmbeddings: false, rope: { style: 'neox' } });
    expect(configFromGguf(qwen, 'q.gguf')).toMatchObject({ qkvBias: true, qkNorm: false, rope: { style: 'neox' } });
    expect(configFromGguf({ ...metadata, 'general.architecture': 'mistral', ...Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k.replace(/^llama\./, 'mistral.'), v])) }, 'm.gguf', tensorInfos).rope.style).toBe('normal');
  });
});
