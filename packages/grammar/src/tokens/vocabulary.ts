// A tokenizer's vocabulary as a byte trie, built once per vocabulary and cached: the structure the token-mask code walks
// with a grammar, pruning every token under a refused byte at once.
//
// Layout: the nodes in depth-first preorder, flat typed arrays. Node 0 is the root (the empty prefix). For node i:
//   byte[i]   the byte on the edge into it;   depth[i]  its depth (the length of its prefix);
//   next[i]   the first node after its subtree (so a refused byte skips the subtree with i = next[i]);
//   tokens    tokIds[tokStart[i] .. tokStart[i + 1]) — the ids whose bytes end exactly here (several ids may share
//             bytes: SentencePiece's <0x20> and '▁', added tokens that repeat a piece).
// A walk over the whole vocabulary is then a linear scan: at node i the parent's state is the last one seen at depth
// depth[i] - 1. The same layout serves for sub-tries (the suffixes after a byte that leaves a string, see segment-masks.ts).

/** A preorder byte trie over (bytes, id) pairs (see the layout above). */
export interface ByteTrie {
  readonly nodeCount: number;
  readonly byte: Uint8Array;
  readonly depth: Uint16Array;
  readonly next: Uint32Array;
  readonly tokStart: Uint32Array;
  readonly tokIds: Int32Array;
  /** The deepest node's depth (the longest token). */
  readonly maxDepth: number;
}

/** (bytes, id) pairs packed flat: entry k's bytes are data[offset[k] .. offset[k + 1]). */
export interface PackedEntries {
  readonly data: Uint8Array;
  readonly offset: Uint32Array;
  readonly ids: Int32Array;
}

/**
 * Builds a preorder trie from packed (bytes, id) pairs by MSD radix partitioning (no string sort: ~O(total bytes)).
 * Ids with the same bytes share a node, in the order given. Empty bytes sit at the root.
 */
export function buildByteTrie({ data, offset, ids }: PackedEntries): ByteTrie {
  const count = ids.length;
  let maxDepth = 0;
  for (let k = 0; k < count; k++) maxDepth = Math.max(maxDepth, offset[k + 1] - offset[k]);
  const capacity = data.length + 1;
  const byte = new Uint8Array(capacity);
  const depth = new Uint16Array(capacity);
  const next = new Uint32Array(capacity);
  const tokStart = new Uint32Array(capacity + 1);
  const tokIds = new Int32Array(count);
  const idx = new Int32Array(count);
  for (let k = 0; k < count; k++) idx[k] = k;
  const tmp = new Int32Array(count);
  const counts = new Int32Array(257);
  const starts = new Int32Array(256);
  // Tasks: [lo, hi, d] = entries idx[lo..hi) share a prefix of length d and have no node yet (d = 0: the root);
  // [-1, node, 0] closes a node's subtree.
  const stack: number[] = [0, count, 0];
  let nodes = 0;
  let toks = 0;
  while (stack.length > 0) {
    const d = stack.pop()!;
    const hi = stack.pop()!;
    const lo = stack.pop()!;
    if (lo < 0) {
      next[hi] = nodes;
      continue;
    }
    // The node for this prefix.
    const n = nodes++;
    byte[n] = d > 0 ? data[offset[idx[lo]] + d - 1] : 0;
    depth[n] = d;
    tokStart[n] = toks;
    if (hi - lo === 1) {
      // One entry left: a chain down to its end.
      const e = idx[lo];
      const o = offset[e];
      const len = offset[e + 1] - o;
      for (let k = d; k < len; k++) {
        const c = nodes++;
        byte[c] = data[o + k];
        depth[c] = k + 1;
        tokStart[c] = toks;
      }
      tokIds[toks++] = ids[e];
      for (let k = n; k < nodes; k++) next[k] = nodes;
      continue;
    }
    // Entries ending here first (stable), then the rest bucketed by byte d (stable).
    let m = lo;
    for (let k = lo; k < hi; k++) {
      const e = idx[k];
      if (offset[e + 1] - offset[e] === d) tokIds[toks++] = ids[e];
      else tmp[m++] = e;
    }
    if (m === lo) {
      next[n] = nodes;
      continue;
    }
    stack.push(-1, n, 0);
    if (m - lo <= 24) {
      // Few entries: insertion sort by byte d, then push the runs, last byte first.
      for (let k = lo; k < m; k++) {
        const x = tmp[k];
        const bx = data[offset[x] + d];
        let j = k - 1;
        while (j >= lo && data[offset[tmp[j]] + d] > bx) {
          tmp[j + 1] = tmp[j];
          j--;
        }
        tmp[j + 1] = x;
      }
      let z = m;
      while (z > lo) {
        const bz = data[offset[tmp[z - 1]] + d];
        let a = z - 1;
        while (a > lo && data[offset[tmp[a - 1]] + d] === bz) a--;
        for (let k = a; k < z; k++) idx[k] = tmp[k];
        stack.push(a, z, d + 1);
        z = a;
      }
      continue;
    }
    counts.fill(0);
    for (let k = lo; k < m; k++) counts[data[offset[tmp[k]] + d] + 1]++;
    for (let c = 1; c <= 256; c++) counts[c] += counts[c - 1];
    starts.set(counts.subarray(0, 256));
    for (let k = lo; k < m; k++) {
      const e = tmp[k];
      idx[lo + counts[data[offset[e] + d]]++] = e;
    }
    for (let c = 255; c >= 0; c--) {
      const a = lo + starts[c];
      const z = lo + counts[c];
      if (z > a) stack.push(a, z, d + 1);
    }
  }
  tokStart[nodes] = toks;
  return {
    nodeCount: nodes,
    byte: byte.slice(0, nodes),
    depth: depth.slice(0, nodes),
    next: next.slice(0, nodes),
    tokStart: tokStart.slice(0, nodes + 1),
    tokIds,
    maxDepth,
  };
}

