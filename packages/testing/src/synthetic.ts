// Random-weight models with the real shapes of the models intab targets, written as GGUF, for decode
// benchmarks of sizes no real file is available for here, and encoders (embedding models: 'bert', 'nomic-bert') with a
// WordPiece vocabulary, checked against llama.cpp's embeddings. Weights are valid random blocks of the asked
// dtype (seeded: same seed, same bytes); norms are near 1 so activations stay in range. With a tokenizer,
// its vocabulary goes into the GGUF metadata (as convert_hf_to_gguf.py writes it) and the model's vocabulary
// becomes the tokenizer's size, so the file runs prompts as text and grammar-constrained requests. Qwen3.5 ('qwen35')
// is written with llama.cpp's Gated DeltaNet tensors and keys (llama_model_qwen35::load_arch_hparams / _tensors).

import { BLOCK, mulberry32, quantize, rowBytes, type WeightDtype } from '@intab/gpu';
import { randomWeights } from '@intab/gpu/reference';
import { ggufTyped, tokenizerToGgufMetadata, writeGguf, type GgufWriteTensor, type GgufWriteValue, type Tokenizer } from '@intab/model';

export interface SyntheticShape {
  hidden: number;
  ffn: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  ropeTheta: number;
  context: number;
  /**
   * GGUF architecture (default 'llama'); 'qwen3' adds the per-head q/k RMS norms; 'smollm3' is the llama layout, which
   * llama.cpp runs without RoPE on every fourth layer; 'gemma3' adds the q/k norms and the norms after attention and
   * the feed-forward (llama.cpp then scales the embedding by √C, runs GeGLU, and slides a window on five layers of six).
   */
  arch?: 'llama' | 'qwen3' | 'smollm3' | 'gemma3' | 'qwen35' | 'gemma-embedding';
  /**
   * gemma3: the local layers' window (gemma3.attention.sliding_window) [512]; 'gemma-embedding' (EmbeddingGemma: Gemma
   * 3's layer, attending both ways) has the same tensors and keys, and llama.cpp makes its window symmetric.
   */
  window?: number;
  /**
   * An embedding model (a decoder trained to embed): its GGUF pooling_type (1 mean, 2 cls, 3 last: llama_pooling_type).
   * Its matrices are then written with every row its own (token_embd too), so tokens and heads all differ.
   */
  pooling?: 1 | 2 | 3;
  /**
   * gemma-embedding: the width of the two projections after pooling (sentence-transformers' 2_Dense (N, C) and 3_Dense
   * (C, N), no bias; llama.cpp's dense_2 / dense_3 and their feat_in / feat_out keys).
   */
  dense?: number;
  /** Rotated dimensions of each head (rope.dimension_count) [headDim]; qwen35 rotates a quarter. */
  rotaryDim?: number;
  /**
   * qwen35: the Gated DeltaNet layers: all but every `interval`-th (full_attention_interval, counting from 1), with Hk
   * key heads and Hv value heads of D dimensions (llama.cpp needs key and value heads equally wide) and a conv of K taps.
   */
  linear?: { interval: number; convKernel: number; kHeads: number; vHeads: number; headDim: number };
}

export interface SyntheticOptions {
  /**
   * A tokenizer to embed (tokenizer.ggml.*, chat template): the model's vocabulary is then its vocabSize, not the
   * shape's (the rows of token_embd are the vocabulary; no dtype constrains their count, only the row length).
   */
  tokenizer?: Tokenizer;
  /**
   * q and k weights this many times larger than the others [1]: sharp attention, so that where a key sits matters
   * (tests of what a family does to positions; with the default, attention is near uniform and RoPE barely shows).
   */
  qkScale?: number;
  /** Metadata written over what the shape and tokenizer give (a converter's special-token fix-ups, e.g. an eot id). */
  metadata?: Record<string, GgufWriteValue>;
}

