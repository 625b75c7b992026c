// Hand-checkable cases for the Gated DeltaNet twins: the delta rule as an associative memory (write v under an
// orthonormal key, read it back), decay alone, the tiled k-head mapping, sequence = steps, and the conv state carry.
import { describe, expect, test } from 'vitest';
import { causalConv1d, gatedDeltaSequence, gatedDeltaStep, gatedRmsNorm, l2NormRows } from './gated-delta.ts';
import { randomF32 } from './random.ts';

const f32 = (...x: number[]) => Float32Array.from(x);
const close = (a: Float32Array, b: ArrayLike<number>, tol = 1e-6) => {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThan(tol);
};

describe('gated delta rule twin', () => {
  test('β = 1, g = 0: writing v under a unit key makes Sᵀk = v; the read-out is from the updated state', () => {
    const S = new Float32Array(1 * 2 * 3); // Hv 1, Dk 2, Dv 3
    const k = f32(1, 0);
    let o = gatedDeltaStep(S, f32(1, 0), k, f32(1, 2, 3), f32(0), f32(1), 1, 2, 3);
    close(o, [1, 2, 3]); // o = Sᵀq with q = k: the value just written
    // A second write under the same key replaces (delta rule), it does not add (plain linear attention would: 2v).
    o = gatedDeltaStep(S, f32(1, 0), k, f32(5, 5, 5), f32(0), f32(1), 1, 2, 3);
    close(o, [5, 5, 5]);
    // An orthogonal key reads nothing of it, and writing there leaves the first slot alone.
    o = gatedDeltaStep(S, f32(1, 0), f32(0, 1), f32(7, 8, 9), f32(0), f32(1), 1, 2, 3);
    close(o, [5, 5, 5]);
    close(S, [5, 5, 5, 7, 8, 9]);
  });

  test('β = 0: the state only decays, by exp(g) a token', () => {
    const S = f32(1, 2, 3, 4); // Hv 1, Dk 2, Dv 2
    const o = gatedDeltaStep(S, f32(1, 1), f32(1, 0), f32(9, 9), f32(Math.log(0.5)), f32(0), 1, 2, 2);
    close(S, [0.5, 1, 1.5, 2]);
    close(o, [2, 3]); // Sᵀq = column sums of the decayed state
  });

  test('decay applies before the delta: u = β(v − (e^g S)ᵀk)', () => {
    const S = f32(2); // Dk = Dv = 1
    const o = gatedDeltaStep(S, f32(1), f32(1), f32(3), f32(Math.log(0.5)), f32(0.5), 1, 1, 1);
    // e^g S = 1; u = 0.5 (3 − 1) = 1; S = 1 + 1 = 2; o = 2.
    close(S, [2]);
    close(o, [2]);
  });

  test('kHeads: value head h reads key head h % Hk (tiled), the same as an explicitly tiled q and k', () => {
    const [Hk, Hv, Dk, Dv, T] = [2, 6, 4, 3, 5];
    const q = l2NormRows(randomF32(T * Hk * Dk, 1), T * Hk, Dk, 1e-6, 0.5);
    const k = l2NormRows(randomF32(T * Hk * Dk, 2), T * Hk, Dk, 1e-6);
    const v = randomF32(T * Hv * Dv, 3);
    const g = randomF32(T * Hv, 4).map((x) => -Math.abs(x));
    const beta = randomF32(T * Hv, 5).map((x) => 1 / (1 + Math.exp(-x)));
    const tile = (x: Float32Array) => {
      const out = new Float32Array(T * Hv * Dk);
      for (let t = 0; t < T; t++) for (let h = 0; h < Hv; h++) out.set(x.subarray((t * Hk + (h % Hk)) * Dk, (t * Hk + (h % Hk) + 1) * Dk), (t * Hv + h) * Dk);
      return out;
    };
    const S1 = new Float32Array(Hv * Dk * Dv);
    const S2 = new Float32Array(Hv * Dk * Dv);
    const o1 = gatedDeltaSequence(S1, q, k, v, g, beta, T, Hv, Dk, Dv, Hk);
    const o2 = gatedDeltaSequence(S2, tile(q), tile(k), v, g, beta, T, Hv, Dk, Dv);
    expect(Array.from(o1)).toEqual(Array.from(o2));
    expect(Array.from(S1)).toEqual(Array.from(S2));
    // And the sequence is its steps, in order.
    const S3 = new Float32Array(Hv * Dk * Dv);
    for (let t = 0; t < T; t++) {
      const o = gatedDeltaStep(S3, q.subarray(t * Hk * Dk, (t + 1) * Hk * Dk), k.subarray(t * Hk * Dk, (t + 1) * Hk * Dk), v.subarray(t * Hv * Dv, (t + 1) * Hv * Dv), g.subarray(t * Hv, (t + 1) * Hv), beta.subarray(t * Hv, (t + 1) * Hv), Hv, Dk, Dv, Hk);
      expect(Array.from(o)).toEqual(Array.from(o1.subarray(t * Hv * Dv, (t + 1) * Hv * Dv)));
    }
    expect(() => gatedDeltaStep(S3, q, k, v, g, beta, Hv, Dk, Dv, 4)).toThrow(/kHeads/);
  });
});

describe('causal conv1d twin', () => {
  test('y[t, c] = silu(Σ_j w[c, j] x[t − K + 1 + j, c]) with zero history, w[c, K−1] on the current token', () => {
    const K = 3;
    const x = f32(1, 10, 2, 20, 3, 30); // (T 3, channels 2)
    const w = f32(0.1, 0.2, 0.3, 1, 0, 0); // channel 0: (0.1, 0.2, 0.3); channel 1: only the oldest tap
    const state = new Float32Array((K - 1) * 2);
    const y = causalConv1d(x, state, w, 3, 2, K);
    const silu = (s: number) => s / (1 + Math.exp(-s));
    close(y, [silu(0.3), silu(0), silu(0.2 + 0.6), silu(0), silu(0.1 + 0.4 + 0.9), silu(10)]);
    close(state, [2, 20, 3, 30]); // the last K−1 inputs
  });

  test('one call over T tokens equals T calls of one token (the state carries), and a short call keeps old rows', () => {
    const [T, C, K] = [7, 5, 4];
    const x = randomF32(T * C, 7);
    const w = randomF32(C * K, 8);
    const s1 = new Float32Array((K - 1) * C);
    const all = causalConv1d(x, s1, w, T, C, K);
    const s2 = new Float32Array((K - 1) * C);
    for (let t = 0; t < T; t++) close(causalConv1d(x.subarray(t * C, (t + 1) * C), s2, w, 1, C, K), all.subarray(t * C, (t + 1) * C));
    expect(Array.from(s2)).toEqual(Array.from(s1));
    const s3 = new Float32Array((K - 1) * C);
    causalConv1d(x.subarray(0, 5 * C), s3, w, 5, C, K);
    close(causalConv1d(x.subarray(5 * C), s3, w, 2, C, K), all.subarray(5 * C));
  });
});

describe('norms', () => {
  test('l2NormRows gives unit rows times scale; gatedRmsNorm multiplies by silu(z)', () => {
    const x = l2NormRows(f32(3, 4, 0, 0), 2, 2, 1e-6, 2);
    close(x, [1.2, 1.6, 0, 0]); // a zero row stays zero (divided by eps, not by 0)
    const y = gatedRmsNorm(f32(1, -1), f32(2, 3), f32(0, 2), 1, 2, 0);
    close(y, [0, -3 * (2 / (1 + Math.exp(-2)))], 1e-5); // rms of (1, −1) is 1; silu(0) = 0
  });
});
