// attention-decode (flash-decoding, pass 1 of 2): partial softmax attention over one chunk of context.
//   for query row t (one token of sequence seq_ids[t] at position positions[t]) and query head h:
//   split s covers keys [max(s * SPLIT, lo), min((s + 1) * SPLIT, ctx)), ctx = positions[t] + 1,
//   lo = ctx - WINDOW when WINDOW > 0 and ctx > WINDOW, else 0 (sliding window: keys j with pos - j >= WINDOW
//   are skipped; WINDOW = p.window, 0 = no limit);
//   m[t,h,s] = max_j s_j,  l[t,h,s] = sum_j exp(s_j - m),  o[t,h,s,:] = sum_j exp(s_j - m) v_j,
//   s_j = scale * q[t,h,:] . k_j; attention-decode-reduce.wgsl merges the splits.
//   q: (T, H, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32    page_table: (B, max_pages) u32
//   seq_ids, positions: (T) u32    part: o (T, H, NS, D) f32, then from ml_offset (T, H, NS, 2) f32 (m, l)
//   out: (T, H, D) f32, the normalized output, written here instead of part when NS = 1 (no reduce pass)
// One workgroup owns (split s = wid.x, token t and a block of HPW query heads sharing one kv head = wid.y);
// invocations score one key each and then stride over the (HPW, D) outputs (lib/attention-block.wgsl).
// Workgroups whose split holds no key of [lo, ctx) write nothing; the reduce reads only splits
// lo / SPLIT .. ceil(ctx / SPLIT) - 1.

override WG_SIZE: u32 = 64u;
override HEAD_DIM: u32 = 64u;
override HPW: u32 = 1u;
override QS: u32 = HPW * HEAD_DIM;
override QS4: u32 = QS / 4u;
override SS: u32 = HPW * WG_SIZE;

// struct Params: lib/attention-params.wgsl, joined by the wrapper.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<f32>;
@group(0) @binding(4) var<storage, read> page_table: array<u32>;
@group(0) @binding(5) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(6) var<storage, read> positions: array<u32>;
@group(0) @binding(7) var<storage, read_write> part: array<f32>;
@group(0) @binding(8) var<storage, read_write> out: array<f32>;  // (T, H, D): written here when NS = 1

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let blocks = p.heads / HPW;
  let t = wid.y / blocks;
  let h0 = (wid.y % blocks) * HPW;
  if (t >= p.tokens) { return; }
  let ctx = min(min(positions[t] + 1u, p.max_pages * p.page_size), p.splits * p.split);
  let lo = select(0u, ctx - p.window, p.window > 0u && ctx > p.window);
  let key0 = max(wid.x * p.split, lo);
  if (key0 >= ctx) { return; }  // uniform per workgroup
  let key1 = min((wid.x + 1u) * p.split, ctx);
  let kvh = h0 / (p.heads / p.kv_heads);
  attend(lid, (t * p.heads + h0) * HEAD_DIM, kvh, p.kv_heads, seq_ids[t] * p.max_pages, p.page_size,
         key0, key1, p.scale);
  if (p.splits == 1u) {
    // One split holds the whole context: normalize here, and the reduce pass is not run.
    for (var e = lid; e < QS; e += WG_SIZE) {
      let g = e / HEAD_DIM;
      out[(t * p.heads + h0 + g) * HEAD_DIM + e % HEAD_DIM] = att_o[e] / att_l[g];
    }
    return;
  }
  for (var e = lid; e < QS; e += WG_SIZE) {
    let g = e / HEAD_DIM;
    part[((t * p.heads + h0 + g) * p.splits + wid.x) * HEAD_DIM + e % HEAD_DIM] = att_o[e];
  }
  if (lid < HPW) {
    let i = p.ml_offset + ((t * p.heads + h0 + lid) * p.splits + wid.x) * 2u;
    part[i] = att_m[lid];
    part[i + 1u] = att_l[lid];
  }
}
