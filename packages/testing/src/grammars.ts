// Hand-written grammars for the token-mask tests and the CLI's grammar benchmark: they implement @intab/grammar's
// Grammar contract the way the compiled grammars do (interned immutable states, a transition cache per state), so the
// mask code can be tested and benchmarked on its own; randomWalk and sampleMask drive a matcher with the caller's RNG.
//   jsonGrammar      byte-level JSON (objects at the top, compact), strict UTF-8 in strings, escapes, numbers,
//                    literals, nesting up to maxDepth;
//   boundedString    {"s":"<1..max chars of [ -~] except " and \>"} — wide states that do not loop (a counter);
//   literalGrammar   exactly one text;
//   choiceGrammar    one of several texts (a trie).

import { completeDocument, type Grammar, type GrammarState } from '@intab/grammar';

interface State {
  readonly key: string;
  readonly accepting: boolean;
  readonly finished: boolean;
  readonly next: (State | null | undefined)[];
}

/** A grammar over interned states from a step function on keys. */
class KeyedGrammar implements Grammar {
  readonly initial: GrammarState;
  readonly warnings = [];
  private readonly interned = new Map<string, State>();
  /** step() calls (the benchmark reports them). */
  steps = 0;

  constructor(
    initialKey: string,
    private readonly transition: (key: string, byte: number) => string | null,
    private readonly accepts: (key: string) => boolean,
    private readonly ends: (key: string) => boolean,
  ) {
    this.initial = this.intern(initialKey) as unknown as GrammarState;
  }

  private intern(key: string): State {
    let s = this.interned.get(key);
    if (!s) {
      s = { key, accepting: this.accepts(key), finished: this.ends(key), next: new Array(256) };
      this.interned.set(key, s);
    }
    return s;
  }

  step(state: GrammarState, byte: number): GrammarState | null {
    this.steps++;
    const s = state as unknown as State;
    let t = s.next[byte];
    if (t === undefined) {
      const k = this.transition(s.key, byte);
      t = k === null ? null : this.intern(k);
      s.next[byte] = t;
    }
    return t as unknown as GrammarState | null;
  }

  accepting(state: GrammarState): boolean {
    return (state as unknown as State).accepting;
  }

  finished(state: GrammarState): boolean {
    return (state as unknown as State).finished;
  }

  key(state: GrammarState): string {
    return (state as unknown as State).key;
  }

  get stateCount(): number {
    return this.interned.size;
  }
}

export type TestGrammar = Grammar & { steps: number; readonly stateCount: number };

/** Exactly `text`. */
export function literalGrammar(text: string): TestGrammar {
  return choiceGrammar([text]);
}

/** Exactly one of `texts`. */
export function choiceGrammar(texts: readonly string[]): TestGrammar {
  const enc = new TextEncoder();
  const all = texts.map((t) => enc.encode(t));
  // Key: the prefix so far, as hex.
  const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  const prefixes = new Set<string>();
  const full = new Set<string>();
  for (const t of all) {
    for (let i = 0; i <= t.length; i++) prefixes.add(hex(t.subarray(0, i)));
    full.add(hex(t));
  }
  return new KeyedGrammar(
    '',
    (key, byte) => {
      const k = key + byte.toString(16).padStart(2, '0');
      return prefixes.has(k) ? k : null;
    },
    (key) => full.has(key),
    (key) => full.has(key) && ![...prefixes].some((p) => p.length > key.length && p.startsWith(key)),
  ) as unknown as TestGrammar;
}

/** {"s":"…"} with 1..max string chars from [ -~] other than '"' and '\': each length its own state. */
export function boundedString(max: number): TestGrammar {
  const head = '{"s":"';
  return new KeyedGrammar(
    'h0',
    (key, byte) => {
      const kind = key[0];
      const n = Number(key.slice(1));
      if (kind === 'h') return byte === head.charCodeAt(n) ? (n + 1 === head.length ? 'c0' : `h${n + 1}`) : null;
      if (kind === 'c') {
        if (byte === 0x22) return n >= 1 ? 'q' : null;
        if (byte >= 0x20 && byte < 0x7f && byte !== 0x5c && n < max) return `c${n + 1}`;
        return null;
      }
      if (kind === 'q') return byte === 0x7d ? 'e' : null;
      return null;
    },
    (key) => key === 'e',
    (key) => key === 'e',
  ) as unknown as TestGrammar;
}

// ---- JSON ----

