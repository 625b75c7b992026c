// Grammars built from grammars: literal text, a sequence, an alternation, a repetition, free text that never contains a
// given string, and a grammar started at a given state, each a Grammar again. Tool calls need this (the engine's call
// syntax around each function's compiled JSON Schema, lazily after a trigger), and the compilers need not know it.
// A composed grammar is a Glushkov automaton over its leaves: a state is the set of leaves that may be running, each
// with its own state (usually one), so alternatives that share a prefix (two names `get` and `get_time`) need no
// lookahead. Keys stay cheap (each leaf's own key, tagged with its position) and counted() passes through, so the token
// matcher's mask cache and its counted-string shortcut work inside composed grammars as they do in their leaves.

import { charge, compiling } from './budget.ts';
import type { CountedString, Grammar, GrammarState, GrammarWarning } from './grammar.ts';

// ---- leaves ----

interface IndexState {
  readonly i: number;
}

/** A grammar whose states are small integers (pre-made objects, so stepping allocates nothing). */
function indexStates(n: number): GrammarState[] {
  return Array.from({ length: n }, (_, i) => ({ i }) as IndexState as unknown as GrammarState);
}
const indexOf = (s: GrammarState) => (s as unknown as IndexState).i;

/**
 * Exactly `text` (as UTF-8).
 * @example
 * matches(literal('<tool_call>'), '<tool_call>'); // true
 */
export function literal(text: string): Grammar {
  const bytes = new TextEncoder().encode(text);
  const states = indexStates(bytes.length + 1);
  const keys = states.map((_, i) => String(i));
  return {
    initial: states[0],
    step: (s, b) => {
      const i = indexOf(s);
      return i < bytes.length && bytes[i] === b ? states[i + 1] : null;
    },
    accepting: (s) => indexOf(s) === bytes.length,
    finished: (s) => indexOf(s) === bytes.length,
    key: (s) => keys[indexOf(s)],
    warnings: [],
  };
}

/**
 * Any text (UTF-8 bytes) that does not contain `stop`: free text before a trigger, or a reply in which a call may not
 * begin. The empty text is allowed. Its states are the KMP positions in `stop`, so its masks are few.
 * @example
 * matches(textWithout('<tool_call>'), 'Hello <tool'); // true
 * matches(textWithout('<tool_call>'), 'a <tool_call>'); // false
 */
export function textWithout(stop: string): Grammar {
  const pat = new TextEncoder().encode(stop);
  const m = pat.length;
  if (m === 0) throw new RangeError('textWithout(): the excluded text must not be empty');
  // KMP automaton: next[k * 256 + b] = the longest prefix of `pat` that is a suffix of (prefix k) + b.
  const fail = new Int32Array(m + 1);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && pat[i] !== pat[k]) k = fail[k];
    if (pat[i] === pat[k]) k++;
    fail[i + 1] = k;
  }
  const next = new Int32Array(m * 256);
  for (let k = 0; k < m; k++) {
    for (let b = 0; b < 256; b++) next[k * 256 + b] = pat[k] === b ? k + 1 : k === 0 ? 0 : next[fail[k] * 256 + b];
  }
  const states = indexStates(m);
  const keys = states.map((_, i) => String(i));
  return {
    initial: states[0],
    step: (s, b) => {
      const k = next[indexOf(s) * 256 + b];
      return k === m ? null : states[k];
    },
    accepting: () => true,
    finished: () => false,
    key: (s) => keys[indexOf(s)],
    warnings: [],
  };
}

/**
 * `grammar`, begun at `state` instead of its initial state (the rest of a document whose start is already written, or
 * a grammar whose first bytes a trigger has already matched).
 */
export function startedAt(grammar: Grammar, state: GrammarState): Grammar {
  if (state === grammar.initial) return grammar;
  const g: Grammar = {
    initial: state,
    step: (s, b) => grammar.step(s, b),
    accepting: (s) => grammar.accepting(s),
    finished: (s) => grammar.finished(s),
    key: (s) => grammar.key(s),
    warnings: grammar.warnings,
  };
  if (grammar.counted) g.counted = (s) => grammar.counted!(s);
  return g;
}

// ---- patterns (what the combinators build) ----

