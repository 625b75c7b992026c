// Character machines: deterministic automata over Unicode scalar values, built lazily (a state's transitions are
// computed the first time they are asked for). Regex patterns, formats, length limits, key exclusions and number
// ranges are all machines, so that `pattern` ∧ `maxLength` ∧ `format` is just a product, and an extra property's
// key "any string but the declared names" is a complement. The byte-level grammar embeds a machine state by state,
// so only the states a document actually visits are ever built.

import { BUDGETS, charge, checkBudget, notePeak } from './budget.ts';
import type { CharSet } from './charset.ts';
import { MAX_CP } from './charset.ts';

/** The transitions of one state: disjoint sorted ranges [lo0, hi0, lo1, hi1, ...], targets[i] for pair i. */
export interface Trans {
  readonly ranges: readonly number[];
  readonly targets: readonly number[];
}

const NO_TRANS: Trans = { ranges: [], targets: [] };
/**
 * Work units (budget.ts) charged per interned automaton state lookup: building a key string and looking it up costs
 * about as much as copying 16 array elements, the unit the schema compiler's combinator expansion is charged in.
 */
const INTERN_COST = 16;
/** Rest states CountedMachine looks through for its reserve before calling it unknown. */
const RESERVE_STATES = 256;

/** A deterministic automaton over code points; states are small integers, `start` is -1 for the empty language. */
export abstract class CharMachine {
  abstract readonly start: number;
  abstract accepting(q: number): boolean;
  protected abstract compute(q: number): Trans;

  private readonly transCache: Trans[] = [];
  private readonly liveMemo: (boolean | undefined)[] = [];

  next(q: number): Trans {
    let t = this.transCache[q];
    if (t === undefined) {
      charge(1); // a new state's transitions (compute() charges what it costs beyond that)
      t = this.compute(q);
      this.transCache[q] = t;
    }
    return t;
  }

  /**
   * Whether some accepting state is reachable from q (a state that is not live must never be entered). Explores at
   * most BUDGETS.automatonStates states (GrammarBudgetError past that).
   */
  live(q: number): boolean {
    const m = this.liveMemo[q];
    if (m !== undefined) return m;
    const known = this.knownLive(q);
    if (known !== undefined) return (this.liveMemo[q] = known);
    // BFS with parent links: on success every state on the found path is live; on failure everything seen is dead.
    const parent = new Map<number, number>([[q, -1]]);
    const queue = [q];
    for (let head = 0; head < queue.length; head++) {
      const s = queue[head]!;
      const known = this.liveMemo[s];
      if (known === false) continue;
      if (known === true || this.accepting(s)) {
        for (let p = s; p !== -1; p = parent.get(p)!) this.liveMemo[p] = true;
        notePeak('automatonStates', queue.length);
        return true;
      }
      if (queue.length > BUDGETS.automatonStates) checkBudget('automatonStates', queue.length, 'deciding whether a string constraint can still be met explores more automaton states');
      const t = this.next(s);
      for (const u of t.targets) {
        if (!parent.has(u)) {
          parent.set(u, s);
          queue.push(u);
        }
      }
    }
    for (const s of queue) this.liveMemo[s] = false;
    notePeak('automatonStates', queue.length);
    return false;
  }

  /** Liveness a machine knows without a search (undefined: search). */
  protected knownLive(_q: number): boolean | undefined {
    return undefined;
  }

  isEmpty(): boolean {
    return this.start < 0 || !this.live(this.start);
  }

  /** Runs the machine over a string (code points); returns the final state or -1. */
  run(text: string): number {
    let q = this.start;
    for (const ch of text) {
      if (q < 0) return -1;
      q = step(this.next(q), ch.codePointAt(0)!);
    }
    return q;
  }

  matches(text: string): boolean {
    const q = this.run(text);
    return q >= 0 && this.accepting(q);
  }
}

/** The target of code point cp in a transition list, or -1. */
export function step(t: Trans, cp: number): number {
  const r = t.ranges;
  for (let i = 0; i < r.length; i += 2) if (cp >= r[i]! && cp <= r[i + 1]!) return t.targets[i >> 1]!;
  return -1;
}

/** Interns arbitrary state descriptions (strings) to dense ids. */
export class Interner<T> {
  readonly items: T[] = [];
  private readonly ids = new Map<string, number>();
  id(key: string, make: () => T): number {
    charge(INTERN_COST + (key.length >> 2)); // a key string and a map lookup: the unit cost of building automata
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.items.length;
      this.items.push(make());
      this.ids.set(key, id);
    }
    return id;
  }
  get size(): number {
    return this.items.length;
  }
}

