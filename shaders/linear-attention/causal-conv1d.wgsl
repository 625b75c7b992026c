// causal-conv1d: Qwen3.5's short depthwise causal convolution over the q|k|v channels, SiLU fused, for a step of
// several sequences, each carrying its last K−1 inputs in a state slot from step to step:
//   y[t, c] = silu( Σ_{j<K} w[c, j] · xp[t + j, c] ),   xp = [conv_state[slot] (K−1 rows, oldest first) ; x (its T rows)]
//   conv_state[slot] ← the last K−1 rows of xp (raw inputs; with T < K−1 some are old state rows, shifted)
//   x, y: (T, C) f32, token t's row at t·C    weight: (C, K) f32 (llama.cpp's ssm_conv1d; w[c, K−1] weighs token t)
//   conv_state: (slots, K−1, C) f32    slot_ids: (B) u32 each row's slot    seq_ids: (T) u32 (lib/seq-range.wgsl)
// One invocation owns 4 channels of one sequence row (linear id b·C/4 + c4, grid2d) and walks the row's tokens in
// order with the K−1 previous inputs in registers: the state is read once, written once, and never read by another
// invocation, so one dispatch suffices and needs no barrier (a token-parallel form would race on the state).
// A row with no token in the step, or whose slot is ≥ slots, touches nothing. Channels fastest: neighbouring
// invocations read neighbouring vec4s of x, y and the state. C % 4 == 0, 2 ≤ K ≤ MAX_K.

override WG_SIZE: u32 = 64u;
override KSIZE: u32 = 4u;  // K: taps
const MAX_K: u32 = 8u;

struct Params {
  tokens: u32,     // T
  channels: u32,   // C
  sequences: u32,  // B: rows of slot_ids
  slots: u32,      // slots in conv_state
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> slot_ids: array<u32>;
@group(0) @binding(4) var<storage, read> seq_ids: array<u32>;
@group(0) @binding(5) var<storage, read_write> conv_state: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let c4n = p.channels / 4u;
  let id = (wid.y * nwg.x + wid.x) * WG_SIZE + lid;
  if (id >= p.sequences * c4n) { return; }
  let c4 = id % c4n;
  let b = id / c4n;
  let slot = slot_ids[b];
  if (slot >= p.slots) { return; }
  let t0 = seq_first(b, p.tokens);
  let t1 = seq_first(b + 1u, p.tokens);
  if (t0 >= t1) { return; }

  let prev = KSIZE - 1u;  // state rows
  var w: array<vec4<f32>, MAX_K>;     // (K) taps of the 4 channels
  var hist: array<vec4<f32>, MAX_K>;  // (K−1) previous inputs, oldest first
  let c = 4u * c4;
  for (var j = 0u; j < KSIZE; j++) {
    w[j] = vec4<f32>(weight[c * KSIZE + j], weight[(c + 1u) * KSIZE + j], weight[(c + 2u) * KSIZE + j], weight[(c + 3u) * KSIZE + j]);
  }
  let base = slot * prev * c4n + c4;
  for (var j = 0u; j < prev; j++) { hist[j] = conv_state[base + j * c4n]; }
  for (var t = t0; t < t1; t++) {
    let xt = x[t * c4n + c4];
    var acc = vec4<f32>(0.0);
    for (var j = 0u; j < prev; j++) { acc += w[j] * hist[j]; }
    acc += w[prev] * xt;
    for (var j = 0u; j + 1u < prev; j++) { hist[j] = hist[j + 1u]; }
    hist[prev - 1u] = xt;
    y[t * c4n + c4] = acc / (vec4<f32>(1.0) + exp(-acc));  // silu; exp saturates to inf below -88: the limit 0
  }
  for (var j = 0u; j < prev; j++) { conv_state[base + j * c4n] = hist[j]; }
}
