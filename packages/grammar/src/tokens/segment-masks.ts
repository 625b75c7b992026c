// Masks at segment states (segments.ts), from what the vocabulary does under the segments' tables: walked once per
// vocabulary and tables (the bitmask of tokens that stay inside, and for each way out the sub-trie of what those tokens
// continue with: '",' '"}' ...) and shared by every state, grammar and matcher with the same tables. A mask is then
// that bitmask OR'ed with short walks of the sub-tries from the real states after the way out. Where most bytes lead
// decides the way:
//   loop:  PROGRESS leads back to the state itself (an unbounded string);
//   chain: PROGRESS leads to the next position (other counted automata: a regex counting more than one class): up to
//          CHAIN_SEGMENTS positions are followed and verified to have the same tables, tokens that run further are
//          walked from the state there.
//   lead:  most bytes lead to a loop (an object key's first character, checked against the declared names, then any
//          key; a character's continuation bytes, then the string): the loop's mask, corrected where the two differ.
//          The real states from here and from the loop's start are stepped in lockstep over the vocabulary's trie
//          until they meet (the same state: below it the loop's mask is right) or one refuses (that subtree is
//          cleared, or walked from the real state). The lead's own segment is never built.

import type { Grammar, GrammarState } from '../grammar.ts';
import type { MaskCache, MaskFrom } from './mask-cache.ts';
import { dominantTarget, EXIT, PROGRESS, segmentOf, type Segment } from './segments.ts';
import { walkBelow, walkTrie } from './trie-walk.ts';
import { buildByteTrie, type ByteTrie, type TokenVocabulary } from './vocabulary.ts';

/**
 * Segments followed in a chain; tokens that go further are walked from the state there. 32 rather than 16: the walk
 * past the chain (tokens of more than 16 characters: thousands in a 151k vocabulary) cost more per mask than the
 * extra segments, which are explored once per position and memoized.
 */
const CHAIN_SEGMENTS = 32;

// ---- walks under segment tables (per vocabulary) ----

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


// ---- masks at segment states: loop, chain, lead ----

/** Sets the loop, chain or lead mask at `state` and says which; undefined (mask untouched) when no segment applies. */
export function segmentMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, mask: Uint32Array, maskFrom: MaskFrom, cache?: MaskCache): 'loop' | 'chain' | 'lead' | undefined {
  // Where most bytes lead decides the way: back here (a loop), to a loop (a lead: its own segment is not needed), or
  // on to another segment (a chain).
  const target = dominantTarget(grammar, state);
  if (target === null) return undefined;
  if (target !== state) {
    const loop = segmentOf(grammar, target);
    if (loop !== null && loop.loop) {
      leadMask(grammar, vocab, state, loop, mask, maskFrom, cache);
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

let leadA: GrammarState[] = [];
let leadB: GrammarState[] = [];

/**
 * The mask at `state`, most of whose bytes lead to the start of the loop `loop`, from the loop's mask. Lockstep over
 * the trie from the two real states: side A from `state`, side B from the loop's start. Where both reach the same state (A has left the lead for the loop: an object key past the declared names' letters, a character
 * completed), everything below agrees; where one refuses, the other's answer for the subtree is right (nothing, or a
 * walk from A's state); elsewhere (a declared name's prefix) both go on. The mask starts as the loop's, with the
 * subtrees A refuses cleared, or (where those hold more tokens than the ones both agree on: A is inside a character
 * and refuses nearly every first byte) starts empty, with the loop's bits copied where they meet.
 */
function leadMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, loop: Segment, mask: Uint32Array, maskFrom: MaskFrom, cache?: MaskCache): void {
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
