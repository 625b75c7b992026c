// Qwen3.5's Gated DeltaNet layers in the CPU reference, one token at a time, with the recurrent state each linear
// layer carries between tokens (a conv state of the last K−1 q|k|v inputs, and a (Dk × Dv) state per value head).
// The math is llama.cpp's (src/models/qwen35.cpp build_layer_attn_linear) on llama.cpp's tensors (GGUF names and
// layouts, value heads in tiled order); the conv and the delta rule are @intab/gpu/reference's twins, so the WGSL
// kernels, this forward and llama.cpp are held to the one definition.

import { causalConv1d, gatedDeltaStep, gatedRmsNorm, l2NormRows } from '@intab/gpu/reference';
import type { LinearAttentionSpec, LlamaConfig } from '../config.ts';
import { matvec } from './ops.ts';

interface DeltaNetWeights {
  wQkv: Float32Array; // (2·Hk·Dk + Hv·Dv, C): q | k | v rows
  wGate: Float32Array; // (Hv·Dv, C): z, the output gate
  wBeta: Float32Array; // (Hv, C)
  wAlpha: Float32Array; // (Hv, C)
  conv: Float32Array; // (2·Hk·Dk + Hv·Dv, K)
  dtBias: Float32Array; // (Hv)
  ssmA: Float32Array; // (Hv): −exp(A_log)
  norm: Float32Array; // (Dv)
  wOut: Float32Array; // (C, Hv·Dv)
}

/** The DeltaNet layers of a model: their weights, their state, and one token's step. */
export interface DeltaNet {
  /** Runs layer `l` on xb (C) (the normed stream) for the next token, advancing its state; writes (C) into out. */
  step(l: number, xb: Float32Array, out: Float32Array): void;
  /** Zeroes every layer's state (a fresh sequence). */
  reset(): void;
}

/** softplus as ggml computes it: x past 20 is returned as is. */
const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * Fetches (size-checked by `get`) every DeltaNet layer's tensors and allocates its state.
 * @example
 * const deltaNet = createDeltaNet(config, config.linearAttention, get);
 * deltaNet.step(0, xb, proj); // x += proj
 */
export function createDeltaNet(config: LlamaConfig, spec: LinearAttentionSpec, get: (name: string, size: number) => Float32Array): DeltaNet {
  const { hidden: C, rmsEps: eps } = config;
  const { kHeads: Hk, vHeads: Hv, kDim: Dk, vDim: Dv, convKernel: K } = spec;
  const qkDim = Hk * Dk;
  const vDimAll = Hv * Dv;
  const channels = 2 * qkDim + vDimAll; // the conv runs over q | k | v
  const weights = new Map<number, DeltaNetWeights>();
  const convState = new Map<number, Float32Array>(); // (K−1, channels) per layer
  const ssmState = new Map<number, Float32Array>(); // (Hv, Dk, Dv) per layer
  for (const l of spec.layers) {
    const b = `blk.${l}.`;
    weights.set(l, {
      wQkv: get(`${b}attn_qkv.weight`, channels * C),
      wGate: get(`${b}attn_gate.weight`, vDimAll * C),
      wBeta: get(`${b}ssm_beta.weight`, Hv * C),
      wAlpha: get(`${b}ssm_alpha.weight`, Hv * C),
      conv: get(`${b}ssm_conv1d.weight`, channels * K),
      dtBias: get(`${b}ssm_dt.bias`, Hv),
      ssmA: get(`${b}ssm_a`, Hv),
      norm: get(`${b}ssm_norm.weight`, Dv),
      wOut: get(`${b}ssm_out.weight`, C * vDimAll),
    });
    convState.set(l, new Float32Array((K - 1) * channels));
    ssmState.set(l, new Float32Array(Hv * Dk * Dv));
  }

  // Scratch of one token.
  const mixed = new Float32Array(channels);
  const z = new Float32Array(vDimAll);
  const beta = new Float32Array(Hv);
  const g = new Float32Array(Hv);
  const scale = 1 / Math.sqrt(Dk);

  return {
    step(l, xb, out) {
      const w = weights.get(l);
      if (!w) throw new RangeError(`reference deltanet: layer ${l} is not a linear-attention layer (${spec.layers.join(', ')})`);
      matvec(mixed, w.wQkv, xb, channels, C); // q|k|v = Wqkv xb
      matvec(z, w.wGate, xb, vDimAll, C); // z = Wz xb
      matvec(beta, w.wBeta, xb, Hv, C);
      matvec(g, w.wAlpha, xb, Hv, C);
      for (let h = 0; h < Hv; h++) {
        beta[h] = sigmoid(beta[h]); // β = sigmoid(Wb xb)
        g[h] = w.ssmA[h] * softplus(g[h] + w.dtBias[h]); // g = −exp(A_log) · softplus(Wa xb + dt_bias) ≤ 0
      }
      const y = causalConv1d(mixed, convState.get(l)!, w.conv, 1, channels, K); // silu(conv1d) over the last K inputs
      const q = l2NormRows(y.slice(0, qkDim), Hk, Dk, eps, scale); // q / ‖q‖ / √Dk
      const k = l2NormRows(y.slice(qkDim, 2 * qkDim), Hk, Dk, eps); // k / ‖k‖
      const v = y.subarray(2 * qkDim);
      const o = gatedDeltaStep(ssmState.get(l)!, q, k, v, g, beta, Hv, Dk, Dv, Hk, spec.headOrder ?? 'tiled'); // value head h reads key head h % Hk (tiled)
      const gated = gatedRmsNorm(o, w.norm, z, Hv, Dv, eps); // rmsnorm(o_h) · w · silu(z_h)
      matvec(out, w.wOut, gated, C, vDimAll); // out = Wout · gated
    },
    reset() {
      for (const s of convState.values()) s.fill(0);
      for (const s of ssmState.values()) s.fill(0);
    },
  };
}
