// Token masks over a tokenizer's vocabulary: the byte trie (TokenVocabulary), the per-sequence matcher with its forced
// tokens and rollback (TokenMatcher), the masks it shares through a MaskCache and computes on a miss (computeMask),
// or ahead when the grammar is compiled for the vocabulary (prepareMasks).
export { TokenVocabulary, buildByteTrie, type TokenVocabularyOptions, type ByteTrie, type PackedEntries } from './vocabulary.ts';
export { TokenMatcher, forcedBytes, type TokenMatcherOptions } from './matcher.ts';
export { MaskCache, sharedMaskCache, type MaskCacheOptions } from './mask-cache.ts';
export { computeMask, type MaskPath } from './compute-mask.ts';
export { prepareMasks, type PrepareMasksOptions, type PreparedMasks } from './prepare-masks.ts';
