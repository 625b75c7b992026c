// gemv.subgroup: the gemv.wgsl contract (same bindings and params), for adapters with subgroups.
// A workgroup owns ROWS consecutive rows of one vector; each subgroup takes rows in turn, its lanes
// stride over the row's chunks, and subgroupAdd reduces them: no workgroup memory, no barriers, and
// coalesced reads of each row. Correct for any subgroup size (rows are handed out by subgroup index
// derived from the actual size).

enable subgroups;
diagnostic(off, subgroup_uniformity);

override WG_SIZE: u32 = 64u;
override ROWS: u32 = 8u;
override HAS_BIAS: bool = false;
override ACCUMULATE: bool = false;

struct Params {
  n: u32,
  k: u32,
  row_bytes: u32,
  row0: u32,
  rows: u32,
  _pad0: u32,
  _pad1: u32,
  _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;

var<private> x_base: u32;
fn x4(i: u32) -> vec4<f32> { return x[x_base + i]; }

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
  let vec = wid.y;
  x_base = vec * (p.k / 4u);
  let sg = lid / sg_size;
  let n_sg = (WG_SIZE + sg_size - 1u) / sg_size;
  let chunks = p.k / CHUNK;
  for (var r = sg; r < ROWS; r += n_sg) {
    let local_row = wid.x * ROWS + r;
    if (local_row >= p.rows) { break; }  // uniform across the subgroup
    let rb = local_row * p.row_bytes;
    var acc = 0.0;
    for (var c = lane; c < chunks; c += sg_size) {
      acc += chunk_dot(rb, c, c * CHUNK_V4);
    }
    acc = subgroupAdd(acc);
    if (lane == 0u) {
      let row = p.row0 + local_row;
      var v = acc;
      if (HAS_BIAS) { v += bias[row]; }
      let yi = vec * p.n + row;
      if (ACCUMULATE) { v += y[yi]; }
      y[yi] = v;
    }
  }
}