type Pattern =
  | { kind: 'leaf'; grammar: Grammar }
  | { kind: 'seq'; parts: Pattern[] }
  | { kind: 'alt'; options: Pattern[] }
  | { kind: 'star'; body: Pattern };

const PATTERN = Symbol('compose.pattern');

/** A composed grammar carries its pattern, so that composing it again flattens instead of nesting automata. */
type Composed = ComposedGrammar & { [PATTERN]: Pattern };

function patternOf(g: Grammar): Pattern {
  return (g as Partial<Composed>)[PATTERN] ?? { kind: 'leaf', grammar: g };
}

/**
 * The parts one after another.
 * @example
 * const call = sequence(literal('{"name": "f", "arguments": '), compileJsonSchema(schema), literal('}'));
 */
export function sequence(...parts: Grammar[]): Grammar {
  return composed({ kind: 'seq', parts: parts.map(patternOf) });
}

/**
 * Any one of the options (their languages' union; an empty list matches nothing).
 * @example
 * const name = alternation(literal('get_weather'), literal('get_time'));
 */
export function alternation(...options: Grammar[]): Grammar {
  return composed({ kind: 'alt', options: options.map(patternOf) });
}

/**
 * `item` repeated at least `min` (0 or 1) times, with `separator` between two repetitions.
 * @example
 * const calls = repetition(call, { min: 1, separator: literal('\n') });
 */
export function repetition(item: Grammar, options: { min: 0 | 1; separator?: Grammar }): Grammar {
  const body = patternOf(item);
  const tail: Pattern = { kind: 'star', body: options.separator ? { kind: 'seq', parts: [patternOf(options.separator), body] } : body };
  const oneOrMore: Pattern = { kind: 'seq', parts: [body, tail] };
  return composed(options.min === 1 ? oneOrMore : { kind: 'alt', options: [oneOrMore, { kind: 'seq', parts: [] }] });
}

/** `item` or nothing. */
export function optional(item: Grammar): Grammar {
  return composed({ kind: 'alt', options: [patternOf(item), { kind: 'seq', parts: [] }] });
}

/**
 * Runs a construction of several compiles and combinators (a tool call grammar: one schema per function) under one
 * compile budget, so that many parts cannot each spend a whole budget (GrammarBudgetError past it).
 * @example
 * const g = composing(() => alternation(...schemas.map((s) => compileJsonSchema(s))));
 */
export function composing<T>(build: () => T): T {
  return compiling('grammar', build);
}

function composed(p: Pattern): Grammar {
  return compiling('grammar', () => {
    const g = new ComposedGrammar(p) as Composed;
    g[PATTERN] = p;
    return g;
  });
}

// ---- the automaton ----

/** A running leaf: its position among the pattern's leaves, and its state. */
interface Thread {
  readonly pos: number;
  readonly state: GrammarState;
}

interface ComposedState {
  readonly threads: readonly Thread[];
  /** The initial state of a pattern that matches the empty text. */
  readonly empty: boolean;
  readonly key: string;
}

/** Interned states kept at most (past it the table starts again: states stay valid, only identity is lost). */
const MAX_INTERNED = 200_000;

class ComposedGrammar implements Grammar {
  readonly initial: GrammarState;
  readonly warnings: readonly GrammarWarning[];
  /** The leaves, by position (a grammar used twice has two positions). */
  private readonly leaves: Grammar[] = [];
  /** follow[p]: the positions that may start right after leaf p ends. */
  private readonly follow: number[][] = [];
  /** Positions whose end may end the whole pattern. */
  private readonly last: boolean[] = [];
  private readonly interned = new Map<string, ComposedState>();

  constructor(pattern: Pattern) {
    const root = this.build(pattern);
    for (const p of root.last) this.last[p] = true;
    const seen = new Set<Grammar>();
    const warnings: GrammarWarning[] = [];
    for (const leaf of this.leaves) {
      if (seen.has(leaf)) continue;
      seen.add(leaf);
      warnings.push(...leaf.warnings);
    }
    this.warnings = warnings;
    this.initial = this.intern(root.first.map((pos) => ({ pos, state: this.leaves[pos].initial })), root.nullable);
  }

