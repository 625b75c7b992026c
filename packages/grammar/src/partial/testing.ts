// Test helpers for the partial-JSON parser: a seeded random JSON document generator (with its document-order path
// list) and an independent, deliberately naive reference partial parse. Not exported from the package.

import { mulberry32 } from '@intab/testing/random';
import type { JsonPath } from './events.ts';

export type Tree = { t: 'obj'; members: [string, Tree][] } | { t: 'arr'; items: Tree[] } | { t: 'scalar'; type: 'string' | 'number' | 'boolean' | 'null' };

export interface GeneratedDoc {
  text: string;
  tree: Tree;
}

const PIECES = [
  'a', 'b', 'z', 'Q', '0', '9', ' ', '"', '\\', '/', '\n', '\t', '\r', '\b', '\f', '\u0000', '\u0001', '\u001f', '\u007f',
  'é', 'ß', '中', '文', '\u2028', '\u2029', '\uffff', '\ufeff', '😀', '𝄞', '🇫🇷', '\ud83d', '\ude00', 'key', 'name', ' items ',
];
const SHORT: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

export function generateDoc(seed: number, opts: { maxDepth?: number; size?: number } = {}): GeneratedDoc {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const maxDepth = opts.maxDepth ?? int(1, 8);
  let budget = opts.size ?? int(5, 120); // values left
  const ws = () => (r() < 0.7 ? '' : pick([' ', '\n', '\t', '\r\n  ', '  ', ' \n\t ']));

  const str = (maxLen: number): [string, string] => {
    let s = '';
    const n = int(0, maxLen);
    for (let i = 0; i < n; i++) s += pick(PIECES);
    let raw = '"';
    const hexCase = r() < 0.5;
    for (let i = 0; i < s.length; i++) {
      const ch = s[i];
      const c = ch.charCodeAt(0);
      const u = () => {
        const h = c.toString(16).padStart(4, '0');
        return `\\u${hexCase ? h.toUpperCase() : h}`;
      };
      if (ch === '"' || ch === '\\' || c < 0x20) raw += SHORT[ch] && r() < 0.6 ? SHORT[ch] : u();
      else if (r() < 0.15) raw += ch === '/' && r() < 0.5 ? '\\/' : u();
      else raw += ch;
    }
    return [s, raw + '"'];
  };
  const num = (): string => {
    let t = r() < 0.3 ? '-' : '';
    t += r() < 0.2 ? '0' : String(int(1, 9)) + Array.from({ length: int(0, 6) }, () => int(0, 9)).join('');
    if (r() < 0.4) t += '.' + Array.from({ length: int(1, 5) }, () => int(0, 9)).join('');
    if (r() < 0.3) t += pick(['e', 'E']) + pick(['', '+', '-']) + Array.from({ length: int(1, 3) }, () => int(0, 9)).join('');
    return t;
  };

  const gen = (depth: number): [Tree, string] => {
    budget--;
    const roll = r();
    if (depth < maxDepth && budget > 0 && roll < 0.45) {
      const obj = r() < 0.5;
      const n = r() < 0.15 ? 0 : int(1, Math.max(1, Math.min(8, budget)));
      const parts: string[] = [];
      if (obj) {
        const members: [string, Tree][] = [];
        const keys = new Set<string>();
        for (let i = 0; i < n; i++) {
          let [k, kr] = r() < 0.05 ? ['__proto__', '"__proto__"'] : str(6);
          if (keys.has(k)) [k, kr] = [`k${i}`, `"k${i}"`];
          if (keys.has(k)) continue;
          keys.add(k);
          const [child, cr] = gen(depth + 1);
          members.push([k, child]);
          parts.push(ws() + kr + ws() + ':' + ws() + cr + ws());
        }
        return [{ t: 'obj', members }, '{' + (parts.length ? parts.join(',') : ws()) + '}'];
      }
      const items: Tree[] = [];
      for (let i = 0; i < n; i++) {
        const [child, cr] = gen(depth + 1);
        items.push(child);
        parts.push(ws() + cr + ws());
      }
      return [{ t: 'arr', items }, '[' + (parts.length ? parts.join(',') : ws()) + ']'];
    }
    const k = r();
    if (k < 0.45) return [{ t: 'scalar', type: 'string' }, str(r() < 0.1 ? 60 : 8)[1]];
    if (k < 0.8) return [{ t: 'scalar', type: 'number' }, num()];
    if (k < 0.93) return [{ t: 'scalar', type: 'boolean' }, r() < 0.5 ? 'true' : 'false'];
    return [{ t: 'scalar', type: 'null' }, 'null'];
  };
  const [tree, text] = gen(0);
  return { tree, text: ws() + text + ws() };
}

