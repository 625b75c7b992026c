// The regex subset: ECMAScript syntax (as JSON Schema `pattern` uses it, with the u flag) over code points.
// Supported: literals, escapes (\d \w \s \D \W \S, \t \n \r \v \f \0, \xHH, \uHHHH, \u{H..}, \cX, escaped
// punctuation), classes [...] with ranges and negation, `.`, groups (…) (?:…) (?<name>…), alternation, quantifiers
// * + ? {m} {m,} {m,n} (lazy forms match the same language), and ^ / $ where they anchor a whole alternative.
// Not supported (reported, never guessed): backreferences, lookaround, \b \B, \p{…}, anchors inside repetitions.

import { BUDGETS, checkBudget } from './budget.ts';
import { ANY, caseFold, charSet, complement, DIGIT, DOT, SPACE, union, WORD, type CharSet } from './charset.ts';
import { CountedMachine, Nfa, NfaMachine, SetStarMachine, type CharMachine } from './machine.ts';

export type RegexNode =
  | { t: 'set'; set: CharSet }
  | { t: 'seq'; items: RegexNode[] }
  | { t: 'alt'; items: RegexNode[] }
  | { t: 'rep'; item: RegexNode; min: number; max: number }
  | { t: 'start' }
  | { t: 'end' };

/** A construct outside the subset, or a syntax error; `position` is a UTF-16 offset into the pattern. */
export class RegexError extends Error {
  constructor(
    readonly problem: string,
    readonly position: number,
    readonly unsupported: boolean,
  ) {
    super(problem);
    this.name = 'RegexError';
  }
}

const EMPTY_SEQ: RegexNode = { t: 'seq', items: [] };

// ---- parser ----

