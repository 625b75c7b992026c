// The runtime: a Grammar over a Graph. A state is an interned set of configurations (node, return stack); stacks are
// hash-consed persistent lists, so equal states are the same object and key() is a precomputed id string. Each
// state caches its transitions per byte, so after warm-up step() is two array loads; a miss computes the closure
// (epsilon moves, rule calls with tail-call elimination, returns) of the nodes reached by the byte.

import { BUDGETS, charge, checkBudget, notePeak } from './budget.ts';
import { IntabGrammarError } from './errors.ts';
import type { CountedString, Grammar, GrammarState, GrammarWarning } from './grammar.ts';
import { GNode, type Graph, type Rule } from './graph.ts';

class Stack {
  kids: Map<number, Stack> | null = null;
  constructor(
    readonly id: number,
    readonly ret: GNode | null,
    readonly parent: Stack | null,
  ) {}
}

class State {
  /**
   * Transitions computed so far, by byte: 0 unknown, -1 refused, else 1 + the target's id. Ids in a typed array, not
   * an array of states: its bytes live outside the JS heap, so the garbage collector neither scans nor copies them
   * (interned states survive, and a 256-slot pointer array per state made most of what each scavenge copied).
   */
  next: Int32Array | null = null;
  /** counted(): undefined until asked. */
  counted: CountedString | null | undefined = undefined;
  constructor(
    readonly id: number,
    readonly key: string,
    readonly nodes: readonly GNode[],
    readonly stacks: readonly Stack[],
    readonly accepting: boolean,
    readonly finished: boolean,
  ) {}
}

const FINAL = new GNode(-1);
/**
 * Work units (budget.ts) charged for a new interned state beyond its configurations: it lives as long as the grammar
 * and gets a 1 KiB transition table once stepped, so it costs what 64 configurations of a closure cost.
 */
const STATE_COST = 64;

export class RtnGrammar implements Grammar {
  readonly initial: GrammarState;
  private readonly empty = new Stack(0, null, null);
  private stackCount = 1;
  /** Interned states by a hash of their configurations. */
  private readonly states = new Map<number, State[]>();
  /** Interned states by id. */
  private readonly byId: State[] = [];

  /** `live`: skip nodes the analysis marked dead (off only while checking enum literals before analysis). */
  constructor(
    readonly graph: Graph,
    readonly root: Rule,
    readonly warnings: readonly GrammarWarning[],
    private readonly live = true,
  ) {
    const init = this.intern(this.closure([root.start], [this.empty]));
    if (init === null) throw new IntabGrammarError('grammar accepts nothing');
    this.initial = init as unknown as GrammarState;
  }

  step(state: GrammarState, byte: number): GrammarState | null {
    const s = state as unknown as State;
    const n = s.next;
    if (n !== null) {
      const r = n[byte];
      if (r > 0) return this.byId[r - 1] as unknown as GrammarState;
      if (r < 0) return null;
    }
    return this.slowStep(s, byte) as unknown as GrammarState | null;
  }

  accepting(state: GrammarState): boolean {
    return (state as unknown as State).accepting;
  }

  finished(state: GrammarState): boolean {
    return (state as unknown as State).finished;
  }

  key(state: GrammarState): string {
    return (state as unknown as State).key;
  }

  counted(state: GrammarState): CountedString | null {
    const s = state as unknown as State;
    if (s.counted !== undefined) return s.counted;
    // Nodes of counted strings at the same count (one string on several stacks: its place in an ambiguous document,
    // or several strings of alternatives), and beside them only their exits (where they may end).
    let r: CountedString | null = null;
    const nodes = s.nodes;
    const first = nodes.find((n) => n.run !== null)?.run ?? null;
    if (first !== null) {
      const frees: GNode[] = [];
      const stacks: Stack[] = [];
      let reserve = first.reserve;
      let ok = true;
      for (let i = 0; i < nodes.length && ok; i++) {
        const run = nodes[i]!.run;
        if (run === null) ok = nodes.some((n) => n.run?.exit === nodes[i]);
        else if (run.left !== first.left || run.needed !== first.needed) ok = false;
        else {
          frees.push(run.free);
          stacks.push(s.stacks[i]!);
          reserve = Math.max(reserve, run.reserve);
        }
      }
      const free = ok ? this.intern(this.closure(frees, stacks)) : null;
      if (free !== null) r = { free: free as unknown as GrammarState, left: first.left, needed: first.needed, reserve };
    }
    s.counted = r;
    return r;
  }

  /** The configurations of a state: node and return nodes (innermost first) — for tools and tests. */
  configs(state: GrammarState): { node: GNode; rets: GNode[] }[] {
    const s = state as unknown as State;
    return s.nodes.map((node, i) => {
      const rets: GNode[] = [];
      for (let st: Stack | null = s.stacks[i]!; st && st.ret; st = st.parent) rets.push(st.ret);
      return { node, rets };
    });
  }

  /** Number of interned states (for tests and memory reports). */
  get stateCount(): number {
    return this.byId.length;
  }

