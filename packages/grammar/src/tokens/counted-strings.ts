// Counted strings (maxLength, minLength, a pattern that counts one class such as ^[a-z0-9]{1,64}$): the mask at a
// position of the string from the mask of the same place without the bound, filtered by the characters each token
// starts. No per-position work but for tokens within the pattern's reserve of the bound.
//
// Inside a JSON string, a token's characters are lexical: from a character boundary, each byte that starts a UTF-8
// sequence or an escape starts a character, and the first unescaped quote closes the string. So the mask at a
// position of a counted string (Grammar.counted) is the mask of the same place without the bound (one state for
// every position, its mask cached), keeping the tokens that stay inside with at most `left` characters started and
// those that close the string after `needed` to `left` characters.

import type { CountedString, Grammar, GrammarState } from '../grammar.ts';
import type { MaskCache, MaskFrom } from './mask-cache.ts';
import type { TokenVocabulary } from './vocabulary.ts';

/** What a vocabulary's tokens do from a character boundary inside a JSON string. */
interface StringLex {
  /** upTo[c]: the tokens that stay inside with at most c characters started (c ≤ UP_TO_CHARS). */
  readonly upTo: readonly Uint32Array[];
  /** Tokens that stay inside with more than UP_TO_CHARS characters, most first, and their characters. */
  readonly long: Int32Array;
  readonly longChars: Uint16Array;
  /** Tokens that close the string, and their characters before the quote. */
  readonly closing: Int32Array;
  readonly closingChars: Uint16Array;
}

const QUOTE = 0x22;
/** Counted-string filters for up to this many characters left are one precomputed mask. */
const UP_TO_CHARS = 16;
const stringLexes = new WeakMap<TokenVocabulary, StringLex>();

/** Characters a token starts inside a JSON string from a character boundary; negative (-1 - n) when it closes after n. */
function stringChars(bytes: Uint8Array): number {
  let n = 0;
  let owed = 0; // bytes still owed to the current character (UTF-8 continuation bytes, hex digits)
  let escape = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (escape) {
      escape = false;
      if (b === 0x75) owed = 4; // \uXXXX
      continue;
    }
    if (owed > 0) {
      owed--;
      continue;
    }
    if (b === QUOTE) return -1 - n;
    n++;
    if (b === 0x5c) escape = true;
    else if (b >= 0xf0) owed = 3;
    else if (b >= 0xe0) owed = 2;
    else if (b >= 0xc0) owed = 1;
  }
  return n;
}

function stringLex(vocab: TokenVocabulary): StringLex {
  let lex = stringLexes.get(vocab);
  if (lex) return lex;
  const upTo = Array.from({ length: UP_TO_CHARS + 1 }, () => new Uint32Array(vocab.words));
  const long: number[] = [];
  const closing: number[] = [];
  const chars = new Int32Array(vocab.tokens.length);
  for (let id = 0; id < vocab.tokens.length; id++) {
    const bytes = vocab.tokens[id];
    if (!bytes || bytes.length === 0) continue;
    const c = (chars[id] = stringChars(bytes));
    if (c < 0) closing.push(id);
    else if (c > UP_TO_CHARS) long.push(id);
    else upTo[c][id >>> 5] |= 1 << (id & 31);
  }
  for (let c = 1; c <= UP_TO_CHARS; c++) {
    const a = upTo[c - 1];
    const m = upTo[c];
    for (let w = 0; w < m.length; w++) m[w] |= a[w];
  }
  long.sort((x, y) => chars[y] - chars[x]);
  lex = {
    upTo,
    long: Int32Array.from(long),
    longChars: Uint16Array.from(long, (id) => chars[id]),
    closing: Int32Array.from(closing),
    closingChars: Uint16Array.from(closing, (id) => -1 - chars[id]),
  };
  stringLexes.set(vocab, lex);
  return lex;
}

/** Tokens within `reserve` characters of a counted string's bound that are checked one by one (else: other paths). */
const BAND_TOKENS = 256;

/**
 * The mask inside a counted string (see the top of the file): the free string's mask, filtered by the count. Tokens that come
 * within `reserve` characters of the bound are stepped from the real state (the bound may refuse what the free
 * string allows: "abc" where a pattern still needs "@x"); false (mask untouched) when there are too many of them.
 */
export function countedMask(grammar: Grammar, vocab: TokenVocabulary, state: GrammarState, run: CountedString, mask: Uint32Array, maskFrom: MaskFrom, cache?: MaskCache): boolean {
  const { left, needed, reserve } = run;
  const lex = stringLex(vocab);
  const { long, longChars } = lex;
  // Inner tokens of at most `sure` characters are allowed exactly when the free string allows them.
  const sure = reserve === 0 || left === Infinity ? left : left - reserve;
  let band = long.length;
  if (sure < left) {
    if (!(sure >= UP_TO_CHARS)) return false; // every short token is within reach of the bound
    while (band > 0 && longChars[band - 1] <= sure) band--;
    let first = band;
    while (first > 0 && longChars[first - 1] <= left) first--;
    if (band - first > BAND_TOKENS) return false;
  }
  const free = maskFrom(grammar, vocab, run.free, cache);
  // Staying inside.
  const upTo = lex.upTo[Math.min(sure, UP_TO_CHARS)];
  for (let w = 0; w < mask.length; w++) mask[w] |= free[w] & upTo[w];
  for (let k = long.length - 1; k >= 0 && longChars[k] <= left; k--) {
    const id = long[k];
    const bit = 1 << (id & 31);
    if (!(free[id >>> 5] & bit)) continue;
    if (longChars[k] <= sure || stepsThrough(grammar, state, vocab.tokens[id]!)) mask[id >>> 5] |= bit;
  }
  // Closing: after `needed` to `left` characters (the string ends there, so the bound refuses nothing more).
  const { closing, closingChars } = lex;
  for (let k = 0; k < closing.length; k++) {
    const c = closingChars[k];
    if (c < needed || c > left) continue;
    const id = closing[k];
    mask[id >>> 5] |= free[id >>> 5] & (1 << (id & 31));
  }
  return true;
}

/** Whether the grammar takes every byte of `bytes` from `state`. */
function stepsThrough(grammar: Grammar, state: GrammarState, bytes: Uint8Array): boolean {
  let s: GrammarState | null = state;
  for (let i = 0; i < bytes.length && s !== null; i++) s = grammar.step(s, bytes[i]);
  return s !== null;
}