/** A deep chain of nested containers around a scalar, e.g. [{"a":[{"a":1}]}]. */
export function deepDoc(depth: number): GeneratedDoc {
  let tree: Tree = { t: 'scalar', type: 'string' };
  let text = '"deep \\u00e9 😀"';
  for (let d = 0; d < depth; d++) {
    if (d % 2) {
      tree = { t: 'obj', members: [['a', tree]] };
      text = `{"a":${text}}`;
    } else {
      tree = { t: 'arr', items: [tree] };
      text = `[${text}]`;
    }
  }
  return { tree, text };
}

/** Every path in the document, in document order (pre-order: a container before its contents). */
export function preorder(tree: Tree, path: JsonPath = [], out: JsonPath[] = []): JsonPath[] {
  out.push(path);
  if (tree.t === 'obj') for (const [k, c] of tree.members) preorder(c, [...path, k], out);
  else if (tree.t === 'arr') tree.items.forEach((c, i) => preorder(c, [...path, i], out));
  return out;
}

export function typeAt(tree: Tree, path: JsonPath): string {
  let t = tree;
  for (const seg of path) t = t.t === 'obj' ? t.members.find(([k]) => k === seg)![1] : (t as { items: Tree[] }).items[seg as number];
  return t.t === 'obj' ? 'object' : t.t === 'arr' ? 'array' : t.type;
}

export function valueAt(v: unknown, path: JsonPath): unknown {
  for (const seg of path) v = (v as Record<string | number, unknown>)[seg];
  return v;
}

const EOF = Symbol('eof');

/**
 * The reference partial parse of a prefix of a valid JSON document, written independently of the parser and as
 * plainly as possible: containers appear when opened, a member or element once its value starts; a partial string
 * shows its characters so far (without an unfinished escape or a trailing high surrogate); a partial number shows
 * its longest prefix that is a valid JSON number (nothing if none); literals appear when complete.
 */
export function referencePartial(s: string): unknown {
  let i = 0;
  let root: unknown;
  const skip = () => {
    while (i < s.length && ' \t\n\r'.includes(s[i])) i++;
    if (i >= s.length) throw EOF;
  };
  const def = (o: object, k: string, v: unknown) => Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
  const noHigh = (x: string) => (x.length && /[\ud800-\udbff]/.test(x[x.length - 1]) ? x.slice(0, -1) : x);
  const SH: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  const str = (partial: ((v: string) => void) | null): string => {
    let out = '';
    for (;;) {
      if (i >= s.length) {
        partial?.(noHigh(out));
        throw EOF;
      }
      const c = s[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      if (i + 1 >= s.length || (s[i + 1] === 'u' && i + 6 > s.length)) {
        partial?.(noHigh(out));
        throw EOF;
      }
      if (s[i + 1] === 'u') {
        out += String.fromCharCode(parseInt(s.slice(i + 2, i + 6), 16));
        i += 6;
      } else {
        out += SH[s[i + 1]];
        i += 2;
      }
    }
  };
  const value = (set: (v: unknown) => void): void => {
    skip();
    const c = s[i];
    if (c === '{') {
      i++;
      const o = {};
      set(o);
      skip();
      if (s[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        skip();
        i++; // '"'
        const k = str(null);
        skip();
        i++; // ':'
        value((v) => def(o, k, v));
        skip();
        if (s[i++] === '}') return;
      }
    }
    if (c === '[') {
      i++;
      const a: unknown[] = [];
      set(a);
      skip();
      if (s[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        const idx = a.length;
        value((v) => (a[idx] = v));
        skip();
        if (s[i++] === ']') return;
      }
    }
    if (c === '"') {
      i++;
      set(str(set));
      return;
    }
    if (c === 't' || c === 'f' || c === 'n') {
      const w = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
      if (!s.startsWith(w, i)) throw EOF;
      i += w.length;
      set(JSON.parse(w));
      return;
    }
    const token = /^[-+.eE\d]*/.exec(s.slice(i))![0];
    if (i + token.length >= s.length) {
      const valid = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(token);
      if (valid) set(Number(valid[0]));
      throw EOF;
    }
    i += token.length;
    set(Number(token));
  };
  try {
    value((v) => (root = v));
  } catch (e) {
    if (e !== EOF) throw e;
  }
  return root;
}

/** Cuts text into chunks: whole, one UTF-16 unit at a time, or random sizes up to maxChunk. */
export function split(text: string, r: () => number, maxChunk: number): string[] {
  if (maxChunk <= 0) return [text];
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = 1 + Math.floor(r() * maxChunk);
    out.push(text.slice(i, i + n));
    i += n;
  }
  if (r() < 0.2) out.splice(Math.floor(r() * (out.length + 1)), 0, ''); // empty pushes are fine too
  return out;
}