/** Builds a Trans from possibly-unsorted (lo, hi, target) triples whose ranges are disjoint; merges adjacent equal targets. */
export function makeTrans(triples: number[]): Trans {
  if (triples.length === 0) return NO_TRANS;
  const idx: number[] = [];
  for (let i = 0; i < triples.length; i += 3) idx.push(i);
  idx.sort((a, b) => triples[a]! - triples[b]!);
  const ranges: number[] = [];
  const targets: number[] = [];
  for (const i of idx) {
    const lo = triples[i]!;
    const hi = triples[i + 1]!;
    const to = triples[i + 2]!;
    const n = targets.length;
    if (n > 0 && targets[n - 1] === to && ranges[2 * n - 1]! + 1 >= lo) ranges[2 * n - 1] = Math.max(hi, ranges[2 * n - 1]!);
    else {
      ranges.push(lo, hi);
      targets.push(to);
    }
  }
  return { ranges, targets };
}

// ---- concrete machines ----

/** All strings whose length in code points lies in [min, max] (max may be Infinity). */
export class LengthMachine extends CharMachine {
  readonly start = 0;
  private readonly cap: number;
  constructor(
    readonly min: number,
    readonly max: number,
  ) {
    super();
    this.cap = Number.isFinite(max) ? max : min;
  }
  accepting(q: number): boolean {
    return q >= this.min && q <= this.max;
  }
  /** Every count up to max can still reach [min, max] (no search: min may be large). */
  protected override knownLive(): boolean {
    return this.min <= this.max;
  }
  protected compute(q: number): Trans {
    if (q >= this.max) return NO_TRANS;
    return { ranges: [0, MAX_CP], targets: [Math.min(q + 1, this.cap)] };
  }
}

/**
 * A length bound over another machine: strings of `rest` whose length in code points lies in [min, max] (max may be
 * Infinity). States are (count, rest state) pairs, the count capped at max (or at min when unbounded). Unlike a
 * product with a LengthMachine, it tells its parts apart (`counted`), so that the byte-level grammar can run a string
 * with maxLength as the unbounded string plus a count.
 */
export class CountedMachine extends CharMachine {
  readonly start: number;
  private readonly cap: number;
  private readonly pairs = new Interner<[number, number]>();
  constructor(
    readonly min: number,
    readonly max: number,
    readonly rest: CharMachine,
  ) {
    super();
    this.cap = Number.isFinite(max) ? max : min;
    this.start = rest.start < 0 || min > max ? -1 : this.pair(0, rest.start);
  }
  private pair(k: number, r: number): number {
    return this.pairs.id(`${k},${r}`, () => [k, r]);
  }
  accepting(q: number): boolean {
    const [k, r] = this.pairs.items[q]!;
    return k >= this.min && this.rest.accepting(r);
  }
  /**
   * Over "any string of a set" (C*, or any string), a count below max can always be extended to [min, max]: no
   * search through the counts (minLength 10^6 would be a million states).
   */
  protected override knownLive(q: number): boolean | undefined {
    const rest = this.rest;
    const free = (rest instanceof SetStarMachine && rest.next(0).ranges.length > 0) || (rest instanceof LengthMachine && rest.min === 0 && rest.max === Infinity);
    if (!free) return undefined;
    const [k] = this.pairs.items[q]!;
    return this.min <= this.max && k <= this.max;
  }
  /**
   * State q's rest state, how many more code points it may take (Infinity: no limit), how many it needs at least, and
   * `reserve`: the most code points the rest machine needs to end from any state it can reach from there (0 when
   * every such state accepts; Infinity when unknown), so that a string `reserve` or more short of `left` stays live.
   */
  counted(q: number): { restState: number; left: number; needed: number; reserve: number } {
    const [k, r] = this.pairs.items[q]!;
    return { restState: r, left: this.max - k, needed: Math.max(0, this.min - k), reserve: this.reserve(r) };
  }
  private readonly reserves = new Map<number, number>();
  private reserve(r: number): number {
    let v = this.reserves.get(r);
    if (v !== undefined) return v;
    // The states reachable from r (few, for the patterns that take a length bound), then their distances to an
    // accepting state by relaxation.
    const seen = [r];
    const index = new Map<number, number>([[r, 0]]);
    for (let i = 0; i < seen.length && seen.length <= RESERVE_STATES; i++) {
      for (const t of this.rest.next(seen[i]!).targets) {
        if (!index.has(t) && this.rest.live(t)) {
          index.set(t, seen.length);
          seen.push(t);
        }
      }
    }
    if (seen.length > RESERVE_STATES) v = Infinity;
    else {
      const dist = seen.map((s) => (this.rest.accepting(s) ? 0 : Infinity));
      for (let changed = true; changed; ) {
        changed = false;
        for (let i = 0; i < seen.length; i++) {
          for (const t of this.rest.next(seen[i]!).targets) {
            const j = index.get(t);
            if (j !== undefined && dist[j]! + 1 < dist[i]!) {
              dist[i] = dist[j]! + 1;
              changed = true;
            }
          }
        }
      }
      v = Math.max(...dist);
    }
    this.reserves.set(r, v);
    return v;
  }
  protected compute(q: number): Trans {
    const [k, r] = this.pairs.items[q]!;
    if (k >= this.max) return NO_TRANS;
    const t = this.rest.next(r);
    const k1 = Math.min(k + 1, this.cap);
    return { ranges: t.ranges, targets: t.targets.map((u) => this.pair(k1, u)) };
  }
}

