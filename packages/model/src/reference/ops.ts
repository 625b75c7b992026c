// The CPU reference's arithmetic, shared by the Llama-family forward (llama.ts), Qwen3.5's DeltaNet layers
// (deltanet.ts) and the BERT encoders (bert.ts): each op reads f32, accumulates in float64, writes f32. And how both
// forwards fetch their weights (tensorGetter).

import { ModelMismatchError } from '../errors.ts';

/**
 * A reference forward's weight fetch: `weights(name)` (which may throw or give nothing for a missing tensor) checked
 * to be there with `size` values (or a length `fits` accepts), else a ModelMismatchError naming `file` and the tensor.
 * @example
 * const get = tensorGetter((n) => tensors.get(n), 'model.gguf');
 * const norm = get('output_norm.weight', C);
 */
export function tensorGetter(weights: (name: string) => Float32Array | undefined, file: string): (name: string, size: number, fits?: (length: number) => boolean) => Float32Array {
  return (name, size, fits = (n) => n === size) => {
    let t: Float32Array | undefined;
    try {
      t = weights(name);
    } catch {
      t = undefined;
    }
    if (!t) throw new ModelMismatchError(file, name, `a tensor of ${size} values`, 'missing');
    if (!fits(t.length)) throw new ModelMismatchError(file, name, `${size} values`, `${t.length} values`);
    return t;
  };
}

/** out (N) = W (N, K) · x (K) [+ bias (N)] */
export function matvec(out: Float32Array, w: Float32Array, x: Float32Array, n: number, k: number, bias?: Float32Array): void {
  for (let i = 0; i < n; i++) {
    let s = 0;
    const row = i * k;
    for (let j = 0; j < k; j++) s += w[row + j] * x[j];
    out[i] = bias ? s + bias[i] : s;
  }
}

/** out[o..o+n) = x[o..o+n) / sqrt(mean(x²) + eps) * w */
export function rmsnorm(out: Float32Array, x: Float32Array, w: Float32Array, o: number, n: number, eps: number): void {
  let ss = 0;
  for (let i = 0; i < n; i++) ss += x[o + i] * x[o + i];
  const inv = 1 / Math.sqrt(ss / n + eps);
  for (let i = 0; i < n; i++) out[o + i] = x[o + i] * inv * w[i];
}

export const silu = (x: number) => x / (1 + Math.exp(-x));
export const geluTanh = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));


/**
 * out (T, N) = x (T, K) · W (N, K)ᵀ [+ bias (N)]: a float64 dot product per (row of x, row of W), four rows of x at a
 * time so each row of W is read once per four (the reference's hot loop: about twice as fast as one row at a time).
 */
export function linear(out: Float32Array, x: Float32Array, t: number, w: Float32Array, n: number, k: number, bias?: Float32Array): void {
  let r = 0;
  for (; r + 3 < t; r += 4) {
    const x0 = x.subarray(r * k, (r + 1) * k);
    const x1 = x.subarray((r + 1) * k, (r + 2) * k);
    const x2 = x.subarray((r + 2) * k, (r + 3) * k);
    const x3 = x.subarray((r + 3) * k, (r + 4) * k);
    for (let i = 0; i < n; i++) {
      const wi = w.subarray(i * k, (i + 1) * k);
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let j = 0; j < k; j++) {
        const wj = wi[j];
        s0 += wj * x0[j];
        s1 += wj * x1[j];
        s2 += wj * x2[j];
        s3 += wj * x3[j];
      }
      const b = bias ? bias[i] : 0;
      out[r * n + i] = s0 + b;
      out[(r + 1) * n + i] = s1 + b;
      out[(r + 2) * n + i] = s2 + b;
      out[(r + 3) * n + i] = s3 + b;
    }
  }
  for (; r < t; r++) matvec(out.subarray(r * n, (r + 1) * n), w, x.subarray(r * k, (r + 1) * k), n, k, bias);
}

/** out[o..o+n) = (x[o..o+n) − mean) / sqrt(var + eps) * w + b: LayerNorm (biased variance, as torch and ggml_norm). */
export function layernorm(out: Float32Array, x: Float32Array, w: Float32Array, b: Float32Array, o: number, n: number, eps: number): void {
  let mean = 0;
  for (let i = 0; i < n; i++) mean += x[o + i];
  mean /= n;
  let v = 0;
  for (let i = 0; i < n; i++) v += (x[o + i] - mean) ** 2;
  const inv = 1 / Math.sqrt(v / n + eps);
  for (let i = 0; i < n; i++) out[o + i] = (x[o + i] - mean) * inv * w[i] + b[i];
}

// erf to double precision and GELU with it: the kernels' CPU twins' (one implementation for both references).
export { erf, geluErf } from '@intab/gpu/reference';