/** Shapes from each model's config.json. */
export const SYNTHETIC_SHAPES: Readonly<Record<string, SyntheticShape>> = {
  'smollm2-135m': { hidden: 576, ffn: 1536, layers: 30, heads: 9, kvHeads: 3, headDim: 64, vocab: 49152, ropeTheta: 100000, context: 8192 },
  'smollm2-360m': { hidden: 960, ffn: 2560, layers: 32, heads: 15, kvHeads: 5, headDim: 64, vocab: 49152, ropeTheta: 100000, context: 8192 },
  'llama-3.2-1b': { hidden: 2048, ffn: 8192, layers: 16, heads: 32, kvHeads: 8, headDim: 64, vocab: 128256, ropeTheta: 500000, context: 131072 },
  // heads * headDim (2048) is twice hidden: q and o are not square.
  'qwen3-0.6b': { hidden: 1024, ffn: 3072, layers: 28, heads: 16, kvHeads: 8, headDim: 128, vocab: 151936, ropeTheta: 1000000, context: 40960, arch: 'qwen3' },
  'smollm3-3b': { hidden: 2048, ffn: 11008, layers: 36, heads: 16, kvHeads: 4, headDim: 128, vocab: 128256, ropeTheta: 5000000, context: 65536, arch: 'smollm3' },
  // One kv head of 256 dimensions, 4 query heads; every sixth layer global, the others a window of 512.
  'gemma3-270m': { hidden: 640, ffn: 2048, layers: 18, heads: 4, kvHeads: 1, headDim: 256, vocab: 262144, ropeTheta: 1000000, context: 32768, arch: 'gemma3', window: 512 },
  'gemma3-1b': { hidden: 1152, ffn: 6912, layers: 26, heads: 4, kvHeads: 1, headDim: 256, vocab: 262144, ropeTheta: 1000000, context: 32768, arch: 'gemma3', window: 512 },
  // Qwen/Qwen3.5-0.8B's text_config: three Gated DeltaNet layers (16 key and 16 value heads of 128) to one gated
  // attention layer (8 query heads of 256, 2 kv heads, a quarter of each head rotated, theta 1e7); tied embeddings.
  'qwen3.5-0.8b': {
    hidden: 1024, ffn: 3584, layers: 24, heads: 8, kvHeads: 2, headDim: 256, vocab: 248320, ropeTheta: 10000000, context: 262144, arch: 'qwen35',
    rotaryDim: 64, linear: { interval: 4, convKernel: 4, kHeads: 16, vHeads: 16, headDim: 128 },
  },
};

/**
 * Decoders trained to embed (make-model --like writes them with their real tokenizers; their GGUFs carry a pooling type,
 * and llama.cpp runs them in an embedding context, not a generating one), from each model's config.json.
 */
export const DECODER_EMBEDDING_SHAPES: Readonly<Record<string, SyntheticShape>> = {
  // Qwen/Qwen3-Embedding-0.6B: Qwen3-0.6B's layers (causal), the last token's state
  // (sentence-transformers' lasttoken pooling), context 32k.
  'qwen3-embedding-0.6b': { hidden: 1024, ffn: 3072, layers: 28, heads: 16, kvHeads: 8, headDim: 128, vocab: 151669, ropeTheta: 1000000, context: 32768, arch: 'qwen3', pooling: 3 },
  // google/embeddinggemma-300m: Gemma 3's layers attending both ways (a window of 512 on five layers of six), mean
  // pooling, then 768 → 3072 → 768 projections; 2048 positions.
  'embeddinggemma-300m': { hidden: 768, ffn: 1152, layers: 24, heads: 3, kvHeads: 1, headDim: 256, vocab: 262144, ropeTheta: 1000000, context: 2048, arch: 'gemma-embedding', window: 512, pooling: 1, dense: 3072 },
};

/**
 * llama.cpp's qwen35.rope.dimension_sections for `rotaryDim`: the rotary pairs split between the text, height and
 * width positions as its interleaved rope reads them (pair i takes section i mod 3), so that every pair is covered:
 * [11, 11, 10, 0] for Qwen3.5's 64. For text all three are the token's position (plain neox rope).
 */
export function ropeSections(rotaryDim: number): number[] {
  const n = rotaryDim / 2;
  return [Math.ceil(n / 3), Math.floor((n + 1) / 3), Math.floor(n / 3), 0];
}

/**
 * A GGUF (the shape's architecture, tied embeddings; no tokenizer unless options.tokenizer) of `shape` with every
 * matrix in `dtype`.
 * @example
 * const bytes = syntheticGguf(SYNTHETIC_SHAPES['smollm2-135m'], 'q4_0', 1);
 * const withVocab = syntheticGguf(SYNTHETIC_SHAPES['smollm2-135m'], 'q4_0', 1, { tokenizer: loadTokenizer(files) });
 */
