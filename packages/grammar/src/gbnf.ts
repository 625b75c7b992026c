// compileGbnf: llama.cpp's GBNF. Rules `name ::= …` (the grammar starts at `root`), alternation `|`, grouping
// `( … )`, postfix `*` `+` `?` `{m}` `{m,}` `{m,n}` `{,n}`, literals "…" (escapes \n \r \t \\ \" \xHH \uHHHH
// \UHHHHHHHH), character classes [a-z] [^…], `.` (any character), rule references and `#` comments. A rule ends
// where the next `name ::=` begins, so alternatives may continue on the next line. Left recursion is rejected
// (as in llama.cpp): rewrite `a ::= a "x" | "y"` as `a ::= "y" "x"*`.

import { checkBudget, compiling } from './budget.ts';
import { ANY, charSet, complement, type CharSet } from './charset.ts';
import { GrammarSyntaxError } from './errors.ts';
import type { Grammar } from './grammar.ts';
import { charClass, Graph, type GNode, type Rule } from './graph.ts';
import { RtnGrammar } from './matcher.ts';

type G =
  | { t: 'lit'; text: string }
  | { t: 'cls'; set: CharSet }
  | { t: 'ref'; name: string; pos: number }
  | { t: 'seq'; items: G[] }
  | { t: 'alt'; items: G[] }
  | { t: 'rep'; item: G; min: number; max: number };

/** `name ::=` and `{m,n}`, matched in place (sticky): a copy of the rest of the source per atom would be quadratic. */
const RULE_START = /[a-zA-Z0-9_-]+[ \t]*::=/y;
const REPEAT = /\{\s*(\d*)\s*(,\s*(\d*)\s*)?\}/y;

function at(re: RegExp, src: string, i: number): RegExpExecArray | null {
  re.lastIndex = i;
  return re.exec(src);
}

function parse(src: string): { rules: Map<string, { body: G; pos: number }>; order: string[] } {
  let i = 0;
  let depth = 0; // open groups (the parser recurses per group)
  const fail = (msg: string, fix?: string): never => {
    throw new GrammarSyntaxError(src, i, msg, fix);
  };
  const skip = (): void => {
    while (i < src.length) {
      const c = src[i]!;
      if (c === '#') while (i < src.length && src[i] !== '\n') i++;
      else if (/\s/.test(c)) i++;
      else break;
    }
  };
  const NAME = /[a-zA-Z0-9_-]/;
  const name = (): string => {
    const s = i;
    while (i < src.length && NAME.test(src[i]!)) i++;
    if (s === i) fail('expected a rule name');
    return src.slice(s, i);
  };
  // the next thing is `name ::=` (a new rule)
  const atRuleStart = (): boolean => at(RULE_START, src, i) !== null;
  const hex = (n: number): number => {
    const h = src.slice(i, i + n);
    if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) fail(`expected ${n} hex digits`);
    i += n;
    return parseInt(h, 16);
  };
  const escChar = (): number => {
    // i points after the backslash
    const c = src[i++];
    switch (c) {
      case 'n': return 10;
      case 'r': return 13;
      case 't': return 9;
      case '\\': return 92;
      case '"': return 34;
      case '[': return 91;
      case ']': return 93;
      case '-': return 45;
      case '^': return 94;
      case '/': return 47;
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default:
        i--;
        return fail(`unknown escape \\${c ?? ''}`);
    }
  };
  const char = (): number => {
    if (src[i] === '\\') {
      i++;
      return escChar();
    }
    const cp = src.codePointAt(i);
    if (cp === undefined) return fail('unexpected end of grammar');
    i += cp > 0xffff ? 2 : 1;
    return cp;
  };

  const atom = (): G | null => {
    skip();
    const c = src[i];
    if (c === undefined || c === '|' || c === ')' || atRuleStart()) return null;
    if (c === '"') {
      i++;
      let text = '';
      while (src[i] !== '"') {
        if (i >= src.length) fail('unterminated string literal');
        text += String.fromCodePoint(char());
      }
      i++;
      return { t: 'lit', text };
    }
    if (c === '[') {
      i++;
      let negate = false;
      if (src[i] === '^') {
        negate = true;
        i++;
      }
      const pairs: number[] = [];
      while (src[i] !== ']') {
        if (i >= src.length) fail('unterminated character class');
        const a = char();
        if (src[i] === '-' && src[i + 1] !== ']' && i + 1 < src.length) {
          i++;
          const b = char();
          if (b < a) fail('character class range out of order');
          pairs.push(a, b);
        } else pairs.push(a, a);
      }
      i++;
      const set = charSet(pairs);
      return { t: 'cls', set: negate ? complement(set) : set };
    }
    if (c === '.') {
      i++;
      return { t: 'cls', set: ANY };
    }
    if (c === '(') {
      i++;
      checkBudget('nesting', ++depth, 'the grammar nests groups', `position ${i}`);
      const inner = alternates();
      depth--;
      skip();
      if (src[i] !== ')') fail('missing )');
      i++;
      return inner;
    }
    if (NAME.test(c)) {
      const pos = i;
      return { t: 'ref', name: name(), pos };
    }
    return fail(`unexpected ${JSON.stringify(c)}`);
  };

  const postfix = (): G | null => {
    let a = atom();
    if (a === null) return null;
    let stacked = 0; // x*+?… nests one repetition in the next
    while (true) {
      const c = src[i];
      let min: number;
      let max: number;
      if (c === '*') [min, max] = [0, Infinity];
      else if (c === '+') [min, max] = [1, Infinity];
      else if (c === '?') [min, max] = [0, 1];
      else if (c === '{') {
        const m = at(REPEAT, src, i);
        if (!m || (m[1] === '' && m[2] === undefined)) return fail('bad {m,n} repetition');
        min = m[1] === '' ? 0 : Number(m[1]);
        max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
        if (max < min) fail('repetition bounds out of order');
        // Unrolled into copies of the item (the graph budget bounds what the copies add up to).
        checkBudget('count', max === Infinity ? min : max, 'a {m,n} repetition of the grammar asks for that many copies', `position ${i}`);
        i += m[0].length - 1;
      } else break;
      i++;
      a = { t: 'rep', item: a, min, max };
      checkBudget('nesting', depth + ++stacked, 'the grammar stacks repetitions', `position ${i}`);
    }
    return a;
  };

  const sequence = (): G => {
    const items: G[] = [];
    while (true) {
      const p = postfix();
      if (p === null) break;
      items.push(p);
    }
    return items.length === 1 ? items[0]! : { t: 'seq', items };
  };

  const alternates = (): G => {
    const items = [sequence()];
    skip();
    while (src[i] === '|') {
      i++;
      items.push(sequence());
      skip();
    }
    return items.length === 1 ? items[0]! : { t: 'alt', items };
  };

  const rules = new Map<string, { body: G; pos: number }>();
  const order: string[] = [];
  skip();
  while (i < src.length) {
    const pos = i;
    const n = name();
    skip();
    if (src.slice(i, i + 3) !== '::=') fail('expected ::=');
    i += 3;
    const body = alternates();
    skip();
    if (i < src.length && !atRuleStart()) fail(src[i] === ')' ? 'unmatched )' : `unexpected ${JSON.stringify(src[i])}`);
    if (rules.has(n)) {
      // llama.cpp: a repeated rule name adds alternatives
      const prev = rules.get(n)!;
      prev.body = { t: 'alt', items: [prev.body, body] };
    } else {
      rules.set(n, { body, pos });
      order.push(n);
    }
  }
  return { rules, order };
}

