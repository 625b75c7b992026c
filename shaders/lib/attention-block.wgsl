// lib/attention-block: the workgroup core shared by attention-decode and attention-prefill.
// attend() runs one-pass online softmax for HPW query heads of one token (all reading kv head kvh)
// over keys [key0, key1) of one sequence in the paged cache (layout: packages/gpu/src/kernels/paged-kv.ts):
//   m = max_j s_j,  l = sum_j exp(s_j - m),  o = sum_j exp(s_j - m) v_j,  s_j = scale * q . k_j
// and leaves (o, m, l) per head in att_o / att_m / att_l. Callers narrow [key0, key1) to a split and to
// the sliding window (key0 >= pos + 1 - window); key0 < key1 is required. Keys go in blocks of WG_SIZE:
// one invocation scores one key for every head, then invocations stride over the (HPW, D) outputs to add P.V.
// The joining kernel declares: overrides WG_SIZE, HEAD_DIM (D, multiple of 4), HPW (heads per
// workgroup), QS = HPW * HEAD_DIM, QS4 = QS / 4, SS = HPW * WG_SIZE; bindings q: array<vec4<f32>>
// (T, H, D), k_cache: array<vec4<f32>>, v_cache: array<f32>, page_table: array<u32>.
// Call from uniform control flow (it has barriers).

const ATT_NEG_BIG: f32 = -3.0e38;

var<workgroup> att_q: array<vec4<f32>, QS4>;  // (HPW, D) query rows, pre-multiplied by scale
var<workgroup> att_o: array<f32, QS>;         // (HPW, D) unnormalized output
var<workgroup> att_s: array<f32, SS>;         // (HPW, WG_SIZE) scores, then probabilities, of one block
var<workgroup> att_row: array<u32, WG_SIZE>;  // cache offset (floats) of each key row of the block
var<workgroup> att_m: array<f32, HPW>;        // running max per head
var<workgroup> att_l: array<f32, HPW>;        // running sum per head
var<workgroup> att_a: array<f32, HPW>;        // rescale of the old state for the current block

// q_base: float offset of the first head's row in q; pt_base: first page-table entry of the sequence.
fn attend(lid: u32, q_base: u32, kvh: u32, kv_heads: u32, pt_base: u32, page_size: u32,
          key0: u32, key1: u32, scale: f32) {
  let d4 = HEAD_DIM / 4u;
  for (var e = lid; e < QS4; e += WG_SIZE) { att_q[e] = q[q_base / 4u + e] * scale; }
  for (var e = lid; e < QS; e += WG_SIZE) { att_o[e] = 0.0; }
  if (lid < HPW) { att_m[lid] = ATT_NEG_BIG; att_l[lid] = 0.0; }
  workgroupBarrier();
  for (var j0 = key0; j0 < key1; j0 += WG_SIZE) {
    let n = min(WG_SIZE, key1 - j0);
    // Scores: one key per invocation, every head.
    if (lid < n) {
      let j = j0 + lid;
      let page = page_table[pt_base + j / page_size];
      let row = ((page * page_size + j % page_size) * kv_heads + kvh) * HEAD_DIM;
      att_row[lid] = row;
      let k4 = row / 4u;
      for (var g = 0u; g < HPW; g++) {
        var acc = 0.0;
        for (var i = 0u; i < d4; i++) { acc += dot(att_q[g * d4 + i], k_cache[k4 + i]); }
        att_s[g * WG_SIZE + lid] = acc;
      }
    }
    workgroupBarrier();
    // New running max per head and the factor that rescales what was accumulated so far.
    if (lid < HPW) {
      var mb = ATT_NEG_BIG;
      for (var i = 0u; i < n; i++) { mb = max(mb, att_s[lid * WG_SIZE + i]); }
      let m_old = att_m[lid];
      let m_new = max(m_old, mb);
      att_a[lid] = exp(m_old - m_new);
      att_m[lid] = m_new;
    }
    workgroupBarrier();
    if (lid < n) {
      for (var g = 0u; g < HPW; g++) {
        let si = g * WG_SIZE + lid;
        att_s[si] = exp(att_s[si] - att_m[g]);
      }
    }
    workgroupBarrier();
    if (lid < HPW) {
      var sum = 0.0;
      for (var i = 0u; i < n; i++) { sum += att_s[lid * WG_SIZE + i]; }
      att_l[lid] = att_l[lid] * att_a[lid] + sum;
    }
    // Each invocation owns output elements e = (g, d): rescale, then add this block's P.V.
    for (var e = lid; e < QS; e += WG_SIZE) {
      let g = e / HEAD_DIM;
      let d = e % HEAD_DIM;
      var acc = att_o[e] * att_a[g];
      for (var i = 0u; i < n; i++) { acc += att_s[g * WG_SIZE + i] * v_cache[att_row[i] + d]; }
      att_o[e] = acc;
    }
    workgroupBarrier();
  }
}
