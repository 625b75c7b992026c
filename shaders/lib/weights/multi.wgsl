// weights/multi: what the multi-vector GEMV (gemv.multi*.wgsl) dots a weight chunk with: the x chunks of up
// to 4 vectors, held as matrix columns so that one vec4 of a weight chunk times xm[i] is four dots at once;
// where the group's vectors start (group_x) and how both kernels store a row's sums (store_row).
// Also joined after lib/gemv-fusion.wgsl (x_load, rms_scale, gate_act).
// Joined after lib/matmul-io.wgsl (x) and the format's lib (CHUNK, CHUNK_V4), before its chunk_dot4 lib
// (lib/weights/<dtype>.multi.wgsl or vec4.multi.wgsl). The joining kernel declares `override WIDTH: u32`:
// the vectors computed at once, 2 or 4 (columns 2 and 3 are zero when 2). Written out without loops:
// SwiftShader does not unroll them, and a private array indexed by a loop counter lives in memory.

var<private> xm: array<mat4x4<f32>, 8>;  // xm[i]: vec4 i of the chunk, one column per vector (CHUNK_V4 used)
var<private> xs: vec4<f32>;              // each vector's chunk sum (32-element chunks only)
var<private> xs_lo: vec4<f32>;           // ... of its first 16 elements

// The vec4 index of x[v, 0] for the group's vectors v0 .. v0 + 3, those past B repeating the last one.
fn group_x(v0: u32) -> vec4<u32> {
  return min(vec4<u32>(v0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.t - 1u)) * (p.k / 4u);
}

// x[vectors, vec4 e] as matrix columns; xb holds the vec4 index of x[vector, 0] of the 4 vectors (group_x).
// Under NORM each column is scaled by the norm weight (lib/gemv-fusion.wgsl).
fn x_cols(xb: vec4<u32>, e: u32) -> mat4x4<f32> {
  if (WIDTH == 2u) { return mat4x4<f32>(x_load(xb.x, e), x_load(xb.y, e), vec4<f32>(0.0), vec4<f32>(0.0)); }
  return mat4x4<f32>(x_load(xb.x, e), x_load(xb.y, e), x_load(xb.z, e), x_load(xb.w, e));
}

// The x chunk starting at vec4 e (CHUNK_V4 vec4s) of the 4 vectors, into xm (and xs, xs_lo).
fn load_x(xb: vec4<u32>, e: u32) {
  xm[0] = x_cols(xb, e);
  if (CHUNK_V4 == 8u) {
    xm[1] = x_cols(xb, e + 1u); xm[2] = x_cols(xb, e + 2u); xm[3] = x_cols(xb, e + 3u);
    xm[4] = x_cols(xb, e + 4u); xm[5] = x_cols(xb, e + 5u); xm[6] = x_cols(xb, e + 6u); xm[7] = x_cols(xb, e + 7u);
    let ones = vec4<f32>(1.0);
    xs_lo = ones * (xm[0] + xm[1] + xm[2] + xm[3]);
    xs = xs_lo + ones * (xm[4] + xm[5] + xm[6] + xm[7]);
  }
}

// One vec4 of a weight chunk against the same vec4 of the vectors' x chunks (a dot with each column).
fn dot_cols(wv: vec4<f32>, m: mat4x4<f32>) -> vec4<f32> {
  if (WIDTH == 2u) { return vec4<f32>(dot(wv, m[0]), dot(wv, m[1]), 0.0, 0.0); }
  return wv * m;
}

// y[vectors v0 .. v0 + 3 (those < B), local_row] from the row's 4 sums (times each vector's 1 / rms under NORM),
// plus the bias (HAS_BIAS), through the gated activation with the up row's sums (GATED), added to y (ACCUMULATE):
// both kernels' overrides.
fn store_row(local_row: u32, v0: u32, sums: vec4<f32>, ups: vec4<f32>) {
  let row = p.row0 + local_row;
  var b = 0.0;
  if (HAS_BIAS) { b = bias[row]; }
  for (var i = 0u; i < WIDTH; i++) {
    let v = v0 + i;
    if (v >= p.t) { break; }
    let yi = v * p.n + row;
    var s = sums[i] + b;
    if (GATED != 0u) { s = gate_act(s, ups[i]); }
    if (ACCUMULATE) { s += y[yi]; }
    y[yi] = s;
  }
}

// Each vector's 1 / rms (lib/gemv-fusion.wgsl's rms_scale) under NORM, else 1.
fn group_scale(xb: vec4<u32>) -> vec4<f32> {
  if (!NORM) { return vec4<f32>(1.0); }
  if (WIDTH == 2u) { return vec4<f32>(rms_scale(xb.x), rms_scale(xb.y), 1.0, 1.0); }
  return vec4<f32>(rms_scale(xb.x), rms_scale(xb.y), rms_scale(xb.z), rms_scale(xb.w));
}
