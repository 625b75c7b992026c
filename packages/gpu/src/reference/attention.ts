// CPU twins of the paged KV cache and attention kernels (shaders/attention/*.wgsl), in float64.
// Layout as documented in kernels/paged-kv.ts: caches (pages, PAGE, Hkv, D), page table (B, maxPages).

export interface PagedCache {
  k: Float32Array; // (pages, PAGE, Hkv, D)
  v: Float32Array; // (pages, PAGE, Hkv, D)
  pageTable: Uint32Array; // (B, maxPages)
  maxPages: number;
  pageSize: number;
  kvHeads: number;
  headDim: number;
}

/** Float offset of (seq, position)'s K/V row for kv head kvh. */
export function cacheRow(c: PagedCache, seq: number, pos: number, kvh: number): number {
  const page = c.pageTable[seq * c.maxPages + Math.floor(pos / c.pageSize)];
  return ((page * c.pageSize + (pos % c.pageSize)) * c.kvHeads + kvh) * c.headDim;
}

/** Writes the new tokens' rows (T, Hkv, D) into copies of the caches; returns the copies. */
export function kvAppend(
  c: PagedCache,
  kNew: Float32Array,
  vNew: Float32Array,
  seqIds: ArrayLike<number>,
  positions: ArrayLike<number>,
): { k: Float32Array; v: Float32Array } {
  const k = c.k.slice();
  const v = c.v.slice();
  const row = c.kvHeads * c.headDim;
  for (let t = 0; t < seqIds.length; t++) {
    const dst = cacheRow(c, seqIds[t], positions[t], 0);
    k.set(kNew.subarray(t * row, (t + 1) * row), dst);
    v.set(vNew.subarray(t * row, (t + 1) * row), dst);
  }
  return { k, v };
}

/**
 * Causal attention (scores q·k / sqrt(D)) of T query tokens (T, H, D) over their sequences' cached positions 0..pos, or with a
 * sliding `window` > 0 over positions j with pos - j < window only (0 = no window);
 * query head h reads kv head h / (H / Hkv). Returns (T, H, D) float64.
 */
export function pagedAttention(
  c: PagedCache,
  q: Float32Array,
  heads: number,
  seqIds: ArrayLike<number>,
  positions: ArrayLike<number>,
  window = 0,
): Float64Array {
  const D = c.headDim;
  const scale = 1 / Math.sqrt(D);
  const group = heads / c.kvHeads;
  const T = seqIds.length;
  const out = new Float64Array(T * heads * D);
  for (let t = 0; t < T; t++) {
    const n = positions[t] + 1;
    const first = window > 0 ? Math.max(0, n - window) : 0; // keys pos - j >= window are skipped
    const scores = new Float64Array(n);
    for (let h = 0; h < heads; h++) {
      const kvh = Math.floor(h / group);
      const qb = (t * heads + h) * D;
      let m = -Infinity;
      for (let j = first; j < n; j++) {
        const kb = cacheRow(c, seqIds[t], j, kvh);
        let s = 0;
        for (let d = 0; d < D; d++) s += q[qb + d] * c.k[kb + d];
        scores[j] = s * scale;
        if (scores[j] > m) m = scores[j];
      }
      let l = 0;
      const ob = (t * heads + h) * D;
      for (let j = first; j < n; j++) {
        const p = Math.exp(scores[j] - m);
        l += p;
        const vb = cacheRow(c, seqIds[t], j, kvh);
        for (let d = 0; d < D; d++) out[ob + d] += p * c.v[vb + d];
      }
      for (let d = 0; d < D; d++) out[ob + d] /= l;
    }
  }
  return out;
}

/**
 * A seeded test cache: sequences of the given lengths on shuffled, scattered page ids (plus `sparePages`
 * never referenced). Filled slots hold N(0,1); every slot not holding a token holds NaN, so a kernel that
 * reads past a context or into a foreign page produces NaN.
 */
export function randomPagedCache(o: {
  lengths: number[];
  pageSize: number;
  kvHeads: number;
  headDim: number;
  rng: () => number;
  randn: (rng: () => number) => number;
  sparePages?: number;
  /** Page-table columns (default: just enough for the longest sequence). */
  maxPages?: number;
}): PagedCache & { pages: number } {
  const need = o.lengths.map((n) => Math.ceil(n / o.pageSize));
  const maxPages = o.maxPages ?? Math.max(1, ...need);
  const pages = need.reduce((a, b) => a + b, 0) + (o.sparePages ?? 3);
  const ids = Array.from({ length: pages }, (_, i) => i);
  for (let i = pages - 1; i > 0; i--) {
    const j = Math.floor(o.rng() * (i + 1));
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const pageTable = new Uint32Array(o.lengths.length * maxPages).fill(0xffffffff);
  let next = 0;
  o.lengths.forEach((_, b) => {
    for (let i = 0; i < need[b]; i++) pageTable[b * maxPages + i] = ids[next++];
  });
  const row = o.kvHeads * o.headDim;
  const k = new Float32Array(pages * o.pageSize * row).fill(NaN);
  const v = new Float32Array(pages * o.pageSize * row).fill(NaN);
  const c = { k, v, pageTable, maxPages, pageSize: o.pageSize, kvHeads: o.kvHeads, headDim: o.headDim, pages };
  o.lengths.forEach((n, b) => {
    for (let pos = 0; pos < n; pos++) {
      const at = cacheRow(c, b, pos, 0);
      for (let e = 0; e < row; e++) {
        k[at + e] = o.randn(o.rng);
        v[at + e] = o.randn(o.rng);
      }
    }
  });
  return c;
}