// Modes (first char of a key); the rest of the key is "aux|stack", the stack a string of 'o' (object) / 'a' (array).
const M = {
  start: 'S', // before the top-level object
  value: 'V', // a value
  valueOrClose: 'W', // after '[': a value or ']'
  keyOrClose: 'K', // after '{': '"' or '}'
  key: 'k', // after ',' in an object: '"'
  string: 's', // string content; aux 'k' for a key, 'v' for a value
  utf8: 'u', // aux "<kv><remaining><lo hex><hi hex>": continuation bytes of a character
  escape: 'e', // after '\'
  hex: 'x', // aux "<kv><remaining>": \u digits
  colon: 'c', // after a key
  after: 'A', // after a value
  number: 'n', // aux: number sub-state
  literal: 'l', // aux: the rest of true/false/null
  done: 'D',
} as const;

function parseKey(key: string): { mode: string; aux: string; stack: string } {
  const bar = key.indexOf('|');
  return { mode: key[0], aux: key.slice(1, bar), stack: key.slice(bar + 1) };
}
const mk = (mode: string, aux: string, stack: string) => `${mode}${aux}|${stack}`;

/** After a complete value with this stack. */
const afterValue = (stack: string) => (stack === '' ? mk(M.done, '', '') : mk(M.after, '', stack));

/** Number sub-states: '-' after minus, '0' after a leading 0, 'i' integer digits, '.' after the dot, 'f' fraction,
 * 'E' after e, 's' after the exponent sign, 'x' exponent digits. */
const NUMBER_END = new Set(['0', 'i', 'f', 'x']);

function isDigit(b: number): boolean {
  return b >= 0x30 && b <= 0x39;
}

function stringByte(kv: string, stack: string, byte: number): string | null {
  if (byte === 0x22) return kv === 'k' ? mk(M.colon, '', stack) : afterValue(stack);
  if (byte === 0x5c) return mk(M.escape, kv, stack);
  if (byte < 0x20) return null;
  if (byte < 0x80) return mk(M.string, kv, stack);
  const utf = (n: number, lo: number, hi: number) => mk(M.utf8, `${kv}${n}${lo.toString(16)}${hi.toString(16)}`, stack);
  if (byte >= 0xc2 && byte <= 0xdf) return utf(1, 0x80, 0xbf);
  if (byte === 0xe0) return utf(2, 0xa0, 0xbf);
  if ((byte >= 0xe1 && byte <= 0xec) || byte === 0xee || byte === 0xef) return utf(2, 0x80, 0xbf);
  if (byte === 0xed) return utf(2, 0x80, 0x9f);
  if (byte === 0xf0) return utf(3, 0x90, 0xbf);
  if (byte >= 0xf1 && byte <= 0xf3) return utf(3, 0x80, 0xbf);
  if (byte === 0xf4) return utf(3, 0x80, 0x8f);
  return null;
}

function valueByte(stack: string, byte: number, maxDepth: number): string | null {
  if (byte === 0x7b) return stack.length < maxDepth ? mk(M.keyOrClose, '', `${stack}o`) : null;
  if (byte === 0x5b) return stack.length < maxDepth ? mk(M.valueOrClose, '', `${stack}a`) : null;
  if (byte === 0x22) return mk(M.string, 'v', stack);
  if (byte === 0x2d) return mk(M.number, '-', stack);
  if (byte === 0x30) return mk(M.number, '0', stack);
  if (byte >= 0x31 && byte <= 0x39) return mk(M.number, 'i', stack);
  if (byte === 0x74) return mk(M.literal, 'rue', stack);
  if (byte === 0x66) return mk(M.literal, 'alse', stack);
  if (byte === 0x6e) return mk(M.literal, 'ull', stack);
  return null;
}

function afterByte(stack: string, byte: number): string | null {
  const top = stack[stack.length - 1];
  if (byte === 0x2c) return top === 'o' ? mk(M.key, '', stack) : mk(M.value, '', stack);
  if ((byte === 0x7d && top === 'o') || (byte === 0x5d && top === 'a')) return afterValue(stack.slice(0, -1));
  return null;
}

