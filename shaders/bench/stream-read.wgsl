// stream-read: the bandwidth baseline for kernel benchmarks. Invocation i sums the contiguous span
// src[i*SPAN4 .. (i+1)*SPAN4) of vec4<u32> words and writes one word, so the only memory traffic is
// one streaming read of src. Workgroup size and span are swept by the benchmark; the best counts.
//   src: (n4) vec4<u32>     out: (invocations) u32

override WG_SIZE: u32 = 64u;

struct Params { n4: u32, span4: u32, wg_x: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let inv = (wid.y * p.wg_x + wid.x) * WG_SIZE + lid;
  let start = inv * p.span4;
  if (start >= p.n4) { return; }
  let end = min(start + p.span4, p.n4);
  var acc = vec4<u32>(0u);
  for (var i = start; i < end; i++) {
    acc += src[i];
  }
  out[inv] = acc.x + acc.y + acc.z + acc.w;
}
