// CPU reference of the BERT encoders ('bert': all-MiniLM, bge; 'nomic-bert': nomic-embed-text), written like run.c:
// plain loops over packed sequences (all tokens of all sequences in one (T, C) array, none attending to another,
// positions restarting at 0 in each), float64 in every sum, f32 between ops. It is the twin the WebGPU encoder is tested
// against, and a CPU EncoderRunner for engine tests. The layer is post-norm:
//   x = LN(tok[id] + pos[p] + type[t])    (t = 0, or 1 from a pair's split; bert adds pos; nomic-bert rotates q and k)
//   x = LN(x + Wo·attn(Wq x, Wk x, Wv x) + bo)                           (bidirectional, 1/√D, softmax in float64)
//   x = LN(x + Wd·gelu_erf(Wu x + bu) + bd)     or   LN(x + Wd·(silu(Wg x) ⊙ Wu x))
// then pooling (mean over every token, [CLS]'s row, or the last row) and L2 normalisation as the config says; a
// reranker's head on the [CLS] row instead of normalisation: logits = Wout·tanh(Wcls x + bcls) + bout (llama.cpp's
// rank pooling).

import { ShapeError } from '@intab/gpu';
import { encoderFacts, type EncoderConfig } from '../encoder-config.ts';
import type { EncodeOptions, EncoderRunner } from '../encoder-runner.ts';
import type { WeightsFn } from './llama.ts';
import { geluErf, layernorm, linear, silu, tensorGetter } from './ops.ts';

/** A projection: W (N, K) and its bias (N) where the family has one. */
interface Linear {
  w: Float32Array;
  b?: Float32Array;
}

interface Norm {
  w: Float32Array; // (C)
  b: Float32Array; // (C)
}

interface EncoderLayerWeights {
  q: Linear; // (C, C)
  k: Linear; // (C, C)
  v: Linear; // (C, C)
  o: Linear; // (C, C)
  attnNorm: Norm; // attn_output_norm
  up: Linear; // (F, C)
  gate?: Linear; // (F, C), SwiGLU only
  down: Linear; // (C, F)
  outNorm: Norm; // layer_output_norm
}

/** The encoder's weights, fetched and size-checked once (loadEncoderWeights). */
export interface EncoderWeights {
  readonly config: EncoderConfig;
  readonly tokenEmbd: Float32Array; // (V, C)
  readonly typeEmbd?: Float32Array; // (typeVocab, C): row 0 is added to every token
  readonly posEmbd?: Float32Array; // (≥ maxPositions, C), absolute positions only
  readonly embdNorm: Norm;
  readonly layers: readonly EncoderLayerWeights[];
  /** A reranker's head: cls (C, C) + bias, then cls.output (outputs, C) + bias, as config.classifier has them. */
  readonly head?: { dense?: Linear; out?: Linear };
}

/**
 * Fetches every tensor the config needs by its canonical (llama.cpp) name, as f32, and checks its size; a missing or
 * misshapen tensor is a ModelMismatchError naming it.
 * @example
 * const weights = loadEncoderWeights(config, (name) => tensors.get(name));
 */
export function loadEncoderWeights(config: EncoderConfig, weights: WeightsFn, file = 'weights'): EncoderWeights {
  const { hidden: C, ffn: F } = config;
  const get = tensorGetter(weights, file);
  const lin = (name: string, n: number, k: number): Linear => ({ w: get(`${name}.weight`, n * k), ...(config.projectionBias ? { b: get(`${name}.bias`, n) } : {}) });
  const norm = (name: string): Norm => ({ w: get(`${name}.weight`, C), b: get(`${name}.bias`, C) });
  const layers: EncoderLayerWeights[] = [];
  for (let l = 0; l < config.layers; l++) {
    const b = `blk.${l}.`;
    layers.push({
      q: lin(`${b}attn_q`, C, C),
      k: lin(`${b}attn_k`, C, C),
      v: lin(`${b}attn_v`, C, C),
      o: lin(`${b}attn_output`, C, C),
      attnNorm: norm(`${b}attn_output_norm`),
      up: lin(`${b}ffn_up`, F, C),
      ...(config.activation === 'swiglu' ? { gate: lin(`${b}ffn_gate`, F, C) } : {}),
      down: lin(`${b}ffn_down`, C, F),
      outNorm: norm(`${b}layer_output_norm`),
    });
  }
  return {
    config,
    tokenEmbd: get('token_embd.weight', config.vocab * C),
    ...(config.typeVocab > 0 ? { typeEmbd: get('token_types.weight', config.typeVocab * C) } : {}),
    ...(config.absolutePositions ? { posEmbd: get('position_embd.weight', config.maxPositions * C, (n) => n >= config.maxPositions * C && n % C === 0) } : {}),
    embdNorm: norm('token_embd_norm'),
    layers,
    ...(config.classifier ? {
      head: {
        ...(config.classifier.dense ? { dense: { w: get('cls.weight', C * C), b: get('cls.bias', C) } } : {}),
        ...(config.classifier.outputs > 0 ? { out: { w: get('cls.output.weight', config.classifier.outputs * C), b: get('cls.output.bias', config.classifier.outputs) } } : {}),
      },
    } : {}),
  };
}

