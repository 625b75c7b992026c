// Sampling on the CPU, for runners whose logits land in JS memory (onnxruntime-web). It follows the GPU sampler's
// rules (shaders/sampling/{adjust,sample}.wgsl, documented with their CPU twin sampleRow in @intab/gpu/reference):
// penalties → logit bias → allowed mask, logprobs before temperature and truncation, greedy ties to the lowest id,
// top-k / top-p / min-p over at most kmax candidates ordered by logit (ties: lower id), and the pick of the first
// cumulative weight past u · total. Unlike the twin it never sorts the vocabulary: candidates are selected with a
// bounded heap, so a 151k-token row costs a pass or two.

import { DEFAULT_KMAX, NO_TOKEN, biasEntries, type SampleResult, type SamplingParams } from '@intab/gpu';

/**
 * Σ_i exp(row[i] − m) over a row as the caller holds it (intab's CPU runner: a wasm kernel over its logits), for the
 * log-normaliser of the row's logprobs: a JS exp per vocabulary entry was 2 ms of each row at 151k tokens.
 */
export type ExpSum = (m: number) => number;

/**
 * One token from one row of V f32 logits (`expSum`: the sum of exp(row − max) computed by the caller, used where no
 * penalty, bias or mask changed the row).
 * @example
 * const { id, logprob } = sampleLogits(logits.subarray(0, V), { temperature: 0, u: 0 });
 */
export function sampleLogits(row: Float32Array, p: SamplingParams, kmax = DEFAULT_KMAX, expSum?: ExpSum): SampleResult {
  const vocab = row.length;
  const z = processed(row, p);
  const n = Math.min(p.topLogprobs ?? 0, vocab);
  let m = -Infinity;
  let best = 0;
  for (let i = 0; i < vocab; i++) {
    if (z[i] > m) {
      m = z[i];
      best = i;
    }
  }
  if (m === -Infinity) {
    return { id: NO_TOKEN, logprob: -Infinity, top: Array.from({ length: n }, () => ({ id: NO_TOKEN, logprob: -Infinity })) };
  }
  let s = 0;
  if (expSum && z === row) s = expSum(m);
  else for (let i = 0; i < vocab; i++) s += Math.exp(z[i] - m);
  const logZ = m + Math.log(s);
  const T = p.temperature;

  let id = best;
  if (T !== 0) {
    const topK = p.topK ?? 0;
    const topP = p.topP ?? 1;
    const minP = p.minP ?? 0;
    if ((topK > 0 && topK < vocab) || topP < 1 || minP > 0) {
      const order = topIds(z, Math.min(topK > 0 ? topK : vocab, kmax, vocab));
      const e = order.map((t) => Math.exp((z[t] - m) / T));
      let total = 0;
      for (const x of e) total += x;
      let kept = e.length;
      let before = 0;
      for (let j = 0; j < e.length; j++) {
        if ((topP < 1 && before >= topP * total) || (minP > 0 && e[j] < minP)) {
          kept = j;
          break;
        }
        before += e[j];
      }
      id = order[pick(e, Math.max(kept, 1), p.u)];
    } else {
      const e = new Float64Array(vocab);
      for (let i = 0; i < vocab; i++) e[i] = Math.exp((z[i] - m) / T);
      id = pick(e, vocab, p.u);
    }
  }
  return { id, logprob: z[id] - logZ, top: topIds(z, n).map((t) => ({ id: t, logprob: z[t] - logZ })) };
}

/** The row after penalties, bias and mask, rounded to f32 after each operation as the kernel does (the row itself when none applies). */
function processed(row: Float32Array, p: SamplingParams): Float32Array {
  const history = p.history ? Array.from(p.history) : [];
  const bias = biasEntries(p.logitBias);
  if (history.length === 0 && bias.length === 0 && !p.allowed) return row;
  const vocab = row.length;
  const z = Float32Array.from(row);
  const counts = new Map<number, number>();
  for (const t of history) if (t >= 0 && t < vocab) counts.set(t, (counts.get(t) ?? 0) + 1);
  const r = Math.fround(p.repetitionPenalty ?? 1);
  const pres = Math.fround(p.presencePenalty ?? 0);
  const freq = Math.fround(p.frequencyPenalty ?? 0);
  for (const [t, c] of counts) {
    const x = row[t] > 0 ? Math.fround(row[t] / r) : Math.fround(row[t] * r);
    z[t] = Math.fround(x - Math.fround(pres + Math.fround(freq * c)));
  }
  for (const [t, b] of bias) if (t >= 0 && t < vocab) z[t] = Math.fround(z[t] + b);
  const allowed = p.allowed;
  if (allowed) for (let t = 0; t < vocab; t++) if (((allowed[t >>> 5] >>> (t & 31)) & 1) === 0) z[t] = -Infinity;
  return z;
}

/** Whether token a comes before b: higher logit first, ties (and NaN) by lower id. */
function before(z: Float32Array, a: number, b: number): boolean {
  const d = z[a] - z[b];
  return d > 0 || (!(d < 0) && a < b);
}

/** The k first token ids by `before`, in that order: a heap of the k best so far, whose root is the worst of them. */
function topIds(z: Float32Array, k: number): number[] {
  if (k <= 0) return [];
  const heap: number[] = [];
  const sift = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let w = i;
      if (l < heap.length && before(z, heap[w], heap[l])) w = l;
      if (r < heap.length && before(z, heap[w], heap[r])) w = r;
      if (w === i) return;
      [heap[i], heap[w]] = [heap[w], heap[i]];
      i = w;
    }
  };
  for (let t = 0; t < z.length; t++) {
    if (heap.length < k) {
      heap.push(t);
      for (let i = heap.length - 1; i > 0; ) {
        const parent = (i - 1) >> 1;
        if (!before(z, heap[parent], heap[i])) break;
        [heap[i], heap[parent]] = [heap[parent], heap[i]];
        i = parent;
      }
    } else if (before(z, t, heap[0])) {
      heap[0] = t;
      sift(0);
    }
  }
  return heap.sort((a, b) => (before(z, a, b) ? -1 : 1));
}

/** Index of the first cumulative sum of e[0..count) that exceeds u · total; else the last e > 0. */
function pick(e: ArrayLike<number>, count: number, u: number): number {
  let total = 0;
  for (let j = 0; j < count; j++) total += e[j];
  const target = u * total;
  let acc = 0;
  let last = 0;
  for (let j = 0; j < count; j++) {
    acc += e[j];
    if (e[j] > 0) last = j;
    if (acc > target) return j;
  }
  return last;
}
