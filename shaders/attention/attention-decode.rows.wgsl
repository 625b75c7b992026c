// attention-decode.rows (flash-decoding, pass 1 of 2, barrier-free): partial softmax attention over one
// chunk of context, the same math, Params, bindings and partials layout as attention-decode.wgsl:
//   split s covers keys [max(s * SPLIT, lo), min((s + 1) * SPLIT, ctx)), ctx = positions[t] + 1,
//   lo = ctx - WINDOW when WINDOW > 0 and ctx > WINDOW, else 0 (sliding window, WINDOW = p.window);
//   m[t,h,s] = max_j s_j,  l[t,h,s] = sum_j exp(s_j - m),  o[t,h,s,:] = sum_j exp(s_j - m) v_j,
//   s_j = scale * q[t,h,:] . k_j; attention-decode-reduce.wgsl merges the splits.
//   q: (T, H, D) f32    k_cache, v_cache: (pages, PAGE, Hkv, D) f32    page_table: (B, max_pages) u32
//   seq_ids, positions: (T) u32    part: o (T, H, NS, D) f32, then from ml_offset (T, H, NS, 2) f32 (m, l)
//   out: (T, H, D) f32, the normalized output, written here instead of part when NS = 1 (no reduce pass)
// One invocation owns one (token t, split s, block of HPI query heads sharing a kv head), linear id
// ((t * NS + s) * H / HPI + block), and walks its split's keys alone (lib/attention-row.wgsl): no workgroup
// memory, no barrier, the variant for software adapters. Head blocks are fastest, so neighbouring SIMD
// lanes read neighbouring K/V rows. Invocations whose split holds no key of [lo, ctx) write nothing.

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
@group(0) @binding(7) var<storage, read_write> part: array<f32>;
@group(0) @binding(8) var<storage, read_write> out: array<f32>;  // (T, H, D): written here when NS = 1

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  let blocks = p.heads / HPI;
  let h0 = (id % blocks) * HPI;
  let ts = id / blocks;
  let s = ts % p.splits;
  let t = ts / p.splits;
  if (t >= p.tokens) { return; }
  let ctx = min(min(positions[t] + 1u, p.max_pages * p.page_size), p.splits * p.split);
  let lo = select(0u, ctx - p.window, p.window > 0u && ctx > p.window);
  let key0 = max(s * p.split, lo);
  if (key0 >= ctx) { return; }
  let key1 = min((s + 1u) * p.split, ctx);
  attend_row((t * p.heads + h0) * (HEAD_DIM / 4u), h0 / (p.heads / p.kv_heads), p.kv_heads, seq_ids[t] * p.max_pages,
             p.page_size, key0, key1, p.scale);
  if (p.splits == 1u) {
    // One split holds the whole context: normalize here, and the reduce pass is not run.
    for (var g = 0u; g < HPI; g++) {
      let o = (t * p.heads + h0 + g) * HEAD_DIM;
      let inv = 1.0 / row_l[g];
      for (var i = 0u; i < HEAD_DIM / 4u; i++) {
        let v = row_o[g * (HEAD_DIM / 4u) + i] * inv;
        out[o + 4u * i] = v.x;
        out[o + 4u * i + 1u] = v.y;
        out[o + 4u * i + 2u] = v.z;
        out[o + 4u * i + 3u] = v.w;
      }
    }
    return;
  }
  for (var g = 0u; g < HPI; g++) {
    let row = (t * p.heads + h0 + g) * p.splits + s;
    let o = row * HEAD_DIM;
    for (var i = 0u; i < HEAD_DIM / 4u; i++) {
      let v = row_o[g * (HEAD_DIM / 4u) + i];
      part[o + 4u * i] = v.x;
      part[o + 4u * i + 1u] = v.y;
      part[o + 4u * i + 2u] = v.z;
      part[o + 4u * i + 3u] = v.w;
    }
    part[p.ml_offset + 2u * row] = row_m[g];
    part[p.ml_offset + 2u * row + 1u] = row_l[g];
  }
}