/**
 * Each token's type (segment) row: 0 before `typeSplits[b]`, 1 from it on, for a model with ≥ 2 types; checked.
 * @example
 * tokenTypes([[101, 7, 102, 9, 102]], [3], 2); // [Int32Array [0, 0, 0, 1, 1]]
 */
export function tokenTypes(sequences: readonly (readonly number[])[], typeSplits: readonly number[] | undefined, typeVocab: number, who = 'reference-bert'): Int32Array[] {
  if (typeSplits !== undefined && typeSplits.length !== sequences.length) throw new ShapeError(who, 'typeSplits', `one split per sequence (${sequences.length})`, `${typeSplits.length}`);
  return sequences.map((seq, b) => {
    const t = new Int32Array(seq.length);
    const split = typeSplits?.[b];
    if (split === undefined) return t;
    if (!Number.isInteger(split) || split < 0) throw new ShapeError(who, `typeSplits[${b}]`, 'a token index ≥ 0', String(split));
    if (typeVocab >= 2) for (let i = split; i < seq.length; i++) t[i] = 1;
    return t;
  });
}

/** What encodeReference returns for B sequences of T tokens in all. */
export interface EncodeResult {
  /** One vector per sequence, pooled and (config.normalize) L2-normalised: B × (C). */
  vectors: Float32Array[];
  /** The pooled vectors before normalisation: B × (C). */
  pooled: Float32Array[];
  /** The last layer's hidden states, packed: (T, C); sequence b owns rows starts[b] .. starts[b + 1]. */
  hidden: Float32Array;
  /** B + 1 row offsets into `hidden`. */
  starts: number[];
}

/** Rotates q or k rows (T, H, D) in place: neox pairs (i, i + rot/2) at each token's position (theta^(−2i/rot)). */
function rope(x: Float32Array, positions: Int32Array, heads: number, d: number, rot: number, theta: number): void {
  const half = rot / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / theta ** ((2 * i) / rot);
  for (let t = 0; t < positions.length; t++) {
    for (let i = 0; i < half; i++) {
      const a = positions[t] * inv[i];
      const c = Math.cos(a);
      const s = Math.sin(a);
      for (let h = 0; h < heads; h++) {
        const u = (t * heads + h) * d + i;
        const x0 = x[u];
        const x1 = x[u + half];
        x[u] = x0 * c - x1 * s;
        x[u + half] = x0 * s + x1 * c;
      }
    }
  }
}

/**
 * Encodes whole sequences (token ids, [CLS] ... [SEP] included as the tokenizer gives them) packed into one pass; every
 * sequence sees only itself, so the result is the same as encoding each alone, bit for bit.
 * @example
 * const { vectors } = encodeReference(weights, [tok.encode('a cat'), tok.encode('a dog sat')]);
 */
