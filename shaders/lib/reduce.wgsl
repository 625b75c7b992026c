// lib/reduce: workgroup-wide sum and max of one f32 per invocation.
// Joined after a kernel that declares `override WG_SIZE: u32` (a power of two). Call from uniform
// control flow; every invocation gets the result.

var<workgroup> red_scratch: array<f32, WG_SIZE>;

fn wg_sum(v: f32, lid: u32) -> f32 {
  red_scratch[lid] = v;
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red_scratch[lid] = red_scratch[lid] + red_scratch[lid + s]; }
    workgroupBarrier();
  }
  let r = red_scratch[0];
  workgroupBarrier();
  return r;
}

fn wg_max(v: f32, lid: u32) -> f32 {
  red_scratch[lid] = v;
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 0u; s = s >> 1u) {
    if (lid < s) { red_scratch[lid] = max(red_scratch[lid], red_scratch[lid + s]); }
    workgroupBarrier();
  }
  let r = red_scratch[0];
  workgroupBarrier();
  return r;
}