function jsonStep(maxDepth: number, key: string, byte: number): string | null {
  const { mode, aux, stack } = parseKey(key);
  switch (mode) {
    case M.start:
      return byte === 0x7b ? mk(M.keyOrClose, '', 'o') : null;
    case M.value:
      return valueByte(stack, byte, maxDepth);
    case M.valueOrClose:
      return byte === 0x5d ? afterValue(stack.slice(0, -1)) : valueByte(stack, byte, maxDepth);
    case M.keyOrClose:
      if (byte === 0x7d) return afterValue(stack.slice(0, -1));
      return byte === 0x22 ? mk(M.string, 'k', stack) : null;
    case M.key:
      return byte === 0x22 ? mk(M.string, 'k', stack) : null;
    case M.string:
      return stringByte(aux, stack, byte);
    case M.utf8: {
      const kv = aux[0];
      const n = Number(aux[1]);
      const lo = parseInt(aux.slice(2, 4), 16);
      const hi = parseInt(aux.slice(4, 6), 16);
      if (byte < lo || byte > hi) return null;
      return n === 1 ? mk(M.string, kv, stack) : mk(M.utf8, `${kv}${n - 1}80bf`, stack);
    }
    case M.escape:
      if ('"\\/bfnrt'.includes(String.fromCharCode(byte))) return mk(M.string, aux, stack);
      return byte === 0x75 ? mk(M.hex, `${aux}4`, stack) : null;
    case M.hex: {
      const ok = isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66);
      if (!ok) return null;
      const n = Number(aux.slice(1));
      return n === 1 ? mk(M.string, aux[0], stack) : mk(M.hex, `${aux[0]}${n - 1}`, stack);
    }
    case M.colon:
      return byte === 0x3a ? mk(M.value, '', stack) : null;
    case M.after:
      return afterByte(stack, byte);
    case M.literal:
      if (byte !== aux.charCodeAt(0)) return null;
      return aux.length === 1 ? afterValue(stack) : mk(M.literal, aux.slice(1), stack);
    case M.number: {
      const sub = aux;
      const to = (s: string) => mk(M.number, s, stack);
      if (isDigit(byte)) {
        if (sub === '-') return to(byte === 0x30 ? '0' : 'i');
        if (sub === 'i' || sub === 'f' || sub === 'x') return to(sub);
        if (sub === '.') return to('f');
        if (sub === 'E' || sub === 's') return to('x');
        return null; // after a leading 0
      }
      if (byte === 0x2e && (sub === '0' || sub === 'i')) return to('.');
      if ((byte === 0x65 || byte === 0x45) && (sub === '0' || sub === 'i' || sub === 'f')) return to('E');
      if ((byte === 0x2b || byte === 0x2d) && sub === 'E') return to('s');
      // The number ends: the byte belongs to what follows (numbers never end the document: objects are at the top).
      return NUMBER_END.has(sub) ? afterByte(stack, byte) : null;
    }
    default:
      return null;
  }
}

/** Byte-level JSON: an object at the top level, compact (no whitespace), nesting up to maxDepth. */
export function jsonGrammar(maxDepth = 4): TestGrammar {
  return new KeyedGrammar(
    mk(M.start, '', ''),
    (key, byte) => jsonStep(maxDepth, key, byte),
    (key) => key[0] === M.done,
    (key) => key[0] === M.done,
  ) as unknown as TestGrammar;
}

// ---- references and walks ----

/** Brute-force mask: every token's bytes stepped from `state`; EOS iff accepting. */
export function referenceMask(grammar: Grammar, tokens: readonly (Uint8Array | null)[], eos: readonly number[], state: GrammarState, words: number): Uint32Array {
  const mask = new Uint32Array(words);
  const eosSet = new Set(eos);
  if (grammar.accepting(state)) for (const id of eos) mask[id >>> 5] |= 1 << (id & 31);
  for (let id = 0; id < tokens.length; id++) {
    const b = tokens[id];
    if (!b || b.length === 0 || eosSet.has(id)) continue;
    let s: GrammarState | null = state;
    for (let i = 0; i < b.length && s !== null; i++) s = grammar.step(s, b[i]);
    if (s !== null) mask[id >>> 5] |= 1 << (id & 31);
  }
  return mask;
}

/** The ids set in a mask. */
export function maskIds(mask: Uint32Array): number[] {
  const out: number[] = [];
  for (let w = 0; w < mask.length; w++) {
    let x = mask[w];
    while (x !== 0) {
      const bit = 31 - Math.clz32(x & -x);
      out.push(w * 32 + bit);
      x &= x - 1;
    }
  }
  return out;
}

/** The matcher surface randomWalk drives (TokenMatcher). */
interface WalkMatcher {
  readonly grammar: Grammar;
  readonly state: GrammarState;
  readonly vocab: { tokenize(bytes: Uint8Array): number[] };
  readonly done: boolean;
  readonly canEnd: boolean;
  mask(): Uint32Array;
  forced(): number[];
  accept(token: number): boolean;
}

