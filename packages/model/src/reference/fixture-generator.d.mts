// Types of fixture-generator.mjs (plain JavaScript so scripts/make-fixtures.mjs can import it under Node 20).

/** A config.json object as the generator writes it (Hugging Face keys). */
export type FixtureConfigJson = Record<string, unknown> & {
  model_type: string;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  vocab_size: number;
  head_dim?: number;
  tie_word_embeddings: boolean;
};

/** One generated tensor: row-major shape, outermost first, and its f32 values. */
export interface FixtureTensor {
  shape: number[];
  data: Float32Array;
}

export declare const VARIANTS: {
  readonly llama: Record<string, unknown>;
  readonly llama3: Record<string, unknown>;
  readonly gelu: Record<string, unknown>;
  readonly qwen2: Record<string, unknown>;
  readonly qwen3: Record<string, unknown>;
  readonly mistral: Record<string, unknown>;
  readonly phi3: Record<string, unknown>;
};

/** A generated variant's name. */
export type FixtureVariant = keyof typeof VARIANTS;

export declare const BASE_CONFIG: Readonly<Record<string, unknown>>;
export declare const FIXTURE_METADATA: { readonly format: string; readonly generator: string };

/** The full config.json object of a variant; RangeError for an unknown name. */
export declare function fixtureConfig(name: string): FixtureConfigJson;
/** The weight seed of a variant for a run seed (seed + 1000 * the variant's index). */
export declare function variantSeed(name: string, seed: number): number;
/** HF tensors of one config, drawn from `seed`, in generation order. */
export declare function makeTensors(config: FixtureConfigJson, seed: number): Map<string, FixtureTensor>;
/** The CLI's safetensors encoding (F32, sorted names, FIXTURE_METADATA). */
export declare function encodeSafetensors(tensors: Map<string, FixtureTensor>): Uint8Array;