/** Any string of characters from one set (the regex C*): one accepting state that every character of the set keeps. */
export class SetStarMachine extends CharMachine {
  readonly start = 0;
  private readonly trans: Trans;
  constructor(set: CharSet) {
    super();
    this.trans = { ranges: set, targets: Array.from({ length: set.length / 2 }, () => 0) };
  }
  accepting(): boolean {
    return true;
  }
  protected compute(): Trans {
    return this.trans;
  }
}

/** Exactly the given strings (a trie); `complement()` of it is "any string but these". */
export class LiteralsMachine extends CharMachine {
  readonly start = 0;
  private readonly kids: Map<number, number>[] = [new Map()];
  private readonly final: boolean[] = [false];
  constructor(words: readonly string[]) {
    super();
    for (const w of words) {
      let q = 0;
      for (const ch of w) {
        const cp = ch.codePointAt(0)!;
        let n = this.kids[q]!.get(cp);
        if (n === undefined) {
          n = this.kids.length;
          this.kids.push(new Map());
          this.final.push(false);
          this.kids[q]!.set(cp, n);
        }
        q = n;
      }
      this.final[q] = true;
    }
  }
  accepting(q: number): boolean {
    return this.final[q]!;
  }
  protected compute(q: number): Trans {
    const t: number[] = [];
    for (const [cp, n] of this.kids[q]!) t.push(cp, cp, n);
    return makeTrans(t);
  }
}

/** Strings in both (all) machines. */
export class ProductMachine extends CharMachine {
  readonly start: number;
  private readonly pairs = new Interner<[number, number]>();
  constructor(
    private readonly a: CharMachine,
    private readonly b: CharMachine,
  ) {
    super();
    this.start = a.start < 0 || b.start < 0 ? -1 : this.pair(a.start, b.start);
  }
  private pair(x: number, y: number): number {
    return this.pairs.id(`${x},${y}`, () => [x, y]);
  }
  accepting(q: number): boolean {
    const [x, y] = this.pairs.items[q]!;
    return this.a.accepting(x) && this.b.accepting(y);
  }
  protected compute(q: number): Trans {
    const [x, y] = this.pairs.items[q]!;
    const ta = this.a.next(x);
    const tb = this.b.next(y);
    const out: number[] = [];
    const ra = ta.ranges;
    const rb = tb.ranges;
    let i = 0;
    let j = 0;
    while (i < ra.length && j < rb.length) {
      const lo = Math.max(ra[i]!, rb[j]!);
      const hi = Math.min(ra[i + 1]!, rb[j + 1]!);
      if (lo <= hi) out.push(lo, hi, this.pair(ta.targets[i >> 1]!, tb.targets[j >> 1]!));
      if (ra[i + 1]! < rb[j + 1]!) i += 2;
      else j += 2;
    }
    return makeTrans(out);
  }
}

