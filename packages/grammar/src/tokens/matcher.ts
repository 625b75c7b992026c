// TokenMatcher: one sequence's position in a grammar, token by token: the allowed-token mask for the next token (from
// the MaskCache its grammar and vocabulary share, computed on a miss), accepting sampled tokens, rolling back rejected
// speculative tokens, and the tokens the grammar forces (forced() fast-forwards through text the grammar fixes).

import { metered } from '../budget.ts';
import type { Grammar, GrammarState } from '../grammar.ts';
import { computeMask, type MaskPath } from './compute-mask.ts';
import { sharedMaskCache, type MaskCache } from './mask-cache.ts';
import type { TokenVocabulary } from './vocabulary.ts';

/** The bytes the grammar fixes from `state`: while exactly one byte is allowed and the document cannot end. */
export function forcedBytes(grammar: Grammar, state: GrammarState, limit = 4096): Uint8Array {
  return metered('maskWork', 'finding the text the grammar forces takes more work', () => forced(grammar, state, limit));
}

function forced(grammar: Grammar, state: GrammarState, limit: number): Uint8Array {
  const out: number[] = [];
  let s = state;
  while (out.length < limit && !grammar.accepting(s) && !grammar.finished(s)) {
    let only = -1;
    let next: GrammarState | null = null;
    for (let b = 0; b < 256; b++) {
      const t = grammar.step(s, b);
      if (t === null) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = b;
      next = t;
    }
    if (only < 0 || next === null) break;
    out.push(only);
    s = next;
  }
  return Uint8Array.from(out);
}

export interface TokenMatcherOptions {
  /** Masks shared with other matchers of the same grammar and vocabulary; default sharedMaskCache(grammar, vocab). */
  maskCache?: MaskCache;
}

/**
 * One sequence's position in a grammar, token by token: the allowed-token mask for the next token, accepting sampled
 * tokens, rolling back rejected speculative tokens, and the tokens the grammar forces.
 * @example
 * const vocab = TokenVocabulary.from(tokenBytes(tokenizer), { eos: tokenizer.stopIds });
 * const m = new TokenMatcher(compileJsonSchema(schema), vocab);
 * while (!m.done) {
 *   const forced = m.forced();                     // e.g. the tokens of '{"name":"'
 *   const ids = forced.length ? forced : [sample(logits, m.mask())];
 *   for (const id of ids) m.accept(id);
 *   if (ids.some((id) => vocab.eos.includes(id))) break;
 * }
 */
export class TokenMatcher {
  readonly grammar: Grammar;
  readonly vocab: TokenVocabulary;
  readonly maskCache: MaskCache;
  /** states[k]: after k accepted tokens; ended[k]: whether token k - 1 was an EOS. */
  private readonly states: GrammarState[];
  private readonly ended: boolean[] = [false];
  private readonly tokens: number[] = [];
  private readonly eos: Set<number>;
  private emptyMask: Uint32Array | undefined;
  /** How the last mask() was made ('cached' for a cache hit): for the benchmark and tests. */
  lastPath: MaskPath | 'cached' | undefined;

  constructor(grammar: Grammar, vocab: TokenVocabulary, options: TokenMatcherOptions = {}) {
    this.grammar = grammar;
    this.vocab = vocab;
    this.maskCache = options.maskCache ?? sharedMaskCache(grammar, vocab);
    this.states = [grammar.initial];
    this.eos = new Set(vocab.eos);
  }

  /** The grammar state after the accepted tokens. */
  get state(): GrammarState {
    return this.states[this.states.length - 1];
  }

  /** The accepted tokens, oldest first. */
  get accepted(): readonly number[] {
    return this.tokens;
  }

  /** Whether EOS is allowed now (the document may end here). */
  get canEnd(): boolean {
    return !this.ended[this.ended.length - 1] && this.grammar.accepting(this.state);
  }

  /** Whether the generation must stop: an EOS was accepted, or the grammar allows nothing more. */
  get done(): boolean {
    return this.ended[this.ended.length - 1] || this.grammar.finished(this.state);
  }

  /**
   * Allowed-token bitmask for the next token: ceil(V/32) u32 words, bit (id & 31) of word (id >> 5); EOS ids set iff
   * the grammar accepts here. The array may be shared with the cache and other matchers: do not modify it.
   */
  mask(): Uint32Array {
    if (this.ended[this.ended.length - 1]) return (this.emptyMask ??= new Uint32Array(this.vocab.words));
    const state = this.state;
    const key = this.grammar.key(state);
    let mask = this.maskCache.get(key);
    if (mask === undefined) {
      const made = computeMask(this.grammar, this.vocab, state, undefined, this.maskCache);
      mask = made.mask;
      this.maskCache.set(key, mask);
      this.lastPath = made.path;
    } else this.lastPath = 'cached';
    return mask;
  }

  /** The state after `token`, 'eos', or undefined when it is not allowed. */
  private advance(token: number): GrammarState | 'eos' | undefined {
    if (this.ended[this.ended.length - 1]) return undefined;
    const state = this.state;
    if (this.eos.has(token)) return this.grammar.accepting(state) ? 'eos' : undefined;
    const bytes = this.vocab.tokens[token];
    if (!bytes || bytes.length === 0) return undefined;
    let s: GrammarState | null = state;
    for (let i = 0; i < bytes.length && s !== null; i++) s = this.grammar.step(s, bytes[i]);
    return s ?? undefined;
  }

  /** Consumes a sampled token; false (state unchanged) if it is not allowed. EOS is allowed only where accepting. */
  accept(token: number): boolean {
    const next = this.advance(token);
    if (next === undefined) return false;
    this.tokens.push(token);
    if (next === 'eos') {
      this.states.push(this.state);
      this.ended.push(true);
    } else {
      this.states.push(next);
      this.ended.push(false);
    }
    return true;
  }

  /** Accepts tokens in order until one is refused; returns how many were accepted. */
  acceptTokens(tokens: readonly number[]): number {
    let n = 0;
    while (n < tokens.length && this.accept(tokens[n])) n++;
    return n;
  }

  /** Undoes the last n accepted tokens (speculative decoding's rejected drafts). */
  rollback(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.tokens.length) {
      throw new RangeError(`rollback(${n}): ${this.tokens.length} tokens have been accepted`);
    }
    this.tokens.length -= n;
    this.states.length -= n;
    this.ended.length -= n;
  }

  /**
   * The tokens forced from here: the text the grammar fixes (up to where it branches or may end) in the fewest tokens
   * of the vocabulary (ties: the longer token first). [] when nothing is forced. This tokenization need not be the one
   * the model would have produced (a BPE tokenizer may split the same text differently); the text is the same. The
   * state is unchanged: accept() each token to move past them.
   */
  forced(): number[] {
    if (this.ended[this.ended.length - 1]) return [];
    const key = this.grammar.key(this.state);
    let tokens = this.maskCache.getForcedTokens(key);
    if (tokens === undefined) {
      const bytes = forcedBytes(this.grammar, this.state);
      tokens = bytes.length === 0 ? [] : this.vocab.tokenize(bytes);
      this.maskCache.setForcedTokens(key, tokens);
    }
    return tokens.slice();
  }
}
