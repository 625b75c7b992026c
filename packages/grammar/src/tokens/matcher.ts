// Token masks for grammar-constrained decoding: which tokens of a vocabulary the grammar allows next, as the GPU
// sampler's allowed-token bitmask (ceil(V/32) u32 words, bit (id & 31) of word (id >> 5)).
//
// How a mask is made, cheapest first:
//  1. The MaskCache: masks by grammar key (equal keys accept the same future, so they allow the same tokens). Shared
//     by every matcher of one grammar and vocabulary (LRU-bounded); in steady state most masks are hits.
//  2. Counted strings (maxLength, minLength, a pattern that counts one class such as ^[a-z0-9]{1,64}$): the grammar
//     names, for each position, the same place of the string without the bound (Grammar.counted), one state for
//     every position, whose mask is cached. The mask is that mask filtered by the tokens' characters, which are
//     lexical inside a JSON string: those that stay inside with at most `left` characters, those that close it after
//     `needed` to `left`. No per-position work but for tokens within the pattern's reserve of the bound.
//  3. Segment walks, for states where many bytes lead to one place (inside a string, a free-text pattern). The small
//     automaton around such a state (UTF-8 continuation states, escapes), its transitions coded as local moves,
//     FORBID, EXIT (the closing quote) or PROGRESS, is a table that does not depend on the rest of the grammar (the
//     parser stack). What the vocabulary does under a table is computed once per vocabulary and shared by every
//     state, grammar and matcher with the same table: the bitmask of tokens that stay inside ("pure string
//     content", precomputed), and for each way out the sub-trie of what those tokens continue with ('",' '"}' ...).
//     A mask is then that bitmask OR'ed with short walks of the sub-tries from the real states after the way out.
//       loop:  PROGRESS leads back to the state itself (an unbounded string);
//       chain: PROGRESS leads to the next position (other counted automata: a regex counting more than one class):
//              up to 32 positions are followed and verified to have the same tables, tokens that run further are
//              walked from the state there.
//       lead:  most bytes lead to a loop (an object key's first character, checked against the declared names, then
//              any key; a character's continuation bytes, then the string): the loop's mask, corrected where the two
//              differ. The real states from here and from the loop's start are stepped in lockstep over the
//              vocabulary's trie until they meet (the same state: below it the loop's mask is right) or one refuses
//              (that subtree is cleared, or walked from the real state). The lead's own segment is never built.
//  4. A walk of the vocabulary's byte trie, stepping the grammar byte by byte and skipping the subtree under every
//     refused byte (the reference the others are tested against; cheap where few bytes are allowed).
// EOS ids are allowed exactly where the grammar accepts. forced() fast-forwards through text the grammar fixes.

import type { CountedString, Grammar, GrammarState } from '../grammar.ts';
import { buildByteTrie, type ByteTrie, type TokenVocabulary } from './vocabulary.ts';

// ---- the mask cache ----

export interface MaskCacheOptions {
  /** Masks kept (least recently used dropped first); default 1024 (~19 MB for a 151k vocabulary). */
  maxEntries?: number;
}

/** Masks (and forced byte strings) by grammar key, for one grammar and one vocabulary; LRU-bounded. */
export class MaskCache {
  readonly maxEntries: number;
  private readonly masks = new Map<string, Uint32Array>();
  private readonly forcedBytes = new Map<string, Uint8Array>();
  private readonly forcedTokens = new Map<string, number[]>();
  hits = 0;
  misses = 0;
  /** Masks computed on misses, by method: how many and their total time in milliseconds. */
  readonly computed: Record<MaskPath, { count: number; ms: number }> = {
    finished: { count: 0, ms: 0 }, loop: { count: 0, ms: 0 }, chain: { count: 0, ms: 0 }, lead: { count: 0, ms: 0 }, counted: { count: 0, ms: 0 }, walk: { count: 0, ms: 0 },
  };

  constructor(options: MaskCacheOptions = {}) {
    this.maxEntries = Math.max(1, options.maxEntries ?? 1024);
  }

  get size(): number {
    return this.masks.size;
  }

