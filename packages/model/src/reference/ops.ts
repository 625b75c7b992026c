// The CPU reference's arithmetic, shared by the Llama-family forward (llama.ts) and Qwen3.5's DeltaNet layers
// (deltanet.ts): each op reads f32, accumulates in float64, writes f32.

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

