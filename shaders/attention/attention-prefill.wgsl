// attention-prefill: causal attention of T query tokens (prefill after a cached prefix, or speculative
// verify) over the paged cache, one pass of online softmax:
//   out[t,h,:] = sum_{lo<=j<=pos} softmax_j(scale * q[t,h,:] . k_j) v_j,  pos = positions[t],
//   lo = pos + 1 - window when window > 0 and pos + 1 > window, else 0 (sliding window: keys with
//   pos - j >= window are skipped), keys j of sequence seq_ids[t]; the step's own K/V must already be
//   appended (rope-kv-append).
//   q: (T, H, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32    page_table: (B, max_pages) u32
//   seq_ids, positions: (T) u32    out: (T, H, D) f32
// One workgroup owns one token and a block of HPW query heads that share one kv head (linear id
// wid.y * nwg.x + wid.x); keys go in blocks of WG_SIZE (lib/attention-block.wgsl), each key row read
// once for all HPW heads. Tokens may come from several sequences with any positions.

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
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let blocks = p.heads / HPW;
  let id = wid.y * nwg.x + wid.x;
  let t = id / blocks;
  let h0 = (id % blocks) * HPW;
  if (t >= p.tokens) { return; }  // uniform per workgroup
  let ctx = min(positions[t] + 1u, p.max_pages * p.page_size);
  let kvh = h0 / (p.heads / p.kv_heads);
  let q_base = (t * p.heads + h0) * HEAD_DIM;
  let lo = select(0u, ctx - p.window, p.window > 0u && ctx > p.window);
  attend(lid, q_base, kvh, p.kv_heads, seq_ids[t] * p.max_pages, p.page_size, lo, ctx, p.scale);
  for (var e = lid; e < QS; e += WG_SIZE) {
    out[q_base + e] = att_o[e] / att_l[e / HEAD_DIM];
  }
}