  /** Glushkov's construction: first/last positions and nullability of each part, follow sets filled in as it goes. */
  private build(p: Pattern): { first: number[]; last: number[]; nullable: boolean } {
    switch (p.kind) {
      case 'leaf': {
        const pos = this.leaves.length;
        charge(16);
        this.leaves.push(p.grammar);
        this.follow.push([]);
        return { first: [pos], last: [pos], nullable: p.grammar.accepting(p.grammar.initial) };
      }
      case 'seq': {
        let acc = { first: [] as number[], last: [] as number[], nullable: true };
        for (const part of p.parts) {
          const b = this.build(part);
          for (const x of acc.last) addAll(this.follow[x], b.first);
          acc = {
            first: acc.nullable ? union(acc.first, b.first) : acc.first,
            last: b.nullable ? union(acc.last, b.last) : b.last,
            nullable: acc.nullable && b.nullable,
          };
        }
        return acc;
      }
      case 'alt': {
        const acc = { first: [] as number[], last: [] as number[], nullable: false };
        for (const option of p.options) {
          const b = this.build(option);
          acc.first = union(acc.first, b.first);
          acc.last = union(acc.last, b.last);
          acc.nullable ||= b.nullable;
        }
        return acc;
      }
      case 'star': {
        const b = this.build(p.body);
        for (const x of b.last) addAll(this.follow[x], b.first);
        return { first: b.first, last: b.last, nullable: true };
      }
    }
  }

  private intern(threads: Thread[], empty: boolean): GrammarState {
    threads.sort((a, b) => a.pos - b.pos);
    let key = empty ? 'e' : '';
    for (const t of threads) {
      const k = this.leaves[t.pos].key(t.state);
      key += `${t.pos}.${k.length}:${k};`;
    }
    let s = this.interned.get(key);
    if (s === undefined) {
      if (this.interned.size >= MAX_INTERNED) this.interned.clear();
      s = { threads, empty, key };
      this.interned.set(key, s);
    }
    return s as unknown as GrammarState;
  }

  step(state: GrammarState, byte: number): GrammarState | null {
    const { threads } = state as unknown as ComposedState;
    const out: Thread[] = [];
    const add = (pos: number, s: GrammarState | null) => {
      if (s === null) return;
      const leaf = this.leaves[pos];
      for (const t of out) if (t.pos === pos && (t.state === s || leaf.key(t.state) === leaf.key(s))) return;
      out.push({ pos, state: s });
    };
    for (const t of threads) {
      const leaf = this.leaves[t.pos];
      add(t.pos, leaf.step(t.state, byte));
      if (!leaf.accepting(t.state)) continue;
      const follow = this.follow[t.pos];
      charge(follow.length);
      for (const q of follow) add(q, this.leaves[q].step(this.leaves[q].initial, byte));
    }
    return out.length === 0 ? null : this.intern(out, false);
  }

  accepting(state: GrammarState): boolean {
    const s = state as unknown as ComposedState;
    if (s.empty) return true;
    for (const t of s.threads) if (this.last[t.pos] && this.leaves[t.pos].accepting(t.state)) return true;
    return false;
  }

  finished(state: GrammarState): boolean {
    const s = state as unknown as ComposedState;
    if (s.threads.length === 0) return true;
    for (const t of s.threads) {
      const leaf = this.leaves[t.pos];
      if (!leaf.finished(t.state)) return false;
      if (leaf.accepting(t.state) && this.follow[t.pos].length > 0) return false;
    }
    return true;
  }

  key(state: GrammarState): string {
    return (state as unknown as ComposedState).key;
  }

  /** A counted string inside the only running leaf: the same string unbounded, at the same place of the pattern. */
  counted(state: GrammarState): CountedString | null {
    const s = state as unknown as ComposedState;
    if (s.threads.length !== 1) return null;
    const t = s.threads[0];
    const leaf = this.leaves[t.pos];
    // A leaf that may end here could hand over to what follows: not a plain string position.
    if (!leaf.counted || leaf.accepting(t.state)) return null;
    const c = leaf.counted(t.state);
    if (c === null) return null;
    return { free: this.intern([{ pos: t.pos, state: c.free }], false), left: c.left, needed: c.needed, reserve: c.reserve };
  }
}

function union(a: readonly number[], b: readonly number[]): number[] {
  const out = [...a];
  addAll(out, b);
  return out;
}

function addAll(into: number[], from: readonly number[]): void {
  for (const x of from) if (!into.includes(x)) into.push(x);
}
