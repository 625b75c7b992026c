// Token masks over a tokenizer's vocabulary: the byte trie (TokenVocabulary), the per-sequence matcher with its mask
// cache, forced tokens and rollback (TokenMatcher).
export { TokenVocabulary, buildByteTrie, packEntries, type TokenVocabularyOptions, type ByteTrie, type PackedEntries } from './vocabulary.ts';
export {
  TokenMatcher, MaskCache, sharedMaskCache, computeMask, forcedBytes,
  type TokenMatcherOptions, type MaskCacheOptions, type MaskPath,
} from './matcher.ts';
