// The compiled form of every grammar: a recursive transition network over bytes. Rules own nodes; a node has
// byte-range edges, epsilon edges and call edges (enter another rule, continue at a return node). Leaf languages
// (strings, numbers, regex classes) are character machines embedded state by state through UTF-8 (or JSON-string
// escaping) tries, built lazily the first time the matcher reaches them. `analyze()` marks the nodes from which the
// rule can still complete, so that the matcher never enters a dead end (every allowed prefix has a completion).

import { BUDGETS, checkBudget, notePeak } from './budget.ts';
import { CountedMachine, type CharMachine } from './machine.ts';

// Most nodes have one byte edge and nothing else: edge lists start as shared empty arrays and are allocated on
// first use (compile time is dominated by allocation on big schemas).
const NONE: never[] = [];

export class GNode {
  lo: number[] = NONE;
  hi: number[] = NONE;
  to: GNode[] = NONE;
  eps: GNode[] = NONE;
  calls: Rule[] = NONE;
  rets: GNode[] = NONE;
  /** Set on a rule's end node. */
  endOf: Rule | null = null;
  /** Fills this node's edges on first visit (lazily embedded machines, deferred enum checks). */
  expand: (() => void) | null = null;
  /** Lazily built nodes can complete exactly when this node can (their machine state is live). */
  liveVia: GNode | null = null;
  live = false;
  /** Set on the nodes of a JSON string with a length bound: the same place in the string without the bound. */
  run: CountedRun | null = null;
  constructor(readonly id: number) {}
}

/**
 * A node of a JSON string whose machine is a CountedMachine (a character boundary): `free`, the node of the same rest
 * state in the string without the length bound (which leaves by the same `exit`), and the count: `left` more code
 * points at most, `needed` at least before the string may end, `reserve` (see CountedMachine.counted). The token
 * masks run such a string as the free one plus the count.
 */
export interface CountedRun {
  readonly free: GNode;
  readonly exit: GNode;
  readonly left: number;
  readonly needed: number;
  readonly reserve: number;
}

export class Rule {
  productive = false;
  constructor(
    readonly id: number,
    readonly name: string,
    readonly start: GNode,
    readonly end: GNode,
  ) {}
}

const UTF8 = new TextEncoder();

/** The node and rule store plus the construction helpers every front end uses. */
export class Graph {
  readonly nodes: GNode[] = [];
  readonly rules: Rule[] = [];
  private readonly chains = new Map<string, GNode>();
  analyzed = false;

  node(): GNode {
    const n = new GNode(this.nodes.length);
    this.nodes.push(n);
    if (this.analyzed) n.live = true; // built lazily after analysis: only ever reached from live nodes
    // Until analysis the input decides the size (enums, unrolled repetitions); after it, the document being written.
    else if (this.nodes.length > BUDGETS.graphNodes) checkBudget('graphNodes', this.nodes.length, 'the compiled grammar needs more nodes');
    return n;
  }

  rule(name: string): Rule {
    const start = this.node();
    const end = this.node();
    const r = new Rule(this.rules.length, name, start, end);
    end.endOf = r;
    this.rules.push(r);
    return r;
  }

  edge(a: GNode, lo: number, hi: number, b: GNode): void {
    if (a.lo === NONE) {
      a.lo = [lo];
      a.hi = [hi];
      a.to = [b];
      return;
    }
    a.lo.push(lo);
    a.hi.push(hi);
    a.to.push(b);
  }

  eps(a: GNode, b: GNode): void {
    if (a === b) return;
    if (a.eps === NONE) a.eps = [b];
    else a.eps.push(b);
  }

  call(a: GNode, r: Rule, ret: GNode): void {
    if (a.calls === NONE) {
      a.calls = [r];
      a.rets = [ret];
      return;
    }
    a.calls.push(r);
    a.rets.push(ret);
  }

  /** Bytes in sequence from a; returns the node after the last byte. */
  bytes(a: GNode, bytes: ArrayLike<number>): GNode {
    let cur = a;
    for (let i = 0; i < bytes.length; i++) {
      const n = this.node();
      this.edge(cur, bytes[i]!, bytes[i]!, n);
      cur = n;
    }
    return cur;
  }

