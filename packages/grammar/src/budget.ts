// The budgets that keep a hostile schema, GBNF grammar or pattern from hanging the worker or filling its memory.
// Compiling and constraining are lazy searches whose size the input chooses: nested groups recurse, counted
// repetitions unroll, combinators multiply, automata determinize, ambiguous grammars carry many configurations. Each
// of those is bounded here; past a limit the input is refused with a GrammarBudgetError that names the budget, the
// limit and what was asked. Each limit is set well above the most that the 1,461 schemas of JSONSchemaBench's sample
// and the JSON-Schema-Test-Suite (with 2 random documents each) and the token-mask tests need (the "real" figure by
// each limit), and well below what takes more than about a second (the "hostile" figure, measured in
// budget.test.ts's cases on a 2-core machine).

import { GrammarBudgetError, type GrammarBudgetName } from './errors.ts';

/** The limits, by budget. */
export const BUDGETS: Readonly<Record<GrammarBudgetName, number>> = {
  /**
   * Nesting depth: groups in a pattern or GBNF rule, objects/arrays in a schema document, subschemas compiled inside
   * each other. Real: 24. The compiler's recursion overflows V8's stack past ~500 levels of $ref.
   */
  nesting: 128,
  /**
   * A count the output must reach: the m of {m,n} in a pattern, both bounds in GBNF (which unrolls them), minLength,
   * minItems, minProperties. Upper bounds that are counted lazily (maxLength, ^[a-z]{0,n}$) have no limit here
   * (real maxLength goes to 262,144). Real: 32,768.
   */
  count: 100_000,
  /** NFA states of one pattern (each {m,n} copies its item: (ab){3} is three copies). Real: 3,670. */
  patternStates: 40_000,
  /**
   * Nodes of a compiled graph (lazily embedded strings add more while a document is written: bounded by its length).
   * Real: 104,483. Hostile: ("a"{10000}){10000} is refused before building; 10^6 nodes take ~1 s and ~300 MB.
   */
  graphNodes: 1_000_000,
  /**
   * Work units of one compile: subschema expansions (a part copied), automaton states and interned keys (16 units),
   * parser configurations. Real: 5.4 million (~100 ms). Hostile: 2^30 anyOf branches stop at the limit in ~0.6 s.
   */
  compileWork: 20_000_000,
  /** Automaton states one question may explore ("can this string constraint still be met?"). Real: 275. Hostile: .*a.{20} stops in ~0.3 s. */
  automatonStates: 20_000,
  /** Parser configurations of one grammar state. Real: 1,278. Hostile: ("a" root){0,4} stops in ~0.15 s. */
  closure: 200_000,
  /** Work units of one token mask (or one run of forced bytes): parser configurations, new states (64 units), automaton work. Real: 161,544. */
  maskWork: 2_000_000,
};

/**
 * The most each budget was seen to need within its limit, by budget (process-wide): how the "real" figures above
 * were measured, and what a test or a fuzzer can read back.
 */
export const PEAKS: Record<GrammarBudgetName, number> = { nesting: 0, count: 0, patternStates: 0, graphNodes: 0, compileWork: 0, automatonStates: 0, closure: 0, maskWork: 0 };

/** Throws GrammarBudgetError when `requested` is over the budget's limit (`what` asked for it, at `where`). */
export function checkBudget(budget: GrammarBudgetName, requested: number, what: string, where?: string): void {
  if (!(requested <= BUDGETS[budget])) throw new GrammarBudgetError(budget, BUDGETS[budget], requested, what, where);
  if (requested > PEAKS[budget]) PEAKS[budget] = requested;
}

/** Records what a budget was seen to need where the limit is checked as the work goes (see PEAKS). */
export function notePeak(budget: GrammarBudgetName, used: number): void {
  if (used > PEAKS[budget] && used <= BUDGETS[budget]) PEAKS[budget] = used;
}

/**
 * Runs a compiler of a schema, grammar or pattern under the compileWork meter, with a stack overflow turned into the
 * nesting budget's error: the nesting limit keeps the recursion far from V8's stack in Node and Chromium, and this
 * covers a host whose stack is smaller.
 */
export function compiling<T>(what: 'schema' | 'grammar' | 'pattern', fn: () => T): T {
  try {
    return metered('compileWork', `compiling the ${what} takes more work`, fn);
  } catch (e) {
    if (e instanceof RangeError && /call stack/i.test(e.message)) throw new GrammarBudgetError('nesting', BUDGETS.nesting, Infinity, `compiling the ${what} recursed deeper than the stack allows`);
    throw e;
  }
}

// ---- work meters ----

interface Meter {
  readonly budget: 'compileWork' | 'maskWork';
  readonly what: string;
  used: number;
}

let meter: Meter | null = null;

/**
 * Runs `fn` with a work meter: every charge() inside counts against `budget`, and the one past its limit throws.
 * Nested calls count against the outermost meter (a mask made from another mask is one mask's work).
 */
export function metered<T>(budget: 'compileWork' | 'maskWork', what: string, fn: () => T): T {
  if (meter !== null) return fn();
  const m: Meter = { budget, what, used: 0 };
  meter = m;
  try {
    return fn();
  } finally {
    meter = null;
    notePeak(budget, m.used);
  }
}

/** Counts `units` of work against the running meter (nothing outside one: each step is bounded on its own). */
export function charge(units: number): void {
  const m = meter;
  if (m === null) return;
  m.used += units;
  // Once over, every later charge throws again: a caller that swallows one error cannot go on for free.
  if (m.used > BUDGETS[m.budget]) throw new GrammarBudgetError(m.budget, BUDGETS[m.budget], m.used, m.what);
}