export function parseRegex(src: string, ignoreCase = false): RegexNode {
  let i = 0;
  let depth = 0; // open groups (the parser recurses per group)
  const fail = (msg: string, unsupported = false): never => {
    throw new RegexError(msg, i, unsupported);
  };
  const fold = (s: CharSet): CharSet => (ignoreCase ? caseFold(s) : s);

  const hex = (n: number): number => {
    const h = src.slice(i, i + n);
    if (h.length !== n || !/^[0-9a-fA-F]+$/.test(h)) fail(`expected ${n} hex digits`);
    i += n;
    return parseInt(h, 16);
  };

  // An escape after the backslash (i points past it). Returns a set (single char or class).
  const escape = (inClass: boolean): CharSet => {
    const c = src[i++];
    if (c === undefined) return fail('pattern ends with a backslash');
    switch (c) {
      case 'd': return DIGIT;
      case 'D': return complement(DIGIT);
      case 'w': return WORD;
      case 'W': return complement(WORD);
      case 's': return SPACE;
      case 'S': return complement(SPACE);
      case 't': return charSet([9, 9]);
      case 'n': return charSet([10, 10]);
      case 'v': return charSet([11, 11]);
      case 'f': return charSet([12, 12]);
      case 'r': return charSet([13, 13]);
      case '0':
        if (/[0-9]/.test(src[i] ?? '')) return fail('octal escapes are not supported', true);
        return charSet([0, 0]);
      case 'x': return fold(single(hex(2)));
      case 'u': {
        if (src[i] === '{') {
          const close = src.indexOf('}', i);
          if (close < 0) return fail('unterminated \\u{…}');
          const v = parseInt(src.slice(i + 1, close), 16);
          if (!/^[0-9a-fA-F]+$/.test(src.slice(i + 1, close)) || v > 0x10ffff) return fail('bad \\u{…} escape');
          i = close + 1;
          return fold(single(v));
        }
        const v = hex(4);
        // a surrogate pair written as two escapes denotes one astral code point
        if (v >= 0xd800 && v <= 0xdbff && src[i] === '\\' && src[i + 1] === 'u') {
          const save = i;
          i += 2;
          const lo = /^[0-9a-fA-F]{4}$/.test(src.slice(i, i + 4)) ? hex(4) : -1;
          if (lo >= 0xdc00 && lo <= 0xdfff) return single(0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00));
          i = save;
        }
        return fold(single(v));
      }
      case 'c': {
        const l = src[i++] ?? '';
        if (!/[a-zA-Z]/.test(l)) return fail('bad \\c escape');
        return single(l.charCodeAt(0) % 32);
      }
      case 'b':
        if (inClass) return single(8);
        return fail('word boundaries (\\b) are not supported', true);
      case 'B': return fail('\\B is not supported', true);
      case 'p':
      case 'P': return fail('Unicode property escapes (\\p{…}) are not supported', true);
      case 'k': return fail('named backreferences are not supported', true);
      default:
        if (/[1-9]/.test(c)) return fail('backreferences are not supported', true);
        // identity escape: \. \/ \- \$ etc.; be lenient with escaped letters-free punctuation
        if (/[a-zA-Z]/.test(c)) return fail(`unknown escape \\${c}`);
        return fold(single(c.codePointAt(0)!));
    }
  };

  const single = (cp: number): CharSet => charSet([cp, cp]);

  const readChar = (): number => {
    const cp = src.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
    return cp;
  };

  const parseClass = (): RegexNode => {
    // i points past '['
    let negate = false;
    if (src[i] === '^') {
      negate = true;
      i++;
    }
    const parts: number[] = [];
    let set: CharSet = [];
    let first = true;
    while (true) {
      if (i >= src.length) fail('unterminated character class');
      if (src[i] === ']' && !(first && false)) {
        i++;
        break;
      }
      first = false;
      const atom = (): { cp: number } | { set: CharSet } => {
        if (src[i] === '\\') {
          i++;
          const s = escape(true);
          return s.length === 2 && s[0] === s[1] ? { cp: s[0]! } : { set: s };
        }
        return { cp: readChar() };
      };
      const a = atom();
      if (src[i] === '-' && src[i + 1] !== ']' && i + 1 < src.length && 'cp' in a) {
        const save = i;
        i++;
        const b = atom();
        if ('cp' in b) {
          if (b.cp < a.cp) fail('character class range out of order');
          parts.push(a.cp, b.cp);
          continue;
        }
        // [a-\d]: '-' is literal
        i = save;
      }
      if ('cp' in a) parts.push(a.cp, a.cp);
      else set = union(set, a.set);
    }
    let cs = fold(union(set, charSet(parts)));
    if (negate) cs = complement(cs);
    return { t: 'set', set: cs };
  };

  const parseAtom = (): RegexNode | null => {
    const c = src[i];
    if (c === undefined || c === '|' || c === ')') return null;
    if (c === '(') {
      i++;
      if (src[i] === '?') {
        if (src[i + 1] === ':') i += 2;
        else if (src[i + 1] === '<' && src[i + 2] !== '=' && src[i + 2] !== '!') {
          const close = src.indexOf('>', i);
          if (close < 0) fail('unterminated group name');
          i = close + 1;
        } else if ('=!'.includes(src[i + 1] ?? '') || (src[i + 1] === '<' && '=!'.includes(src[i + 2] ?? ''))) {
          i--; // point at the '('
          fail('lookaround assertions are not supported', true);
        } else fail('unknown group syntax (?…)');
      }
      checkBudget('nesting', ++depth, 'the pattern nests groups', `position ${i}`);
      const inner = parseAlt();
      depth--;
      if (src[i] !== ')') fail('missing )');
      i++;
      return inner;
    }
    if (c === '[') {
      i++;
      return parseClass();
    }
    if (c === '.') {
      i++;
      return { t: 'set', set: DOT };
    }
    if (c === '^') {
      i++;
      return { t: 'start' };
    }
    if (c === '$') {
      i++;
      return { t: 'end' };
    }
    if (c === '\\') {
      i++;
      return { t: 'set', set: escape(false) };
    }
    if (c === '*' || c === '+' || c === '?') fail('nothing to repeat');
    if (c === '{' && at(COUNT, src, i) !== null) fail('nothing to repeat');
    return { t: 'set', set: fold(single(readChar())) };
  };

  const parseQuantified = (): RegexNode | null => {
    const atom = parseAtom();
    if (atom === null) return null;
    let node = atom;
    let stacked = 0; // a{2}{3}… nests one repetition in the next
    while (true) {
      const c = src[i];
      let min: number;
      let max: number;
      if (c === '*') [min, max] = [0, Infinity];
      else if (c === '+') [min, max] = [1, Infinity];
      else if (c === '?') [min, max] = [0, 1];
      else if (c === '{') {
        const m = at(COUNT, src, i);
        if (!m) break; // a literal '{' (legacy syntax)
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
        if (max < min) fail('numbers out of order in {m,n} quantifier');
        checkBudget('count', min, 'a {m,n} repetition of the pattern asks for m copies', `position ${i}`);
        i += m[0].length - 1;
      } else break;
      i++;
      if (src[i] === '?') i++; // lazy: same language
      if (node.t === 'start' || node.t === 'end') fail('a quantifier on an anchor is not supported', true);
      node = { t: 'rep', item: node, min, max };
      checkBudget('nesting', depth + ++stacked, 'the pattern stacks quantifiers', `position ${i}`);
    }
    return node;
  };

  const parseSeq = (): RegexNode => {
    const items: RegexNode[] = [];
    while (true) {
      const q = parseQuantified();
      if (q === null) break;
      items.push(q);
    }
    return items.length === 1 ? items[0]! : { t: 'seq', items };
  };

  const parseAlt = (): RegexNode => {
    const items = [parseSeq()];
    while (src[i] === '|') {
      i++;
      items.push(parseSeq());
    }
    return items.length === 1 ? items[0]! : { t: 'alt', items };
  };

  const ast = parseAlt();
  if (i < src.length) fail(src[i] === ')' ? 'unmatched )' : 'unexpected character');
  return ast;
}

