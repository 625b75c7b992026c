// pool: one vector per packed sequence from its tokens' hidden states, then L2 normalization:
//   v[b, c] = mean_{t in seq b} x[t, c]  (POOL 0),  x[first row of b, c]  (POOL 1: CLS),  x[last row of b, c]  (POOL 2)
//   out[b, c] = v[b, c] / max(||v[b, :dims]||, 1e-12)   for c < dims   (NORMALIZE; else out = v)
// dims ≤ C keeps the first dims values (Matryoshka truncation), normalized as a vector of their own.
//   x: (T, C) f32, B sequences packed (lib/packed-seqs.wgsl)    seq_starts: (B + 1) u32    out: (B, dims) f32
// One workgroup owns one sequence (linear id grid2d); invocations stride over the columns, each summing its columns
// over the sequence's rows (f32), then one reduction (lib/reduce.wgsl) of the squares. An empty sequence gives zeros.

override WG_SIZE: u32 = 64u;
override POOL: u32 = 0u;
override NORMALIZE: bool = true;

struct Params { sequences: u32, cols: u32, dims: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> seq_starts: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = wid.y * nwg.x + wid.x;
  if (b >= p.sequences) { return; }  // uniform per workgroup
  let first = seq_starts[b];
  let end = seq_starts[b + 1u];
  let n = end - min(first, end);
  let base = b * p.dims;
  var ss = 0.0;
  for (var c = lid; c < p.dims; c += WG_SIZE) {
    var v = 0.0;
    if (n > 0u) {
      if (POOL == 0u) {
        for (var t = first; t < end; t++) { v += x[t * p.cols + c]; }
        v /= f32(n);
      } else if (POOL == 1u) {
        v = x[first * p.cols + c];
      } else {
        v = x[(end - 1u) * p.cols + c];
      }
    }
    out[base + c] = v;
    ss += v * v;
  }
  if (NORMALIZE) {
    let inv = 1.0 / max(sqrt(wg_sum(ss, lid)), 1e-12);
    for (var c = lid; c < p.dims; c += WG_SIZE) { out[base + c] *= inv; }
  }
}
