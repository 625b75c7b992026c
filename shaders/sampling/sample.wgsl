// sample: one token id (+ logprobs) per sequence from processed logits z (step 2; adjust.wgsl is step 1).
//   logZ = logsumexp(z);  logprob(t) = z[t] − logZ        (before temperature and truncation)
//   order: z descending, ties by lower id ("descending probability order"; exact, unlike z / T in f32)
//   temperature 0 → id = argmax z (ties → lowest id); with no top logprobs asked, one pass finds it
//   truncating (0 < top_k < V, top_p < 1 or min_p > 0): the first K = min(top_k || V, KMAX, V) tokens of
//     that order; e_j = exp((z_j − z_max) / T); top-p keeps j while Σ_{i<j} e_i < top_p · Σ_K e; min-p keeps
//     j while e_j ≥ min_p (e_0 = 1 is the max); keep ≥ 1; pick the first j with Σ_{i≤j} e_i > u · Σ_kept e
//   otherwise (pure temperature, exact over all V): the same pick over e_i = exp((z_i − z_max) / T) in id order
//   fallback for rounding (u · total ≥ the computed total): the last kept token with e > 0
//   params: batch B, vocab V (< 2^24)     seqs: (B) SeqParams, 64 bytes
//   z: (B, V) f32    out: (B, 2 + 2·NMAX) u32: id, logprob bits, then n (id, logprob bits), descending
//   all tokens disallowed (z_max = −inf) → id 0xffffffff, logprobs −inf
// One workgroup owns one sequence. No full sort: a radix select (8-bit digits of the order-preserving key of
// z, then of the inverted id for ties, one histogram pass over V per digit, usually 4) finds the exact top
// M = max(K, n) tokens; they are gathered into workgroup memory and bitonic-sorted there. The pure-
// temperature pick splits V into one contiguous chunk per invocation, scans the chunk sums, and the chunk
// owning u · total walks its tokens. WG_SIZE: a power of two in 32..256. KMAX: a power of two ≥ NMAX. LEAN: a build
// without candidate arrays (KMAX = 1) for greedy and pure temperature without top logprobs; anything else gets NONE.

override WG_SIZE: u32 = 256u;
override KMAX: u32 = 1024u;
override NMAX: u32 = 20u;
override LEAN: bool = false;

const NONE: u32 = 0xffffffffu;
const NEG_INF_BITS: u32 = 0xff800000u;
const ID_MASK: u32 = 0xffffffu;
const RADIX: u32 = 256u;

struct Params { batch: u32, vocab: u32, _pad0: u32, _pad1: u32 }

// SeqParams: lib/sampling-params.wgsl (joined by the wrapper).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> seqs: array<SeqParams>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

var<workgroup> cand_z: array<f32, KMAX>;   // candidates' z, then their e = exp((z − z_max) / T)
var<workgroup> cand_id: array<u32, KMAX>;
var<workgroup> cand_c: array<f32, KMAX>;   // exclusive cumulative e
var<workgroup> hist: array<atomic<u32>, RADIX>;
var<workgroup> wg_seq: SeqParams;
var<workgroup> wg_a: atomic<u32>;
var<workgroup> wg_b: atomic<u32>;
var<workgroup> wg_bin: vec3<u32>;          // radix level result: bin, count above it, count in it
var<private> neg_inf: f32;                 // set in main (−inf is not a valid const-expression)

// ---- workgroup state (call from uniform control flow) ----
// wg_max, wg_sum, wg_publish/wg_result: lib/reduce.wgsl; wg_scan_f, wg_scan_u: lib/scan.wgsl (joined by the
// wrapper). Values everyone reads go through atomics, for the reason lib/reduce.wgsl gives.

/** Sets wg_a = a and wg_b = b for the whole workgroup. */
fn wg_reset(a: u32, b: u32, lid: u32) {
  if (lid == 0u) {
    atomicStore(&wg_a, a);
    atomicStore(&wg_b, b);
  }
  workgroupBarrier();
}

