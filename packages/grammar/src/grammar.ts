// The byte-level matcher contract every compiled grammar (JSON Schema, regex, GBNF) satisfies.
// The token-mask code walks a tokenizer's vocabulary trie with step(); states are immutable and interned, so a DFS
// can keep old states for rollback and key() can index a per-state mask cache.

declare const grammarStateBrand: unique symbol;

/** An immutable parser state: advancing returns a new state; old states stay valid (DFS over a token trie, rollback). */
export type GrammarState = { readonly [grammarStateBrand]: true };

/** One keyword or construct that lenient compilation dropped (or strict compilation refused). */
export interface GrammarWarning {
  /** JSON pointer into the schema (or a position description for regex/GBNF). */
  readonly path: string;
  readonly keyword: string;
  readonly reason: string;
}

export interface Grammar {
  readonly initial: GrammarState;
  /** The state after one more byte of UTF-8 output, or null when the grammar forbids that byte here. */
  step(state: GrammarState, byte: number): GrammarState | null;
  /** Whether the document may end in this state (EOS allowed). */
  accepting(state: GrammarState): boolean;
  /** A string equal for two states iff they accept the same future (used to cache token masks per state); must be cheap. */
  key(state: GrammarState): string;
  /** Whether no byte can follow (the document is complete and nothing may be appended). */
  finished(state: GrammarState): boolean;
  /**
   * Optional: for a state inside a JSON string with a length bound (maxLength, minLength), the state at the same place
   * of the string without the bound, and the count: at most `left` more characters (Infinity: no limit), at least
   * `needed` before the closing quote, and `reserve`. Null for every other state. The token masks use it to treat every
   * position of such a string as one unbounded string.
   */
  counted?(state: GrammarState): CountedString | null;
  /** Keywords/constructs dropped in lenient mode, with their JSON-pointer paths (empty when everything is enforced). */
  readonly warnings: readonly GrammarWarning[];
}

/** See Grammar.counted. */
export interface CountedString {
  readonly free: GrammarState;
  readonly left: number;
  readonly needed: number;
  /**
   * The most characters the string may still need to end, from any place the free string reaches (0 when it may end
   * anywhere): a token that leaves at least this many of `left` unused is allowed exactly when the free string allows
   * it; closer to the bound, the bounded string may refuse it.
   */
  readonly reserve: number;
}

/** Options shared by every compiler. */
export interface CompileOptions {
  /** Default true: unsupported keywords throw UnsupportedSchemaError; false drops them and lists them in `warnings`. */
  strict?: boolean;
  /** Default 'compact': no whitespace between JSON tokens. 'pretty' = 2-space indent with newlines. */
  whitespace?: 'compact' | 'pretty' | { indent: number };
}

/** Feeds a whole string (as UTF-8) through a grammar; returns the final state or null if some byte was refused. */
export function advance(grammar: Grammar, state: GrammarState | null, text: string | Uint8Array): GrammarState | null {
  const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  let s = state;
  for (let i = 0; i < bytes.length && s !== null; i++) s = grammar.step(s, bytes[i]!);
  return s;
}

/** Whether the grammar accepts exactly this document. */
export function matches(grammar: Grammar, text: string | Uint8Array): boolean {
  const s = advance(grammar, grammar.initial, text);
  return s !== null && grammar.accepting(s);
}

/** Byte preference on the way to a document's end: what closes first, then what moves on, then anything. */
const END_ORDER = (() => {
  const first = [...'"}]0,:1tfnaA-.eE+'].map((c) => c.charCodeAt(0));
  return [...first, ...Array.from({ length: 256 }, (_, b) => b).filter((b) => !first.includes(b))];
})();

/**
 * Bytes from `start` to an accepting state: a depth-first search that tries closing bytes first and never revisits a
 * state (by key), so it cannot loop (a fraction's zeros, a pattern's repetition). Null when there is no way within
 * `maxBytes`, or once it has stepped the grammar `budget` times (some schemas' state spaces are too large to search).
 */
export function completeDocument(g: Grammar, start: GrammarState, options: { maxBytes?: number; budget?: number } = {}): Uint8Array | null {
  const maxBytes = options.maxBytes ?? 20_000;
  const budget = options.budget ?? Infinity;
  const seen = new Set<string>([g.key(start)]);
  const path: number[] = [];
  const states: GrammarState[] = [start];
  const choice: number[] = [0];
  let steps = 0;
  while (states.length > 0) {
    const s = states[states.length - 1];
    if (g.accepting(s)) return Uint8Array.from(path);
    let moved = false;
    if (path.length < maxBytes) {
      for (let c = choice[choice.length - 1]; c < 256; c++) {
        if (++steps > budget) return null;
        const b = END_ORDER[c];
        const t = g.step(s, b);
        if (t === null) continue;
        const k = g.key(t);
        if (seen.has(k)) continue;
        seen.add(k);
        choice[choice.length - 1] = c + 1;
        path.push(b);
        states.push(t);
        choice.push(0);
        moved = true;
        break;
      }
    }
    if (!moved) {
      states.pop();
      choice.pop();
      path.pop();
    }
  }
  return null;
}
