// The MaskCache: allowed-token masks (and forced tokens) by grammar key, for one grammar and one vocabulary. Equal keys
// accept the same future, so they allow the same tokens: every matcher of a grammar and vocabulary shares one cache
// (LRU-bounded), and in steady state most masks are hits.

import type { Grammar, GrammarState } from '../grammar.ts';
import type { TokenVocabulary } from './vocabulary.ts';

export interface MaskCacheOptions {
  /** Masks kept (least recently used dropped first); default 1024 (~19 MB for a 151k vocabulary). */
  maxEntries?: number;
}

/** Masks (and forced tokens) by grammar key, for one grammar and one vocabulary; LRU-bounded. */
export class MaskCache {
  readonly maxEntries: number;
  private readonly masks = new Map<string, Uint32Array>();
  private readonly forcedTokens = new Map<string, number[]>();

  constructor(options: MaskCacheOptions = {}) {
    this.maxEntries = Math.max(1, options.maxEntries ?? 1024);
  }

  /** The mask by key, now the most recently used; undefined when it is not cached. */
  get(key: string): Uint32Array | undefined {
    const m = this.masks.get(key);
    if (m === undefined) return undefined;
    // Most recently used last.
    this.masks.delete(key);
    this.masks.set(key, m);
    return m;
  }

  /** The mask by key, leaving its place in the LRU order alone (masks made from other masks). */
  peek(key: string): Uint32Array | undefined {
    return this.masks.get(key);
  }

  set(key: string, mask: Uint32Array): void {
    this.masks.delete(key);
    this.masks.set(key, mask);
    if (this.masks.size > this.maxEntries) this.masks.delete(this.masks.keys().next().value!);
  }

  getForcedTokens(key: string): number[] | undefined {
    return this.forcedTokens.get(key);
  }

  setForcedTokens(key: string, tokens: number[]): void {
    this.forcedTokens.set(key, tokens);
    if (this.forcedTokens.size > this.maxEntries) this.forcedTokens.delete(this.forcedTokens.keys().next().value!);
  }
}

const sharedCaches = new WeakMap<Grammar, WeakMap<TokenVocabulary, MaskCache>>();

/** The MaskCache every matcher of this grammar and vocabulary shares unless given its own. */
export function sharedMaskCache(grammar: Grammar, vocab: TokenVocabulary): MaskCache {
  let byVocab = sharedCaches.get(grammar);
  if (!byVocab) sharedCaches.set(grammar, (byVocab = new WeakMap()));
  let cache = byVocab.get(vocab);
  if (!cache) byVocab.set(vocab, (cache = new MaskCache()));
  return cache;
}

/**
 * The mask at a state another mask is made from (a counted string's free state, a lead's loop): from `cache`, else
 * computed and stored there. compute-mask.ts's maskFrom, passed down to the strategies it calls, which therefore do
 * not import computeMask back.
 */
export type MaskFrom = (grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, cache?: MaskCache) => Uint32Array;
