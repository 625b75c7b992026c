// Test helpers for grammars (not exported from the package): feed text, serialize a value in whatever key order
// the grammar accepts, and generate random documents by walking a grammar with a seeded RNG.

import type { Grammar, GrammarState } from './grammar.ts';

const enc = new TextEncoder();

export function feed(g: Grammar, s: GrammarState | null, text: string): GrammarState | null {
  for (const b of enc.encode(text)) {
    if (s === null) return null;
    s = g.step(s, b);
  }
  return s;
}

/**
 * Serializes `value` compactly, choosing object key orders the grammar accepts (backtracking). Returns the text, or
 * null when no key order is accepted.
 */
export function serializeAccepted(g: Grammar, value: unknown, budget = 20_000): string | null {
  let work = 0;
  // yields [text, state] continuations
  function* ser(s: GrammarState, v: unknown): Generator<[string, GrammarState]> {
    if (++work > budget) return;
    if (v === null || typeof v !== 'object') {
      const t = JSON.stringify(v);
      const n = feed(g, s, t);
      if (n !== null) yield [t, n];
      return;
    }
    if (Array.isArray(v)) {
      const open = g.step(s, 0x5b);
      if (open === null) return;
      yield* items(open, v, 0, '[');
      return;
    }
    const open = g.step(s, 0x7b);
    if (open === null) return;
    yield* members(open, v as Record<string, unknown>, Object.keys(v), '{');
  }
  function* items(s: GrammarState, v: unknown[], i: number, acc: string): Generator<[string, GrammarState]> {
    if (i === v.length) {
      const c = g.step(s, 0x5d);
      if (c !== null) yield [acc + ']', c];
      return;
    }
    const sep = i > 0 ? g.step(s, 0x2c) : s;
    if (sep === null) return;
    for (const [t, n] of ser(sep, v[i])) yield* items(n, v, i + 1, acc + (i > 0 ? ',' : '') + t);
  }
  function* members(s: GrammarState, o: Record<string, unknown>, left: string[], acc: string): Generator<[string, GrammarState]> {
    if (left.length === 0) {
      const c = g.step(s, 0x7d);
      if (c !== null) yield [acc + '}', c];
      return;
    }
    const first = acc === '{';
    const sep = first ? s : g.step(s, 0x2c);
    if (sep === null) return;
    for (const k of left) {
      const kt = JSON.stringify(k) + ':';
      const ks = feed(g, sep, kt);
      if (ks === null) continue;
      for (const [t, n] of ser(ks, o[k])) {
        yield* members(n, o, left.filter((x) => x !== k), acc + (first ? '' : ',') + kt + t);
      }
    }
  }
  for (const [t, s] of ser(g.initial, value)) if (g.accepting(s)) return t;
  return null;
}

/** A small seeded RNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function allowedBytes(g: Grammar, s: GrammarState): number[] {
  const out: number[] = [];
  for (let b = 0; b < 256; b++) if (g.step(s, b) !== null) out.push(b);
  return out;
}

/** The shortest byte path from s to an accepting state (BFS over interned states), or null. */
export function shortestCompletion(g: Grammar, s: GrammarState, maxStates = 200_000): number[] | null {
  if (g.accepting(s)) return [];
  const prev = new Map<string, [string, number]>();
  const byKey = new Map<string, GrammarState>([[g.key(s), s]]);
  const queue = [s];
  for (let h = 0; h < queue.length && queue.length < maxStates; h++) {
    const cur = queue[h]!;
    const ck = g.key(cur);
    for (let b = 0; b < 256; b++) {
      const n = g.step(cur, b);
      if (n === null) continue;
      const nk = g.key(n);
      if (byKey.has(nk)) continue;
      byKey.set(nk, n);
      prev.set(nk, [ck, b]);
      if (g.accepting(n)) {
        const path: number[] = [];
        for (let k = nk; k !== g.key(s); ) {
          const [p, byte] = prev.get(k)!;
          path.push(byte);
          k = p;
        }
        return path.reverse();
      }
      queue.push(n);
    }
  }
  return null;
}

/**
 * A random document: `randomBytes` random allowed bytes (stopping early at random once accepting), then the
 * shortest completion. Returns the bytes, or null if the walk hit a dead end (a grammar bug).
 */
export function randomDocument(g: Grammar, r: () => number, randomBytes: number): Uint8Array | null {
  const out: number[] = [];
  let s = g.initial;
  for (let i = 0; i < randomBytes; i++) {
    if (g.accepting(s) && (g.finished(s) || r() < 0.3)) return new Uint8Array(out);
    const allowed = allowedBytes(g, s);
    if (allowed.length === 0) return null;
    // prefer structure over long free text: pick a "structural" byte half of the time when one is allowed
    const structural = allowed.filter((b) => b === 0x22 || b === 0x7d || b === 0x5d || b === 0x2c || b === 0x3a);
    const pool = structural.length && r() < 0.35 ? structural : allowed;
    const b = pool[Math.floor(r() * pool.length)]!;
    out.push(b);
    s = g.step(s, b)!;
  }
  const tail = shortestCompletion(g, s);
  if (tail === null) return null;
  return new Uint8Array([...out, ...tail]);
}