export function syntheticGguf(shape: SyntheticShape, dtype: WeightDtype, seed: number, options: SyntheticOptions = {}): Uint8Array {
  const tok = options.tokenizer;
  const s: SyntheticShape = tok ? { ...shape, vocab: tok.vocabSize } : shape;
  const arch = s.arch ?? 'llama';
  const rng = mulberry32(seed);
  const mult = BLOCK[dtype].elems;
  const lin = arch === 'qwen35' ? s.linear : undefined;
  if (arch === 'qwen35' && !lin) throw new RangeError('a qwen35 shape needs its linear (Gated DeltaNet) widths');
  for (const k of [s.hidden, s.ffn, s.heads * s.headDim, ...(lin ? [lin.vHeads * lin.headDim] : [])]) {
    if (k % mult !== 0) throw new RangeError(`${dtype} needs K % ${mult} == 0; this shape has K = ${k}`);
  }
  // A few distinct random row blocks per matrix shape, repeated: generating ~100 MB of random blocks one
  // byte at a time would dominate; repetition does not change what a benchmark measures.
  // qwen35 at test sizes (≤ 64k values a matrix): every row its own (heads that repeat would hide a head-order mistake).
  // Embedding models (a pooling type): every row of every matrix its own, so that different texts embed far apart.
  const distinctRows = (name: string, n: number, k: number) => s.pooling !== undefined || (arch === 'qwen35' && name !== 'token_embd.weight' && n * k <= 1 << 16);
  const gemma = arch === 'gemma3' || arch === 'gemma-embedding';
  const matrix = (name: string, n: number, k: number, scale = 1): GgufWriteTensor => {
    const rb = rowBytes(dtype, k);
    if (distinctRows(name, n, k)) return { name, type: dtype, shape: [n, k], data: randomWeights(dtype, n, k, rng, 0.05 * scale) };
    const pattern = randomWeights(dtype, Math.min(n, 64), k, rng, 0.05 * scale);
    const data = new Uint8Array(n * rb);
    for (let r = 0; r < n; r += 64) data.set(pattern.subarray(0, Math.min(64, n - r) * rb), r * rb);
    return { name, type: dtype, shape: [n, k], data };
  };
  const norm = (name: string, n: number): GgufWriteTensor => {
    const v = new Float32Array(n).map(() => 1 + (rng() - 0.5) * 0.1);
    return { name, type: 'f32', shape: [n], data: new Uint8Array(v.buffer) };
  };
  const tensors: GgufWriteTensor[] = [matrix('token_embd.weight', s.vocab, s.hidden), norm('output_norm.weight', s.hidden)];
  const f32 = (name: string, shape: number[], value: () => number): GgufWriteTensor => {
    const v = new Float32Array(shape.reduce((a, b) => a * b, 1)).map(value);
    return { name, type: 'f32', shape, data: new Uint8Array(v.buffer) };
  };
  for (let i = 0; i < s.layers; i++) {
    const b = `blk.${i}.`;
    if (lin) {
      // Qwen3.5: a Gated DeltaNet layer, or gated attention every `interval`-th; post_attention_norm is the
      // feed-forward's input norm. The small tensors stay f32 (llama.cpp's quantizer keeps them so too).
      const { kHeads: Hk, vHeads: Hv, headDim: Dh, convKernel: K } = lin;
      const channels = 2 * Hk * Dh + Hv * Dh;
      tensors.push(norm(`${b}attn_norm.weight`, s.hidden));
      if ((i + 1) % lin.interval !== 0) {
        tensors.push(
          matrix(`${b}attn_qkv.weight`, channels, s.hidden),
          matrix(`${b}attn_gate.weight`, Hv * Dh, s.hidden),
          matrix(`${b}ssm_beta.weight`, Hv, s.hidden, 4),
          matrix(`${b}ssm_alpha.weight`, Hv, s.hidden, 4),
          f32(`${b}ssm_conv1d.weight`, [channels, K], () => (rng() - 0.5) * 2),
          f32(`${b}ssm_dt.bias`, [Hv], () => (rng() - 0.5) * 2),
          f32(`${b}ssm_a`, [Hv], () => -(0.2 + rng())), // −exp(A_log)
          norm(`${b}ssm_norm.weight`, Dh),
          matrix(`${b}ssm_out.weight`, s.hidden, Hv * Dh),
        );
      } else {
        tensors.push(
          matrix(`${b}attn_q.weight`, 2 * s.heads * s.headDim, s.hidden, options.qkScale), // each head's q, then its gate
          matrix(`${b}attn_k.weight`, s.kvHeads * s.headDim, s.hidden, options.qkScale),
          matrix(`${b}attn_v.weight`, s.kvHeads * s.headDim, s.hidden),
          matrix(`${b}attn_output.weight`, s.hidden, s.heads * s.headDim),
          norm(`${b}attn_q_norm.weight`, s.headDim),
          norm(`${b}attn_k_norm.weight`, s.headDim),
        );
      }
      tensors.push(
        norm(`${b}post_attention_norm.weight`, s.hidden),
        matrix(`${b}ffn_gate.weight`, s.ffn, s.hidden),
        matrix(`${b}ffn_up.weight`, s.ffn, s.hidden),
        matrix(`${b}ffn_down.weight`, s.hidden, s.ffn),
      );
      continue;
    }
    tensors.push(
      norm(`${b}attn_norm.weight`, s.hidden),
      matrix(`${b}attn_q.weight`, s.heads * s.headDim, s.hidden, options.qkScale),
      matrix(`${b}attn_k.weight`, s.kvHeads * s.headDim, s.hidden, options.qkScale),
      matrix(`${b}attn_v.weight`, s.kvHeads * s.headDim, s.hidden),
      matrix(`${b}attn_output.weight`, s.hidden, s.heads * s.headDim),
      norm(`${b}ffn_norm.weight`, s.hidden),
      matrix(`${b}ffn_gate.weight`, s.ffn, s.hidden),
      matrix(`${b}ffn_up.weight`, s.ffn, s.hidden),
      matrix(`${b}ffn_down.weight`, s.hidden, s.ffn),
    );
    if (arch === 'qwen3' || gemma) tensors.push(norm(`${b}attn_q_norm.weight`, s.headDim), norm(`${b}attn_k_norm.weight`, s.headDim));
    if (gemma) tensors.push(norm(`${b}post_attention_norm.weight`, s.hidden), norm(`${b}post_ffw_norm.weight`, s.hidden));
  }
  // EmbeddingGemma's projections after pooling: dense_2 (N, C), then dense_3 (C, N), at N(0, 1/K)-like scale.
  if (s.dense) tensors.push(matrix('dense_2.weight', s.dense, s.hidden, 0.6), matrix('dense_3.weight', s.hidden, s.dense, 0.3));
  const p = `${arch}.`;
  const metadata: Record<string, GgufWriteValue> = {
    'general.architecture': arch,
    'general.name': `synthetic ${dtype} seed ${seed}`,
    [`${p}context_length`]: s.context,
    [`${p}embedding_length`]: s.hidden,
    [`${p}feed_forward_length`]: s.ffn,
    [`${p}block_count`]: s.layers,
    [`${p}attention.head_count`]: s.heads,
    [`${p}attention.head_count_kv`]: s.kvHeads,
    [`${p}attention.key_length`]: s.headDim,
    [`${p}attention.value_length`]: s.headDim,
    [`${p}attention.layer_norm_rms_epsilon`]: arch === 'llama' ? 1e-5 : 1e-6,
    [`${p}rope.freq_base`]: s.ropeTheta,
    [`${p}rope.dimension_count`]: s.rotaryDim ?? s.headDim,
    [`${p}vocab_size`]: s.vocab,
    ...(gemma ? { [`${p}attention.sliding_window`]: s.window ?? 512 } : {}),
    ...(arch === 'gemma-embedding' ? { [`${p}rope.freq_base_swa`]: 10000 } : {}),
    // Cut below one period of five local layers to one global, a gemma-embedding file would have no global layer, and
    // llama.cpp asserts on the mask no layer reads: such a file says its pattern per layer, the last layer global.
    ...(arch === 'gemma-embedding' && s.layers < 6
      ? { [`${p}attention.sliding_window_pattern`]: ggufTyped('array', Array.from({ length: s.layers }, (_, i) => ggufTyped('bool', i < s.layers - 1)), 'bool') }
      : {}),
    ...(s.pooling !== undefined ? { [`${p}pooling_type`]: ggufTyped('u32', s.pooling) } : {}),
    ...(s.dense ? { [`${p}dense_2_feat_in`]: ggufTyped('u32', s.hidden), [`${p}dense_2_feat_out`]: ggufTyped('u32', s.dense), [`${p}dense_3_feat_in`]: ggufTyped('u32', s.dense), [`${p}dense_3_feat_out`]: ggufTyped('u32', s.hidden) } : {}),
    ...(lin
      ? {
          [`${p}rope.dimension_sections`]: ropeSections(s.rotaryDim ?? s.headDim), // i32, as gguf-keys.ts types it
          [`${p}ssm.conv_kernel`]: lin.convKernel,
          [`${p}ssm.state_size`]: lin.headDim,
          [`${p}ssm.group_count`]: lin.kHeads,
          [`${p}ssm.time_step_rank`]: lin.vHeads,
          [`${p}ssm.inner_size`]: lin.vHeads * lin.headDim,
          [`${p}full_attention_interval`]: lin.interval,
        }
      : {}),
    ...(tok ? tokenizerToGgufMetadata(tok) : {}),
    ...options.metadata,
  };
  return writeGguf({ metadata, tensors });
}