  /** The UTF-8 bytes of s, verbatim. */
  text(a: GNode, s: string): GNode {
    let ascii = true;
    for (let i = 0; i < s.length && ascii; i++) if (s.charCodeAt(i) > 0x7f) ascii = false;
    if (!ascii) return this.bytes(a, UTF8.encode(s));
    let cur = a;
    for (let i = 0; i < s.length; i++) {
      const n = this.node();
      const c = s.charCodeAt(i);
      this.edge(cur, c, c, n);
      cur = n;
    }
    return cur;
  }

  /** Optional/alternative helpers return the join node. */
  alt(a: GNode, branches: ((from: GNode) => GNode)[]): GNode {
    const join = this.node();
    for (const b of branches) this.eps(b(a), join);
    return join;
  }

  // ---- machine embedding ----

  /**
   * Embeds a character machine between `from` and `exit`: 'raw' writes code points as UTF-8; 'json' writes them as
   * the content of a JSON string (raw where JSON allows it, else \" \\ \b \f \n \r \t or \uXXXX; \/ is accepted too,
   * and \uXXXX for every BMP character but printable ASCII). Returns false (and adds nothing) when the machine's language is empty.
   */
  embed(from: GNode, m: CharMachine, mode: 'raw' | 'json', exit: GNode): boolean {
    if (m.start < 0 || !m.live(m.start)) return false;
    this.eps(from, this.machineNodes(m, mode, exit)(m.start));
    return true;
  }

  /** The lazily built node of each state of `m` (embedded as by embed()), by state. */
  private machineNodes(m: CharMachine, mode: 'raw' | 'json', exit: GNode): (q: number) => GNode {
    const memo = new Map<number, GNode>();
    // A JSON string with a length bound also gets the nodes of the string without it (built as the masks ask).
    const counted = mode === 'json' && m instanceof CountedMachine ? m : null;
    let freeNode: ((q: number) => GNode) | null = null;
    const stateNode = (q: number): GNode => {
      let n = memo.get(q);
      if (n !== undefined) return n;
      n = this.node();
      n.liveVia = exit;
      memo.set(q, n);
      if (counted !== null) {
        const { restState, left, needed, reserve } = counted.counted(q);
        freeNode ??= this.machineNodes(counted.rest, mode, exit);
        n.run = { free: freeNode(restState), exit, left, needed, reserve };
      }
      const self = n;
      n.expand = () => {
        if (m.accepting(q)) this.eps(self, exit);
        const t = m.next(q);
        const items: Item[] = [];
        for (let i = 0; i < t.targets.length; i++) {
          const target = t.targets[i]!;
          if (!m.live(target)) continue;
          items.push([t.ranges[2 * i]!, t.ranges[2 * i + 1]!, stateNode(target)]);
        }
        if (mode === 'raw') this.utf8(self, items);
        else this.jsonChars(self, items, exit);
      };
      return n;
    };
    return stateNode;
  }

  /** Code-point items (disjoint, sorted) as UTF-8 byte paths from `from`. */
  utf8(from: GNode, items: readonly Item[]): void {
    for (const [lo, hi, lead, r] of UTF8_CLASSES) {
      const sub = clip(items, lo, hi); // never surrogates: they have no UTF-8 encoding
      if (sub.length) this.trie(from, sub, r, 6, lead === 0 ? byteIdentity : leadMap(lead), contMap, 'u');
    }
  }

