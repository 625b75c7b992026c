// attention-encoder.rows (barrier-free): multi-head attention over packed sequences, the encoder's (no KV cache;
// bidirectional unless the reach says otherwise), one pass of online softmax:
//   out[t, h, :] = sum_{j in seq(t)} softmax_j(scale * q[t, h, :] . k[j, kvh, :]) v[j, kvh, :],  kvh = h / (H / Hkv)
// where seq(t) = [seq_starts[b], seq_starts[b + 1]) for t's sequence b (lib/packed-seqs.wgsl): many inputs of
// different lengths in one dispatch, none attending to another; within it, t sees keys j with t - before <= j <= t + after
// (lib/encoder-params.wgsl: every key by default, causal with after = 0, a symmetric window with before = after).
//   q, k, v: token rows at a stride and offset (lib/encoder-params.wgsl), f32 read as vec4
//   seq_starts: (B + 1) u32    out: (T, H, D) f32
// One invocation owns one (token, head), linear id t * H + h, and walks its sequence's keys alone, 4 at a time:
//   m = max_j s_j, l = sum_j exp(s_j - m), o = sum_j exp(s_j - m) v_j, rescaling o only when m rises.
// No workgroup memory and no barrier: the variant for software adapters (attention-encoder.wgsl stages K/V tiles in
// workgroup memory for GPUs). Keys past the sequence in the last group of 4 repeat its last key with probability 0.
// HEAD_DIM (D) is a multiple of 4, at most 256 (the private rows below).

override WG_SIZE: u32 = 8u;
override HEAD_DIM: u32 = 64u;

const NEG_BIG: f32 = -3.0e38;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> seq_starts: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;

var<private> row_q: array<vec4<f32>, 64>;  // (D / 4) the query, pre-multiplied by scale
var<private> row_o: array<vec4<f32>, 64>;  // (D / 4) unnormalized output

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let h = id % p.heads;
  let t = id / p.heads;
  if (t >= p.tokens) { return; }
  let d4 = HEAD_DIM / 4u;
  let b = seq_of(t, p.sequences);
  let r = reach_of(t, seq_starts[b], seq_starts[b + 1u]);
  let key0 = r.x;
  let key1 = r.y;
  let kvh = h / (p.heads / p.kv_heads);
  let q0 = (t * p.q_stride + p.q_off) / 4u + h * d4;
  for (var i = 0u; i < d4; i++) {
    row_q[i] = q[q0 + i] * p.scale;
    row_o[i] = vec4<f32>(0.0);
  }
  let k_base = p.k_off / 4u + kvh * d4;
  let v_base = p.v_off / 4u + kvh * d4;
  let ks = p.k_stride / 4u;
  let vs = p.v_stride / 4u;
  var m = NEG_BIG;
  var l = 0.0;
  let last = key1 - 1u;
  for (var j = key0; j < key1; j += 4u) {
    let j1 = min(j + 1u, last);
    let j2 = min(j + 2u, last);
    let j3 = min(j + 3u, last);
    var s = vec4<f32>(0.0);
    for (var i = 0u; i < d4; i++) {
      let qi = row_q[i];
      s += vec4<f32>(dot(qi, k[j * ks + k_base + i]), dot(qi, k[j1 * ks + k_base + i]),
                     dot(qi, k[j2 * ks + k_base + i]), dot(qi, k[j3 * ks + k_base + i]));
    }
    let valid = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(key1);
    s = select(vec4<f32>(NEG_BIG), s, valid);
    let mb = max(max(s.x, s.y), max(s.z, s.w));
    if (mb > m) {
      let a = exp(m - mb);
      l *= a;
      for (var i = 0u; i < d4; i++) { row_o[i] *= a; }
      m = mb;
    }
    let pr = select(vec4<f32>(0.0), exp(s - vec4<f32>(m)), valid);
    l += pr.x + pr.y + pr.z + pr.w;
    for (var i = 0u; i < d4; i++) {
      row_o[i] += pr.x * v[j * vs + v_base + i] + pr.y * v[j1 * vs + v_base + i]
                + pr.z * v[j2 * vs + v_base + i] + pr.w * v[j3 * vs + v_base + i];
    }
  }
  let inv = 1.0 / l;  // l >= 1: the max key contributes exp(0)
  let o0 = (t * p.heads + h) * d4;
  for (var i = 0u; i < d4; i++) { out[o0 + i] = row_o[i] * inv; }
}
