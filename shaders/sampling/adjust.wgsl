// sample-adjust: z[b, i] = mask(bias(penalties(logits[b, i])))   (step 1 of sampling; sample.wgsl is step 2)
//   penalties, per distinct token t of the history with count c (ids ≥ V ignored):
//     x = logits[b, t];  x = x > 0 ? x / rep : x * rep;  x -= presence + frequency * c
//   bias: z[t] += bias for each (t, bias) pair (ids distinct: the packer merges duplicates; ids ≥ V ignored)
//   mask: z[t] = -inf where the allowed bitmask has t's bit clear (neither penalty nor bias can undo it)
//   params: batch B, vocab V        seqs: (B) SeqParams (64 bytes each, lib/sampling-params.wgsl)
//   logits: (B, V) f32   history: (*) u32 token ids   bias: (*, 2) u32 (id, f32 bits)   mask: (*) u32
//   z: (B, V) f32 written as u32 bits through atomics (the sampler's scratch)
// One workgroup owns one sequence. Counts need no extra scratch: z[t] itself counts, 0x10001 per
// occurrence (low half: a countdown, high half: the count, so histories are < 65536 tokens); every
// occurrence then subtracts 1 and the one that brings the low half to 0 — the last, so nobody touches
// z[t] after it — writes the penalized logit. storageBarrier separates the phases inside the workgroup.

override WG_SIZE: u32 = 256u;

const NONE: u32 = 0xffffffffu;
const NEG_INF_BITS: u32 = 0xff800000u;

struct Params { batch: u32, vocab: u32, _pad0: u32, _pad1: u32 }

// SeqParams: lib/sampling-params.wgsl (joined by the wrapper).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> seqs: array<SeqParams>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read> history: array<u32>;
@group(0) @binding(4) var<storage, read> bias: array<u32>;
@group(0) @binding(5) var<storage, read> mask: array<u32>;
@group(0) @binding(6) var<storage, read_write> z: array<atomic<u32>>;

fn allowed(mask_offset: u32, t: u32) -> bool {
  if (mask_offset == NONE) { return true; }
  return ((mask[mask_offset + (t >> 5u)] >> (t & 31u)) & 1u) == 1u;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let b = wid.y * nwg.x + wid.x;
  if (b >= p.batch) { return; }  // uniform per workgroup
  let s = seqs[b];
  let V = p.vocab;
  let row = b * V;

  // Copy with the mask applied.
  for (var i = lid; i < V; i += WG_SIZE) {
    let x = select(NEG_INF_BITS, bitcast<u32>(logits[row + i]), allowed(s.mask_offset, i));
    atomicStore(&z[row + i], x);
  }
  storageBarrier();

  // Penalties: reset, count, then the last occurrence of each token writes its penalized logit.
  for (var j = lid; j < s.history_len; j += WG_SIZE) {
    let t = history[s.history_offset + j];
    if (t < V) { atomicStore(&z[row + t], 0u); }
  }
  storageBarrier();
  for (var j = lid; j < s.history_len; j += WG_SIZE) {
    let t = history[s.history_offset + j];
    if (t < V) { atomicAdd(&z[row + t], 0x10001u); }
  }
  storageBarrier();
  for (var j = lid; j < s.history_len; j += WG_SIZE) {
    let t = history[s.history_offset + j];
    if (t < V) {
      let old = atomicSub(&z[row + t], 1u);
      if ((old & 0xffffu) == 1u) {
        var x = logits[row + t];
        x = select(x * s.repetition, x / s.repetition, x > 0.0);
        x = x - (s.presence + s.frequency * f32(old >> 16u));
        atomicStore(&z[row + t], select(NEG_INF_BITS, bitcast<u32>(x), allowed(s.mask_offset, t)));
      }
    }
  }
  storageBarrier();

  // Bias on allowed tokens.
  for (var j = lid; j < s.bias_len; j += WG_SIZE) {
    let at = 2u * (s.bias_offset + j);
    let t = bias[at];
    if (t < V && allowed(s.mask_offset, t)) {
      let x = bitcast<f32>(atomicLoad(&z[row + t])) + bitcast<f32>(bias[at + 1u]);
      atomicStore(&z[row + t], bitcast<u32>(x));
    }
  }
}
