// prepareMasks: the expensive token masks of a grammar computed ahead, when the grammar is compiled for a vocabulary,
// instead of at the first visit while tokens are being generated (web-xgrammar's trade: its compile builds a mask
// cache for every position of the grammar). The states are found by a breadth-first search over the grammar's bytes
// from its start (nearest the start of the document first, and those an ASCII byte reaches before those inside a
// character: JSON's syntax, keys and most text are ASCII), and only those whose masks come from segment walks
// (loop, chain, lead: strings, keys, patterns) are computed: they cost hundreds of microseconds at a first visit (tens
// of milliseconds where a new vocabulary walk is built), where a plain walk or a counted string costs tens. Bounded:
// at most `maxStates` states explored, `maxMasks` masks computed and one mask's work budget (BUDGETS.maskWork) spent in
// all, so a large or costly grammar is prepared in part, and the rest is computed at first visits as before.

import { metered } from '../budget.ts';
import { GrammarBudgetError } from '../errors.ts';
import type { Grammar, GrammarState } from '../grammar.ts';
import { computeMask } from './compute-mask.ts';
import type { MaskCache } from './mask-cache.ts';
import { dominantTarget } from './segments.ts';
import type { TokenVocabulary } from './vocabulary.ts';

export interface PrepareMasksOptions {
  /** Grammar states the search explores (256 steps each) [2048]. */
  maxStates?: number;
  /** Masks computed ahead [32]. */
  maxMasks?: number;
}

/** What prepareMasks did (for the benchmark and tests). */
export interface PreparedMasks {
  /** States the search explored. */
  states: number;
  /** Masks computed and stored in the cache. */
  masks: number;
  /** Whether the search reached every state (else a limit stopped it). */
  complete: boolean;
}

/**
 * Computes ahead, into `cache`, the masks at the states nearest the grammar's start that a segment walk makes (see the
 * top of the file). Masks are the same whether prepared or not; a matcher on `cache` then finds them as hits. Work past
 * the budget stops it (complete: false) instead of throwing: what is left is the matcher's, which reports a
 * GrammarBudgetError only if a document reaches a state whose own mask is past the budget.
 * @example
 * const grammar = compileJsonSchema(schema);
 * const cache = sharedMaskCache(grammar, vocab);
 * prepareMasks(grammar, vocab, cache);
 * const matcher = new TokenMatcher(grammar, vocab, { maskCache: cache });
 */
export function prepareMasks(grammar: Grammar, vocab: TokenVocabulary, cache: MaskCache, options: PrepareMasksOptions = {}): PreparedMasks {
  const maxStates = options.maxStates ?? 2048;
  const maxMasks = Math.min(options.maxMasks ?? 32, cache.maxEntries);
  const seen = new Set<string>([grammar.key(grammar.initial)]);
  // States reached by an ASCII byte first (JSON's syntax, keys, most text), then the rest (inside a character).
  const near: GrammarState[] = [grammar.initial];
  const far: GrammarState[] = [];
  let n = 0;
  let f = 0;
  let masks = 0;
  /** The mask at `x` into the cache, unless it is there. */
  const prepare = (x: GrammarState) => {
    const key = grammar.key(x);
    if (cache.peek(key) !== undefined) return;
    cache.set(key, computeMask(grammar, vocab, x, undefined, cache).mask);
    masks++;
  };
  const search = () => {
    while (n + f < maxStates && masks < maxMasks && (n < near.length || f < far.length)) {
      const s = n < near.length ? near[n++] : far[f++];
      if (grammar.finished(s)) continue;
      // A counted string's positions are each cheap from the mask of its free string (counted-strings.ts): that one.
      const run = grammar.counted?.(s);
      if (run) prepare(run.free);
      else if (dominantTarget(grammar, s) !== null) prepare(s);
      // Neighbouring bytes mostly lead to the same state: one lookup per run.
      let last: GrammarState | null = null;
      for (let b = 0; b < 256; b++) {
        const t = grammar.step(s, b);
        if (t === null || t === last) continue;
        last = t;
        const k = grammar.key(t);
        if (seen.has(k)) continue;
        seen.add(k);
        (b < 0x80 ? near : far).push(t);
      }
    }
  };
  let overBudget = false;
  try {
    // All of it is one mask's work at most (BUDGETS.maskWork): a grammar whose states are costly is prepared in part.
    metered('maskWork', 'preparing the masks of a grammar takes more work', search);
  } catch (e) {
    if (!(e instanceof GrammarBudgetError)) throw e;
    overBudget = true;
  }
  return { states: n + f, masks, complete: !overBudget && n === near.length && f === far.length };
}