export function encodeReference(weights: EncoderWeights, sequences: readonly (readonly number[])[], options: EncodeOptions = {}): EncodeResult {
  const c = weights.config;
  const { hidden: C, heads: H, headDim: D, ffn: F, eps } = c;
  const B = sequences.length;
  if (B === 0) throw new ShapeError('reference-bert', 'sequences', 'at least one sequence', 'none');
  const starts = [0];
  sequences.forEach((seq, b) => {
    if (seq.length === 0) throw new ShapeError('reference-bert', `sequences[${b}]`, 'at least one token', 'empty');
    if (seq.length > c.maxPositions) throw new ShapeError('reference-bert', `sequences[${b}]`, `at most ${c.maxPositions} tokens (the model's positions)`, `${seq.length} tokens`);
    seq.forEach((id, i) => {
      if (!Number.isInteger(id) || id < 0 || id >= c.vocab) throw new ShapeError('reference-bert', `sequences[${b}][${i}]`, `an id in [0, ${c.vocab})`, String(id));
    });
    starts.push(starts[b] + seq.length);
  });
  const T = starts[B];
  const types = tokenTypes(sequences, options.typeSplits, c.typeVocab);
  const positions = new Int32Array(T); // each token's position within its own sequence
  for (let b = 0; b < B; b++) for (let i = starts[b]; i < starts[b + 1]; i++) positions[i] = i - starts[b];

  // ---- embeddings: x = LN(tok[id] + pos[p] + type[t]) ----
  const x = new Float32Array(T * C); // (T, C) residual stream
  for (let b = 0; b < B; b++) {
    sequences[b].forEach((id, i) => {
      const o = (starts[b] + i) * C;
      for (let j = 0; j < C; j++) {
        let v = weights.tokenEmbd[id * C + j];
        if (weights.typeEmbd) v += weights.typeEmbd[types[b][i] * C + j]; // type 0 ("sentence A") unless split
        if (weights.posEmbd) v += weights.posEmbd[i * C + j];
        x[o + j] = v;
      }
    });
  }
  for (let t = 0; t < T; t++) layernorm(x, x, weights.embdNorm.w, weights.embdNorm.b, t * C, C, eps);

  const q = new Float32Array(T * C); // (T, H, D)
  const k = new Float32Array(T * C);
  const v = new Float32Array(T * C);
  const att = new Float32Array(T * C); // (T, H, D), heads concatenated
  const proj = new Float32Array(T * C);
  const up = new Float32Array(T * F);
  const gate = c.activation === 'swiglu' ? new Float32Array(T * F) : undefined;
  const longest = Math.max(...sequences.map((s) => s.length));
  const scores = new Float64Array(longest);
  const scale = 1 / Math.sqrt(D);

  for (const w of weights.layers) {
    // ---- attention: every token of a sequence attends to every token of it ----
    linear(q, x, T, w.q.w, C, C, w.q.b); // q = Wq x (+ bq)
    linear(k, x, T, w.k.w, C, C, w.k.b); // k = Wk x (+ bk)
    linear(v, x, T, w.v.w, C, C, w.v.b); // v = Wv x (+ bv)
    if (c.rope) {
      rope(q, positions, H, D, c.rope.rotaryDim, c.rope.theta);
      rope(k, positions, H, D, c.rope.rotaryDim, c.rope.theta);
    }
    for (let b = 0; b < B; b++) {
      const s0 = starts[b];
      const S = starts[b + 1] - s0;
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < S; i++) {
          const qo = ((s0 + i) * H + h) * D;
          let max = -Infinity;
          for (let j = 0; j < S; j++) {
            const ko = ((s0 + j) * H + h) * D;
            let s = 0;
            for (let e = 0; e < D; e++) s += q[qo + e] * k[ko + e];
            scores[j] = s * scale; // score_j = q·k_j / √D
            if (scores[j] > max) max = scores[j];
          }
          let sum = 0;
          for (let j = 0; j < S; j++) sum += scores[j] = Math.exp(scores[j] - max); // softmax in float64
          for (let e = 0; e < D; e++) {
            let o = 0;
            for (let j = 0; j < S; j++) o += scores[j] * v[((s0 + j) * H + h) * D + e];
            att[qo + e] = o / sum; // att_h = Σ_j p_j v_j
          }
        }
      }
    }
    linear(proj, att, T, w.o.w, C, C, w.o.b); // a = Wo att (+ bo)
    for (let i = 0; i < T * C; i++) x[i] += proj[i];
    for (let t = 0; t < T; t++) layernorm(x, x, w.attnNorm.w, w.attnNorm.b, t * C, C, eps); // x = LN(x + a)

    // ---- feed-forward ----
    linear(up, x, T, w.up.w, F, C, w.up.b); // u = Wu x (+ bu)
    if (gate && w.gate) {
      linear(gate, x, T, w.gate.w, F, C, w.gate.b); // g = Wg x
      for (let i = 0; i < T * F; i++) up[i] = silu(gate[i]) * up[i]; // h = silu(g) ⊙ u
    } else for (let i = 0; i < T * F; i++) up[i] = geluErf(up[i]); // h = gelu_erf(u)
    linear(proj, up, T, w.down.w, C, F, w.down.b); // f = Wd h (+ bd)
    for (let i = 0; i < T * C; i++) x[i] += proj[i];
    for (let t = 0; t < T; t++) layernorm(x, x, w.outNorm.w, w.outNorm.b, t * C, C, eps); // x = LN(x + f)
  }

  // ---- pooling and normalisation ----
  const pooled: Float32Array[] = [];
  const vectors: Float32Array[] = [];
  for (let b = 0; b < B; b++) {
    const s0 = starts[b];
    const S = starts[b + 1] - s0;
    const p = new Float32Array(C);
    if (c.pooling === 'mean') {
      for (let j = 0; j < C; j++) {
        let s = 0;
        for (let i = 0; i < S; i++) s += x[(s0 + i) * C + j];
        p[j] = s / S;
      }
    } else p.set(x.subarray((s0 + (c.pooling === 'cls' ? 0 : S - 1)) * C, (s0 + (c.pooling === 'cls' ? 1 : S)) * C));
    pooled.push(p);
    if (weights.head) {
      vectors.push(classify(weights.head, p, C));
      continue;
    }
    if (!c.normalize) {
      vectors.push(p.slice());
      continue;
    }
    let ss = 0;
    for (let j = 0; j < C; j++) ss += p[j] * p[j];
    const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0; // an all-zero vector stays zero (llama.cpp's common_embd_normalize)
    vectors.push(p.map((e) => e * inv));
  }
  return { vectors, pooled, hidden: x, starts };
}

