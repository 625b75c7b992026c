// Random-weight Llama-family fixtures built in memory (no Node imports), so browser GPU tests and Node
// tests load the very models scripts/make-fixtures.mjs writes to disk: the Hugging Face files (config.json
// + F32 model.safetensors), the same weights as a llama.cpp-layout GGUF (q/k rows permuted as
// convert_hf_to_gguf does for normal-rope architectures), and canonical Float32Arrays for the CPU
// reference. The generator itself is fixture-generator.ts, shared with scripts/make-fixtures.mjs.

import {
  UnsupportedModelError,
  canonicalHfName,
  configFromHf,
  ggufTyped,
  writeGguf,
  writeSafetensors,
  type GgufWriteTensor,
  type GgufWriteValue,
  type LlamaConfig,
} from '@intab/model';
import { canonicalHfTensors } from '@intab/model/reference';
import { FIXTURE_METADATA, VARIANTS, fixtureConfig, makeTensors, variantSeed, type FixtureVariant } from './fixture-generator.ts';

export { VARIANTS, BASE_CONFIG, fixtureConfig, makeTensors, variantSeed } from './fixture-generator.ts';
export type { FixtureVariant, FixtureTensor, FixtureConfigJson } from './fixture-generator.ts';

/** Every variant name, in the generator's order. */
export const FIXTURE_VARIANTS = Object.keys(VARIANTS) as FixtureVariant[];

/** The CLI's default seed. */
const DEFAULT_SEED = 1234;

/** The weights of `variant` for run seed `seed` (the CLI's `--seed`), HF names, generation order. */
function generate(variant: FixtureVariant, seed: number) {
  const json = fixtureConfig(variant);
  return { json, tensors: makeTensors(json, variantSeed(variant, seed)) };
}

/** Little-endian bytes of f32 values (a copy). */
function f32Bytes(data: Float32Array): Uint8Array {
  const out = new Uint8Array(data.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < data.length; i++) view.setFloat32(4 * i, data[i], true);
  return out;
}

/**
 * The Hugging Face files of a variant, byte for byte what `node scripts/make-fixtures.mjs <dir> --seed
 * <seed>` writes into `<dir>/<variant>/`.
 * @example
 * const { configJson, safetensorsBytes } = fixtureFiles('qwen3', 7);
 * const model = await openHfFolder(new Map([['config.json', bytesSource('config.json', new TextEncoder().encode(configJson))],
 *   ['model.safetensors', bytesSource('model.safetensors', safetensorsBytes)]]));
 */
export function fixtureFiles(variant: FixtureVariant, seed = DEFAULT_SEED): { configJson: string; safetensorsBytes: Uint8Array } {
  const { json, tensors } = generate(variant, seed);
  const names = [...tensors.keys()].sort();
  const safetensorsBytes = writeSafetensors(
    names.map((name) => {
      const t = tensors.get(name)!;
      return { name, dtype: 'F32', shape: t.shape, data: f32Bytes(t.data) };
    }),
    { ...FIXTURE_METADATA },
  );
  return { configJson: JSON.stringify(json, null, 2) + '\n', safetensorsBytes };
}

/**
 * The variant's LlamaConfig (from its config.json) and its weights under canonical (GGUF) names, fused
 * Phi-3 projections split, for createReferenceModel.
 * @example
 * const { config, tensors } = fixtureWeights('mistral');
 * const ref = createReferenceModel(config, (n) => tensors.get(n));
 */
export function fixtureWeights(variant: FixtureVariant, seed = DEFAULT_SEED): { config: LlamaConfig; tensors: Map<string, Float32Array> } {
  const { json, tensors } = generate(variant, seed);
  const config = configFromHf(json, `${variant}/config.json`);
  return { config, tensors: canonicalHfTensors(config, tensors, `${variant}/model.safetensors`) };
}

/**
 * HF rows → llama.cpp rows for 'normal' (adjacent-pair) rope: within each head, the first rotaryDim rows
 * go from rotate-half order (j * rot/2 + i) to interleaved order (2i + j), as convert_hf_to_gguf's permute.
 * `cols` is 1 for a bias. Rows past rotaryDim stay in place.
 */
export function permuteToLlamaCpp(data: Float32Array, heads: number, headDim: number, rotaryDim: number, cols: number): Float32Array {
  const out = data.slice();
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < rotaryDim / 2; i++) {
      for (let j = 0; j < 2; j++) {
        const src = h * headDim + j * (rotaryDim / 2) + i;
        const dst = h * headDim + 2 * i + j;
        out.set(data.subarray(src * cols, (src + 1) * cols), dst * cols);
      }
    }
  }
  return out;
}