export interface TokenVocabularyOptions {
  /** End-of-sequence ids (EOS, end-of-turn): allowed by a matcher exactly where the grammar accepts. */
  eos?: readonly number[];
  /**
   * Mask width in token ids (the model's logits row, which may be padded past the tokenizer); default the number of
   * tokens. Ids without bytes (special tokens, padding rows) are never allowed.
   */
  size?: number;
}

const cache = new WeakMap<readonly (Uint8Array | null)[], Map<string, TokenVocabulary>>();

/**
 * A tokenizer's vocabulary for constrained decoding: each token's bytes, the EOS ids, and the byte trie over all
 * tokens. Build it with `TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds })`, which caches by
 * the bytes array.
 */
export class TokenVocabulary {
  /** Mask width in ids; a mask has `words` = ceil(size / 32) u32 words. */
  readonly size: number;
  readonly words: number;
  readonly eos: readonly number[];
  /** Each id's bytes, null when the id is never allowed as text. */
  readonly tokens: readonly (Uint8Array | null)[];
  readonly trie: ByteTrie;
  /** For each byte, the root's child node with that byte, or -1. */
  readonly rootChild: Int32Array;
  /** Build time in milliseconds (reported by the benchmark). */
  readonly buildMs: number;
  /** Per-vocabulary caches of segment-masks.ts (loop and chain walks by table signature); opaque here. */
  readonly walkCache = new Map<string, unknown>();

  private constructor(tokens: readonly (Uint8Array | null)[], options: TokenVocabularyOptions) {
    const t0 = performance.now();
    this.tokens = tokens;
    this.size = Math.max(options.size ?? tokens.length, tokens.length);
    this.words = Math.ceil(this.size / 32);
    const eos = [...new Set(options.eos ?? [])];
    for (const id of eos) {
      if (!Number.isInteger(id) || id < 0 || id >= this.size) throw new RangeError(`TokenVocabulary: EOS id ${id} is outside the vocabulary of ${this.size}`);
    }
    this.eos = eos;
    const eosSet = new Set(eos);
    let total = 0;
    let count = 0;
    for (let id = 0; id < tokens.length; id++) {
      const b = tokens[id];
      if (b && b.length > 0 && !eosSet.has(id)) {
        total += b.length;
        count++;
      }
    }
    const data = new Uint8Array(total);
    const offset = new Uint32Array(count + 1);
    const ids = new Int32Array(count);
    for (let id = 0, k = 0, at = 0; id < tokens.length; id++) {
      const b = tokens[id];
      if (!b || b.length === 0 || eosSet.has(id)) continue;
      offset[k] = at;
      data.set(b, at);
      at += b.length;
      ids[k++] = id;
      offset[k] = at;
    }
    this.trie = buildByteTrie({ data, offset, ids });
    this.rootChild = new Int32Array(256).fill(-1);
    const { next, byte } = this.trie;
    for (let i = 1; i < this.trie.nodeCount; i = next[i]) this.rootChild[byte[i]] = i;
    this.buildMs = performance.now() - t0;
  }

