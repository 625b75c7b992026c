// Typed errors of @intab/grammar, each declared with errorClass (its name, stable `code` and fields in one place).
// Every message says what to do about it; schema errors carry the keyword paths. GRAMMAR_ERRORS lists them for the
// worker's error registry (PartialJsonError, the partial-JSON parser's, is declared beside its parser).

import { IntabError, errorClass } from '@intab/errors';

/** One keyword or construct the compiler cannot enforce, with its JSON-pointer path. */
export interface UnsupportedKeyword {
  readonly path: string;
  readonly keyword: string;
  readonly reason: string;
}

/** Base class of every error this package throws. */
export class IntabGrammarError extends errorClass(IntabError, 'IntabGrammarError', 'grammar_error') {
  constructor(message: string) {
    super({}, message);
  }
}

/** The schema uses keywords this compiler cannot enforce (strict mode). `keywords` lists all of them. */
export class UnsupportedSchemaError extends errorClass(IntabGrammarError, 'UnsupportedSchemaError', 'unsupported_schema')<{
  readonly keywords: readonly UnsupportedKeyword[];
}> {
  constructor(keywords: readonly UnsupportedKeyword[]) {
    const shown = keywords.slice(0, 8).map((k) => `${k.path || '/'}: ${k.keyword} (${k.reason})`);
    const more = keywords.length > 8 ? `; and ${keywords.length - 8} more` : '';
    super(
      { keywords },
      `schema uses ${keywords.length} keyword${keywords.length === 1 ? '' : 's'} the grammar cannot enforce: ${shown.join('; ')}${more}. ` +
        'Remove or simplify them, or pass strict: false to drop them (they are then listed in grammar.warnings and the output is not guaranteed to satisfy them).',
    );
  }
}

/** The input is not a usable schema: not an object/boolean, a $ref that does not resolve, or provably unsatisfiable. */
export class InvalidSchemaError extends errorClass(IntabGrammarError, 'InvalidSchemaError', 'invalid_schema')<{
  readonly path: string;
}> {
  constructor(path: string, problem: string, fix: string) {
    super({ path }, `invalid schema at ${path || '/'}: ${problem}. ${fix}`);
  }
}

/** A GBNF grammar or regex does not parse (or uses a construct outside the supported subset). */
export class GrammarSyntaxError extends errorClass(IntabGrammarError, 'GrammarSyntaxError', 'grammar_syntax_error')<{
  /** Offset in the source (UTF-16 index) where the problem was found. */
  readonly position: number;
  readonly source: string;
}> {
  constructor(source: string, position: number, problem: string, fix = 'Fix the grammar text at that position.') {
    const line = source.slice(0, position).split('\n').length;
    const context = source.slice(Math.max(0, position - 20), position) + '⟨here⟩' + source.slice(position, position + 20);
    super({ position, source }, `${problem} at position ${position} (line ${line}): ${JSON.stringify(context)}. ${fix}`);
  }
}

/** The budgets a compile or a token mask may spend (budget.ts holds the limits and says what each one bounds). */
export type GrammarBudgetName = 'nesting' | 'count' | 'patternStates' | 'graphNodes' | 'compileWork' | 'automatonStates' | 'closure' | 'maskWork';

/** What to do when a budget runs out, by budget. */
const BUDGET_ADVICE: Record<GrammarBudgetName, string> = {
  nesting: 'Flatten the nesting: name the inner parts ($defs and $ref in a schema, rules in GBNF, fewer nested groups in a pattern).',
  count: 'Lower the count: no model writes that much within its context, so bound the output by maxTokens instead.',
  patternStates: 'Make the pattern smaller: counted repetitions of groups ((…){m,n}) copy the group m to n times; a whole-string class with a count (^[a-z]{1,64}$) costs nothing.',
  graphNodes: 'Make the grammar smaller: shorter enums, fewer or smaller counted repetitions ({m,n} unrolls), fewer properties.',
  compileWork:
    'Simplify the combinators (anyOf/oneOf under allOf multiply, oneOf compares every pair, $ref chains that fan out) and the patterns (a counted repetition after .* builds one automaton state per combination).',
  automatonStates: 'Simplify the pattern, format or length constraint: a counted repetition after .* (like .*a.{20}), or many patterns on one string, need an automaton state per combination.',
  closure: 'Make the grammar less ambiguous: alternatives that match the same text (("a" | "a")*), or a rule that calls itself before consuming input (left recursion: rewrite `a ::= a x | y` as `a ::= y x*`).',
  maskWork: 'The grammar is too ambiguous or too large to constrain decoding at this point: simplify it (see the other budgets), or generate without it.',
};

/**
 * A hostile or oversized schema, grammar or pattern: compiling it (or computing the allowed tokens at one of its states)
 * would take more than one of the budgets allows. `budget` names it, `limit` is its size, `requested` what this input
 * asked for (for work budgets: the amount spent when the work stopped, just past the limit).
 */
export class GrammarBudgetError extends errorClass(IntabGrammarError, 'GrammarBudgetError', 'grammar_budget_exceeded')<{
  readonly budget: GrammarBudgetName;
  readonly limit: number;
  readonly requested: number;
  /** Where it happened: a schema path, a pattern position, a rule name ('' when unknown). */
  readonly where: string;
}> {
  constructor(budget: GrammarBudgetName, limit: number, requested: number, what: string, where = '') {
    super({ budget, limit, requested, where }, `${what}${where ? ` (at ${where})` : ''}: ${requested === Infinity ? 'unbounded' : requested.toLocaleString('en-US')} is over the ${budget} budget of ${limit.toLocaleString('en-US')}. ${BUDGET_ADVICE[budget]}`);
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const GRAMMAR_ERRORS = { IntabGrammarError, UnsupportedSchemaError, InvalidSchemaError, GrammarSyntaxError, GrammarBudgetError } as const;
