// attention-encoder: multi-head attention over packed sequences, the encoder's (no KV cache; bidirectional unless the
// reach says otherwise), one pass of online softmax:
//   out[t, h, :] = sum_{j in seq(t)} softmax_j(scale * q[t, h, :] . k[j, kvh, :]) v[j, kvh, :],  kvh = h / (H / Hkv)
// where seq(t) = [seq_starts[b], seq_starts[b + 1]) for t's sequence b (lib/packed-seqs.wgsl): many inputs of
// different lengths in one dispatch, none attending to another; within it, t sees keys j with t - before <= j <= t + after
// (lib/encoder-params.wgsl: every key by default, causal with after = 0, a symmetric window with before = after).
//   q, k, v: token rows at a stride and offset (lib/encoder-params.wgsl), f32 read as vec4
//   seq_starts: (B + 1) u32    out: (T, H, D) f32
// One workgroup owns WG_SIZE consecutive tokens (one per invocation) and one query head (linear id tile * H + h).
// The tile's tokens may span several sequences; the workgroup walks the union of their key ranges in tiles of K_TILE
// keys, staged in workgroup memory once for all its queries, and each invocation takes from a tile only the keys of its
// own sequence (4 at a time, online softmax as in the rows sibling). Tokens past T only help stage.
// HEAD_DIM (D) is a multiple of 4, at most 256; K_TILE a multiple of 4 with K_TILE * D * 8 bytes of workgroup memory.

override WG_SIZE: u32 = 64u;
override HEAD_DIM: u32 = 64u;
override K_TILE: u32 = 32u;
override KV4: u32 = K_TILE * HEAD_DIM / 4u;

const NEG_BIG: f32 = -3.0e38;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> seq_starts: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<vec4<f32>>;

var<workgroup> k_tile: array<vec4<f32>, KV4>;  // (K_TILE, D / 4)
var<workgroup> v_tile: array<vec4<f32>, KV4>;
var<private> row_q: array<vec4<f32>, 64>;  // (D / 4) the query, pre-multiplied by scale
var<private> row_o: array<vec4<f32>, 64>;  // (D / 4) unnormalized output

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let wg = wid.y * nwg.x + wid.x;
  let h = wg % p.heads;
  let t0 = (wg / p.heads) * WG_SIZE;
  if (t0 >= p.tokens) { return; }  // uniform per workgroup
  let d4 = HEAD_DIM / 4u;
  let kvh = h / (p.heads / p.kv_heads);
  // The tile's key range: from its first token's sequence to its last one's (uniform per workgroup).
  let lo = seq_starts[seq_of(t0, p.sequences)];
  let hi = seq_starts[seq_of(min(t0 + WG_SIZE, p.tokens) - 1u, p.sequences) + 1u];

  let t = t0 + lid;
  let live = t < p.tokens;
  var key0 = 0u;
  var key1 = 0u;
  if (live) {
    let b = seq_of(t, p.sequences);
    let r = reach_of(t, seq_starts[b], seq_starts[b + 1u]);
    key0 = r.x;
    key1 = r.y;
    let q0 = (t * p.q_stride + p.q_off) / 4u + h * d4;
    for (var i = 0u; i < d4; i++) {
      row_q[i] = q[q0 + i] * p.scale;
      row_o[i] = vec4<f32>(0.0);
    }
  }
  let k_base = p.k_off / 4u + kvh * d4;
  let v_base = p.v_off / 4u + kvh * d4;
  let ks = p.k_stride / 4u;
  let vs = p.v_stride / 4u;
  var m = NEG_BIG;
  var l = 0.0;

  for (var j0 = lo; j0 < hi; j0 += K_TILE) {
    let n = min(K_TILE, hi - j0);
    for (var e = lid; e < n * d4; e += WG_SIZE) {
      let j = j0 + e / d4;
      let i = e % d4;
      k_tile[e] = k[j * ks + k_base + i];
      v_tile[e] = v[j * vs + v_base + i];
    }
    workgroupBarrier();
    // This query's keys in the tile: its sequence's keys [ka, kz) among [j0, j0 + n).
    let ka = max(key0, j0);
    let kz = min(key1, j0 + n);
    if (live && ka < kz) {
      let a = ka - j0;
      let z = kz - j0;
      let last = z - 1u;
      for (var r = a; r < z; r += 4u) {
        let r1 = min(r + 1u, last) * d4;
        let r2 = min(r + 2u, last) * d4;
        let r3 = min(r + 3u, last) * d4;
        let r0 = r * d4;
        var s = vec4<f32>(0.0);
        for (var i = 0u; i < d4; i++) {
          let qi = row_q[i];
          s += vec4<f32>(dot(qi, k_tile[r0 + i]), dot(qi, k_tile[r1 + i]), dot(qi, k_tile[r2 + i]), dot(qi, k_tile[r3 + i]));
        }
        let valid = vec4<u32>(r) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(z);
        s = select(vec4<f32>(NEG_BIG), s, valid);
        let mb = max(max(s.x, s.y), max(s.z, s.w));
        if (mb > m) {
          let f = exp(m - mb);
          l *= f;
          for (var i = 0u; i < d4; i++) { row_o[i] *= f; }
          m = mb;
        }
        let pr = select(vec4<f32>(0.0), exp(s - vec4<f32>(m)), valid);
        l += pr.x + pr.y + pr.z + pr.w;
        for (var i = 0u; i < d4; i++) {
          row_o[i] += pr.x * v_tile[r0 + i] + pr.y * v_tile[r1 + i] + pr.z * v_tile[r2 + i] + pr.w * v_tile[r3 + i];
        }
      }
    }
    workgroupBarrier();
  }
  if (live) {
    let inv = 1.0 / l;
    let o0 = (t * p.heads + h) * d4;
    for (var i = 0u; i < d4; i++) { out[o0 + i] = row_o[i] * inv; }
  }
}