  /**
   * The vocabulary for these token bytes, built once and cached by the array (and options).
   * @example
   * const vocab = TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds });
   */
  static from(tokens: readonly (Uint8Array | null)[], options: TokenVocabularyOptions = {}): TokenVocabulary {
    let byOptions = cache.get(tokens);
    if (!byOptions) cache.set(tokens, (byOptions = new Map()));
    const key = `${options.size ?? ''}|${[...new Set(options.eos ?? [])].sort((a, b) => a - b).join(',')}`;
    let v = byOptions.get(key);
    if (!v) byOptions.set(key, (v = new TokenVocabulary(tokens, options)));
    return v;
  }

  /** An all-zero mask of this vocabulary's width. */
  emptyMask(): Uint32Array {
    return new Uint32Array(this.words);
  }

  /** The child of `node` along `b`, or -1. */
  /** The lowest id among the tokens whose bytes end exactly at `node`, or -1 when none does. */
  private lowestIdAt(node: number): number {
    const { tokStart, tokIds } = this.trie;
    let id = -1;
    for (let k = tokStart[node]; k < tokStart[node + 1]; k++) if (id < 0 || tokIds[k] < id) id = tokIds[k];
    return id;
  }

  child(node: number, b: number): number {
    if (node === 0) return this.rootChild[b];
    const { next, byte } = this.trie;
    const end = next[node];
    for (let i = node + 1; i < end; i = next[i]) {
      if (byte[i] === b) return i;
    }
    return -1;
  }

  /**
   * The fewest tokens that spell `bytes` (ties: the longer first token), or, when no tokens spell all of it, the
   * longest prefix that tokens spell. Among ids with the same bytes, the lowest.
   */
  tokenize(bytes: Uint8Array): number[] {
    const n = bytes.length;
    // ends[i]: [id, length] of every token starting at i that stays inside the bytes.
    const ends: [number, number][][] = [];
    for (let i = 0; i < n; i++) {
      const list: [number, number][] = [];
      let node = 0;
      for (let j = i; j < n; j++) {
        node = this.child(node, bytes[j]);
        if (node < 0) break;
        const id = this.lowestIdAt(node);
        if (id >= 0) list.push([id, j + 1 - i]);
      }
      ends.push(list);
    }
    // The farthest position tokens reach from the start.
    const reach = new Uint8Array(n + 1);
    reach[0] = 1;
    let end = 0;
    for (let i = 0; i < n; i++) {
      if (!reach[i]) continue;
      for (const [, len] of ends[i]) reach[i + len] = 1;
    }
    for (let i = n; i >= 0; i--) {
      if (reach[i]) {
        end = i;
        break;
      }
    }
    // Fewest tokens from each position to `end`, longest first token on ties.
    const cost = new Float64Array(end + 1).fill(Infinity);
    const pick: ([number, number] | undefined)[] = new Array(end + 1);
    cost[end] = 0;
    for (let i = end - 1; i >= 0; i--) {
      for (const e of ends[i]) {
        if (i + e[1] > end) continue;
        const c = cost[i + e[1]] + 1;
        if (c < cost[i] || (c === cost[i] && e[1] > pick[i]![1])) {
          cost[i] = c;
          pick[i] = e;
        }
      }
    }
    const out: number[] = [];
    for (let i = 0; i < end; i += pick[i]![1]) out.push(pick[i]![0]);
    return out;
  }

  /**
   * The longest token whose bytes are a prefix of `bytes[from..to)`: [id, length], or undefined when no token
   * starts that way. Among ids with the same bytes, the lowest.
   */
  longestPrefix(bytes: Uint8Array, from = 0, to = bytes.length): [number, number] | undefined {
    let node = 0;
    let best: [number, number] | undefined;
    for (let i = from; i < to; i++) {
      node = this.child(node, bytes[i]);
      if (node < 0) break;
      const id = this.lowestIdAt(node);
      if (id >= 0) best = [id, i + 1 - from];
    }
    return best;
  }
}