  get(key: string): Uint32Array | undefined {
    const m = this.masks.get(key);
    if (m === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Most recently used last.
    this.masks.delete(key);
    this.masks.set(key, m);
    return m;
  }

  /** The mask by key without counting a hit or a miss (masks made from other masks). */
  peek(key: string): Uint32Array | undefined {
    return this.masks.get(key);
  }

  set(key: string, mask: Uint32Array): void {
    this.masks.delete(key);
    this.masks.set(key, mask);
    if (this.masks.size > this.maxEntries) this.masks.delete(this.masks.keys().next().value!);
  }

  getForced(key: string): Uint8Array | undefined {
    return this.forcedBytes.get(key);
  }

  setForced(key: string, bytes: Uint8Array): void {
    this.forcedBytes.set(key, bytes);
    if (this.forcedBytes.size > this.maxEntries) this.forcedBytes.delete(this.forcedBytes.keys().next().value!);
  }

  getForcedTokens(key: string): number[] | undefined {
    return this.forcedTokens.get(key);
  }

  setForcedTokens(key: string, tokens: number[]): void {
    this.forcedTokens.set(key, tokens);
    if (this.forcedTokens.size > this.maxEntries) this.forcedTokens.delete(this.forcedTokens.keys().next().value!);
  }

  clear(): void {
    this.masks.clear();
    this.forcedBytes.clear();
    this.forcedTokens.clear();
  }
}

const sharedCaches = new WeakMap<Grammar, WeakMap<TokenVocabulary, MaskCache>>();

/** The MaskCache every matcher of this grammar and vocabulary shares unless given its own. */
export function sharedMaskCache(grammar: Grammar, vocab: TokenVocabulary): MaskCache {
  let byVocab = sharedCaches.get(grammar);
  if (!byVocab) sharedCaches.set(grammar, (byVocab = new WeakMap()));
  let cache = byVocab.get(vocab);
  if (!cache) byVocab.set(vocab, (cache = new MaskCache()));
  return cache;
}

// ---- trie walks ----

/** Sets in `mask` every token of `trie` whose bytes the grammar accepts from `start` (root tokens: always). */
function walkTrie(grammar: Grammar, trie: ByteTrie, start: GrammarState, mask: Uint32Array): void {
  const { tokStart, tokIds } = trie;
  for (let k = tokStart[0], end = tokStart[1]; k < end; k++) {
    const id = tokIds[k];
    mask[id >>> 5] |= 1 << (id & 31);
  }
  walkBelow(grammar, trie, 0, start, mask);
}

let scratch: GrammarState[] = [];

/** Sets the tokens in the subtree below `node` (not at it) that the grammar accepts, `state` being the state at it. */
function walkBelow(grammar: Grammar, trie: ByteTrie, node: number, state: GrammarState, mask: Uint32Array): void {
  const { byte, depth, next, tokStart, tokIds } = trie;
  if (scratch.length <= trie.maxDepth) scratch = new Array(trie.maxDepth + 1);
  const states = scratch;
  const base = depth[node];
  states[base] = state;
  const end = next[node];
  let i = node + 1;
  while (i < end) {
    const d = depth[i];
    const t = grammar.step(states[d - 1], byte[i]);
    if (t === null) {
      i = next[i];
      continue;
    }
    states[d] = t;
    for (let k = tokStart[i], e = tokStart[i + 1]; k < e; k++) {
      const id = tokIds[k];
      mask[id >>> 5] |= 1 << (id & 31);
    }
    i++;
  }
  states.fill(undefined as unknown as GrammarState, base, Math.min(states.length, trie.maxDepth + 1)); // drop references
}

// ---- segments: the local automaton around a state ----
//
// A state "behaves like text" when many bytes lead to one target (string content). Its segment is the small automaton
// around it: the state, and the states reached from it that lead back to it or on to that target (UTF-8 continuation
// states, escapes), each with its 256 transitions coded as a local index, FORBID, EXIT (somewhere else: the closing
// quote) or PROGRESS (to the target). When the target is the state itself, the segment is a loop (an unbounded
// string). Otherwise the target starts the next segment (a pattern that counts characters: c0 → c1 → ...),
// and a run of segments is a chain. The coded tables do not depend on the rest of the grammar, so what the vocabulary
// does under a loop or a chain of given tables is computed once per vocabulary and shared by every state, grammar and
// matcher with those tables.

const FORBID = -1;
const EXIT = -2;
const PROGRESS = -3;
/** A segment needs at least this many bytes going to one target (else a plain walk is cheap). */
const WIDE_BYTES = 16;
/** States probed (256 steps each) while exploring one segment. */
const SEGMENT_MAX_PROBED = 40;
/** Steps away from the segment that exploration follows before a state must have joined. */
const DETOUR_DEPTH = 4;
/**
 * Segments followed in a chain; tokens that go further are walked from the state there. 32 rather than 16: the walk
 * past the chain (tokens of more than 16 characters: thousands in a 151k vocabulary) cost more per mask than the
 * extra segments, which are explored once per position and memoized.
 */
const CHAIN_SEGMENTS = 32;
/** Segments memoized per grammar (by state key) before the memo is dropped. */
const SEGMENT_MEMO_ENTRIES = 50_000;

interface Segment {
  /** Local states, the start first. */
  readonly states: GrammarState[];
  /** states.length × 256 codes: local index, FORBID, EXIT or PROGRESS. */
  readonly table: Int16Array;
  /** Interned id of the table. */
  readonly sig: number;
  /** The PROGRESS target: the next segment's start (the start itself for a loop). */
  readonly next: GrammarState;
  readonly loop: boolean;
}

/** Interned tables by hash (colliding tables compared): keys and tables stay off the JS heap's strings. */
const sigIds = new Map<number, { table: Int16Array; loop: boolean; id: number }[]>();
/** Table bytes the interner keeps before it starts over. */
const SIG_BYTES = 16 * 1024 * 1024;
let sigBytes = 0;
let sigCounter = 0;

/** A small id per table; ids are never reused, so dropping the interner only costs cache misses. */
function internSig(table: Int16Array, loop: boolean): number {
  let h = loop ? 0x811c9dc5 : 0x01000193;
  for (let i = 0; i < table.length; i++) h = Math.imul(h ^ (table[i] & 0xffff), 0x01000193);
  let list = sigIds.get(h);
  if (list === undefined) sigIds.set(h, (list = []));
  for (const e of list) {
    if (e.loop !== loop || e.table.length !== table.length) continue;
    let same = true;
    for (let i = 0; i < table.length && same; i++) same = e.table[i] === table[i];
    if (same) return e.id;
  }
  if (sigBytes >= SIG_BYTES) {
    sigIds.clear();
    sigBytes = 0;
    sigIds.set(h, (list = []));
  }
  const id = ++sigCounter;
  list.push({ table, loop, id });
  sigBytes += table.byteLength;
  return id;
}

const segmentMemo = new WeakMap<Grammar, Map<string, Segment | null>>();

/** The segment starting at `x` (memoized per grammar by key), or null when no target takes WIDE_BYTES bytes. */
function segmentOf(grammar: Grammar, x: GrammarState, key = grammar.key(x)): Segment | null {
  let memo = segmentMemo.get(grammar);
  if (!memo) segmentMemo.set(grammar, (memo = new Map()));
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const seg = exploreSegment(grammar, x, key);
  if (memo.size >= SEGMENT_MEMO_ENTRIES) memo.clear();
  memo.set(key, seg);
  return seg;
}

const targetMemo = new WeakMap<Grammar, Map<string, GrammarState | null>>();

/** The state most bytes lead to from `x` when at least WIDE_BYTES do (else null); memoized per grammar by key. */
function dominantTarget(grammar: Grammar, x: GrammarState): GrammarState | null {
  let memo = targetMemo.get(grammar);
  if (!memo) targetMemo.set(grammar, (memo = new Map()));
  const key = grammar.key(x);
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const counts = new Map<GrammarState, number>();
  let best = 0;
  let target: GrammarState | null = null;
  for (let b = 0; b < 256; b++) {
    const t = grammar.step(x, b);
    if (t === null) continue;
    const c = (counts.get(t) ?? 0) + 1;
    counts.set(t, c);
    if (c > best) {
      best = c;
      target = t;
    }
  }
  const found = best >= WIDE_BYTES ? target : null;
  if (memo.size >= SEGMENT_MEMO_ENTRIES) memo.clear();
  memo.set(key, found);
  return found;
}

function exploreSegment(grammar: Grammar, x: GrammarState, xKey: string): Segment | null {
  const states: GrammarState[] = [x];
  const byIdentity = new Map<GrammarState, number>([[x, 0]]);
  const byKey = new Map<string, number>([[xKey, 0]]);
  const rows: (Int32Array | undefined)[] = [];
  /** outs[i]: the distinct targets of row i (a dozen classes, where the row has 256 bytes). */
  const outs: number[][] = [];
  const idOf = (t: GrammarState): number => {
    let id = byIdentity.get(t);
    if (id !== undefined) return id;
    const k = grammar.key(t);
    id = byKey.get(k);
    if (id === undefined) {
      id = states.length;
      states.push(t);
      byKey.set(k, id);
    }
    byIdentity.set(t, id);
    return id;
  };
  const probe = (i: number): Int32Array => {
    const row = new Int32Array(256);
    const from = states[i];
    // Neighbouring bytes mostly lead to the same state (a byte class): look its id up once per run.
    let last: GrammarState | null | undefined;
    let lastId = FORBID;
    const out: number[] = [];
    for (let b = 0; b < 256; b++) {
      const t = grammar.step(from, b);
      if (t !== last) {
        last = t;
        lastId = t === null ? FORBID : idOf(t);
        if (lastId >= 0 && !out.includes(lastId)) out.push(lastId);
      }
      row[b] = lastId;
    }
    rows[i] = row;
    outs[i] = out;
    return row;
  };
  const dominant = dominantTarget(grammar, x);
  if (dominant === null) return null;
  probe(0);
  const target = idOf(dominant);
  const loop = target === 0;

  // Probe outward from the members, nearest first: a probed state joins when it leads to a member or to the target;
  // states that have not joined are followed up to DETOUR_DEPTH steps from the members inside a character (the hex
  // digits of a \uXXXX escape), not from the start.
  const member: boolean[] = [true];
  const dist: number[] = [0];
  const queue: number[] = [];
  const enqueue = (i: number) => {
    // The start's other targets are where the text ends (its closing quote): probed, but not followed.
    const d = i === 0 ? DETOUR_DEPTH : dist[i] + 1;
    for (const t of outs[i]) {
      if (t <= 0 || t === target || rows[t] !== undefined) continue;
      if (dist[t] === undefined || d < dist[t]) dist[t] = d;
      if (!queue.includes(t)) queue.push(t);
    }
  };
  enqueue(0);
  for (let probed = 1; queue.length > 0 && probed < SEGMENT_MAX_PROBED; probed++) {
    let best = 0;
    for (let q = 1; q < queue.length; q++) if (dist[queue[q]] < dist[queue[best]]) best = q;
    const i = queue.splice(best, 1)[0];
    probe(i);
    if (dist[i] < DETOUR_DEPTH) enqueue(i);
    for (let changed = true; changed; ) {
      changed = false;
      for (let i = 1; i < rows.length; i++) {
        if (rows[i] === undefined || member[i] || i === target) continue;
        if (outs[i].some((t) => t === target || member[t])) {
          member[i] = true;
          dist[i] = 0;
          changed = true;
          enqueue(i);
        }
      }
    }
  }

  const local = new Int32Array(states.length).fill(-1);
  const segStates: GrammarState[] = [];
  for (let i = 0; i < states.length; i++) {
    if (member[i] && rows[i] !== undefined && (i === 0 || i !== target)) {
      local[i] = segStates.length;
      segStates.push(states[i]);
    }
  }
  const n = segStates.length;
  const table = new Int16Array(n * 256);
  for (let i = 0, e = 0; i < states.length; i++) {
    if (local[i] < 0) continue;
    const row = rows[i]!;
    for (let b = 0; b < 256; b++) {
      const t = row[b];
      table[e * 256 + b] = t === FORBID ? FORBID : t === target ? PROGRESS : local[t] >= 0 ? local[t] : EXIT;
    }
    e++;
  }
  return { states: segStates, table, sig: internSig(table, loop), next: states[target], loop };
}

// ---- loop and chain walks (per vocabulary) ----

interface ExitGroup {
  /** The segment (0 for a loop) and its local state the token leaves from, and the byte it leaves by. */
  readonly segment: number;
  readonly from: number;
  readonly byte: number;
  /** The tokens' bytes after that byte. */
  readonly trie: ByteTrie;
  /**
   * The tokens allowed from a state after the exit byte, by grammar and state key: the state after a string's closing
   * quote is usually the same at every position of a chain and at every visit of a loop, so its walk is done once.
   */
  readonly allowed: WeakMap<Grammar, Map<string, Int32Array>>;
}

/** Exit walks memoized per grammar and exit group before that memo is dropped. */
const EXIT_MEMO_ENTRIES = 4096;
let exitScratch = new Uint32Array(0);

/** The tokens of the exit group that the grammar accepts from `state` (the state after its byte); memoized. */
function exitAllowed(grammar: Grammar, exit: ExitGroup, state: GrammarState, words: number): Int32Array {
  let memo = exit.allowed.get(grammar);
  if (!memo) exit.allowed.set(grammar, (memo = new Map()));
  const key = grammar.key(state);
  let ids = memo.get(key);
  if (ids === undefined) {
    if (exitScratch.length < words) exitScratch = new Uint32Array(words);
    const scratch = exitScratch;
    walkTrie(grammar, exit.trie, state, scratch);
    const found: number[] = [];
    for (const id of exit.trie.tokIds) {
      const w = id >>> 5;
      const bit = 1 << (id & 31);
      if (scratch[w] & bit) {
        found.push(id);
        scratch[w] &= ~bit;
      }
    }
    ids = Int32Array.from(found);
    if (memo.size >= EXIT_MEMO_ENTRIES) memo.clear();
    memo.set(key, ids);
  }
  return ids;
}

/** Sets in `mask` the tokens of the exit group that the grammar accepts from `state` (the state after its byte). */
function walkExit(grammar: Grammar, exit: ExitGroup, state: GrammarState, mask: Uint32Array): void {
  const ids = exitAllowed(grammar, exit, state, mask.length);
  for (let k = 0; k < ids.length; k++) {
    const id = ids[k];
    mask[id >>> 5] |= 1 << (id & 31);
  }
}

/** What a vocabulary does under a loop (one table), or under a chain of CHAIN_SEGMENTS segment tables. */
interface SegmentWalk {
  /**
   * Tokens that stay inside the segments. Loop: one mask. Chain: inner[u] = the tokens whose bytes use only segments
   * 0..u (so the mask for a chain of R verified segments takes inner[R - 1]).
   */
  readonly inner: readonly Uint32Array[];
  /** Tokens that leave a segment other than by PROGRESS (sorted by segment). */
  readonly exits: readonly ExitGroup[];
  /**
   * Chains: the trie nodes where the k-th PROGRESS happened (k = 1..CHAIN_SEGMENTS), forward[forwardStart[k - 1] ..
   * forwardStart[k]); a chain of R verified segments walks what lies below those of k = R from the state after them.
   */
  readonly forward: Int32Array | null;
  readonly forwardStart: Int32Array | null;
  /** Per k, the children of those nodes bucketed by byte (built on first use): [start (257), nodes]. */
  readonly tails: ([Int32Array, Int32Array] | undefined)[];
  /** Approximate size in bytes (the cache is bounded by it). */
  readonly bytes: number;
}

/** Loop and chain walks kept per vocabulary, in bytes. */
const WALK_CACHE_BYTES = 64 * 1024 * 1024;

function cachedWalk(vocab: TokenVocabulary, key: string, build: () => SegmentWalk): SegmentWalk {
  const cache = vocab.walkCache as Map<string, SegmentWalk>;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const walk = build();
  cache.set(key, walk);
  let total = 0;
  for (const w of cache.values()) total += w.bytes;
  for (const [k, w] of cache) {
    if (total <= WALK_CACHE_BYTES || k === key) break;
    cache.delete(k);
    total -= w.bytes;
  }
  return walk;
}

/**
 * Walks the vocabulary's trie under segment tables: tables[u] for segment u, PROGRESS moving on to segment u + 1 (for
 * a loop, back to the start of its one segment). A chain stops at PROGRESS out of its last segment.
 */
function buildSegmentWalk(vocab: TokenVocabulary, tables: readonly Int16Array[], loop: boolean): SegmentWalk {
  const trie = vocab.trie;
  const { nodeCount, byte, depth, next, tokStart, tokIds } = trie;
  const segments = tables.length;
  const inner = Array.from({ length: segments }, () => new Uint32Array(vocab.words));
  const st = new Int32Array(trie.maxDepth + 1);
  const seg = new Int32Array(trie.maxDepth + 1);
  const exitNodes = new Map<number, number[]>();
  // Nodes where a PROGRESS happened, and which one (k - 1), in walk order (chains only).
  let fwdNodes = new Int32Array(loop ? 0 : 1024);
  let fwdK = new Uint8Array(loop ? 0 : 1024);
  let fwdCount = 0;
  let i = 1;
  while (i < nodeCount) {
    const d = depth[i];
    const u = seg[d - 1];
    const e = st[d - 1];
    const c = tables[u][e * 256 + byte[i]];
    if (c >= 0 || c === PROGRESS) {
      const m = inner[u];
      for (let k = tokStart[i], end = tokStart[i + 1]; k < end; k++) {
        const id = tokIds[k];
        m[id >>> 5] |= 1 << (id & 31);
      }
      if (c >= 0) {
        st[d] = c;
        seg[d] = u;
      } else if (loop) {
        st[d] = 0;
        seg[d] = 0;
      } else if (next[i] === i + 1) {
        // A leaf: nothing runs past it, so it is no tail's parent.
      } else {
        if (fwdCount === fwdNodes.length) {
          const n2 = new Int32Array(fwdCount * 2);
          n2.set(fwdNodes);
          fwdNodes = n2;
          const k2 = new Uint8Array(fwdCount * 2);
          k2.set(fwdK);
          fwdK = k2;
        }
        fwdNodes[fwdCount] = i;
        fwdK[fwdCount++] = u;
        if (u === segments - 1) {
          i = next[i];
          continue;
        }
        st[d] = 0;
        seg[d] = u + 1;
      }
      i++;
    } else {
      if (c === EXIT) {
        const key = (u * 65536 + e) * 256 + byte[i];
        let list = exitNodes.get(key);
        if (!list) exitNodes.set(key, (list = []));
        list.push(i);
      }
      i = next[i];
    }
  }
  for (let u = 1; u < segments; u++) {
    const a = inner[u - 1];
    const m = inner[u];
    for (let w = 0; w < m.length; w++) m[w] |= a[w];
  }
  let bytes = segments * vocab.words * 4;
  const exits: ExitGroup[] = [];
  for (const key of [...exitNodes.keys()].sort((x, y) => x - y)) {
    // The tokens under the exit nodes, packed with their bytes after the exit byte.
    const tops = exitNodes.get(key)!;
    let count = 0;
    let total = 0;
    for (const top of tops) {
      const cut = depth[top];
      for (let j = top; j < next[top]; j++) {
        for (let k = tokStart[j]; k < tokStart[j + 1]; k++) {
          count++;
          total += vocab.tokens[tokIds[k]]!.length - cut;
        }
      }
    }
    const data = new Uint8Array(total);
    const offset = new Uint32Array(count + 1);
    const ids = new Int32Array(count);
    let n = 0;
    let at = 0;
    for (const top of tops) {
      const cut = depth[top];
      for (let j = top; j < next[top]; j++) {
        for (let k = tokStart[j]; k < tokStart[j + 1]; k++) {
          const id = tokIds[k];
          const b = vocab.tokens[id]!;
          offset[n] = at;
          data.set(b.subarray(cut), at);
          at += b.length - cut;
          ids[n++] = id;
        }
      }
    }
    offset[n] = at;
    const sub = buildByteTrie({ data, offset, ids });
    bytes += sub.nodeCount * 11 + sub.tokIds.length * 4;
    exits.push({ segment: Math.floor(key / (65536 * 256)), from: Math.floor(key / 256) % 65536, byte: key % 256, trie: sub, allowed: new WeakMap() });
  }
  if (loop) return { inner, exits, forward: null, forwardStart: null, tails: [], bytes };
  const forwardStart = new Int32Array(segments + 1);
  for (let j = 0; j < fwdCount; j++) forwardStart[fwdK[j] + 1]++;
  for (let k = 0; k < segments; k++) forwardStart[k + 1] += forwardStart[k];
  const fill = forwardStart.slice(0, segments);
  const forward = new Int32Array(fwdCount);
  for (let j = 0; j < fwdCount; j++) forward[fill[fwdK[j]]++] = fwdNodes[j];
  bytes += forward.length * 4 * 3;
  return { inner, exits, forward, forwardStart, tails: [], bytes };
}

/** The children of the nodes of the k-th PROGRESS (k = 1..), bucketed by byte. */
function tailOf(walk: SegmentWalk, trie: ByteTrie, k: number): [Int32Array, Int32Array] {
  let t = walk.tails[k];
  if (t) return t;
  const { next, byte } = trie;
  const forward = walk.forward!;
  const from = walk.forwardStart![k - 1];
  const to = walk.forwardStart![k];
  const start = new Int32Array(257);
  for (let j = from; j < to; j++) {
    const p = forward[j];
    for (let c = p + 1; c < next[p]; c = next[c]) start[byte[c] + 1]++;
  }
  for (let b = 0; b < 256; b++) start[b + 1] += start[b];
  const fill = start.slice(0, 256);
  const nodes = new Int32Array(start[256]);
  for (let j = from; j < to; j++) {
    const p = forward[j];
    for (let c = p + 1; c < next[p]; c = next[c]) nodes[fill[byte[c]]++] = c;
  }
  walk.tails[k] = t = [start, nodes];
  return t;
}

function setEos(vocab: TokenVocabulary, mask: Uint32Array): void {
  for (const id of vocab.eos) mask[id >>> 5] |= 1 << (id & 31);
}

/** Loop or chain mask at `state`, or undefined when the state does not start a segment. */
function segmentMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, mask: Uint32Array, cache?: MaskCache): 'loop' | 'chain' | 'lead' | undefined {
  // Where most bytes lead decides the way: back here (a loop), to a loop (a lead: its own segment is not needed), or
  // on to another segment (a chain).
  const target = dominantTarget(grammar, state);
  if (target === null) return undefined;
  if (target !== state) {
    const loop = segmentOf(grammar, target);
    if (loop !== null && loop.loop) {
      leadMask(grammar, vocab, state, loop, mask, cache);
      return 'lead';
    }
  }
  const first = segmentOf(grammar, state);
  if (first === null) return undefined;
  if (first.loop) {
    const walk = cachedWalk(vocab, `L${first.sig}`, () => buildSegmentWalk(vocab, [first.table], true));
    const inner = walk.inner[0];
    for (let w = 0; w < mask.length; w++) mask[w] |= inner[w];
    for (const exit of walk.exits) {
      const t = grammar.step(first.states[exit.from], exit.byte);
      if (t !== null) walkExit(grammar, exit, t, mask);
    }
    return 'loop';
  }
  // Follow the chain: each segment's PROGRESS target starts the next (a loop segment repeats itself); the state
  // after the last verified segment is the terminal, from which tokens that run past the chain are walked.
  const segs: Segment[] = [first];
  let terminal = first.next;
  while (segs.length < CHAIN_SEGMENTS) {
    const seg = segmentOf(grammar, terminal);
    if (seg === null) break;
    segs.push(seg);
    terminal = seg.next;
  }
  const verified = segs.length;
  // The walk for these tables, padded with the last one: its results for segments < verified are the same.
  const sigs = segs.map((s) => s.sig);
  while (sigs.length < CHAIN_SEGMENTS) sigs.push(sigs[sigs.length - 1]);
  const walk = cachedWalk(vocab, `C${sigs.join(',')}`, () => {
    const tables = segs.map((s) => s.table);
    while (tables.length < CHAIN_SEGMENTS) tables.push(tables[tables.length - 1]);
    return buildSegmentWalk(vocab, tables, false);
  });
  const inner = walk.inner[verified - 1];
  for (let w = 0; w < mask.length; w++) mask[w] |= inner[w];
  for (const exit of walk.exits) {
    if (exit.segment >= verified) break;
    const t = grammar.step(segs[exit.segment].states[exit.from], exit.byte);
    if (t !== null) walkExit(grammar, exit, t, mask);
  }
  const [tailStart, tailNodes] = tailOf(walk, vocab.trie, verified);
  const { tokStart, tokIds } = vocab.trie;
  for (let b = 0; b < 256; b++) {
    const from = tailStart[b];
    const to = tailStart[b + 1];
    if (from === to) continue;
    const t = grammar.step(terminal, b);
    if (t === null) continue;
    for (let k = from; k < to; k++) {
      const c = tailNodes[k];
      for (let j = tokStart[c]; j < tokStart[c + 1]; j++) {
        const id = tokIds[j];
        mask[id >>> 5] |= 1 << (id & 31);
      }
      walkBelow(grammar, vocab.trie, c, t, mask);
    }
  }
  return 'chain';
}

