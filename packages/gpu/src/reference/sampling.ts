// CPU twin of shaders/sampling/{adjust,sample}.wgsl: logits processing and sampling for one step.
// Plain loops in float64 over the f32 logits; it follows the kernels' order of operations and their
// candidate cap (kmax), so for the same (logits, params, u) it picks the same token id. The parameter and
// result types are production's (../sampling-params.ts), shared with the GPU wrapper.

import { biasEntries, checkSamplingParams, DEFAULT_KMAX, NO_TOKEN, type SampleResult, type SamplingParams } from '../sampling-params.ts';

/** Whether any of top-k / top-p / min-p truncates (top-k ≥ V alone does not). */
export function truncates(p: SamplingParams, vocab: number): boolean {
  const k = p.topK ?? 0;
  return (k > 0 && k < vocab) || (p.topP ?? 1) < 1 || (p.minP ?? 0) > 0;
}

/**
 * Step 1 of the kernels (adjust.wgsl): penalties → bias → mask, on one row of f32 logits.
 * Arithmetic is rounded to f32 after each operation, as the kernel does it.
 */
export function processLogits(row: Float32Array, p: SamplingParams): Float32Array {
  const vocab = row.length;
  const z = Float32Array.from(row);
  const allowed = (t: number) => !p.allowed || ((p.allowed[t >>> 5] >>> (t & 31)) & 1) === 1;
  const counts = new Map<number, number>();
  for (const t of Array.from(p.history ?? [])) if (t >= 0 && t < vocab) counts.set(t, (counts.get(t) ?? 0) + 1);
  const r = Math.fround(p.repetitionPenalty ?? 1);
  const pres = Math.fround(p.presencePenalty ?? 0);
  const freq = Math.fround(p.frequencyPenalty ?? 0);
  for (const [t, c] of counts) {
    let x = row[t];
    x = x > 0 ? Math.fround(x / r) : Math.fround(x * r);
    z[t] = Math.fround(x - Math.fround(pres + Math.fround(freq * c)));
  }
  for (const [t, b] of biasEntries(p.logitBias)) if (t >= 0 && t < vocab) z[t] = Math.fround(z[t] + b);
  for (let t = 0; t < vocab; t++) if (!allowed(t)) z[t] = -Infinity;
  return z;
}

/** The first `count` token ids sorted by processed logit descending, ties by lower id. */
function descending(z: Float32Array, count: number): number[] {
  // The first `count` of that order, selected in one pass (a full sort of a 151k vocabulary per token is what made
  // the CPU twin slow): a sorted list of the best so far, which a later token enters only by beating its last entry.
  const n = Math.min(count, z.length);
  const ids: number[] = [];
  if (n <= 0) return ids;
  // a comes before b: a larger logit, else (equal, or both -Infinity) the lower id.
  const before = (a: number, b: number) => {
    const d = z[b] - z[a];
    return d < 0 || (!(d > 0) && a < b);
  };
  for (let i = 0; i < z.length; i++) {
    if (ids.length === n && !before(i, ids[n - 1])) continue;
    let lo = 0;
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(ids[mid], i)) lo = mid + 1;
      else hi = mid;
    }
    ids.splice(lo, 0, i);
    if (ids.length > n) ids.pop();
  }
  return ids;
}

/** Index of the first cumulative sum of `e` (in the given order) that exceeds u · total; else the last e > 0. */
function pick(e: number[], u: number): number {
  let total = 0;
  for (const x of e) total += x;
  const target = u * total;
  let acc = 0;
  let last = 0;
  for (let j = 0; j < e.length; j++) {
    acc += e[j];
    if (e[j] > 0) last = j;
    if (acc > target) return j;
  }
  return last;
}

/**
 * Sample one token from one row of logits (V f32) exactly as the GPU sampler does:
 *   1. z = mask(bias(penalties(logits)))                    (see processLogits)
 *   2. logprobs = z − logsumexp(z)                          (before temperature and truncation)
 *   3. temperature 0: id = argmax z (ties → lowest id)
 *   4. truncating (top-k, top-p or min-p on): order tokens by z descending (ties → lower id), keep the first
 *      K = min(topK || V, kmax, V); e_j = exp((z_j − z_max) / T); top-p keeps j while the mass before j is
 *      < topP · Σ_K e; min-p keeps j while e_j ≥ minP; pick the first j whose cumulative e exceeds u · Σ_kept e
 *   5. otherwise (pure temperature): the same pick over all V tokens in token-id order
 */
export function sampleRow(row: Float32Array, p: SamplingParams, kmax = DEFAULT_KMAX): SampleResult {
  const vocab = row.length;
  checkSamplingParams(p, 0, vocab, vocab); // refused as the GPU sampler refuses it
  const z = processLogits(row, p);
  const n = Math.min(p.topLogprobs ?? 0, vocab);
  let m = -Infinity;
  for (let i = 0; i < vocab; i++) if (z[i] > m) m = z[i];
  if (m === -Infinity) {
    return { id: NO_TOKEN, logprob: -Infinity, top: Array.from({ length: n }, () => ({ id: NO_TOKEN, logprob: -Infinity })) };
  }
  let s = 0;
  for (let i = 0; i < vocab; i++) s += Math.exp(z[i] - m);
  const logZ = m + Math.log(s);
  const T = p.temperature;
  const truncating = T !== 0 && truncates(p, vocab);
  const topK = p.topK ?? 0;
  const k = Math.min(topK > 0 ? topK : vocab, kmax, vocab);
  const order = descending(z, Math.max(n, T === 0 ? 1 : truncating ? k : 0));

  let id: number;
  if (T === 0) {
    id = order[0];
  } else if (truncating) {
    const e = order.slice(0, k).map((t) => Math.exp((z[t] - m) / T));
    let total = 0;
    for (const x of e) total += x;
    const topP = p.topP ?? 1;
    const minP = p.minP ?? 0;
    let kept = k;
    let before = 0;
    for (let j = 0; j < k; j++) {
      if ((topP < 1 && before >= topP * total) || (minP > 0 && e[j] < minP)) {
        kept = j;
        break;
      }
      before += e[j];
    }
    id = order[pick(e.slice(0, Math.max(kept, 1)), p.u)];
  } else {
    const e = Array.from(z, (x) => Math.exp((x - m) / T));
    id = pick(e, p.u);
  }
  return {
    id,
    logprob: z[id] - logZ,
    top: order.slice(0, n).map((t) => ({ id: t, logprob: z[t] - logZ })),
  };
}

/** sampleRow for each sequence b of (B, V) logits. */
export function sampleReference(logits: Float32Array, vocab: number, params: readonly SamplingParams[], kmax = DEFAULT_KMAX): SampleResult[] {
  return params.map((p, b) => sampleRow(logits.subarray(b * vocab, (b + 1) * vocab), p, kmax));
}
