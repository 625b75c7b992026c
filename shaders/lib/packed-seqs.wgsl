// lib/packed-seqs: the sequence table of an encoder pass. B sequences are packed back to back, no padding, into T
// token rows; seq_starts (B + 1) u32 holds each one's first row and, last, T: sequence b owns rows
// [seq_starts[b], seq_starts[b + 1]) (nondecreasing, seq_starts[0] = 0; an empty sequence owns none). The one table
// serves attention (a token's key range), RoPE (its position: row - first row) and pooling.
// The joining kernel declares: seq_starts: array<u32> (read-only storage).

// The sequence of row t < T: the last b < sequences with seq_starts[b] <= t (binary search, log2(B) reads).
fn seq_of(t: u32, sequences: u32) -> u32 {
  var lo = 0u;
  var hi = sequences;
  while (hi - lo > 1u) {
    let mid = (lo + hi) / 2u;
    if (seq_starts[mid] <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}
