// attention-prefill.rows (barrier-free): causal attention of T query tokens over the paged cache, the same
// math, Params and bindings as attention-prefill.wgsl, one pass of online softmax:
//   out[t,h,:] = sum_{lo<=j<=pos} softmax_j(scale * q[t,h,:] . k_j) v_j,  pos = positions[t],
//   lo = pos + 1 - window when window > 0 and pos + 1 > window, else 0 (sliding window), keys j of
//   sequence seq_ids[t]; the step's own K/V must already be appended (rope-kv-append).
//   q: (T, H, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32    page_table: (B, max_pages) u32
//   seq_ids, positions: (T) u32    out: (T, H, D) f32
// One invocation owns one (token t, block of HPI query heads sharing a kv head), linear id
// t * H / HPI + block, and walks keys lo..pos alone (lib/attention-row.wgsl): no workgroup memory, no
// barrier, the variant for software adapters.

override WG_SIZE: u32 = 64u;
override HEAD_DIM: u32 = 64u;
override HPI: u32 = 1u;

// struct Params: lib/attention-params.wgsl, joined by the wrapper.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> page_table: array<u32>;
@group(0) @binding(5) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(6) var<storage, read> positions: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let blocks = p.heads / HPI;
  let h0 = (id % blocks) * HPI;
  let t = id / blocks;
  if (t >= p.tokens) { return; }
  let ctx = min(positions[t] + 1u, p.max_pages * p.page_size);
  let q4 = (t * p.heads + h0) * (HEAD_DIM / 4u);
  let lo = select(0u, ctx - p.window, p.window > 0u && ctx > p.window);
  attend_row(q4, h0 / (p.heads / p.kv_heads), p.kv_heads, seq_ids[t] * p.max_pages, p.page_size, lo, ctx, p.scale);
  for (var g = 0u; g < HPI; g++) {
    let inv = 1.0 / row_l[g];
    for (var i = g * (HEAD_DIM / 4u); i < (g + 1u) * (HEAD_DIM / 4u); i++) { out[q4 + i] = row_o[i] * inv; }
  }
}