/** wg_a after everyone's updates, as a uniform value (the load's own barriers fence the updates and the next wg_reset). */
fn wg_read_a() -> u32 {
  return workgroupUniformLoad(&wg_a);
}

/** wg_b after everyone's updates, as wg_read_a. */
fn wg_read_b() -> u32 {
  return workgroupUniformLoad(&wg_b);
}

// ---- top-M selection ----

/** Order-preserving u32 key of an f32 (−0 and +0 share one key, as they compare equal). */
fn key_of(x: f32) -> u32 {
  if (x == 0.0) { return 0x80000000u; }
  let b = bitcast<u32>(x);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

/** a before b in the sampling order: larger z first, then lower id. */
fn before(za: f32, ia: u32, zb: f32, ib: u32) -> bool {
  return za > zb || (za == zb && ia < ib);
}

/**
 * Gathers the first M tokens of the order into cand_z/cand_id[0..M) (sorted) and pads to P = nextpow2(M)
 * with (−inf, NONE). Radix select on the composite key (key_of(z), ID_MASK − id): levels 0..3 pick the
 * 8-bit digits of the value key among tokens matching the digits so far; levels 4..6 those of the
 * inverted id among tokens equal to the boundary value. A level stops the search when the bin holding the
 * rem-th token is taken whole. Take t iff key(z_t) > kv_t or (key(z_t) == kv_t and idk_t' >= idk_t).
 */
fn select_top(row: u32, V: u32, M: u32, lid: u32) -> u32 {
  var rem = M;
  var vprefix = 0u;
  var iprefix = 0u;
  var kv_t = 0u;
  var idk_t = 0u;
  let G = RADIX / WG_SIZE;
  for (var level = 0u; level < 7u; level++) {
    for (var h = lid; h < RADIX; h += WG_SIZE) { atomicStore(&hist[h], 0u); }
    workgroupBarrier();
    let is_val = level < 4u;
    var shift = 0u;
    if (is_val) { shift = 24u - 8u * level; } else { shift = 16u - 8u * (level - 4u); }
    for (var i = lid; i < V; i += WG_SIZE) {
      let kv = key_of(z[row + i]);
      if (is_val) {
        if (level == 0u || (kv >> (shift + 8u)) == vprefix) { atomicAdd(&hist[(kv >> shift) & 0xffu], 1u); }
      } else {
        let idk = ID_MASK - i;
        if (kv == kv_t && (level == 4u || (idk >> (shift + 8u)) == iprefix)) { atomicAdd(&hist[(idk >> shift) & 0xffu], 1u); }
      }
    }
    workgroupBarrier();
    // Rank r = 255 − bin counts from the top; invocation lid owns ranks [lid·G, lid·G + G).
    var local = 0u;
    for (var g = 0u; g < G; g++) { local += atomicLoad(&hist[RADIX - 1u - (lid * G + g)]); }
    var above = wg_scan_u(local, lid).excl;
    for (var g = 0u; g < G; g++) {
      let bin = RADIX - 1u - (lid * G + g);
      let h = atomicLoad(&hist[bin]);
      if (above < rem && rem <= above + h) { wg_bin = vec3<u32>(bin, above, h); }
      above += h;
    }
    let found = workgroupUniformLoad(&wg_bin);
    rem -= found.y;
    if (is_val) {
      vprefix = select((vprefix << 8u) | found.x, found.x, level == 0u);
      if (found.z == rem) {
        kv_t = vprefix << shift;
        break;
      }
      kv_t = vprefix;  // level 3 falls through to the id levels with the exact boundary value
    } else {
      iprefix = select((iprefix << 8u) | found.x, found.x, level == 4u);
      if (found.z == rem) {
        idk_t = iprefix << shift;
        break;
      }
    }
  }

  wg_reset(0u, 0u, lid);
  for (var i = lid; i < V; i += WG_SIZE) {
    let x = z[row + i];
    let kv = key_of(x);
    if (kv > kv_t || (kv == kv_t && ID_MASK - i >= idk_t)) {
      let slot = atomicAdd(&wg_a, 1u);
      if (slot < KMAX) {
        cand_z[slot] = x;
        cand_id[slot] = i;
      }
    }
  }
  let P = select(1u << (32u - countLeadingZeros(M - 1u)), 1u, M <= 1u);
  for (var j = M + lid; j < P; j += WG_SIZE) {
    cand_z[j] = neg_inf;
    cand_id[j] = NONE;
  }
  workgroupBarrier();

  // Bitonic sort of P entries into the sampling order.
  for (var k = 2u; k <= P; k <<= 1u) {
    for (var j = k >> 1u; j > 0u; j >>= 1u) {
      for (var t = lid; t < P / 2u; t += WG_SIZE) {
        let a = 2u * j * (t / j) + (t % j);
        let c = a + j;
        let za = cand_z[a];
        let ia = cand_id[a];
        let zc = cand_z[c];
        let ic = cand_id[c];
        let up = (a & k) == 0u;
        if (select(before(za, ia, zc, ic), before(zc, ic, za, ia), up)) {
          cand_z[a] = zc;
          cand_id[a] = ic;
          cand_z[c] = za;
          cand_id[c] = ia;
        }
      }
      workgroupBarrier();
    }
  }
  return P;
}

// ---- picks ----

/** Truncated pick over the sorted candidates [0, K); returns a candidate position. */
fn pick_truncated(s: SeqParams, K: u32, P: u32, m: f32, lid: u32) -> u32 {
  let per = (P + WG_SIZE - 1u) / WG_SIZE;
  let lo = min(lid * per, P);
  let hi = min(lo + per, P);
  var local = 0.0;
  for (var j = lo; j < hi; j++) {
    let e = select(0.0, exp((cand_z[j] - m) / s.temperature), j < K);
    cand_z[j] = e;
    local += e;
  }
  let sc = wg_scan_f(local, lid);
  var acc = sc.excl;
  for (var j = lo; j < hi; j++) {
    cand_c[j] = acc;
    acc += cand_z[j];
  }
  let total = sc.total;

  // Kept prefix: the first position that top-p or min-p rejects.
  wg_reset(K, 0u, lid);
  for (var j = lid; j < K; j += WG_SIZE) {
    if ((s.top_p < 1.0 && cand_c[j] >= s.top_p * total) || (s.min_p > 0.0 && cand_z[j] < s.min_p)) {
      atomicMin(&wg_a, j);
    }
  }
  let kept = max(wg_read_a(), 1u);

  let goal = s.u * (cand_c[kept - 1u] + cand_z[kept - 1u]);
  wg_reset(kept, 0u, lid);
  for (var j = lid; j < kept; j += WG_SIZE) {
    if (cand_c[j] + cand_z[j] > goal) { atomicMin(&wg_a, j); }
    if (cand_z[j] > 0.0) { atomicMax(&wg_b, j); }
  }
  let first = wg_read_a();
  let last = wg_read_b();
  return select(last, first, first < kept);
}

/** Pure-temperature pick over all V tokens in id order; returns a token id. */
fn pick_full(s: SeqParams, row: u32, V: u32, m: f32, lid: u32) -> u32 {
  let per = (V + WG_SIZE - 1u) / WG_SIZE;
  let lo = min(lid * per, V);
  let hi = min(lo + per, V);
  var local = 0.0;
  for (var i = lo; i < hi; i++) { local += exp((z[row + i] - m) / s.temperature); }
  let sc = wg_scan_f(local, lid);
  let goal = s.u * sc.total;
  wg_reset(0u, 0u, lid);
  if (local > 0.0 && sc.excl <= goal) { atomicMax(&wg_a, lid); }
  let owner = wg_read_a();
  if (lid == owner) {
    let rest = goal - sc.excl;
    var acc = 0.0;
    var pick = NONE;
    var last = lo;
    for (var i = lo; i < hi; i++) {
      let e = exp((z[row + i] - m) / s.temperature);
      acc += e;
      if (e > 0.0) { last = i; }
      if (acc > rest) {
        pick = i;
        break;
      }
    }
    wg_publish(select(pick, last, pick == NONE));
  }
  return wg_result();
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = wid.y * nwg.x + wid.x;
  if (b >= p.batch) { return; }  // uniform per workgroup
  let ninf_bits = NEG_INF_BITS;
  neg_inf = bitcast<f32>(ninf_bits);
  if (lid == 0u) { wg_seq = seqs[b]; }
  let s = workgroupUniformLoad(&wg_seq);
  let V = p.vocab;
  let row = b * V;
  let ob = b * (2u + 2u * NMAX);
  let n = min(min(s.n_logprobs, NMAX), V);

  // Max and log-sum-exp in one pass (online softmax per invocation, then combined).
  var mi = neg_inf;
  var si = 0.0;
  for (var i = lid; i < V; i += WG_SIZE) {
    let x = z[row + i];
    if (x > mi) {
      si = si * exp(mi - x) + 1.0;
      mi = x;
    } else if (x > neg_inf) {
      si += exp(x - mi);
    }
  }
  let m = wg_max(mi, lid);
  if (bitcast<u32>(m) == NEG_INF_BITS) {  // (not m == neg_inf: a private var is non-uniform)
    if (lid == 0u) {
      out[ob] = NONE;
      out[ob + 1u] = NEG_INF_BITS;
    }
    for (var k = lid; k < n; k += WG_SIZE) {
      out[ob + 2u + 2u * k] = NONE;
      out[ob + 3u + 2u * k] = NEG_INF_BITS;
    }
    return;
  }
  let logZ = m + log(wg_sum(si * exp(mi - m), lid));

  let greedy = s.temperature <= 0.0;
  if (greedy && n == 0u) {
    // Argmax alone (no top logprobs): the lowest id holding the max, one pass and no selection.
    wg_reset(NONE, 0u, lid);
    for (var i = lid; i < V; i += WG_SIZE) {
      if (z[row + i] == m) { atomicMin(&wg_a, i); }
    }
    let best = wg_read_a();
    if (lid == 0u) {
      out[ob] = best;
      out[ob + 1u] = bitcast<u32>(m - logZ);
    }
    return;
  }
  let truncating = !greedy && ((s.top_k > 0u && s.top_k < V) || s.top_p < 1.0 || s.min_p > 0.0);
  var K = 0u;
  if (truncating) { K = min(min(select(V, s.top_k, s.top_k > 0u), KMAX), V); }
  if (LEAN && (truncating || n > 0u)) {
    // The lean build has no candidate arrays (the wrapper uses it only for batches that need none): say so, never guess.
    if (lid == 0u) {
      out[ob] = NONE;
      out[ob + 1u] = NEG_INF_BITS;
    }
    return;
  }
  let M = max(max(K, n), select(0u, 1u, greedy));
  var P = 0u;
  if (M > 0u) { P = select_top(row, V, M, lid); }

  var chosen = 0u;
  if (greedy) {
    chosen = cand_id[0];
  } else if (truncating) {
    chosen = cand_id[pick_truncated(s, K, P, m, lid)];
  } else {
    chosen = pick_full(s, row, V, m, lid);
  }

  if (lid == 0u) {
    out[ob] = chosen;
    out[ob + 1u] = bitcast<u32>(z[row + chosen] - logZ);
  }
  for (var k = lid; k < n; k += WG_SIZE) {
    let t = cand_id[k];
    out[ob + 2u + 2u * k] = t;
    out[ob + 3u + 2u * k] = bitcast<u32>(z[row + t] - logZ);
  }
}