  private jsonChars(from: GNode, items: readonly Item[], liveVia: GNode): void {
    const raw: Item[] = [];
    for (const [lo, hi, to] of items) {
      // raw: >= 0x20 except '"' and '\'
      for (const [a, b] of [[0x20, 0x21], [0x23, 0x5b], [0x5d, 0x10ffff]] as const) {
        const l = Math.max(lo, a);
        const h = Math.min(hi, b);
        if (l <= h) raw.push([l, h, to]);
      }
    }
    raw.sort((x, y) => x[0] - y[0]);
    if (raw.length) this.utf8(from, raw);
    // \uXXXX for control characters and the rest of the BMP, not for printable ASCII (which no serializer escapes
    // that way: keeping \u0041 out leaves an ASCII-only string's content one byte per character, a loop).
    const bmp = [...clip(items, 0, 0x1f), ...clip(items, 0x7f, 0xffff)];
    const target = (cp: number): GNode | null => {
      for (const [lo, hi, to] of items) if (cp >= lo && cp <= hi) return to;
      return null;
    };
    if (bmp.length === 0 && !SHORT_ESCAPES.some(([, cp]) => target(cp) !== null)) return; // no escape: no backslash
    const esc = this.node();
    esc.liveVia = liveVia;
    if (this.analyzed) esc.live = true;
    this.edge(from, 0x5c, 0x5c, esc);
    esc.expand = () => {
      for (const [ch, cp] of SHORT_ESCAPES) {
        const t = target(cp);
        if (t) this.edge(esc, ch, ch, t);
      }
      if (bmp.length === 0) return;
      const hex = this.node();
      this.edge(esc, 0x75, 0x75, hex); // u
      this.trie(hex, bmp, 3, 4, hexMap, hexMap, 'h');
    };
  }

  /**
   * A radix trie over code points: digit k of the value at level r (bits per digit) becomes byte ranges via
   * `map`; whole blocks that go to one target share a chain of "any digit" nodes.
   */
  private trie(
    from: GNode,
    items: readonly Item[],
    r: number,
    bits: number,
    map: (kLo: number, kHi: number) => number[],
    nextMap: (kLo: number, kHi: number) => number[],
    kind: 'u' | 'h',
  ): void {
    const shift = bits * r;
    const block = 2 ** shift;
    // buckets of (k, sub-items), in order
    const buckets: [number, Item[]][] = [];
    for (const [lo, hi, to] of items) {
      const k0 = Math.floor(lo / block);
      const k1 = Math.floor(hi / block);
      for (let k = k0; k <= k1; k++) {
        const l = Math.max(lo, k * block);
        const h = Math.min(hi, (k + 1) * block - 1);
        const last = buckets[buckets.length - 1];
        if (last && last[0] === k) last[1].push([l, h, to]);
        else buckets.push([k, [[l, h, to]]]);
      }
    }
    let i = 0;
    while (i < buckets.length) {
      const [k, sub] = buckets[i]!;
      const full = sub.length === 1 && sub[0]![0] === k * block && sub[0]![1] === (k + 1) * block - 1;
      if (full) {
        // extend a run of consecutive full blocks with the same target
        const to = sub[0]![2];
        let j = i + 1;
        while (j < buckets.length) {
          const [k2, s2] = buckets[j]!;
          if (k2 !== k + (j - i) || s2.length !== 1 || s2[0]![2] !== to || s2[0]![0] !== k2 * block || s2[0]![1] !== (k2 + 1) * block - 1) break;
          j++;
        }
        const dest = r === 0 ? to : this.anyChain(r, to, kind, nextMap);
        const br = map(k, k + (j - i) - 1);
        for (let x = 0; x < br.length; x += 2) this.edge(from, br[x]!, br[x + 1]!, dest);
        i = j;
      } else {
        const child = this.node();
        const br = map(k, k);
        for (let x = 0; x < br.length; x += 2) this.edge(from, br[x]!, br[x + 1]!, child);
        this.trie(child, sub, r - 1, bits, nextMap, nextMap, kind);
        i++;
      }
    }
  }

  /** r digits of any value, then `to` (shared per target). */
  private anyChain(r: number, to: GNode, kind: string, map: (kLo: number, kHi: number) => number[]): GNode {
    const key = `${kind}${r}:${to.id}`;
    let n = this.chains.get(key);
    if (n !== undefined) return n;
    n = this.node();
    const next = r === 1 ? to : this.anyChain(r - 1, to, kind, map);
    const br = map(0, kind === 'u' ? 63 : 15);
    for (let x = 0; x < br.length; x += 2) this.edge(n, br[x]!, br[x + 1]!, next);
    this.chains.set(key, n);
    return n;
  }

  // ---- analysis ----

