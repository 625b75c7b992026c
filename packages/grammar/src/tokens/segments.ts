// Segments: the small automaton around a grammar state where many bytes lead to one place (inside a string, a
// free-text pattern), found by probing the grammar, memoized per grammar and interned by table.
//
// A state "behaves like text" when many bytes lead to one target (string content). Its segment is the small automaton
// around it: the state, and the states reached from it that lead back to it or on to that target (UTF-8 continuation
// states, escapes), each with its 256 transitions coded as a local index, FORBID, EXIT (somewhere else: the closing
// quote) or PROGRESS (to the target). When the target is the state itself, the segment is a loop (an unbounded
// string). Otherwise the target starts the next segment (a pattern that counts characters: c0 → c1 → ...),
// and a run of segments is a chain. The coded tables do not depend on the rest of the grammar, so what the vocabulary
// does under a loop or a chain of given tables is computed once per vocabulary (segment-masks.ts) and shared by every
// state, grammar and matcher with those tables.

import type { Grammar, GrammarState } from '../grammar.ts';

const FORBID = -1;
export const EXIT = -2;
export const PROGRESS = -3;
/** A segment needs at least this many bytes going to one target (else a plain walk is cheap). */
const WIDE_BYTES = 16;
/** States probed (256 steps each) while exploring one segment. */
const SEGMENT_MAX_PROBED = 40;
/** Steps away from the segment that exploration follows before a state must have joined. */
const DETOUR_DEPTH = 4;
/** Segments memoized per grammar (by state key) before the memo is dropped. */
const SEGMENT_MEMO_ENTRIES = 50_000;

export interface Segment {
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
export function segmentOf(grammar: Grammar, x: GrammarState, key = grammar.key(x)): Segment | null {
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
export function dominantTarget(grammar: Grammar, x: GrammarState): GrammarState | null {
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
