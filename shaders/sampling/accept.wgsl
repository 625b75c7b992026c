// accept: speculative verify on the GPU, after the sampler (sample.wgsl) has sampled every row.
//   entry b owns rows [first_row, first_row + n) of the sampler's output and tokens [first_token, first_token + n)
//   of the step: token 0 is the last accepted token, tokens 1..n-1 are the proposals d_1..d_{n-1}, and row i
//   holds the target's sample after token i.
//   accepted a = the largest a ≤ n − 1 with sampled_id[first_row + i] == tokens[first_token + i + 1] for all i < a
//   out[b] = (a, sampled_id[first_row + a], logprob bits of that row, first_row + a)
//   A plain entry (n = 1) accepts 0 and returns its row's id. NO_TOKEN (0xffffffff) never equals a proposal.
// Why this is the exact speculative-sampling rule (Leviathan et al., Chen et al.): proposals are deterministic,
// so the draft distribution q at row i is a point mass on d = d_{i+1}. Accepting iff the target's own sample
// x ~ p equals d accepts with probability p(d) = min(1, p(d)/q(d)); on a mismatch x is distributed as p
// restricted to tokens ≠ d, renormalized, which is exactly norm(max(0, p − q)). So the rows' ordinary samples
// (greedy or any sampling parameters) already are the corrected samples, and one rule serves every mode.
//   params: batch B, out_stride (u32 words per sampler row), rows R, tokens T
//   samples: (R, out_stride) u32: id, logprob bits, ...     tokens: (T) u32     spans: (B, 4) u32: first_row,
//   row_count, first_token, unused     out: (B, 4) u32
// A span reaching past R rows or T tokens is clamped to what exists; one with no row at all gives
// (0, NO_TOKEN, −inf, first_row). One invocation owns one entry (rows per entry are few: a short loop).

override WG_SIZE: u32 = 64u;

const NONE: u32 = 0xffffffffu;
const NEG_INF_BITS: u32 = 0xff800000u;

struct Params { batch: u32, out_stride: u32, rows: u32, tokens: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> samples: array<u32>;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read> spans: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<u32>>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let b = gid.x;
  if (b >= p.batch) { return; }
  let s = spans[b];
  let first_row = s.x;
  let first_token = s.z;
  // Rows that exist: min(row_count, R − first_row, T − first_token).
  let n = min(min(s.y, p.rows - min(first_row, p.rows)), p.tokens - min(first_token, p.tokens));
  if (n == 0u) {
    out[b] = vec4<u32>(0u, NONE, NEG_INF_BITS, first_row);
    return;
  }
  var a = 0u;
  loop {
    if (a + 1u >= n) { break; }
    let id = samples[(first_row + a) * p.out_stride];
    if (id == NONE || id != tokens[first_token + a + 1u]) { break; }
    a += 1u;
  }
  let row = first_row + a;
  out[b] = vec4<u32>(a, samples[row * p.out_stride], samples[row * p.out_stride + 1u], row);
}
