// CPU twins of the Gated DeltaNet primitives (Qwen3.5's linear-attention layers): the short causal depthwise conv1d
// over the q|k|v channels, and the gated delta rule over a recurrent state per value head. Plain loops, float64 sums,
// f32 storage (as the GPU keeps the state). The WGSL kernels (decode step, chunked prefill) are tested against these.
//
// Math, as llama.cpp runs it (src/models/qwen35.cpp build_layer_attn_linear, src/models/delta-net-base.cpp
// build_delta_net_autoregressive, ggml-cpu gated_delta_net) and as transformers' torch_recurrent_gated_delta_rule:
//
//   conv1d   y[t, c] = silu( Σ_{j<K} w[c, j] · xp[t + j, c] ),  xp = [state (K−1 rows, oldest first) ; x (T rows)]
//            (w is ssm_conv1d: (channels, K) row-major, w[c, K−1] weighs the current token; ggml_ssm_conv + silu)
//            state ← the last K−1 rows of xp (the inputs, not the outputs)
//   step     per value head h (k head h mod Hk: llama.cpp's tiled broadcast, ggml_repeat / `iq1 = iv1 % neq1`),
//            S_h is a (Dk × Dv) matrix, stored (Hv, Dk, Dv) row-major (S[h][i][j], i over keys, j over values):
//              S ← exp(g_h) · S                       (decay first)
//              u = β_h · (v_h − Sᵀ k)                 (the delta: what the decayed memory misses of v)
//              S ← S + k uᵀ                           (rank-1 write)
//              o_h = Sᵀ q                             (read-out from the UPDATED state)
//            q and k arrive l2-normalised (x / max(‖x‖, eps), ggml_l2_norm), q already scaled by 1/√Dk; g ≤ 0 is the
//            log decay (g = ssm_a · softplus(alpha + dt_bias), ssm_a = −exp(A_log)); β = sigmoid(b).
//   sequence the step for t = 0..T−1 in order: the definition any chunked prefill must equal.
//
// Signatures follow the brief, plus one optional trailing `kHeads` (Hk ≤ Hv, Hv % Hk == 0): q and k may be given per
// key head, (Hk, Dk), and value head h reads key head h % Hk, so a kernel needs no tiled copy. Default Hk = Hv.
// Note llama.cpp stores its state transposed ([Hv][Dv][Dk], ne0 = Dk); here it is (Hv, Dk, Dv) so that a GPU
// invocation owning value column j reads S[h][i][j] with neighbours at neighbouring addresses.

import { ShapeError } from '../errors.ts';
import { silu } from './elementwise.ts';

function expectLength(kernel: string, name: string, a: ArrayLike<number>, n: number, shape: string): void {
  if (a.length !== n) throw new ShapeError(kernel, name, `${n} values ${shape}`, `${a.length} values`);
}

/** The delta rule's arguments for T tokens (token-major): ShapeError naming the first that is the wrong size. */
function checkDelta(kernel: string, a: Record<'S' | 'q' | 'k' | 'v' | 'g' | 'beta', Float32Array>, T: number, Hv: number, Dk: number, Dv: number, kHeads: number): void {
  if (!Number.isInteger(kHeads) || kHeads < 1 || Hv % kHeads !== 0) {
    throw new ShapeError(kernel, 'kHeads', `a divisor of the value head count ${Hv}`, String(kHeads));
  }
  const t = T === 1 ? '' : `T ${T}, `;
  expectLength(kernel, 'S', a.S, Hv * Dk * Dv, `(Hv ${Hv}, Dk ${Dk}, Dv ${Dv})`);
  for (const name of ['q', 'k'] as const) expectLength(kernel, name, a[name], T * kHeads * Dk, `(${t}Hk ${kHeads}, Dk ${Dk})`);
  expectLength(kernel, 'v', a.v, T * Hv * Dv, `(${t}Hv ${Hv}, Dv ${Dv})`);
  for (const name of ['g', 'beta'] as const) expectLength(kernel, name, a[name], T * Hv, `(${t}Hv ${Hv})`);
}

