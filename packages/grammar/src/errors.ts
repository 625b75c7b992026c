// Typed errors of @intab/grammar. Every message says what to do about it; schema errors carry the keyword paths.

/** One keyword or construct the compiler cannot enforce, with its JSON-pointer path. */
export interface UnsupportedKeyword {
  readonly path: string;
  readonly keyword: string;
  readonly reason: string;
}

/** Base class of every error this package throws. */
export class IntabGrammarError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IntabGrammarError';
  }
}

/** The schema uses keywords this compiler cannot enforce (strict mode). `keywords` lists all of them. */
export class UnsupportedSchemaError extends IntabGrammarError {
  readonly keywords: readonly UnsupportedKeyword[];
  constructor(keywords: readonly UnsupportedKeyword[]) {
    const shown = keywords.slice(0, 8).map((k) => `${k.path || '/'}: ${k.keyword} (${k.reason})`);
    const more = keywords.length > 8 ? `; and ${keywords.length - 8} more` : '';
    super(
      `schema uses ${keywords.length} keyword${keywords.length === 1 ? '' : 's'} the grammar cannot enforce: ${shown.join('; ')}${more}. ` +
        'Remove or simplify them, or pass strict: false to drop them (they are then listed in grammar.warnings and the output is not guaranteed to satisfy them).',
    );
    this.name = 'UnsupportedSchemaError';
    this.keywords = keywords;
  }
}

/** The input is not a usable schema: not an object/boolean, a $ref that does not resolve, or provably unsatisfiable. */
export class InvalidSchemaError extends IntabGrammarError {
  readonly path: string;
  constructor(path: string, problem: string, fix: string) {
    super(`invalid schema at ${path || '/'}: ${problem}. ${fix}`);
    this.name = 'InvalidSchemaError';
    this.path = path;
  }
}

/** A GBNF grammar or regex does not parse (or uses a construct outside the supported subset). */
export class GrammarSyntaxError extends IntabGrammarError {
  /** Offset in the source (UTF-16 index) where the problem was found. */
  readonly position: number;
  readonly source: string;
  constructor(source: string, position: number, problem: string, fix = 'Fix the grammar text at that position.') {
    const line = source.slice(0, position).split('\n').length;
    const context = source.slice(Math.max(0, position - 20), position) + '⟨here⟩' + source.slice(position, position + 20);
    super(`${problem} at position ${position} (line ${line}): ${JSON.stringify(context)}. ${fix}`);
    this.name = 'GrammarSyntaxError';
    this.position = position;
    this.source = source;
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const GRAMMAR_ERRORS = { IntabGrammarError, UnsupportedSchemaError, InvalidSchemaError, GrammarSyntaxError } as const;