  /** Marks every node from which its rule can complete, and every rule that can complete; returns root's status. */
  analyze(root: Rule): boolean {
    const nodes = this.nodes;
    const n = nodes.length;
    // reverse dependencies in CSR form: who must be re-checked when a node becomes live
    const count = new Int32Array(n + 1);
    const each = (fn: (on: GNode, x: GNode) => void): void => {
      for (const x of nodes) {
        for (const t of x.to) fn(t, x);
        for (const t of x.eps) fn(t, x);
        for (let i = 0; i < x.calls.length; i++) {
          fn(x.calls[i]!.start, x);
          fn(x.rets[i]!, x);
        }
        if (x.liveVia) fn(x.liveVia, x);
      }
    };
    each((on) => count[on.id + 1]!++);
    for (let i = 0; i < n; i++) count[i + 1]! += count[i]!;
    const fill = count.slice(0, n);
    const deps = new Int32Array(count[n]!);
    each((on, x) => {
      deps[fill[on.id]!++] = x.id;
    });
    const check = (x: GNode): boolean => {
      if (x.endOf) return true;
      if (x.liveVia) return x.liveVia.live;
      for (const t of x.to) if (t.live) return true;
      for (const t of x.eps) if (t.live) return true;
      for (let i = 0; i < x.calls.length; i++) if (x.calls[i]!.start.live && x.rets[i]!.live) return true;
      return false;
    };
    const work: GNode[] = [];
    for (const x of nodes) x.live = false;
    for (const x of nodes) {
      if (check(x)) {
        x.live = true;
        work.push(x);
      }
    }
    while (work.length) {
      const on = work.pop()!;
      for (let k = count[on.id]!; k < count[on.id + 1]!; k++) {
        const x = nodes[deps[k]!]!;
        if (!x.live && check(x)) {
          x.live = true;
          work.push(x);
        }
      }
    }
    for (const r of this.rules) r.productive = r.start.live;
    this.analyzed = true;
    notePeak('graphNodes', n);
    return root.productive;
  }
}

/** [lo, hi, target] — a code-point range and where it leads. */
export type Item = [number, number, GNode];

const UTF8_CLASSES: [number, number, number, number][] = [
  [0, 0x7f, 0, 0],
  [0x80, 0x7ff, 0xc0, 1],
  [0x800, 0xffff, 0xe0, 2],
  [0x10000, 0x10ffff, 0xf0, 3],
];
const byteIdentity = (a: number, b: number): number[] => [a, b];
const leadMap = (lead: number) => (a: number, b: number): number[] => [lead | a, lead | b];
const contMap = (a: number, b: number): number[] => [0x80 | (a & 63), 0x80 | (b & 63)];
function hexMap(a: number, b: number): number[] {
  const lo = a & 15;
  const hi = lo + (b - a);
  const out: number[] = [];
  if (lo <= 9) out.push(0x30 + lo, 0x30 + Math.min(hi, 9));
  if (hi >= 10) {
    const l = Math.max(lo, 10) - 10;
    const h = hi - 10;
    out.push(0x41 + l, 0x41 + h, 0x61 + l, 0x61 + h);
  }
  return out;
}
// \" \\ \/ \b \f \n \r \t
const SHORT_ESCAPES: [number, number][] = [
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x2f, 0x2f],
  [0x62, 8],
  [0x66, 12],
  [0x6e, 10],
  [0x72, 13],
  [0x74, 9],
];

/** Items restricted to [lo, hi], minus the surrogates (machines may use full ranges such as [0, 0x10FFFF]). */
function clip(items: readonly Item[], lo: number, hi: number): Item[] {
  const out: Item[] = [];
  for (const [a, b, t] of items) {
    const l = Math.max(a, lo);
    const h = Math.min(b, hi);
    if (l > h) continue;
    if (l <= 0xd7ff) out.push([l, Math.min(h, 0xd7ff), t]);
    if (h >= 0xe000) out.push([Math.max(l, 0xe000), h, t]);
  }
  return out;
}

/** Embeds a plain code-point set (one step) as UTF-8 from a to b — GBNF classes and literals. */
export function charClass(g: Graph, a: GNode, set: readonly number[], b: GNode): void {
  const items: Item[] = [];
  for (let i = 0; i < set.length; i += 2) items.push([set[i]!, set[i + 1]!, b]);
  g.utf8(a, items);
}