/** Strings the machine rejects (the machine is deterministic, so flipping acceptance after completing it is exact). */
export class ComplementMachine extends CharMachine {
  readonly start: number;
  // state 0 is the sink (everything after it is accepted); state k+1 is m's state k
  constructor(private readonly m: CharMachine) {
    super();
    this.start = m.start < 0 ? 0 : m.start + 1;
  }
  accepting(q: number): boolean {
    return q === 0 || !this.m.accepting(q - 1);
  }
  protected compute(q: number): Trans {
    if (q === 0) return { ranges: [0, MAX_CP], targets: [0] };
    const t = this.m.next(q - 1);
    const out: number[] = [];
    let next = 0;
    for (let i = 0; i < t.ranges.length; i += 2) {
      if (t.ranges[i]! > next) out.push(next, t.ranges[i]! - 1, 0);
      out.push(t.ranges[i]!, t.ranges[i + 1]!, t.targets[i >> 1]! + 1);
      next = t.ranges[i + 1]! + 1;
    }
    if (next <= MAX_CP) out.push(next, MAX_CP, 0);
    return makeTrans(out);
  }
}

/** A nondeterministic automaton over code-point sets, determinized lazily (subset construction on demand). */
export class Nfa {
  readonly eps: number[][] = [];
  readonly sets: CharSet[][] = [];
  readonly tos: number[][] = [];
  accept = -1;
  state(): number {
    this.eps.push([]);
    this.sets.push([]);
    this.tos.push([]);
    return this.eps.length - 1;
  }
  get size(): number {
    return this.eps.length;
  }
}

export class NfaMachine extends CharMachine {
  readonly start: number;
  private readonly subsets = new Interner<number[]>();
  constructor(
    private readonly nfa: Nfa,
    startState: number,
  ) {
    super();
    this.start = this.intern(this.closure([startState]));
  }
  private closure(seed: number[]): number[] {
    const seen = new Set<number>(seed);
    const stack = [...seed];
    while (stack.length) {
      const s = stack.pop()!;
      charge(1);
      for (const t of this.nfa.eps[s]!) {
        if (!seen.has(t)) {
          seen.add(t);
          stack.push(t);
        }
      }
    }
    // keep only states that matter: those with char edges, and the accept state
    const out: number[] = [];
    for (const s of seen) if (this.nfa.sets[s]!.length > 0 || s === this.nfa.accept) out.push(s);
    return out.sort((a, b) => a - b);
  }
  private intern(set: number[]): number {
    if (set.length === 0) return -1;
    return this.subsets.id(set.join(','), () => set);
  }
  accepting(q: number): boolean {
    return this.subsets.items[q]!.includes(this.nfa.accept);
  }
  protected compute(q: number): Trans {
    const members = this.subsets.items[q]!;
    // A sweep over the members' edge endpoints: between two consecutive endpoints the set of NFA targets is fixed,
    // and its closure is one DFA target. Work: the edges, plus the targets of every interval (charged).
    const at: number[] = []; // endpoint, then +1 (target enters) or -1 (leaves) and the target
    for (const s of members) {
      const sets = this.nfa.sets[s]!;
      const tos = this.nfa.tos[s]!;
      for (let e = 0; e < sets.length; e++) {
        const cs = sets[e]!;
        for (let i = 0; i < cs.length; i += 2) at.push(cs[i]!, 1, tos[e]!, cs[i + 1]! + 1, -1, tos[e]!);
      }
    }
    if (at.length === 0) return NO_TRANS;
    charge(at.length / 3);
    const order = Array.from({ length: at.length / 3 }, (_, k) => 3 * k);
    order.sort((a, b) => at[a]! - at[b]!);
    const active = new Map<number, number>();
    const out: number[] = [];
    for (let k = 0; k < order.length; ) {
      const point = at[order[k]!]!;
      for (; k < order.length && at[order[k]!] === point; k++) {
        const e = order[k]!;
        const t = at[e + 2]!;
        const c = (active.get(t) ?? 0) + at[e + 1]!;
        if (c === 0) active.delete(t);
        else active.set(t, c);
      }
      if (active.size === 0 || k === order.length) continue;
      charge(active.size);
      const to = this.intern(this.closure([...active.keys()]));
      if (to >= 0) out.push(point, at[order[k]!]! - 1, to);
    }
    return makeTrans(out);
  }
}

/** Intersection of several machines (undefined entries skipped); null when the list is empty. */
export function intersectAll(ms: readonly CharMachine[]): CharMachine | null {
  let acc: CharMachine | null = null;
  for (const m of ms) acc = acc === null ? m : new ProductMachine(acc, m);
  return acc;
}
