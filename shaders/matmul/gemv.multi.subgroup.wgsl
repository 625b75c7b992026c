// gemv.multi.subgroup: the gemv.multi.wgsl contract (same bindings, params and libs: B ≥ 2 vectors, each
// weight chunk dequantized once for a group of up to 4 of them), for GPUs with subgroups. A workgroup owns
// ROWS consecutive rows of the group of vectors v0 = p.v0 + 4 wid.y .. v0 + 3 (those past B repeat the
// last one and are not written), and each subgroup takes ROWS_PER_SG of them at a time: its lanes stride
// over the K/CHUNK chunks, each lane loads its x chunk of the 4 vectors once and dots it with those rows'
// chunks, and subgroupAdd reduces the vec4 sums. No workgroup memory, no barriers, coalesced reads along
// each row. Correct for any subgroup size (work is handed out from the actual size).

enable subgroups;
diagnostic(off, subgroup_uniformity);

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 16u;
override ROWS_PER_SG: u32 = 4u;  // ≤ MAX_ROWS
override WIDTH: u32 = 4u;  // vectors computed at once: 2 (B = 2) or 4 (B = 3, 4; lib/weights/multi.wgsl)
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override NORM: bool = false;
override GATED: u32 = 0u;

const MAX_ROWS: u32 = 16u;

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl, joined by the wrapper; group_x, load_x and
// store_row: lib/weights/multi.wgsl; NORM and GATED as in gemv.multi.wgsl.

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let v0 = p.v0 + wid.y * 4u;
  let xb = group_x(v0);
  let sg = lid / sg_size;
  let n_sg = (WG_SIZE + sg_size - 1u) / sg_size;
  let chunks = p.k / CHUNK;
  let wg_first = wid.x * ROWS;
  let wg_end = min(wg_first + ROWS, p.rows);
  let up_bytes = p.up_row * p.row_bytes;
  // NORM: each vector's 1 / rms, its squares summed across the subgroup's lanes
  var s = vec4<f32>(1.0);
  if (NORM) {
    var ss = vec4<f32>(0.0);
    for (var e = lane; e < p.k / 4u; e += sg_size) {
      // group_x repeats the last vector past B, so all four reads are in range
      let a = x[xb.x + e]; let b = x[xb.y + e]; let c3 = x[xb.z + e]; let d3 = x[xb.w + e];
      ss += vec4<f32>(dot(a, a), dot(b, b), dot(c3, c3), dot(d3, d3));
    }
    s = inverseSqrt(subgroupAdd(ss) / f32(p.k) + p.eps);
  }
  for (var first = wg_first + sg * ROWS_PER_SG; first < wg_end; first += n_sg * ROWS_PER_SG) {
    let last = min(first + ROWS_PER_SG, wg_end) - 1u;
    var acc: array<vec4<f32>, MAX_ROWS>;
    var acc_up: array<vec4<f32>, MAX_ROWS>;
    // Zeroed explicitly: SwiftShader kept the previous iteration's values in a loop-scoped array var.
    for (var r = 0u; r < ROWS_PER_SG; r++) { acc[r] = vec4<f32>(0.0); acc_up[r] = vec4<f32>(0.0); }
    for (var c = lane; c < chunks; c += sg_size) {
      load_x(xb, c * CHUNK_V4);
      for (var r = 0u; r < ROWS_PER_SG; r++) {
        let row_byte = min(first + r, last) * p.row_bytes;
        acc[r] += chunk_dot4(row_byte, c);
        if (GATED != 0u) { acc_up[r] += chunk_dot4(row_byte + up_bytes, c); }
      }
    }
    for (var r = 0u; r < ROWS_PER_SG; r++) {
      let total = subgroupAdd(acc[r]) * s;
      var up = vec4<f32>(0.0);
      if (GATED != 0u) { up = subgroupAdd(acc_up[r]) * s; }
      if (lane == 0u && first + r <= last) { store_row(first + r, v0, total, up); }
    }
  }
}