// ---- encoders (embedding models) ----

/**
 * An encoder's shape (the model's config.json): BERT's post-norm layer — 'bert' with absolute position and token-type
 * embeddings, biases on every projection and GELU; 'nomic-bert' with RoPE (neox, every dimension), one fused q|k|v
 * projection, SwiGLU and no projection biases. LayerNorms (with bias) after the embeddings and after each sublayer.
 */
export interface EncoderShape {
  arch: 'bert' | 'nomic-bert';
  hidden: number;
  ffn: number;
  layers: number;
  heads: number;
  /** The tokenizer's vocabulary (the rows of token_embd). */
  vocab: number;
  /** Trained context: bert's position_embd rows; nomic-bert's context_length. */
  context: number;
  /** Token-type (segment) rows, tokenizer.ggml.token_type_count. */
  typeVocab: number;
  /** LayerNorm epsilon. */
  eps: number;
  /** nomic-bert's RoPE base. */
  ropeTheta?: number;
  /** GGUF pooling_type: 1 mean, 2 cls, 3 last, 4 rank (llama_pooling_type; rank needs `head`). */
  pooling: 1 | 2 | 3 | 4;
  /**
   * A reranker's classification head (pooling 4), under llama.cpp's names: cls.weight/bias (C, C) — RoBERTa's
   * classifier.dense, BERT's pooler — when `dense`, then cls.output.weight/bias (outputs, C), RoBERTa's out_proj or
   * BERT's classifier; `<arch>.classifier.output_labels` names the outputs.
   */
  head?: { dense: boolean; outputs: number };
  /** tokenizer.ggml.add_sep_token: a pair is [CLS] q [SEP] [SEP] d [SEP] (RoBERTa's form, converted XLM-R rerankers). */
  pairSep?: boolean;
}

