// lib/scan: workgroup-wide exclusive prefix sums of one f32 or u32 per invocation, with their totals, for
// kernels that split work by running totals (the sampler's radix select and picks).
// Joined after lib/reduce.wgsl (red_scratch, wg_publish, wg_result) and under its rules: WG_SIZE a power of
// two, uniform control flow, the total uniform and broadcast through the atomic. The per-invocation reads
// (add, excl) are assigned on two paths, so Mesa's GLSL compiler cannot graft them past a barrier.

struct ScanF { excl: f32, total: f32 }
struct ScanU { excl: u32, total: u32 }

fn wg_scan_f(v: f32, lid: u32) -> ScanF {
  red_scratch[lid] = bitcast<u32>(v);
  workgroupBarrier();
  for (var off = 1u; off < WG_SIZE; off <<= 1u) {
    var add = 0.0;
    if (lid >= off) { add = bitcast<f32>(red_scratch[lid - off]); }
    workgroupBarrier();
    if (lid >= off) { red_scratch[lid] = bitcast<u32>(bitcast<f32>(red_scratch[lid]) + add); }
    workgroupBarrier();
  }
  var excl = 0.0;
  if (lid > 0u) { excl = bitcast<f32>(red_scratch[lid - 1u]); }
  if (lid == WG_SIZE - 1u) { wg_publish(red_scratch[lid]); }
  return ScanF(excl, bitcast<f32>(wg_result()));
}

fn wg_scan_u(v: u32, lid: u32) -> ScanU {
  red_scratch[lid] = v;
  workgroupBarrier();
  for (var off = 1u; off < WG_SIZE; off <<= 1u) {
    var add = 0u;
    if (lid >= off) { add = red_scratch[lid - off]; }
    workgroupBarrier();
    if (lid >= off) { red_scratch[lid] = red_scratch[lid] + add; }
    workgroupBarrier();
  }
  var excl = 0u;
  if (lid > 0u) { excl = red_scratch[lid - 1u]; }
  if (lid == WG_SIZE - 1u) { wg_publish(red_scratch[lid]); }
  return ScanU(excl, wg_result());
}