/**
 * Causal depthwise conv1d with a carried state, then SiLU: y[t, c] = silu(Σ_j w[c, j] · xp[t + j, c]), where xp is the
 * state's K−1 rows followed by x. `state` is updated in place to the last K−1 rows of xp (the raw inputs).
 * @example
 * const state = new Float32Array((K - 1) * C); // zeros: a fresh sequence
 * const y = causalConv1d(x, state, weight, T, C, K); // (T, C)
 */
export function causalConv1d(
  x: Float32Array, // (T, channels)
  state: Float32Array, // (K−1, channels), oldest first; updated in place
  weight: Float32Array, // (channels, K), as llama.cpp stores ssm_conv1d
  T: number,
  channels: number,
  K: number,
): Float32Array {
  const kernel = 'causal-conv1d';
  expectLength(kernel, 'x', x, T * channels, `(T ${T}, channels ${channels})`);
  expectLength(kernel, 'state', state, (K - 1) * channels, `(K−1 ${K - 1}, channels ${channels})`);
  expectLength(kernel, 'weight', weight, channels * K, `(channels ${channels}, K ${K})`);
  const P = K - 1;
  const at = (r: number, c: number) => (r < P ? state[r * channels + c] : x[(r - P) * channels + c]); // xp[r, c]
  const y = new Float32Array(T * channels); // (T, channels)
  for (let t = 0; t < T; t++) {
    for (let c = 0; c < channels; c++) {
      let s = 0;
      for (let j = 0; j < K; j++) s += weight[c * K + j] * at(t + j, c);
      y[t * channels + c] = silu(s);
    }
  }
  // The new state: rows T..T+P−1 of xp (read before writing: when T < P they include old state rows).
  const next = new Float32Array(P * channels);
  for (let r = 0; r < P; r++) for (let c = 0; c < channels; c++) next[r * channels + c] = at(T + r, c);
  state.set(next);
  return y;
}

/**
 * One token of the gated delta rule for every value head: S ← exp(g)·S; u = β(v − Sᵀk); S ← S + k uᵀ; o = Sᵀq.
 * `S` (Hv, Dk, Dv) is updated in place; returns o (Hv, Dv). q and k are (Hv, Dk), or (kHeads, Dk) read by value head
 * h as head h % kHeads (llama.cpp's tiled order).
 * @example
 * const o = gatedDeltaStep(S, q, k, v, g, beta, Hv, Dk, Dv); // (Hv, Dv)
 */
export function gatedDeltaStep(
  S: Float32Array, // (Hv, Dk, Dv) state per value head, updated in place
  q: Float32Array, // (Hk, Dk) l2-normed, scaled by 1/√Dk
  k: Float32Array, // (Hk, Dk) l2-normed
  v: Float32Array, // (Hv, Dv)
  g: Float32Array, // (Hv) log decay (≤ 0)
  beta: Float32Array, // (Hv)
  Hv: number,
  Dk: number,
  Dv: number,
  kHeads = Hv,
  /** Which key head value head h reads: 'tiled' h % Hk (llama.cpp, GGUF), 'grouped' ⌊h / (Hv/Hk)⌋ (transformers). */
  order: 'tiled' | 'grouped' = 'tiled',
): Float32Array {
  checkDelta('gated-delta-step', { S, q, k, v, g, beta }, 1, Hv, Dk, Dv, kHeads);
  const o = new Float32Array(Hv * Dv); // (Hv, Dv)
  for (let h = 0; h < Hv; h++) {
    const s0 = h * Dk * Dv;
    const ko = (order === 'tiled' ? h % kHeads : Math.floor(h / (Hv / kHeads))) * Dk;
    const decay = Math.exp(g[h]);
    const b = beta[h];
    for (let j = 0; j < Dv; j++) {
      // Column j of S_h: decay, then the delta against v, then the read-out, all from f32 storage.
      let mem = 0;
      for (let i = 0; i < Dk; i++) {
        const idx = s0 + i * Dv + j;
        S[idx] = S[idx] * decay; // S ← exp(g)·S
        mem += S[idx] * k[ko + i]; // (Sᵀk)_j
      }
      const u = b * (v[h * Dv + j] - mem); // u_j = β(v_j − (Sᵀk)_j)
      let out = 0;
      for (let i = 0; i < Dk; i++) {
        const idx = s0 + i * Dv + j;
        S[idx] = S[idx] + k[ko + i] * u; // S ← S + k uᵀ
        out += S[idx] * q[ko + i]; // (Sᵀq)_j
      }
      o[h * Dv + j] = out;
    }
  }
  return o;
}