// ---- counted strings ----
//
// Inside a JSON string, a token's characters are lexical: from a character boundary, each byte that starts a UTF-8
// sequence or an escape starts a character, and the first unescaped quote closes the string. So the mask at a
// position of a counted string (Grammar.counted) is the mask of the same place without the bound (one state for
// every position, its mask cached), keeping the tokens that stay inside with at most `left` characters started and
// those that close the string after `needed` to `left` characters.

/** What a vocabulary's tokens do from a character boundary inside a JSON string. */
interface StringLex {
  /** upTo[c]: the tokens that stay inside with at most c characters started (c ≤ UP_TO_CHARS). */
  readonly upTo: readonly Uint32Array[];
  /** Tokens that stay inside with more than UP_TO_CHARS characters, most first, and their characters. */
  readonly long: Int32Array;
  readonly longChars: Uint16Array;
  /** Tokens that close the string, and their characters before the quote. */
  readonly closing: Int32Array;
  readonly closingChars: Uint16Array;
}

const QUOTE = 0x22;
/** Counted-string filters for up to this many characters left are one precomputed mask. */
const UP_TO_CHARS = 16;
const stringLexes = new WeakMap<TokenVocabulary, StringLex>();

/** Characters a token starts inside a JSON string from a character boundary; negative (-1 - n) when it closes after n. */
function stringChars(bytes: Uint8Array): number {
  let n = 0;
  let owed = 0; // bytes still owed to the current character (UTF-8 continuation bytes, hex digits)
  let escape = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (escape) {
      escape = false;
      if (b === 0x75) owed = 4; // \uXXXX
      continue;
    }
    if (owed > 0) {
      owed--;
      continue;
    }
    if (b === QUOTE) return -1 - n;
    n++;
    if (b === 0x5c) escape = true;
    else if (b >= 0xf0) owed = 3;
    else if (b >= 0xe0) owed = 2;
    else if (b >= 0xc0) owed = 1;
  }
  return n;
}