/** Encoder shapes from each model's config.json (and sentence-transformers' pooling). */
export const ENCODER_SHAPES: Readonly<Record<string, EncoderShape>> = {
  // sentence-transformers/all-MiniLM-L6-v2: bert-base-uncased's vocabulary, 6 layers of 384, mean pooling.
  'all-minilm-l6': { arch: 'bert', hidden: 384, ffn: 1536, layers: 6, heads: 12, vocab: 30522, context: 512, typeVocab: 2, eps: 1e-12, pooling: 1 },
  // nomic-ai/nomic-embed-text-v1.5: 12 layers of 768, RoPE base 1000, trained for 2048 positions (what llama.cpp's
  // converter writes for its n_positions 8192), mean pooling.
  'nomic-embed-v1.5': { arch: 'nomic-bert', hidden: 768, ffn: 3072, layers: 12, heads: 12, vocab: 30522, context: 2048, typeVocab: 2, eps: 1e-12, ropeTheta: 1000, pooling: 1 },
  // Rerankers (cross-encoders, pooling 4 = rank). BAAI/bge-reranker-base: XLMRobertaForSequenceClassification, 12 layers
  // of 768, one token type, LayerNorm eps 1e-5, 512 positions (514 less XLM-R's two pad offsets, as llama.cpp's
  // converter cuts them), RoBERTa's head (dense + tanh, out_proj to 1 logit), pairs as <s> q </s></s> d </s>. Its real
  // vocabulary is XLM-R's 250k SentencePiece; this one carries the WordPiece vocabulary intab's GGUF tokenizer reads,
  // with the RoBERTa pair form (add_sep_token).
  'bge-reranker-base': { arch: 'bert', hidden: 768, ffn: 3072, layers: 12, heads: 12, vocab: 30522, context: 512, typeVocab: 1, eps: 1e-5, pooling: 4, head: { dense: true, outputs: 1 }, pairSep: true },
  // cross-encoder/ms-marco-MiniLM-L-6-v2: BertForSequenceClassification on bert-base-uncased's vocabulary, 6 layers of
  // 384, two token types (the document is type 1), BERT's pooler (dense + tanh) then the classifier to 1 logit, pairs as
  // [CLS] q [SEP] d [SEP].
  'ms-marco-minilm-l6': { arch: 'bert', hidden: 384, ffn: 1536, layers: 6, heads: 12, vocab: 30522, context: 512, typeVocab: 2, eps: 1e-12, pooling: 4, head: { dense: true, outputs: 1 } },
};

