// gemv.subgroup: the gemv.wgsl contract (same bindings, params and fusions), for adapters with subgroups.
// A workgroup owns ROWS consecutive rows of one vector (p.v0 + wid.y), and each subgroup takes
// ROWS_PER_SG of them at a time: its lanes stride over the K/CHUNK chunks, each lane loads its x chunk
// once and dots it with those rows, and subgroupAdd reduces them. No workgroup memory, no barriers,
// coalesced reads along each row. Correct for any subgroup size (work is handed out from the actual size).

enable subgroups;
diagnostic(off, subgroup_uniformity);

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 16u;
override ROWS_PER_SG: u32 = 4u;  // ≤ MAX_ROWS
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;
override NORM: bool = false;
override GATED: u32 = 0u;

const MAX_ROWS: u32 = 16u;

// Params and bindings (p, w, x, y, bias): lib/matmul-io.wgsl; x_load, gate_act: lib/gemv-fusion.wgsl.

var<private> xc: array<vec4<f32>, 8>;  // CHUNK_V4 used
var<private> xc_sum: f32;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let vec = p.v0 + wid.y;
  let x_base = vec * (p.k / 4u);
  let sg = lid / sg_size;
  let n_sg = (WG_SIZE + sg_size - 1u) / sg_size;
  let chunks = p.k / CHUNK;
  let wg_first = wid.x * ROWS;
  let wg_end = min(wg_first + ROWS, p.rows);
  let up_bytes = p.up_row * p.row_bytes;
  // NORM: the vector's 1 / rms, its squares summed across the subgroup's lanes
  var s = 1.0;
  if (NORM) {
    var ss = 0.0;
    for (var e = lane; e < p.k / 4u; e += sg_size) {
      let v = x[x_base + e];
      ss += dot(v, v);
    }
    s = inverseSqrt(subgroupAdd(ss) / f32(p.k) + p.eps);
  }
  for (var first = wg_first + sg * ROWS_PER_SG; first < wg_end; first += n_sg * ROWS_PER_SG) {
    let last = min(first + ROWS_PER_SG, wg_end) - 1u;
    var acc: array<f32, MAX_ROWS>;
    var acc_up: array<f32, MAX_ROWS>;
    // Zeroed explicitly: SwiftShader kept the previous iteration's values in a loop-scoped array var.
    for (var r = 0u; r < ROWS_PER_SG; r++) { acc[r] = 0.0; acc_up[r] = 0.0; }
    for (var c = lane; c < chunks; c += sg_size) {
      var sum4 = vec4<f32>(0.0);
      for (var i = 0u; i < CHUNK_V4; i++) {
        let v = x_load(x_base, c * CHUNK_V4 + i);
        xc[i] = v;
        sum4 += v;
      }
      xc_sum = sum4.x + sum4.y + sum4.z + sum4.w;
      for (var r = 0u; r < ROWS_PER_SG; r++) {
        let row_byte = min(first + r, last) * p.row_bytes;
        acc[r] += chunk_dot(row_byte, c);
        if (GATED != 0u) { acc_up[r] += chunk_dot(row_byte + up_bytes, c); }
      }
    }
    for (var r = 0u; r < ROWS_PER_SG; r++) {
      let total = subgroupAdd(acc[r]) * s;
      var up = 0.0;
      if (GATED != 0u) { up = subgroupAdd(acc_up[r]) * s; }
      let local_row = first + r;
      if (lane == 0u && local_row <= last) {
        let row = p.row0 + local_row;
        var v = total;
        if (HAS_BIAS) { v += bias[row]; }
        if (GATED != 0u) { v = gate_act(v, up); }
        let yi = vec * p.n + row;
        if (ACCUMULATE) { v += y[yi]; }
        y[yi] = v;
      }
    }
  }
}