function stringLex(vocab: TokenVocabulary): StringLex {
  let lex = stringLexes.get(vocab);
  if (lex) return lex;
  const upTo = Array.from({ length: UP_TO_CHARS + 1 }, () => new Uint32Array(vocab.words));
  const long: number[] = [];
  const closing: number[] = [];
  const chars = new Int32Array(vocab.tokens.length);
  for (let id = 0; id < vocab.tokens.length; id++) {
    const bytes = vocab.tokens[id];
    if (!bytes || bytes.length === 0) continue;
    const c = (chars[id] = stringChars(bytes));
    if (c < 0) closing.push(id);
    else if (c > UP_TO_CHARS) long.push(id);
    else upTo[c][id >>> 5] |= 1 << (id & 31);
  }
  for (let c = 1; c <= UP_TO_CHARS; c++) {
    const a = upTo[c - 1];
    const m = upTo[c];
    for (let w = 0; w < m.length; w++) m[w] |= a[w];
  }
  long.sort((x, y) => chars[y] - chars[x]);
  lex = {
    upTo,
    long: Int32Array.from(long),
    longChars: Uint16Array.from(long, (id) => chars[id]),
    closing: Int32Array.from(closing),
    closingChars: Uint16Array.from(closing, (id) => -1 - chars[id]),
  };
  stringLexes.set(vocab, lex);
  return lex;
}