/** What syntheticEncoderGguf embeds and how sharp attention is. */
export interface EncoderSyntheticOptions {
  /** The WordPiece tokenizer to embed (its size must be the shape's vocab): @intab/testing/wordpiece-vocab's. */
  tokenizer: Tokenizer;
  /** q and k weights this many times the others' scale [1.5]: attention that depends on which token sits where. */
  qkScale?: number;
}

/** `n` N(0, std²) values from `rng`, two per Box–Muller draw. */
function gaussians(n: number, rng: () => number, std: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = std * Math.sqrt(-2 * Math.log(Math.max(rng(), 1e-12)));
    const a = 2 * Math.PI * rng();
    out[i] = r * Math.cos(a);
    if (i + 1 < n) out[i + 1] = r * Math.sin(a);
  }
  return out;
}

/**
 * A GGUF of an encoder (llama.cpp's tensor names and keys for `bert` / `nomic-bert`, as convert_hf_to_gguf.py writes
 * them) with seeded weights: every row its own (no repeated blocks: heads and tokens all differ), matrices in `dtype`
 * (token_embd too), the position and token-type embeddings, norms and biases f32. Matrices are N(0, 1/K) (q and k
 * `qkScale` times that), embeddings N(0, 1) (positions and types N(0, ¼)), so activations stay near 1 through every
 * LayerNorm and the embeddings of different texts are far apart.
 * @example
 * const bytes = syntheticEncoderGguf(ENCODER_SHAPES['all-minilm-l6'], 'f32', 1, { tokenizer: loadTokenizer(wordPieceTokenizerFiles()) });
 */