/** A {m}, {m,} or {m,n} quantifier (sticky: matched in place, never on a copy of the rest of the pattern). */
const COUNT = /\{(\d+)(,(\d*))?\}/y;

/** `re` (sticky) matched at position i of src. */
function at(re: RegExp, src: string, i: number): RegExpExecArray | null {
  re.lastIndex = i;
  return re.exec(src);
}

// ---- anchors ----

interface Anchored {
  node: RegexNode;
  start: boolean;
  end: boolean;
}

function hasAnchor(n: RegexNode): boolean {
  switch (n.t) {
    case 'start':
    case 'end':
      return true;
    case 'set':
      return false;
    case 'rep':
      return hasAnchor(n.item);
    default:
      return n.items.some(hasAnchor);
  }
}

/** Splits a pattern into alternatives whose anchors sit at their ends; anything else is unsupported. */
function anchorOptions(n: RegexNode): Anchored[] {
  if (!hasAnchor(n)) return [{ node: n, start: false, end: false }];
  switch (n.t) {
    case 'start':
      return [{ node: EMPTY_SEQ, start: true, end: false }];
    case 'end':
      return [{ node: EMPTY_SEQ, start: false, end: true }];
    case 'alt':
      return n.items.flatMap(anchorOptions);
    case 'rep':
      // (^a)? style: only the optional form is expressible
      if (n.min === 0 && n.max === 1) return [{ node: EMPTY_SEQ, start: false, end: false }, ...anchorOptions(n.item)];
      throw new RegexError('anchors inside a repetition are not supported', 0, true);
    case 'seq': {
      const items = n.items;
      if (items.length === 0) return [{ node: n, start: false, end: false }];
      let lo = 0;
      let hi = items.length;
      let start = false;
      let end = false;
      while (lo < hi && items[lo]!.t === 'start') (start = true), lo++;
      while (hi > lo && items[hi - 1]!.t === 'end') (end = true), hi--;
      const mid = items.slice(lo, hi);
      if (mid.length === 0) return [{ node: EMPTY_SEQ, start, end }];
      if (mid.length === 1 && !start && !end) return anchorOptions(mid[0]!);
      const one = (x: RegexNode): Anchored[] => (hasAnchor(x) ? anchorOptions(x) : [{ node: x, start: false, end: false }]);
      const firstOpts = start ? [{ node: mid[0]!, start: false, end: false }] : one(mid[0]!);
      const last = mid.length > 1 ? mid[mid.length - 1]! : null;
      const lastOpts: (Anchored | null)[] = last === null ? [null] : end ? [{ node: last, start: false, end: false }] : one(last);
      const middle = mid.slice(1, Math.max(1, mid.length - 1));
      if (middle.some(hasAnchor)) throw new RegexError('anchors in the middle of a pattern are not supported', 0, true);
      const out: Anchored[] = [];
      for (const f of firstOpts) {
        for (const l of lastOpts) {
          if (l !== null && (f.end || l.start)) {
            throw new RegexError('anchors in the middle of a pattern are not supported', 0, true);
          }
          const parts = l === null ? [f.node] : [f.node, ...middle, l.node];
          out.push({ node: seqOf(parts), start: start || f.start, end: end || (l === null ? f.end : l.end) });
          if (out.length > 64) throw new RegexError('too many anchored alternatives', 0, true);
        }
      }
      return out;
    }
    default:
      return [{ node: n, start: false, end: false }];
  }
}