/** Tokens within `reserve` characters of a counted string's bound that are checked one by one (else: other paths). */
const BAND_TOKENS = 256;

/**
 * The mask inside a counted string (see above): the free string's mask, filtered by the count. Tokens that come
 * within `reserve` characters of the bound are stepped from the real state (the bound may refuse what the free
 * string allows: "abc" where a pattern still needs "@x"); false (mask untouched) when there are too many of them.
 */
function countedMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, run: CountedString, mask: Uint32Array, cache?: MaskCache): boolean {
  const { left, needed, reserve } = run;
  const lex = stringLex(vocab);
  const { long, longChars } = lex;
  // Inner tokens of at most `sure` characters are allowed exactly when the free string allows them.
  const sure = reserve === 0 || left === Infinity ? left : left - reserve;
  let band = long.length;
  if (sure < left) {
    if (!(sure >= UP_TO_CHARS)) return false; // every short token is within reach of the bound
    while (band > 0 && longChars[band - 1] <= sure) band--;
    let first = band;
    while (first > 0 && longChars[first - 1] <= left) first--;
    if (band - first > BAND_TOKENS) return false;
  }
  const free = maskFrom(grammar, vocab, run.free, cache);
  // Staying inside.
  const upTo = lex.upTo[Math.min(sure, UP_TO_CHARS)];
  for (let w = 0; w < mask.length; w++) mask[w] |= free[w] & upTo[w];
  for (let k = long.length - 1; k >= 0 && longChars[k] <= left; k--) {
    const id = long[k];
    const bit = 1 << (id & 31);
    if (!(free[id >>> 5] & bit)) continue;
    if (longChars[k] <= sure || stepsThrough(grammar, state, vocab.tokens[id]!)) mask[id >>> 5] |= bit;
  }
  // Closing: after `needed` to `left` characters (the string ends there, so the bound refuses nothing more).
  const { closing, closingChars } = lex;
  for (let k = 0; k < closing.length; k++) {
    const c = closingChars[k];
    if (c < needed || c > left) continue;
    const id = closing[k];
    mask[id >>> 5] |= free[id >>> 5] & (1 << (id & 31));
  }
  return true;
}

