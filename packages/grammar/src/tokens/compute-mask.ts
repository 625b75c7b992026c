// computeMask: the allowed-token mask at one grammar state (the matcher calls it when its MaskCache misses), as the GPU
// sampler's bitmask (ceil(V/32) u32 words, bit (id & 31) of word (id >> 5)), by the cheapest way that applies:
//  1. counted strings (counted-strings.ts): the mask without the bound, filtered by the tokens' character counts;
//  2. segment walks (segment-masks.ts): loop, chain or lead, from per-vocabulary walks under the segment's tables;
//  3. the plain trie walk (trie-walk.ts): the reference the others are tested against.
// EOS ids are allowed exactly where the grammar accepts.

import { metered } from '../budget.ts';
import type { Grammar, GrammarState } from '../grammar.ts';
import { countedMask } from './counted-strings.ts';
import type { MaskCache } from './mask-cache.ts';
import { segmentMask } from './segment-masks.ts';
import { walkTrie } from './trie-walk.ts';
import type { TokenVocabulary } from './vocabulary.ts';

/** How computeMask made a mask (for tests and the benchmark). */
export type MaskPath = 'finished' | 'loop' | 'chain' | 'lead' | 'counted' | 'walk';

/**
 * The allowed-token mask at `state`, computed (not looked up): EOS ids set iff the grammar accepts there. `method:
 * 'walk'` forces the plain trie walk (the reference the other methods are tested against). `cache` holds masks this
 * one is made from (a counted string's free mask, a lead's loop mask). Exported for the tests, which check every
 * method at every state against the reference; TokenMatcher.mask() is how the engine gets masks.
 */
export function computeMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, method?: 'walk', cache?: MaskCache): { mask: Uint32Array; path: MaskPath } {
  // A pathological grammar makes every step of the walk a new parser state: the work is metered (BUDGETS.maskWork).
  return metered('maskWork', 'computing the allowed tokens at one position takes more work', () => maskAt(grammar, vocab, state, method, cache));
}

function maskAt(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, method?: 'walk', cache?: MaskCache): { mask: Uint32Array; path: MaskPath } {
  const mask = new Uint32Array(vocab.words);
  if (grammar.accepting(state)) setEos(vocab, mask);
  if (grammar.finished(state)) return { mask, path: 'finished' };
  if (method !== 'walk') {
    const run = grammar.counted?.(state);
    if (run && countedMask(grammar, vocab, state, run, mask, maskFrom, cache)) return { mask, path: 'counted' };
    const path = segmentMask(grammar, vocab, state, mask, maskFrom, cache);
    if (path !== undefined) return { mask, path };
  }
  walkTrie(grammar, vocab.trie, state, mask);
  return { mask, path: 'walk' };
}

function setEos(vocab: TokenVocabulary, mask: Uint32Array): void {
  for (const id of vocab.eos) mask[id >>> 5] |= 1 << (id & 31);
}

/**
 * The mask at a state another mask is made from (a counted string's free state, a lead's loop): cached. Handed to
 * countedMask and segmentMask as their MaskFrom, so that they need not import this file back.
 */
function maskFrom(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, cache?: MaskCache): Uint32Array {
  const key = grammar.key(state);
  let mask = cache?.peek(key);
  if (mask === undefined) {
    mask = computeMask(grammar, vocab, state, undefined, cache).mask;
    cache?.set(key, mask);
  }
  return mask;
}
