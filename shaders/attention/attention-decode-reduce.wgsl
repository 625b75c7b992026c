// attention-decode-reduce (flash-decoding, pass 2 of 2): merge the per-split partial softmax states.
//   M = max_s m_s,  L = sum_s l_s exp(m_s - M),  out[t,h,:] = sum_s o_s exp(m_s - M) / L
//   over splits lo / SPLIT .. ceil(ctx / SPLIT) - 1 of row (t, h), ctx = positions[t] + 1 (clamped as in
//   pass 1), lo = ctx - window when window > 0 and ctx > window, else 0 (the splits pass 1 wrote).
//   part: o (T, H, NS, D) f32, then from ml_offset (T, H, NS, 2) f32    positions: (T) u32
//   out: (T, H, D) f32
// One workgroup owns one (t, h) row; every invocation computes M and L (ns is small), then
// invocations stride over D.

override WG_SIZE: u32 = 64u;

struct Params {
  rows: u32,       // T * H
  heads: u32,      // H
  head_dim: u32,   // D
  split: u32,      // SPLIT
  splits: u32,     // NS
  ml_offset: u32,
  max_keys: u32,   // page-table columns * PAGE
  window: u32,     // sliding window, 0 = full causal (as in pass 1)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read> positions: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * nwg.x + wid.x;
  if (row >= p.rows) { return; }
  let t = row / p.heads;
  let ctx = min(min(positions[t] + 1u, p.max_keys), p.splits * p.split);
  let ns = (ctx + p.split - 1u) / p.split;
  let s0 = select(0u, ctx - p.window, p.window > 0u && ctx > p.window) / p.split;
  let ml = p.ml_offset + row * p.splits * 2u;
  var m = -3.0e38;
  for (var s = s0; s < ns; s++) { m = max(m, part[ml + 2u * s]); }
  var l = 0.0;
  for (var s = s0; s < ns; s++) { l += part[ml + 2u * s + 1u] * exp(part[ml + 2u * s] - m); }
  let inv = 1.0 / l;
  for (var d = lid; d < p.head_dim; d += WG_SIZE) {
    var acc = 0.0;
    for (var s = s0; s < ns; s++) {
      acc += part[(row * p.splits + s) * p.head_dim + d] * exp(part[ml + 2u * s] - m);
    }
    out[row * p.head_dim + d] = acc * inv;
  }
}