/** The mask at a state another mask is made from (a counted string's free state, a lead's loop): cached. */
function maskFrom(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, cache?: MaskCache): Uint32Array {
  const key = grammar.key(state);
  let mask = cache?.peek(key);
  if (mask === undefined) {
    mask = computeMask(grammar, vocab, state, undefined, cache).mask;
    cache?.set(key, mask);
  }
  return mask;
}

/** Whether the grammar takes every byte of `bytes` from `state`. */
function stepsThrough(grammar: Grammar, state: GrammarState, bytes: Uint8Array): boolean {
  let s: GrammarState | null = state;
  for (let i = 0; i < bytes.length && s !== null; i++) s = grammar.step(s, bytes[i]);
  return s !== null;
}

/**
 * The mask at `state`, most of whose bytes lead to the start of the loop `loop`, from the loop's mask. Lockstep over the trie from the two real states: side A from `state`, side B from the loop's start. Where both reach
 * the same state (A has left the lead for the loop: an object key past the declared names' letters, a character
 * completed), everything below agrees; where one refuses, the other's answer for the subtree is right (nothing, or a
 * walk from A's state); elsewhere (a declared name's prefix) both go on. The mask starts as the loop's, with the
 * subtrees A refuses cleared, or (where those hold more tokens than the ones both agree on: A is inside a character
 * and refuses nearly every first byte) starts empty, with the loop's bits copied where they meet.
 */
function leadMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, loop: Segment, mask: Uint32Array, cache?: MaskCache): void {
  const trie = vocab.trie;
  const { nodeCount, byte, depth, next, tokStart, tokIds } = trie;
  const start = loop.states[0];
  let refused = 0;
  let agreed = 0;
  for (let i = 1; i < nodeCount; i = next[i]) {
    const a = grammar.step(state, byte[i]);
    const y = grammar.step(start, byte[i]);
    if (a === null && y !== null) refused += tokStart[next[i]] - tokStart[i];
    else if (a !== null && a === y) agreed += tokStart[next[i]] - tokStart[i];
  }
  const fromLoop = refused <= agreed;
  let base: Uint32Array | null = null;
  if (fromLoop) {
    base = maskFrom(grammar, vocab, start, cache);
    for (let w = 0; w < mask.length; w++) mask[w] |= base[w];
    // The loop's EOS bits are its own: EOS follows `state` (computeMask set them before).
    const accepting = grammar.accepting(state);
    for (const id of vocab.eos) {
      if (accepting) mask[id >>> 5] |= 1 << (id & 31);
      else mask[id >>> 5] &= ~(1 << (id & 31));
    }
  }
  if (leadA.length <= trie.maxDepth) {
    leadA = new Array(trie.maxDepth + 1);
    leadB = new Array(trie.maxDepth + 1);
  }
  const as = leadA;
  const bs = leadB;
  as[0] = state;
  bs[0] = start;
  let i = 1;
  while (i < nodeCount) {
    const d = depth[i];
    const b = byte[i];
    const a = grammar.step(as[d - 1], b);
    const y = grammar.step(bs[d - 1], b);
    if (a === y) {
      // Met (or both refuse): the loop's mask is right from here down.
      if (a !== null && !fromLoop) {
        base ??= maskFrom(grammar, vocab, start, cache);
        for (let k = tokStart[i], end = tokStart[next[i]]; k < end; k++) {
          const id = tokIds[k];
          mask[id >>> 5] |= base[id >>> 5] & (1 << (id & 31));
        }
      }
      i = next[i];
      continue;
    }
    if (a === null) {
      if (fromLoop) {
        for (let k = tokStart[i], end = tokStart[next[i]]; k < end; k++) {
          const id = tokIds[k];
          mask[id >>> 5] &= ~(1 << (id & 31));
        }
      }
      i = next[i];
      continue;
    }
    for (let k = tokStart[i], end = tokStart[i + 1]; k < end; k++) {
      const id = tokIds[k];
      mask[id >>> 5] |= 1 << (id & 31);
    }
    if (y === null) {
      walkBelow(grammar, trie, i, a, mask);
      i = next[i];
      continue;
    }
    as[d] = a; // both go on
    bs[d] = y;
    i++;
  }
  as.fill(undefined as unknown as GrammarState);
  bs.fill(undefined as unknown as GrammarState);
}

let leadA: GrammarState[] = [];
let leadB: GrammarState[] = [];

// ---- masks ----

/** How computeMask made a mask (for tests and the benchmark). */
export type MaskPath = 'finished' | 'loop' | 'chain' | 'lead' | 'counted' | 'walk';

/**
 * The allowed-token mask at `state`, computed (not looked up): EOS ids set iff the grammar accepts there. `method:
 * 'walk'` forces the plain trie walk (the reference the other methods are tested against). `cache` holds masks this
 * one is made from (a counted string's free mask, a lead's loop mask).
 */
export function computeMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, method?: 'walk', cache?: MaskCache): { mask: Uint32Array; path: MaskPath } {
  const mask = new Uint32Array(vocab.words);
  if (grammar.accepting(state)) setEos(vocab, mask);
  if (grammar.finished(state)) return { mask, path: 'finished' };
  if (method !== 'walk') {
    const run = grammar.counted?.(state);
    if (run && countedMask(grammar, vocab, state, run, mask, cache)) return { mask, path: 'counted' };
    const path = segmentMask(grammar, vocab, state, mask, cache);
    if (path !== undefined) return { mask, path };
  }
  walkTrie(grammar, vocab.trie, state, mask);
  return { mask, path: 'walk' };
}

/** The bytes the grammar fixes from `state`: while exactly one byte is allowed and the document cannot end. */
export function forcedBytes(grammar: Grammar, state: GrammarState, limit = 4096): Uint8Array {
  const out: number[] = [];
  let s = state;
  while (out.length < limit && !grammar.accepting(s) && !grammar.finished(s)) {
    let only = -1;
    let next: GrammarState | null = null;
    for (let b = 0; b < 256; b++) {
      const t = grammar.step(s, b);
      if (t === null) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = b;
      next = t;
    }
    if (only < 0 || next === null) break;
    out.push(only);
    s = next;
  }
  return Uint8Array.from(out);
}

// ---- the matcher ----

export interface TokenMatcherOptions {
  /** Masks shared with other matchers of the same grammar and vocabulary; default sharedMaskCache(grammar, vocab). */
  maskCache?: MaskCache;
}