/**
 * The variant as a GGUF file in llama.cpp's layout: canonical tensor names, `<arch>.*` metadata, q/k rows
 * permuted for normal-rope architectures (llama, mistral, smollm3), Phi-3's fused attn_qkv and (2F, C) ffn_up kept
 * fused, llama3 scaling as `rope.scaling.*` keys, no tokenizer. All tensors F32. GeGLU has no GGUF
 * spelling here: 'gelu' throws UnsupportedModelError.
 * @example
 * const model = await openGguf(bytesSource('llama.gguf', fixtureGguf('llama')));
 */
export function fixtureGguf(variant: FixtureVariant, seed = DEFAULT_SEED): Uint8Array {
  const file = `${variant}.gguf`;
  const { json, tensors } = generate(variant, seed);
  const config = configFromHf(json, `${variant}/config.json`);
  if (config.arch === 'gemma3') {
    throw new UnsupportedModelError(file, 'general.architecture', 'gemma3', "llama.cpp's gemma3 fixes the local layers (five of six), their RoPE base and the attention scale, which this fixture sets otherwise; write it as Hugging Face files (fixtureFiles)");
  }
  if (config.activation !== 'silu') {
    throw new UnsupportedModelError(file, 'hidden_act', String(json.hidden_act), 'GGUF metadata has no activation key; write this variant as Hugging Face files (fixtureFiles)');
  }
  const a = config.arch;
  const normalRope = a === 'llama' || a === 'mistral' || a === 'smollm3'; // llama.cpp's non-NEOX architectures
  const md: [string, GgufWriteValue][] = [
    ['general.architecture', a],
    ['general.name', `intab fixture ${variant} seed ${seed}`],
    [`${a}.context_length`, config.maxContext],
    [`${a}.embedding_length`, config.hidden],
    [`${a}.block_count`, config.layers],
    [`${a}.feed_forward_length`, config.ffn],
    [`${a}.attention.head_count`, config.heads],
    [`${a}.attention.head_count_kv`, config.kvHeads],
    [`${a}.attention.key_length`, config.headDim],
    [`${a}.attention.value_length`, config.headDim],
    [`${a}.attention.layer_norm_rms_epsilon`, ggufTyped('f32', config.rmsEps)],
    [`${a}.rope.freq_base`, ggufTyped('f32', config.rope.theta)],
    [`${a}.rope.dimension_count`, config.rope.rotaryDim],
    [`${a}.vocab_size`, config.vocab],
  ];
  const s = config.rope.scaling;
  if (s?.type === 'linear') md.push([`${a}.rope.scaling.type`, s.type], [`${a}.rope.scaling.factor`, ggufTyped('f32', s.factor)]);
  else if (s) {
    md.push(
      [`${a}.rope.scaling.type`, s.type],
      [`${a}.rope.scaling.factor`, ggufTyped('f32', s.factor)],
      [`${a}.rope.scaling.low_freq_factor`, ggufTyped('f32', s.lowFreqFactor)],
      [`${a}.rope.scaling.high_freq_factor`, ggufTyped('f32', s.highFreqFactor)],
      [`${a}.rope.scaling.original_context_length`, s.originalMaxPositionEmbeddings],
    );
  }
  if (config.slidingWindow) md.push([`${a}.attention.sliding_window`, config.slidingWindow]);
  if (config.bosId !== null) md.push(['tokenizer.ggml.bos_token_id', config.bosId]);
  if (config.eosIds.length) md.push(['tokenizer.ggml.eos_token_id', config.eosIds[0]]);

  const { heads: H, kvHeads: Hkv, headDim: D, hidden: C } = config;
  const rot = config.rope.rotaryDim;
  const out: GgufWriteTensor[] = [];
  for (const [name, t] of tensors) {
    const c = canonicalHfName(name);
    if (c === null) continue;
    let canonical: string;
    let data = t.data;
    if (typeof c === 'string') {
      canonical = c;
      if (normalRope) {
        const m = /\.attn_([qk])\.(weight|bias)$/.exec(c);
        if (m) data = permuteToLlamaCpp(data, m[1] === 'q' ? H : Hkv, D, rot, m[2] === 'weight' ? C : 1);
      }
    } else {
      // llama.cpp keeps Phi-3's projections fused: attn_qkv, and ffn_up holding gate rows then up rows.
      canonical = c.fused === 'qkv' ? `blk.${c.layer}.attn_qkv.weight` : `blk.${c.layer}.ffn_up.weight`;
    }
    out.push({ name: canonical, type: 'f32', shape: t.shape, data: f32Bytes(data) });
  }
  return writeGguf({ metadata: md, tensors: out });
}
