// lib/rope-phase: sin and cos of a RoPE angle pos * inv_freq[i], exact at any position. The wrapper's table holds
// inv_freq[i] / (2 pi) as a 64-bit fixed-point fraction of a turn (hi, lo word), computed in float64 with the
// model's frequency scaling applied; the phase pos * freq mod 1 turn is computed exactly in integers (wrapping u32
// math), reduced to an octant, and sin/cos come from polynomials on [-pi/4, pi/4], so the angle error stays
// ~1e-7 rad at position 32k and beyond instead of growing with pos as f32 pos * inv_freq would.
// The table is a uniform RopeTable (up to 128 pairs: head dimensions up to 256) that the joining kernel declares as
// `rope_freq` at a binding of its own (rope-kv-append: 9, rope-encoder: 3).

struct RopeTable { turns: array<vec4<u32>, 64> }  // pair i: turns[i / 2].xy (even i) or .zw (odd i)

// High 32 bits of the 64-bit product a * b.
fn mul_hi(a: u32, b: u32) -> u32 {
  let al = a & 0xffffu;
  let ah = a >> 16u;
  let bl = b & 0xffffu;
  let bh = b >> 16u;
  let lh = al * bh;
  let cross = ((al * bl) >> 16u) + (lh & 0xffffu) + ah * bl;  // < 2^32, no overflow
  return ah * bh + (lh >> 16u) + (cross >> 16u);
}

// (sin, cos) of 2 pi * phase / 2^32.
fn sin_cos_turns(phase: u32) -> vec2<f32> {
  let quadrant = (phase + 0x20000000u) >> 30u;
  let r = bitcast<i32>(phase - (quadrant << 30u));       // in [-2^29, 2^29): |x| <= pi/4
  let x = f32(r) * 1.4629180792671596e-9;                // 2 pi / 2^32
  let x2 = x * x;
  let s = x * (1.0 + x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362880.0)))));
  let c = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24.0 + x2 * (-1.0 / 720.0 + x2 * (1.0 / 40320.0 + x2 * (-1.0 / 3628800.0)))));
  switch (quadrant & 3u) {
    case 0u: { return vec2<f32>(s, c); }
    case 1u: { return vec2<f32>(c, -s); }
    case 2u: { return vec2<f32>(-s, -c); }
    default: { return vec2<f32>(-c, s); }
  }
}

// (sin, cos) of pair i's angle at position pos.
fn rope_sin_cos(pos: u32, i: u32) -> vec2<f32> {
  let t = rope_freq.turns[i / 2u];
  let f = select(t.zw, t.xy, (i & 1u) == 0u);
  return sin_cos_turns(pos * f.x + mul_hi(pos, f.y));
}
