// rope: rotary position embedding, in place on q and k of a step's T tokens.
//   for each head row x (q: (T, H, D), k: (T, Hkv, D) f32) and pair i < ROT/2, with a = pos * inv_freq[i]:
//   (x[u], x[w]) <- (x[u] cos a - x[w] sin a, x[u] sin a + x[w] cos a)
//   NEOX = false ('normal', GGUF/llama.cpp): u = 2i, w = 2i + 1.  NEOX = true (Hugging Face rotate-half):
//   u = i, w = i + ROT/2. Dimensions >= ROT are untouched (partial rotary).
//   positions: (T) u32    freq: (ROT/2) vec2<u32>, inv_freq[i] / (2 pi) as a 64-bit fixed-point fraction
//   of a turn (hi, lo word), from the wrapper's float64 table (llama3 scaling already applied).
// Accuracy at large positions: the phase pos * freq mod 1 turn is computed exactly in integers (wrapping
// u32 math), reduced to an octant, and sin/cos come from polynomials on [-pi/4, pi/4], so the angle
// error stays ~1e-7 rad at position 32k and beyond instead of growing with pos as f32 pos * inv_freq would.
// One invocation rotates one pair of one head row of one token (linear id over T * (H + Hkv) * ROT/2).

override WG_SIZE: u32 = 64u;
override NEOX: bool = false;

struct Params {
  tokens: u32,    // T
  heads: u32,     // H
  kv_heads: u32,  // Hkv
  head_dim: u32,  // D
  half: u32,      // ROT / 2
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> q: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
@group(0) @binding(3) var<storage, read> positions: array<u32>;
@group(0) @binding(4) var<storage, read> freq: array<vec2<u32>>;

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

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let heads = p.heads + p.kv_heads;
  if (id >= p.tokens * heads * p.half) { return; }
  let i = id % p.half;
  let hr = (id / p.half) % heads;
  let t = id / (p.half * heads);
  let f = freq[i];
  let pos = positions[t];
  let sc = sin_cos_turns(pos * f.x + mul_hi(pos, f.y));
  var u = 2u * i;
  var w = u + 1u;
  if (NEOX) {
    u = i;
    w = i + p.half;
  }
  if (hr < p.heads) {
    let base = (t * p.heads + hr) * p.head_dim;
    let x0 = q[base + u];
    let x1 = q[base + w];
    q[base + u] = x0 * sc.y - x1 * sc.x;
    q[base + w] = x0 * sc.x + x1 * sc.y;
  } else {
    let base = (t * p.kv_heads + hr - p.heads) * p.head_dim;
    let x0 = k[base + u];
    let x1 = k[base + w];
    k[base + u] = x0 * sc.y - x1 * sc.x;
    k[base + w] = x0 * sc.x + x1 * sc.y;
  }
}