function seqOf(items: RegexNode[]): RegexNode {
  return items.length === 1 ? items[0]! : { t: 'seq', items };
}

// ---- NFA ----

function build(nfa: Nfa, n: RegexNode, from: number): number {
  if (nfa.size > BUDGETS.patternStates) checkBudget('patternStates', nfa.size, 'the pattern\'s automaton needs more states');
  switch (n.t) {
    case 'set': {
      const to = nfa.state();
      if (n.set.length > 0) {
        nfa.sets[from]!.push(n.set);
        nfa.tos[from]!.push(to);
      }
      return to;
    }
    case 'start':
    case 'end':
      throw new RegexError('anchors in the middle of a pattern are not supported', 0, true);
    case 'seq': {
      let cur = from;
      for (const item of n.items) cur = build(nfa, item, cur);
      return cur;
    }
    case 'alt': {
      const end = nfa.state();
      for (const item of n.items) {
        const s = nfa.state();
        nfa.eps[from]!.push(s);
        nfa.eps[build(nfa, item, s)]!.push(end);
      }
      return end;
    }
    case 'rep': {
      let cur = from;
      for (let k = 0; k < n.min; k++) cur = build(nfa, n.item, cur);
      if (n.max === Infinity) {
        const loop = nfa.state();
        nfa.eps[cur]!.push(loop);
        const body = nfa.state();
        nfa.eps[loop]!.push(body);
        nfa.eps[build(nfa, n.item, body)]!.push(loop);
        return loop;
      }
      const end = nfa.state();
      nfa.eps[cur]!.push(end);
      for (let k = n.min; k < n.max; k++) {
        cur = build(nfa, n.item, cur);
        nfa.eps[cur]!.push(end);
      }
      return end;
    }
  }
}

/** The node inside groups of one item: (x) and (?:x) parse as a sequence or alternation of one. */
function single(n: RegexNode): RegexNode {
  while ((n.t === 'seq' || n.t === 'alt') && n.items.length === 1) n = n.items[0]!;
  return n;
}

/**
 * The machine of a pattern. `search` (JSON Schema semantics): the pattern may match anywhere unless anchored;
 * otherwise the whole string must match (anchors at the ends are accepted and mean nothing more).
 */
export function regexMachine(pattern: string, opts: { search: boolean; ignoreCase?: boolean }): CharMachine {
  const ast = parseRegex(pattern, opts.ignoreCase);
  const options = anchorOptions(ast);
  // A whole string of one class, e.g. ^[a-z0-9]{1,64}$: a count over C*, which the grammar runs as one loop.
  const only = options.length === 1 ? options[0]! : null;
  const whole = only !== null && (!opts.search || (only.start && only.end));
  const counted = whole ? single(only.node) : null;
  if (counted !== null && counted.t === 'rep') {
    const item = single(counted.item);
    if (item.t === 'set') return new CountedMachine(counted.min, counted.max, new SetStarMachine(item.set));
  }
  const nfa = new Nfa();
  const start = nfa.state();
  const accept = nfa.state();
  nfa.accept = accept;
  for (const opt of options) {
    let cur = nfa.state();
    nfa.eps[start]!.push(cur);
    if (opts.search && !opt.start) cur = build(nfa, { t: 'rep', item: { t: 'set', set: ANY }, min: 0, max: Infinity }, cur);
    cur = build(nfa, opt.node, cur);
    if (opts.search && !opt.end) cur = build(nfa, { t: 'rep', item: { t: 'set', set: ANY }, min: 0, max: Infinity }, cur);
    nfa.eps[cur]!.push(accept);
  }
  return new NfaMachine(nfa, start);
}