export interface RandomWalkOptions {
  /** Tokens sampled (mostly) freely before the walk takes a short way to the end. */
  budget: number;
  /** Give up (walk.finished false) after this many tokens. */
  maxTokens: number;
  /** Probability of taking the forced tokens when there are some (else sample under the mask). Default 0.5. */
  forcedRate?: number;
  /** Probability, within the budget, of preferring a token made only of '"', '}' and ']' when one is allowed. */
  finishRate?: number;
  /** Called for each mask() (the benchmark times it). */
  onMask?: (mask: () => Uint32Array) => Uint32Array;
}

/** Bytes that close what is open. */
const CLOSING = new Set([...'"}]'].map((c) => c.charCodeAt(0)));
const closingCache = new WeakMap<readonly (Uint8Array | null)[], Int32Array>();

function closingTokens(tokens: readonly (Uint8Array | null)[]): Int32Array {
  let ids = closingCache.get(tokens);
  if (!ids) {
    const list: number[] = [];
    tokens.forEach((b, id) => {
      if (b && b.length > 0 && b.every((x) => CLOSING.has(x))) list.push(id);
    });
    closingCache.set(tokens, (ids = Int32Array.from(list)));
  }
  return ids;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24);
}

/** A uniformly chosen id among the mask's set bits, or -1 when none is set. */
export function sampleMask(mask: Uint32Array, r: () => number): number {
  let total = 0;
  for (let w = 0; w < mask.length; w++) if (mask[w] !== 0) total += popcount(mask[w]);
  if (total === 0) return -1;
  let k = Math.floor(r() * total);
  for (let w = 0; w < mask.length; w++) {
    const x = mask[w];
    if (x === 0) continue;
    const c = popcount(x);
    if (k >= c) {
      k -= c;
      continue;
    }
    let y = x;
    for (;;) {
      const bit = 31 - Math.clz32(y & -y);
      if (k === 0) return w * 32 + bit;
      k--;
      y &= y - 1;
    }
  }
  return -1;
}

const has = (mask: Uint32Array, id: number) => (mask[id >>> 5] & (1 << (id & 31))) !== 0;

/** Bytes from `start` to an accepting state (see completeDocument), null when none is found. */
export function completion(g: Grammar, start: GrammarState, maxBytes = 20_000): Uint8Array | null {
  return completeDocument(g, start, { maxBytes });
}

/**
 * Generates under the mask with a seeded RNG: for `budget` tokens, uniformly among the allowed tokens (with
 * probability finishRate a closing token '"', '}', ']' when one is allowed; forced tokens with probability
 * forcedRate), then a short way to an accepting state (closing bytes first), then EOS.
 */
export function randomWalk(m: WalkMatcher, tokens: readonly (Uint8Array | null)[], eos: readonly number[], r: () => number, options: RandomWalkOptions): { ids: number[]; bytes: Uint8Array; finished: boolean; forcedUsed: number } {
  const ids: number[] = [];
  let forcedUsed = 0;
  const eosSet = new Set(eos);
  const closing = closingTokens(tokens);
  const take = (id: number, what: string) => {
    if (!m.accept(id)) throw new Error(`${what} token ${id} refused`);
    ids.push(id);
  };
  while (ids.length < options.maxTokens && !m.done) {
    if (ids.length >= options.budget) {
      // A short way to the end, then EOS.
      const path = completion(m.grammar, m.state);
      if (path === null) throw new Error('no way to an accepting state found');
      for (const id of m.vocab.tokenize(path)) take(id, 'completion');
      const end = eos.find((id) => m.canEnd && id >= 0);
      if (end !== undefined) take(end, 'EOS');
      break;
    }
    const forced = m.forced();
    if (forced.length > 0 && r() < (options.forcedRate ?? 0.5)) {
      for (const id of forced) take(id, 'forced');
      forcedUsed += forced.length;
      continue;
    }
    const mask = options.onMask ? options.onMask(() => m.mask()) : m.mask();
    let pick = -1;
    if (options.finishRate !== undefined && r() < options.finishRate) {
      pick = eos.find((id) => has(mask, id)) ?? -1;
      if (pick < 0) {
        const allowed: number[] = [];
        for (const id of closing) if (has(mask, id)) allowed.push(id);
        if (allowed.length > 0) pick = allowed[Math.floor(r() * allowed.length)];
      }
    }
    if (pick < 0) pick = sampleMask(mask, r);
    if (pick < 0) throw new Error('nothing allowed');
    take(pick, 'masked');
    if (eosSet.has(pick)) break;
  }
  const parts = ids.filter((id) => !eosSet.has(id)).map((id) => tokens[id]!);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return { ids, bytes, finished: m.done, forcedUsed };
}