/** A reranker's head on one pooled [CLS] row: out · tanh(dense · x + b) + b_out (each step where the model has it). */
function classify(head: NonNullable<EncoderWeights['head']>, x: Float32Array, C: number): Float32Array {
  let h = x;
  if (head.dense) {
    h = new Float32Array(C);
    linear(h, x, 1, head.dense.w, C, C, head.dense.b);
    for (let j = 0; j < C; j++) h[j] = Math.tanh(h[j]);
  }
  if (!head.out) return h;
  const n = head.out.w.length / C;
  const logits = new Float32Array(n);
  linear(logits, h, 1, head.out.w, n, C, head.out.b);
  return logits;
}

/**
 * The CPU reference as an EncoderRunner (the engine's contract), for engine tests without a GPU: every encode() is one
 * packed pass of encodeReference.
 * @example
 * const runner = createReferenceEncoder(loadEncoderWeights(config, (n) => tensors.get(n)));
 * const [a, b] = await runner.encode([tok.encode('a cat'), tok.encode('a dog')]);
 */
export function createReferenceEncoder(weights: EncoderWeights, options: { maxTokensPerPass?: number; maxSequencesPerPass?: number } = {}): EncoderRunner {
  const c = weights.config;
  const bytes = [weights.tokenEmbd, weights.typeEmbd, weights.posEmbd, weights.embdNorm.w, weights.embdNorm.b,
    ...weights.layers.flatMap((l) => [l.q, l.k, l.v, l.o, l.up, l.gate, l.down].flatMap((p) => (p ? [p.w, p.b] : [])).concat([l.attnNorm.w, l.attnNorm.b, l.outNorm.w, l.outNorm.b])),
    ...[weights.head?.dense, weights.head?.out].flatMap((p) => (p ? [p.w, p.b] : []))]
    .reduce((n, a) => n + (a?.byteLength ?? 0), 0);
  let destroyed = false;
  const runner: EncoderRunner = {
    facts: encoderFacts(c),
    maxTokensPerPass: options.maxTokensPerPass ?? 4 * c.maxPositions,
    maxSequencesPerPass: options.maxSequencesPerPass ?? 64,
    weightBytes: bytes,
    async encode(sequences, options) {
      if (destroyed) throw new ShapeError('reference-bert', 'runner', 'a runner not yet destroyed', 'destroyed');
      const tokens = sequences.reduce((n, s) => n + s.length, 0);
      if (tokens > runner.maxTokensPerPass) throw new ShapeError('reference-bert', 'sequences', `at most ${runner.maxTokensPerPass} tokens in one pass`, `${tokens} tokens`);
      if (sequences.length > runner.maxSequencesPerPass) throw new ShapeError('reference-bert', 'sequences', `at most ${runner.maxSequencesPerPass} sequences in one pass`, `${sequences.length}`);
      return encodeReference(weights, sequences, options).vectors;
    },
    destroy() {
      destroyed = true;
    },
  };
  return runner;
}