/**
 * Compiles a GBNF grammar (llama.cpp syntax) whose `root` rule is the document.
 *
 * @example
 * const g = compileGbnf('root ::= "yes" | "no"');
 * matches(g, 'yes'); // true
 */
export function compileGbnf(source: string): Grammar {
  return compiling('grammar', () => compile(source));
}

function compile(source: string): Grammar {
  const { rules } = parse(source);
  if (!rules.has('root')) throw new GrammarSyntaxError(source, 0, 'the grammar has no root rule', 'Add `root ::= …` (the document starts there).');
  for (const { body } of rules.values()) checkRefs(source, body, rules);
  checkLeftRecursion(source, rules);
  // Repetitions unroll, and nested ones multiply: refuse a grammar too big to build before building it.
  let size = 0;
  for (const { body } of rules.values()) size += nodesOf(body);
  checkBudget('graphNodes', size, 'the grammar unrolls its {m,n} repetitions into more nodes');
  const g = new Graph();
  const compiled = new Map<string, Rule>();
  for (const n of rules.keys()) compiled.set(n, g.rule(n));
  for (const [n, { body }] of rules) {
    const r = compiled.get(n)!;
    g.eps(emit(g, r.start, body, compiled), r.end);
  }
  const root = compiled.get('root')!;
  if (!g.analyze(root)) throw new GrammarSyntaxError(source, rules.get('root')!.pos, 'the root rule derives no finite string', 'Give every recursive rule a non-recursive alternative.');
  return new RtnGrammar(g, root, []);
}

function checkRefs(src: string, e: G, rules: Map<string, unknown>): void {
  switch (e.t) {
    case 'ref':
      if (!rules.has(e.name)) throw new GrammarSyntaxError(src, e.pos, `undefined rule ${JSON.stringify(e.name)}`, 'Define the rule or fix its name.');
      return;
    case 'seq':
    case 'alt':
      for (const x of e.items) checkRefs(src, x, rules);
      return;
    case 'rep':
      checkRefs(src, e.item, rules);
      return;
    default:
      return;
  }
}

/**
 * The nodes emit() builds for an expression, or a little more (a class counts its UTF-8 trie generously): what the
 * graph budget is checked against before anything is built. Infinity-safe: a product past the budget stays large.
 */