  /**
   * Computes the step on `byte` and caches it for the byte's whole class: the range [from, to] around it on which
   * every edge of the state is either all in or all out, so every byte of it leads to the same seeds (string content
   * takes a dozen closures per state instead of 256).
   */
  private slowStep(s: State, byte: number): State | null {
    const seeds: GNode[] = [];
    const seedStacks: Stack[] = [];
    let from = 0;
    let to = 255;
    for (let c = 0; c < s.nodes.length; c++) {
      const n = s.nodes[c]!;
      const lo = n.lo;
      const hi = n.hi;
      for (let e = 0; e < lo.length; e++) {
        const l = lo[e]!;
        const h = hi[e]!;
        if (byte < l) {
          if (l - 1 < to) to = l - 1;
        } else if (byte > h) {
          if (h + 1 > from) from = h + 1;
        } else {
          if (l > from) from = l;
          if (h < to) to = h;
          const t = n.to[e]!;
          if (!this.live || t.live) {
            seeds.push(t);
            seedStacks.push(s.stacks[c]!);
          }
        }
      }
    }
    const r = seeds.length ? this.intern(this.closure(seeds, seedStacks)) : null;
    const next = (s.next ??= new Int32Array(256));
    next.fill(r === null ? -1 : r.id + 1, from, to + 1);
    return r;
  }

  private push(s: Stack, ret: GNode): Stack {
    if (s.kids === null) s.kids = new Map();
    let k = s.kids.get(ret.id);
    if (k === undefined) {
      k = new Stack(this.stackCount++, ret, s);
      s.kids.set(ret.id, k);
    }
    return k;
  }

  private closure(seeds: GNode[], seedStacks: Stack[]): [GNode[], Stack[]] {
    const outN: GNode[] = [];
    const outS: Stack[] = [];
    const seen = new Set<number>();
    const wn = [...seeds];
    const ws = [...seedStacks];
    let work = 0;
    while (wn.length) {
      const n = wn.pop()!;
      const st = ws.pop()!;
      const k = st.id * 0x4000000 + n.id; // < 2^53 while ids stay below 2^26 nodes and 2^27 stacks
      if (seen.has(k)) continue;
      seen.add(k);
      if (++work > BUDGETS.closure) checkBudget('closure', work, 'one step of the grammar reaches more parser configurations');
      if (n.expand !== null) {
        const f = n.expand;
        n.expand = null;
        f();
      }
      if (n.lo.length > 0) {
        outN.push(n);
        outS.push(st);
      }
      for (const t of n.eps) {
        if (!this.live || t.live) {
          wn.push(t);
          ws.push(st);
        }
      }
      for (let i = 0; i < n.calls.length; i++) {
        const rule = n.calls[i]!;
        const ret = n.rets[i]!;
        if (this.live && (!rule.productive || !ret.live)) continue;
        const tail = ret.endOf !== null && ret.lo.length === 0 && ret.eps.length === 0 && ret.calls.length === 0;
        wn.push(rule.start);
        ws.push(tail ? st : this.push(st, ret));
      }
      if (n.endOf !== null) {
        if (st.ret === null) {
          if (n.endOf === this.root) {
            outN.push(FINAL);
            outS.push(st);
          }
        } else {
          wn.push(st.ret);
          ws.push(st.parent!);
        }
      }
    }
    charge(work);
    notePeak('closure', work);
    return [outN, outS];
  }

  private intern([nodes, stacks]: [GNode[], Stack[]]): State | null {
    if (nodes.length === 0) return null;
    const idx = nodes.map((_, i) => i);
    idx.sort((a, b) => nodes[a]!.id - nodes[b]!.id || stacks[a]!.id - stacks[b]!.id);
    const ns: GNode[] = [];
    const ss: Stack[] = [];
    let accepting = false;
    for (const i of idx) {
      const n = nodes[i]!;
      const s = stacks[i]!;
      const l = ns.length;
      if (n === FINAL) accepting = true;
      else if (l === 0 || ns[l - 1] !== n || ss[l - 1] !== s) {
        ns.push(n);
        ss.push(s);
      }
    }
    // Looked up by a hash of the configurations (no key string per step: most closures find a known state).
    let h = accepting ? 0x9e3779b9 : 0x811c9dc5;
    for (let i = 0; i < ns.length; i++) {
      h = Math.imul(h ^ ns[i]!.id, 0x01000193);
      h = Math.imul(h ^ ss[i]!.id, 0x01000193);
    }
    let list = this.states.get(h);
    if (list === undefined) this.states.set(h, (list = []));
    for (const st of list) {
      if (st.accepting !== accepting || st.nodes.length !== ns.length) continue;
      let same = true;
      for (let i = 0; i < ns.length && same; i++) same = st.nodes[i] === ns[i] && st.stacks[i] === ss[i];
      if (same) return st;
    }
    const id = this.byId.length;
    charge(STATE_COST + ns.length);
    const st = new State(id, String(id), ns, ss, accepting, accepting && ns.length === 0);
    list.push(st);
    this.byId.push(st);
    return st;
  }
}
