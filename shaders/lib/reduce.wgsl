// lib/reduce: workgroup-wide sum and max of one f32 per invocation, and the one-slot broadcast they end with
// (wg_publish / wg_result), which lib/scan.wgsl and the sampler's picks use too: every kernel that reduces across a
// workgroup joins this file. Joined after a kernel that declares `override WG_SIZE: u32` (a power of two ≥ 2). Call
// from uniform control flow; every invocation gets the result, as a uniform value. Results travel through an atomic,
// not a plain workgroup load, because of a Mesa compiler bug (see wg_result), at no extra barrier.

var<workgroup> red_scratch: array<u32, WG_SIZE>;  // one value per invocation (f32 as bits; lib/scan's u32 too)
var<workgroup> red_out: atomic<u32>;              // the result everyone reads

/** Makes v the workgroup's result; called by the one invocation that holds it, before wg_result(). */
fn wg_publish(v: u32) {
  atomicStore(&red_out, v);
}

/**
 * The published result for every invocation, as a uniform value. It ends with a barrier, so the next wg_publish
 * (after at least one more barrier in any reduction here) never overwrites a value still unread.
 * Why an atomic: Mesa's GLSL compiler (every Mesa OpenGL driver, so Dawn's OpenGL backend on llvmpipe) grafts a
 * temporary that holds a plain workgroup load into its one use later in the same basic block, across barrier()
 * (opt_tree_grafting does not stop at barriers). `let r = red[0]; workgroupBarrier(); ... r ...` then reads red[0]
 * at the use, and llvmpipe, which runs a workgroup as SIMD groups taking turns at each barrier, has let the first
 * group overwrite red[0] with the next reduction's value by then. An atomic's value is a call's result, which is
 * never grafted. No barrier is added: the tree's last level writes the atomic, and workgroupUniformLoad's two
 * barriers stand in for that level's barrier and the trailing one a plain broadcast needs.
 */
fn wg_result() -> u32 {
  return workgroupUniformLoad(&red_out);
}

fn wg_sum(v: f32, lid: u32) -> f32 {
  red_scratch[lid] = bitcast<u32>(v);
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 1u; s >>= 1u) {
    if (lid < s) { red_scratch[lid] = bitcast<u32>(bitcast<f32>(red_scratch[lid]) + bitcast<f32>(red_scratch[lid + s])); }
    workgroupBarrier();
  }
  if (lid == 0u) { wg_publish(bitcast<u32>(bitcast<f32>(red_scratch[0]) + bitcast<f32>(red_scratch[1]))); }
  return bitcast<f32>(wg_result());
}

fn wg_max(v: f32, lid: u32) -> f32 {
  red_scratch[lid] = bitcast<u32>(v);
  workgroupBarrier();
  for (var s = WG_SIZE / 2u; s > 1u; s >>= 1u) {
    if (lid < s) { red_scratch[lid] = bitcast<u32>(max(bitcast<f32>(red_scratch[lid]), bitcast<f32>(red_scratch[lid + s]))); }
    workgroupBarrier();
  }
  if (lid == 0u) { wg_publish(bitcast<u32>(max(bitcast<f32>(red_scratch[0]), bitcast<f32>(red_scratch[1])))); }
  return bitcast<f32>(wg_result());
}