function nodesOf(e: G): number {
  switch (e.t) {
    case 'lit':
      return 4 * e.text.length;
    case 'cls':
      return 1 + 8 * e.set.length;
    case 'ref':
      return 1;
    case 'seq':
      return e.items.reduce((n, x) => n + nodesOf(x), 0);
    case 'alt':
      return e.items.reduce((n, x) => n + 1 + nodesOf(x), 1);
    case 'rep': {
      const copies = e.max === Infinity ? e.min + 1 : e.max;
      return 3 + copies * (1 + nodesOf(e.item));
    }
  }
}

function emit(g: Graph, from: GNode, e: G, rules: Map<string, Rule>): GNode {
  switch (e.t) {
    case 'lit':
      return g.text(from, e.text);
    case 'cls': {
      const to = g.node();
      charClass(g, from, e.set, to);
      return to;
    }
    case 'ref': {
      const to = g.node();
      g.call(from, rules.get(e.name)!, to);
      return to;
    }
    case 'seq': {
      let cur = from;
      for (const x of e.items) cur = emit(g, cur, x, rules);
      return cur;
    }
    case 'alt': {
      const join = g.node();
      for (const x of e.items) {
        const start = g.node();
        g.eps(from, start);
        g.eps(emit(g, start, x, rules), join);
      }
      return join;
    }
    case 'rep': {
      let cur = from;
      for (let k = 0; k < e.min; k++) cur = emit(g, cur, e.item, rules);
      if (e.max === Infinity) {
        const loop = g.node();
        g.eps(cur, loop);
        const body = g.node();
        g.eps(loop, body);
        g.eps(emit(g, body, e.item, rules), loop);
        return loop;
      }
      const end = g.node();
      g.eps(cur, end);
      for (let k = e.min; k < e.max; k++) {
        const start = g.node();
        g.eps(cur, start);
        cur = emit(g, start, e.item, rules);
        g.eps(cur, end);
      }
      return end;
    }
  }
}

function checkLeftRecursion(src: string, rules: Map<string, { body: G; pos: number }>): void {
  // Nullable rules, by a worklist: a rule is re-checked only when a rule it refers to becomes nullable (passes over
  // every rule until nothing changes would be quadratic on a long chain of rules).
  const nullable = new Map<string, boolean>();
  for (const n of rules.keys()) nullable.set(n, false);
  const isNull = (e: G): boolean => {
    switch (e.t) {
      case 'lit':
        return e.text.length === 0;
      case 'cls':
        return false;
      case 'ref':
        return nullable.get(e.name)!;
      case 'seq':
        return e.items.every(isNull);
      case 'alt':
        return e.items.some(isNull);
      case 'rep':
        return e.min === 0 || isNull(e.item);
    }
  };
  const referrers = new Map<string, Set<string>>();
  for (const n of rules.keys()) referrers.set(n, new Set());
  const refs = (e: G, out: Set<string>): void => {
    if (e.t === 'ref') out.add(e.name);
    else if (e.t === 'seq' || e.t === 'alt') for (const x of e.items) refs(x, out);
    else if (e.t === 'rep') refs(e.item, out);
  };
  for (const [n, { body }] of rules) {
    const out = new Set<string>();
    refs(body, out);
    for (const m of out) referrers.get(m)!.add(n);
  }
  const work = [...rules.keys()];
  while (work.length) {
    const n = work.pop()!;
    if (nullable.get(n) || !isNull(rules.get(n)!.body)) continue;
    nullable.set(n, true);
    for (const m of referrers.get(n)!) if (!nullable.get(m)) work.push(m);
  }
  const left = (e: G, out: Set<string>): void => {
    switch (e.t) {
      case 'ref':
        out.add(e.name);
        return;
      case 'seq':
        for (const x of e.items) {
          left(x, out);
          if (!isNull(x)) return;
        }
        return;
      case 'alt':
        for (const x of e.items) left(x, out);
        return;
      case 'rep':
        left(e.item, out);
        return;
      default:
        return;
    }
  };
  const edges = new Map<string, string[]>();
  for (const [n, { body }] of rules) {
    const s = new Set<string>();
    left(body, s);
    edges.set(n, [...s]);
  }
  // Depth-first search for a cycle, with an explicit stack (a chain of rules may be longer than the call stack).
  const state = new Map<string, number>(); // 1: on the path, 2: done
  for (const root of rules.keys()) {
    if (state.has(root)) continue;
    const path: string[] = [root];
    const next: number[] = [0];
    state.set(root, 1);
    while (path.length) {
      const n = path[path.length - 1]!;
      const out = edges.get(n)!;
      const k = next[next.length - 1]!;
      if (k === out.length) {
        state.set(n, 2);
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const m = out[k]!;
      if (state.get(m) === 1) {
        const cycle = [...path.slice(path.indexOf(m)), m];
        const shown = cycle.length > 12 ? [...cycle.slice(0, 6), '…', ...cycle.slice(-5)] : cycle;
        throw new GrammarSyntaxError(src, rules.get(m)!.pos, `left recursion (${shown.join(' -> ')})`, 'Rewrite it with repetition: `a ::= a x | y` becomes `a ::= y x*`.');
      }
      if (!state.has(m)) {
        state.set(m, 1);
        path.push(m);
        next.push(0);
      }
    }
  }
}