/**
 * T tokens of the gated delta rule in order (gatedDeltaStep for t = 0..T−1): the definition a chunked prefill must
 * equal. Token-major inputs; `S` is updated in place to the state after the last token; returns o (T, Hv, Dv).
 * @example
 * const o = gatedDeltaSequence(S, q, k, v, g, beta, T, Hv, Dk, Dv); // (T, Hv, Dv)
 */
export function gatedDeltaSequence(
  S: Float32Array, // (Hv, Dk, Dv), updated in place
  q: Float32Array, // (T, Hk, Dk)
  k: Float32Array, // (T, Hk, Dk)
  v: Float32Array, // (T, Hv, Dv)
  g: Float32Array, // (T, Hv)
  beta: Float32Array, // (T, Hv)
  T: number,
  Hv: number,
  Dk: number,
  Dv: number,
  kHeads = Hv,
  order: 'tiled' | 'grouped' = 'tiled',
): Float32Array {
  checkDelta('gated-delta-sequence', { S, q, k, v, g, beta }, T, Hv, Dk, Dv, kHeads);
  const o = new Float32Array(T * Hv * Dv);
  const qk = kHeads * Dk;
  for (let t = 0; t < T; t++) {
    const step = gatedDeltaStep(
      S,
      q.subarray(t * qk, (t + 1) * qk),
      k.subarray(t * qk, (t + 1) * qk),
      v.subarray(t * Hv * Dv, (t + 1) * Hv * Dv),
      g.subarray(t * Hv, (t + 1) * Hv),
      beta.subarray(t * Hv, (t + 1) * Hv),
      Hv,
      Dk,
      Dv,
      kHeads,
      order,
    );
    o.set(step, t * Hv * Dv);
  }
  return o;
}

/**
 * In place, each of `rows` rows of x (rows, D): x / max(‖x‖, eps), ggml_l2_norm's form (transformers: x·rsqrt(‖x‖² +
 * 1e-6); the two differ only for near-zero rows). Then × `scale` (1/√Dk for q).
 */
export function l2NormRows(x: Float32Array, rows: number, d: number, eps: number, scale = 1): Float32Array {
  expectLength('l2-norm', 'x', x, rows * d, `(rows ${rows}, D ${d})`);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += x[r * d + i] * x[r * d + i];
    const inv = scale / Math.max(Math.sqrt(ss), eps);
    for (let i = 0; i < d; i++) x[r * d + i] *= inv;
  }
  return x;
}

/**
 * The gated RMSNorm on the delta rule's output (Qwen3.5's linear_attn.norm, llama.cpp's ssm_norm with silu(z)):
 * y[r, i] = o[r, i] / sqrt(mean_i(o[r]²) + eps) · w[i] · silu(z[r, i]), over `rows` heads of D. Returns y.
 */
export function gatedRmsNorm(o: Float32Array, w: Float32Array, z: Float32Array, rows: number, d: number, eps: number): Float32Array {
  expectLength('gated-rmsnorm', 'o', o, rows * d, `(rows ${rows}, D ${d})`);
  expectLength('gated-rmsnorm', 'z', z, rows * d, `(rows ${rows}, D ${d})`);
  expectLength('gated-rmsnorm', 'w', w, d, `(D ${d})`);
  const y = new Float32Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let ss = 0;
    for (let i = 0; i < d; i++) ss += o[r * d + i] * o[r * d + i];
    const inv = 1 / Math.sqrt(ss / d + eps);
    for (let i = 0; i < d; i++) y[r * d + i] = o[r * d + i] * inv * w[i] * silu(z[r * d + i]);
  }
  return y;
}
