// lib/gelu-erf: GELU with erf, gelu(x) = x Φ(x) = 0.5 x (1 + erf(x / √2)), as BERT's "gelu" (Hugging Face's exact
// GELU), for the elementwise kernel (elementwise/gelu-erf.wgsl) and the GEMM epilogue (ACT 1 in matmul/gemm*.wgsl).
// WGSL has no erf. erfc(z), z ≥ 0, is Abramowitz & Stegun 7.1.26:
//   erfc(z) ≈ t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z²),  t = 1 / (1 + 0.3275911 z),
// whose error is at most 1.5e-7 (absolute) for every z. gelu takes 1 + erf(x/√2) as 2 - erfc for x ≥ 0 and as erfc(|x|/√2)
// itself for x < 0, so the negative tail is not the difference of two numbers near 1: |gelu error| ≤ 0.75e-7 |x|
// plus f32 rounding (≤ 1e-6 for |x| ≤ 13; past that the tail underflows to 0 and the positive side is x).
// No entry point; joined by the wrappers.

fn erfc_as(z: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.3275911 * z);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return poly * exp(-z * z);
}

fn gelu_erf(x: f32) -> f32 {
  let c = erfc_as(abs(x) * 0.7071067811865476);
  return 0.5 * x * select(c, 2.0 - c, x >= 0.0);
}