/**
 * One sequence's position in a grammar, token by token: the allowed-token mask for the next token, accepting sampled
 * tokens, rolling back rejected speculative tokens, and the tokens the grammar forces.
 * @example
 * const vocab = TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds });
 * const m = new TokenMatcher(compileJsonSchema(schema), vocab);
 * while (!m.done) {
 *   const forced = m.forced();                     // e.g. the tokens of '{"name":"'
 *   const ids = forced.length ? forced : [sample(logits, m.mask())];
 *   for (const id of ids) m.accept(id);
 *   if (ids.some((id) => vocab.eos.includes(id))) break;
 * }
 */
export class TokenMatcher {
  readonly grammar: Grammar;
  readonly vocab: TokenVocabulary;
  readonly maskCache: MaskCache;
  /** states[k]: after k accepted tokens; ended[k]: whether token k - 1 was an EOS. */
  private readonly states: GrammarState[];
  private readonly ended: boolean[] = [false];
  private readonly tokens: number[] = [];
  private readonly eos: Set<number>;
  private emptyMask: Uint32Array | undefined;
  /** How the last mask() was made ('cached' for a cache hit): for the benchmark and tests. */
  lastPath: MaskPath | 'cached' | undefined;

  constructor(grammar: Grammar, vocab: TokenVocabulary, options: TokenMatcherOptions = {}) {
    this.grammar = grammar;
    this.vocab = vocab;
    this.maskCache = options.maskCache ?? sharedMaskCache(grammar, vocab);
    this.states = [grammar.initial];
    this.eos = new Set(vocab.eos);
  }

  /** The grammar state after the accepted tokens. */
  get state(): GrammarState {
    return this.states[this.states.length - 1];
  }

  /** The accepted tokens, oldest first. */
  get accepted(): readonly number[] {
    return this.tokens;
  }

  /** Whether EOS is allowed now (the document may end here). */
  get canEnd(): boolean {
    return !this.ended[this.ended.length - 1] && this.grammar.accepting(this.state);
  }

  /** Whether the generation must stop: an EOS was accepted, or the grammar allows nothing more. */
  get done(): boolean {
    return this.ended[this.ended.length - 1] || this.grammar.finished(this.state);
  }

  /**
   * Allowed-token bitmask for the next token: ceil(V/32) u32 words, bit (id & 31) of word (id >> 5); EOS ids set iff
   * the grammar accepts here. The array may be shared with the cache and other matchers: do not modify it.
   */
  mask(): Uint32Array {
    if (this.ended[this.ended.length - 1]) return (this.emptyMask ??= new Uint32Array(this.vocab.words));
    const state = this.state;
    const key = this.grammar.key(state);
    let mask = this.maskCache.get(key);
    if (mask === undefined) {
      const t0 = performance.now();
      const made = computeMask(this.grammar, this.vocab, state, undefined, this.maskCache);
      const c = this.maskCache.computed[made.path];
      c.count++;
      c.ms += performance.now() - t0;
      mask = made.mask;
      this.maskCache.set(key, mask);
      this.lastPath = made.path;
    } else this.lastPath = 'cached';
    return mask;
  }

  /** Whether `token` is allowed next (without computing the whole mask). */
  allows(token: number): boolean {
    return this.advance(token) !== undefined;
  }

  /** The state after `token`, 'eos', or undefined when it is not allowed. */
  private advance(token: number): GrammarState | 'eos' | undefined {
    if (this.ended[this.ended.length - 1]) return undefined;
    const state = this.state;
    if (this.eos.has(token)) return this.grammar.accepting(state) ? 'eos' : undefined;
    const bytes = this.vocab.tokens[token];
    if (!bytes || bytes.length === 0) return undefined;
    let s: GrammarState | null = state;
    for (let i = 0; i < bytes.length && s !== null; i++) s = this.grammar.step(s, bytes[i]);
    return s ?? undefined;
  }

  /** Consumes a sampled token; false (state unchanged) if it is not allowed. EOS is allowed only where accepting. */
  accept(token: number): boolean {
    const next = this.advance(token);
    if (next === undefined) return false;
    this.tokens.push(token);
    if (next === 'eos') {
      this.states.push(this.state);
      this.ended.push(true);
    } else {
      this.states.push(next);
      this.ended.push(false);
    }
    return true;
  }

  /** Accepts tokens in order until one is refused; returns how many were accepted. */
  acceptTokens(tokens: readonly number[]): number {
    let n = 0;
    while (n < tokens.length && this.accept(tokens[n])) n++;
    return n;
  }

  /** Undoes the last n accepted tokens (speculative decoding's rejected drafts). */
  rollback(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.tokens.length) {
      throw new RangeError(`rollback(${n}): ${this.tokens.length} tokens have been accepted`);
    }
    this.tokens.length -= n;
    this.states.length -= n;
    this.ended.length -= n;
  }

  /** Back to the start of the grammar (all tokens undone). */
  reset(): void {
    this.rollback(this.tokens.length);
  }

  /** The bytes the grammar fixes from here (up to where it branches or may end). */
  forcedBytes(): Uint8Array {
    if (this.ended[this.ended.length - 1]) return new Uint8Array(0);
    const key = this.grammar.key(this.state);
    let bytes = this.maskCache.getForced(key);
    if (bytes === undefined) {
      bytes = forcedBytes(this.grammar, this.state);
      this.maskCache.setForced(key, bytes);
    }
    return bytes;
  }

  /**
   * The tokens forced from here: the text the grammar fixes (up to where it branches or may end) in the fewest tokens
   * of the vocabulary (ties: the longer token first). [] when nothing is forced. This tokenization need not be the one
   * the model would have produced (a BPE tokenizer may split the same text differently); the text is the same. The
   * state is unchanged: accept() each token to move past them.
   */
  forced(): number[] {
    if (this.ended[this.ended.length - 1]) return [];
    const key = this.grammar.key(this.state);
    let tokens = this.maskCache.getForcedTokens(key);
    if (tokens === undefined) {
      const bytes = this.forcedBytes();
      tokens = bytes.length === 0 ? [] : this.vocab.tokenize(bytes);
      this.maskCache.setForcedTokens(key, tokens);
    }
    return tokens.slice();
  }
}
