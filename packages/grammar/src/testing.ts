// Test helpers for grammars (not exported from the package): feed text, serialize a value in whatever key order
// the grammar accepts, and generate random documents by walking a grammar with a seeded RNG (the caller's, from
// @intab/testing/random).

import type { Grammar, GrammarState } from './grammar.ts';
import type { GNode, Rule } from './graph.ts';
import type { RtnGrammar } from './matcher.ts';

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

export function allowedBytes(g: Grammar, s: GrammarState): number[] {
  const out: number[] = [];
  for (let b = 0; b < 256; b++) if (g.step(s, b) !== null) out.push(b);
  return out;
}

/**
 * Bytes needed to finish from each node of a grammar graph (shortest path to its rule's end, rules' shortest
 * derivations inlined); lazily built nodes are expanded on the way. For walking grammars toward completion.
 */
export class Distances {
  private readonly node = new Map<GNode, number>();
  private readonly rule = new Map<Rule, number>();
  private readonly active = new Set<Rule>();
  constructor(private readonly g: RtnGrammar) {}

  ruleMin(r: Rule): number {
    const m = this.rule.get(r);
    if (m !== undefined) return m;
    if (this.active.has(r) || !r.productive) return Infinity;
    this.active.add(r);
    const d = this.toEnd(r.start);
    this.active.delete(r);
    this.rule.set(r, d);
    return d;
  }

  /** Dijkstra from n to the end node of its rule. */
  toEnd(n: GNode): number {
    const known = this.node.get(n);
    if (known !== undefined) return known;
    const dist = new Map<GNode, number>([[n, 0]]);
    const heap: [number, GNode][] = [[0, n]];
    let best = Infinity;
    while (heap.length) {
      heap.sort((a, b) => b[0] - a[0]);
      const [d, x] = heap.pop()!;
      if (d > (dist.get(x) ?? Infinity) || d >= best) continue;
      if (x.expand) {
        const f = x.expand;
        x.expand = null;
        f();
      }
      if (x.endOf) best = Math.min(best, d);
      const relax = (y: GNode, w: number): void => {
        if (!y.live) return;
        const nd = d + w;
        if (nd < (dist.get(y) ?? Infinity)) {
          dist.set(y, nd);
          heap.push([nd, y]);
        }
      };
      for (const y of x.to) relax(y, 1);
      for (const y of x.eps) relax(y, 0);
      for (let i = 0; i < x.calls.length; i++) {
        const m = this.ruleMin(x.calls[i]!);
        if (m < Infinity) relax(x.rets[i]!, m);
      }
    }
    this.node.set(n, best);
    return best;
  }

  /** Bytes to finish the whole document from a state. */
  state(s: GrammarState): number {
    if (this.g.accepting(s)) return 0;
    let best = Infinity;
    for (const { node, rets } of this.g.configs(s)) {
      let d = this.toEnd(node);
      for (const r of rets) d += this.toEnd(r);
      best = Math.min(best, d);
    }
    return best;
  }
}

/** Greedy completion: always the byte whose next state is closest to the end. */
export function completion(g: Grammar, s: GrammarState, dist: Distances, cap = 100_000): number[] | null {
  const out: number[] = [];
  while (!g.accepting(s)) {
    let bestB = -1;
    let bestD = Infinity;
    let bestS: GrammarState | null = null;
    for (let b = 0; b < 256; b++) {
      const n = g.step(s, b);
      if (n === null) continue;
      const d = dist.state(n);
      if (d < bestD) {
        bestD = d;
        bestB = b;
        bestS = n;
      }
    }
    if (bestS === null || out.length > cap) return null;
    out.push(bestB);
    s = bestS;
  }
  return out;
}

const distances = new WeakMap<Grammar, Distances>();

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
  let dist = distances.get(g);
  if (!dist) distances.set(g, (dist = new Distances(g as RtnGrammar)));
  const tail = completion(g, s, dist);
  if (tail === null) return null;
  return new Uint8Array([...out, ...tail]);
}
