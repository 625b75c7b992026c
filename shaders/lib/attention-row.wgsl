// lib/attention-row: the barrier-free core shared by attention-decode.rows and attention-prefill.rows.
// attend_row() runs one-pass online softmax for HPI query heads of one token that share kv head kvh, in
// one invocation, over keys [key0, key1) of one sequence in the paged cache (layout:
// packages/gpu/src/kernels/paged-kv.ts):
//   m = max_j s_j,  l = sum_j exp(s_j - m),  o = sum_j exp(s_j - m) v_j,  s_j = scale * q . k_j
// and leaves (o, m, l) per head in row_o / row_m / row_l. Callers narrow [key0, key1) to a split and to
// the sliding window (key0 >= pos + 1 - window); key0 < key1 is required. Keys go 4 at a time: each K
// and V vec4 is loaded once and used for all HPI heads (a software adapter pays per lane for every
// storage load), the 4 scores of a head form one vec4, o is rescaled only when their max raises m (rare
// after the first keys).
// Keys past key1 in the last group repeat the last key's row and get probability 0.
// The joining kernel declares: overrides HEAD_DIM (D, multiple of 4) and HPI (heads per invocation),
// HPI * D ≤ 512, HPI ≤ 8; bindings q, k_cache, v_cache: array<vec4<f32>>, page_table: array<u32>.
// No workgroup memory and no barrier: callable from any control flow (software adapters pay a coroutine
// switch per 4-lane group at every barrier).

const ROW_NEG_BIG: f32 = -3.0e38;

var<private> row_q: array<vec4<f32>, 128>;  // (HPI, D / 4) queries, pre-multiplied by scale
var<private> row_o: array<vec4<f32>, 128>;  // (HPI, D / 4) unnormalized outputs
var<private> row_s: array<vec4<f32>, 8>;    // (HPI) scores, then probabilities, of 4 keys
var<private> row_m: array<f32, 8>;          // (HPI) running max
var<private> row_l: array<f32, 8>;          // (HPI) running sum

// vec4 index of key j's row for kv head kvh; pt_base: first page-table entry of the sequence.
fn row_key(pt_base: u32, page_size: u32, kv_heads: u32, kvh: u32, j: u32) -> u32 {
  let page = page_table[pt_base + j / page_size];
  return ((page * page_size + j % page_size) * kv_heads + kvh) * (HEAD_DIM / 4u);
}

// q4: vec4 index of the first head's query row in q.
fn attend_row(q4: u32, kvh: u32, kv_heads: u32, pt_base: u32, page_size: u32, key0: u32, key1: u32, scale: f32) {
  let d4 = HEAD_DIM / 4u;
  for (var i = 0u; i < HPI * d4; i++) {
    row_q[i] = q[q4 + i] * scale;
    row_o[i] = vec4<f32>(0.0);
  }
  for (var g = 0u; g < HPI; g++) {
    row_m[g] = ROW_NEG_BIG;
    row_l[g] = 0.0;
  }
  let last = key1 - 1u;
  for (var j = key0; j < key1; j += 4u) {
    let r0 = row_key(pt_base, page_size, kv_heads, kvh, j);
    let r1 = row_key(pt_base, page_size, kv_heads, kvh, min(j + 1u, last));
    let r2 = row_key(pt_base, page_size, kv_heads, kvh, min(j + 2u, last));
    let r3 = row_key(pt_base, page_size, kv_heads, kvh, min(j + 3u, last));
    for (var g = 0u; g < HPI; g++) { row_s[g] = vec4<f32>(0.0); }
    for (var i = 0u; i < d4; i++) {
      let k0 = k_cache[r0 + i];
      let k1 = k_cache[r1 + i];
      let k2 = k_cache[r2 + i];
      let k3 = k_cache[r3 + i];
      for (var g = 0u; g < HPI; g++) {
        let qi = row_q[g * d4 + i];
        row_s[g] += vec4<f32>(dot(qi, k0), dot(qi, k1), dot(qi, k2), dot(qi, k3));
      }
    }
    let valid = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(key1);
    for (var g = 0u; g < HPI; g++) {
      let s = select(vec4<f32>(ROW_NEG_BIG), row_s[g], valid);
      let mb = max(max(s.x, s.y), max(s.z, s.w));
      if (mb > row_m[g]) {
        let a = exp(row_m[g] - mb);
        row_l[g] *= a;
        for (var i = g * d4; i < (g + 1u) * d4; i++) { row_o[i] *= a; }
        row_m[g] = mb;
      }
      let pr = exp(s - vec4<f32>(row_m[g]));
      row_l[g] += pr.x + pr.y + pr.z + pr.w;
      row_s[g] = pr;
    }
    for (var i = 0u; i < d4; i++) {
      let v0 = v_cache[r0 + i];
      let v1 = v_cache[r1 + i];
      let v2 = v_cache[r2 + i];
      let v3 = v_cache[r3 + i];
      for (var g = 0u; g < HPI; g++) {
        let pr = row_s[g];
        row_o[g * d4 + i] += pr.x * v0 + pr.y * v1 + pr.z * v2 + pr.w * v3;
      }
    }
  }
}
