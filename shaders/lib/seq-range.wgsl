// lib/seq-range: the tokens of one sequence row in a step, for kernels that walk a sequence's tokens in order
// (the recurrent kernels: causal-conv1d, gated-delta). A step's tokens carry seq_ids (T) u32, each sequence's
// tokens consecutive and in order, and the rows nondecreasing (row 0's tokens first: the Runner's layout), so
// row b owns tokens [seq_first(b), seq_first(b + 1)) — empty when the row has no token in the step.
// The joining kernel declares: seq_ids: array<u32>.

// The first token t < tokens with seq_ids[t] >= b (tokens when none): a binary search, log2(T) reads.
fn seq_first(b: u32, tokens: u32) -> u32 {
  var lo = 0u;
  var hi = tokens;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (seq_ids[mid] < b) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  return lo;
}
