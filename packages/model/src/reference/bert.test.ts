// The CPU reference encoder on tiny seeded models of both families: packed sequences give each sequence's vector
// exactly as encoding it alone (none sees another), order reaches the vector only through positions (absolute
// embeddings or RoPE: without them a mean-pooled vector is the same for any order of the tokens), erf is exact, inputs
// and weights are checked with typed errors, and the EncoderRunner face gives the same vectors. Against llama.cpp it is
// checked in packages/cli/src/embed-llamacpp.test.ts.

import { describe, expect, it } from 'vitest';
import { mulberry32, ShapeError } from '@intab/gpu';
import { randn } from '@intab/gpu/reference';
import type { EncoderConfig } from '../encoder-config.ts';
import { encoderTensorShapes } from '../encoder-load.ts';
import { ModelMismatchError } from '../errors.ts';
import { createReferenceEncoder, encodeReference, loadEncoderWeights, type EncoderWeights } from './bert.ts';
import { erf, geluErf, geluTanh } from './ops.ts';

const BASE = { hidden: 32, layers: 2, heads: 4, headDim: 8, ffn: 48, vocab: 50, eps: 1e-12, maxPositions: 24, typeVocab: 2, pooling: 'mean', normalize: true } as const;
const BERT: EncoderConfig = { ...BASE, arch: 'bert', absolutePositions: true, rope: null, activation: 'gelu', projectionBias: true };
const NOMIC: EncoderConfig = { ...BASE, arch: 'nomic-bert', absolutePositions: false, rope: { theta: 1000, rotaryDim: 8 }, activation: 'swiglu', projectionBias: false };

/** Seeded weights for every tensor the config reads (q and k large: attention that depends on where tokens sit). */
function tinyWeights(config: EncoderConfig, seed = 3): EncoderWeights {
  const rng = mulberry32(seed);
  const tensors = new Map<string, Float32Array>();
  for (const [name, shape] of encoderTensorShapes(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const std = shape.length === 1 ? 0.1 : name.includes('embd') || name.includes('token_types') ? 1 : (/attn_[qk]\./.test(name) ? 3 : 1) / Math.sqrt(shape[1]);
    const mean = /norm\.weight$/.test(name) ? 1 : 0;
    tensors.set(name, new Float32Array(n).map(() => mean + std * randn(rng)));
  }
  return loadEncoderWeights(config, (n) => tensors.get(n), 'tiny');
}

const SEQS = [[1, 7, 9, 2], [1, 30, 2], [1, 5, 6, 7, 8, 9, 10, 11, 12, 2], [1, 2]];

function thrown(fn: () => unknown): Error & { field?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

describe('erf and GELU', () => {
  it('erf to double precision, odd, and GELU near its tanh approximation', () => {
    // Values from the closed forms (erf(x) to 16 digits).
    for (const [x, want] of [[0.1, 0.1124629160182849], [0.5, 0.5204998778130465], [1, 0.8427007929497149], [2, 0.9953222650189527], [3, 0.9999779095030014], [4.5, 0.9999999998033839]]) {
      expect(Math.abs(erf(x) - want)).toBeLessThan(1e-14);
      expect(erf(-x)).toBe(-erf(x));
    }
    for (let x = -6; x <= 6; x += 0.25) expect(Math.abs(geluErf(x) - geluTanh(x))).toBeLessThan(1e-3);
  });
});

describe.each([['bert', BERT], ['nomic-bert', NOMIC]] as const)('the reference encoder: %s', (_, config) => {
  const weights = tinyWeights(config);

  it('packed sequences give, bit for bit, the vectors each gives alone', () => {
    const packed = encodeReference(weights, SEQS);
    expect(packed.starts).toEqual([0, 4, 7, 17, 19]);
    expect(packed.hidden).toHaveLength(19 * config.hidden);
    SEQS.forEach((s, i) => {
      const alone = encodeReference(weights, [s]);
      expect(alone.vectors[0]).toEqual(packed.vectors[i]);
      expect(alone.hidden).toEqual(packed.hidden.slice(packed.starts[i] * config.hidden, packed.starts[i + 1] * config.hidden));
    });
    // A neighbour's tokens do not reach a sequence.
    const other = encodeReference(weights, [SEQS[0], [1, 44, 45, 46, 2]]);
    expect(other.vectors[0]).toEqual(packed.vectors[0]);
    for (const v of packed.vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    expect(packed.vectors[0]).not.toEqual(packed.vectors[1]);
  });

  it('order reaches the vector through positions only', () => {
    const seq = [1, 5, 6, 7, 8, 2];
    const reversed = [...seq].reverse();
    const [a, b] = encodeReference(weights, [seq, reversed]).vectors;
    const gap = Math.max(...a.map((v, i) => Math.abs(v - b[i])));
    expect(gap).toBeGreaterThan(1e-3);
    // Without positions, attention and mean pooling are blind to order: the same vector up to summation order.
    const blind: EncoderWeights = { ...weights, posEmbd: undefined, config: { ...config, absolutePositions: false, rope: null } };
    const [c, d] = encodeReference(blind, [seq, reversed]).vectors;
    expect(Math.max(...c.map((v, i) => Math.abs(v - d[i])))).toBeLessThan(1e-6);
  });

  it('checks its inputs and its weights, naming what is wrong', () => {
    const cases: [readonly (readonly number[])[], string][] = [
      [[], 'sequences'],
      [[[1, 2], []], 'sequences[1]'],
      [[[1, 50]], 'sequences[0][1]'],
      [[[1, -1]], 'sequences[0][1]'],
      [[new Array(25).fill(1)], 'sequences[0]'],
    ];
    for (const [seqs, field] of cases) {
      const e = thrown(() => encodeReference(weights, seqs));
      expect(e).toBeInstanceOf(ShapeError);
      expect(e.message).toContain(field);
    }
    const missing = thrown(() => loadEncoderWeights(config, (n) => (n === 'blk.1.ffn_down.weight' ? undefined : new Float32Array(1)), 'model.gguf'));
    expect(missing).toBeInstanceOf(ModelMismatchError);
    const shapes = encoderTensorShapes(config);
    const short = thrown(() => loadEncoderWeights(config, (n) => new Float32Array((shapes.get(n) ?? [1]).reduce((a, b) => a * b, 1) - (n === 'blk.0.attn_output.weight' ? 1 : 0)), 'model.gguf'));
    expect([short.name, short.field]).toEqual(['ModelMismatchError', 'blk.0.attn_output.weight']);
  });

  it('as an EncoderRunner: the engine\'s contract, the same vectors, its limits', async () => {
    const runner = createReferenceEncoder(weights, { maxTokensPerPass: 20, maxSequencesPerPass: 3 });
    expect(runner.facts).toEqual({ arch: config.arch, layers: 2, hidden: 32, vocab: 50, contextLength: 24, dimensions: 32, pooling: 'mean', normalized: true, matryoshka: false });
    expect(runner.weightBytes).toBeGreaterThan(50 * 32 * 4);
    expect(await runner.encode(SEQS.slice(0, 3))).toEqual(encodeReference(weights, SEQS.slice(0, 3)).vectors);
    await expect(runner.encode(SEQS)).rejects.toThrow(ShapeError); // 4 sequences
    await expect(runner.encode([new Array(21).fill(1)])).rejects.toThrow(/at most 20 tokens/);
    runner.destroy();
    await expect(runner.encode([[1, 2]])).rejects.toThrow(ShapeError);
  });
});