export function syntheticEncoderGguf(shape: EncoderShape, dtype: WeightDtype, seed: number, options: EncoderSyntheticOptions): Uint8Array {
  const { tokenizer } = options;
  const s = shape;
  const C = s.hidden;
  const F = s.ffn;
  if (dtype === 'q4_K' || dtype === 'q6_K') throw new RangeError(`an encoder GGUF is written in f32, f16, bf16, q8_0 or q4_0, not ${dtype} (intab does not quantize to K-quants)`);
  const q = (x: Float32Array, n: number, k: number) => quantize(dtype, x, n, k);
  const mult = BLOCK[dtype].elems;
  if (tokenizer.kind !== 'wordpiece') throw new RangeError(`an encoder GGUF carries a WordPiece tokenizer; this one is ${tokenizer.kind}`);
  if (tokenizer.vocabSize !== s.vocab) throw new RangeError(`the shape's vocabulary is ${s.vocab} tokens but the tokenizer has ${tokenizer.vocabSize}`);
  if (C % s.heads !== 0) throw new RangeError(`${s.heads} heads do not divide the hidden size ${C}`);
  for (const k of [C, F]) if (k % mult !== 0) throw new RangeError(`${dtype} needs K % ${mult} == 0; this shape has K = ${k}`);
  if ((s.pooling === 4) !== (s.head !== undefined)) throw new RangeError('a rank model (pooling 4) has a classification head, and only a rank model has one');
  const rng = mulberry32(seed);
  const qk = options.qkScale ?? 1.5;
  const raw = (name: string, shape: number[], data: Float32Array): GgufWriteTensor => ({ name, type: 'f32', shape, data: new Uint8Array(data.buffer) });
  const matrix = (name: string, n: number, k: number, scale = 1): GgufWriteTensor =>
    ({ name, type: dtype, shape: [n, k], data: q(gaussians(n * k, rng, scale / Math.sqrt(k)), n, k) });
  const vector = (name: string, n: number, std: number, mean = 0) => raw(name, [n], gaussians(n, rng, std).map((v) => v + mean));
  const norm = (name: string): GgufWriteTensor[] => [vector(`${name}.weight`, C, 0.1, 1), vector(`${name}.bias`, C, 0.02)];
  const bert = s.arch === 'bert';
  const tensors: GgufWriteTensor[] = [
    { name: 'token_embd.weight', type: dtype, shape: [s.vocab, C], data: q(gaussians(s.vocab * C, rng, 1), s.vocab, C) },
    raw('token_types.weight', [s.typeVocab, C], gaussians(s.typeVocab * C, rng, 0.5)),
    ...(bert ? [raw('position_embd.weight', [s.context, C], gaussians(s.context * C, rng, 0.5))] : []),
    ...norm('token_embd_norm'),
  ];
  for (let i = 0; i < s.layers; i++) {
    const b = `blk.${i}.`;
    if (bert) {
      tensors.push(
        matrix(`${b}attn_q.weight`, C, C, qk), vector(`${b}attn_q.bias`, C, 0.1),
        matrix(`${b}attn_k.weight`, C, C, qk), vector(`${b}attn_k.bias`, C, 0.1),
        matrix(`${b}attn_v.weight`, C, C), vector(`${b}attn_v.bias`, C, 0.1),
        matrix(`${b}attn_output.weight`, C, C), vector(`${b}attn_output.bias`, C, 0.1),
        ...norm(`${b}attn_output_norm`),
        matrix(`${b}ffn_up.weight`, F, C), vector(`${b}ffn_up.bias`, F, 0.1),
        matrix(`${b}ffn_down.weight`, C, F), vector(`${b}ffn_down.bias`, C, 0.1),
        ...norm(`${b}layer_output_norm`),
      );
    } else {
      // q, k and v rows of one projection, in that order (nomic's Wqkv), q and k at their own scale.
      const qkv = new Float32Array(3 * C * C);
      qkv.set(gaussians(C * C, rng, qk / Math.sqrt(C)), 0);
      qkv.set(gaussians(C * C, rng, qk / Math.sqrt(C)), C * C);
      qkv.set(gaussians(C * C, rng, 1 / Math.sqrt(C)), 2 * C * C);
      tensors.push(
        { name: `${b}attn_qkv.weight`, type: dtype, shape: [3 * C, C], data: q(qkv, 3 * C, C) },
        matrix(`${b}attn_output.weight`, C, C),
        ...norm(`${b}attn_output_norm`),
        matrix(`${b}ffn_up.weight`, F, C),
        matrix(`${b}ffn_gate.weight`, F, C),
        matrix(`${b}ffn_down.weight`, C, F),
        ...norm(`${b}layer_output_norm`),
      );
    }
  }
  if (s.head) {
    // The head last, as the converter writes it; the output projection's logits spread over a few units so that
    // documents rank apart.
    if (s.head.dense) tensors.push(matrix('cls.weight', C, C), vector('cls.bias', C, 0.1));
    if (s.head.outputs > 0) tensors.push(raw('cls.output.weight', [s.head.outputs, C], gaussians(s.head.outputs * C, rng, 3 / Math.sqrt(C))), vector('cls.output.bias', s.head.outputs, 0.1));
  }
  const p = `${s.arch}.`;
  const metadata: Record<string, GgufWriteValue> = {
    'general.architecture': s.arch,
    'general.name': `synthetic ${s.arch} ${dtype} seed ${seed}`,
    [`${p}context_length`]: s.context,
    [`${p}embedding_length`]: C,
    [`${p}feed_forward_length`]: F,
    [`${p}block_count`]: s.layers,
    [`${p}attention.head_count`]: s.heads,
    [`${p}attention.layer_norm_epsilon`]: s.eps,
    [`${p}attention.causal`]: false,
    [`${p}pooling_type`]: s.pooling,
    ...(s.ropeTheta !== undefined ? { [`${p}rope.freq_base`]: s.ropeTheta } : {}),
    ...(s.head && s.head.outputs > 0 ? { [`${p}classifier.output_labels`]: Array.from({ length: s.head.outputs }, (_, i) => `LABEL_${i}`) } : {}),
    'tokenizer.ggml.token_type_count': s.typeVocab,
    ...tokenizerToGgufMetadata(tokenizer),
    ...(s.pairSep ? { 'tokenizer.ggml.add_sep_token': true } : {}),
  };
  return writeGguf({ metadata, tensors });
}
