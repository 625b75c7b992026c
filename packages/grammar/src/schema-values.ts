// Small pure helpers of the schema compiler: JSON types of values, canonical (key-sorted) serialization for value
// equality, oneOf disjointness signatures, the arithmetic behind multipleOf, and the depth check every schema passes.

import { checkBudget } from './budget.ts';

export const TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number', 'integer'] as const;
export type TypeName = (typeof TYPES)[number];

export const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$schema', '$id', '$anchor', '$defs', 'definitions']);
export const ENUM_SIBLINGS_FREE = new Set([...ANNOTATIONS, 'enum', 'const', 'type', 'id', 'contentMediaType', 'contentEncoding', '$dynamicAnchor', '$vocabulary']);

export interface Signature {
  types: Set<TypeName>;
  values: string[] | null;
  discriminators: Map<string, string[]>;
  required: Set<string>;
  closed: Set<string> | null;
}

export function sigDisjoint(a: Signature, b: Signature): boolean {
  const shared = [...a.types].filter((t) => b.types.has(t));
  if (shared.length === 0) return true;
  if (a.values && b.values && !a.values.some((v) => b.values!.includes(v))) return true;
  if (shared.every((t) => t === 'object')) {
    for (const [k, va] of a.discriminators) {
      const vb = b.discriminators.get(k);
      if (vb && !va.some((v) => vb.includes(v))) return true;
    }
    // one requires a property the other (closed) cannot have
    for (const [x, y] of [[a, b], [b, a]] as const) {
      if (y.closed && [...x.required].some((n) => !y.closed!.has(n))) return true;
    }
  }
  return false;
}

export function jsonType(v: unknown): TypeName {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** A serialization equal for deep-equal JSON values (object keys sorted). */
export function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

export function dedupe(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const c = canonical(v);
    if (seen.has(c)) return false;
    seen.add(c);
    return true;
  });
}

/**
 * n when m is (the double nearest to) 1/n and x / m is exactly x * n for every integer x with |x * n| <= 2^53,
 * i.e. |m * n - 1| < 2^-55 (checked exactly with BigInt); else null.
 */
export function reciprocal(m: number): number | null {
  if (!(m > 0 && m < 1)) return null;
  const n = Math.round(1 / m);
  if (n > 2 ** 20) return null;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, m);
  const bits = view.getBigUint64(0);
  const exp = Number((bits >> 52n) & 0x7ffn) - 1075; // m = mant * 2^exp
  const mant = (bits & ((1n << 52n) - 1n)) | (1n << 52n);
  if (exp >= 0) return null;
  // |mant * n * 2^exp - 1| < 2^-55  <=>  |mant * n - 2^-exp| * 2^55 < 2^-exp
  const diff = mant * BigInt(n) - (1n << BigInt(-exp));
  const abs = diff < 0n ? -diff : diff;
  return abs * (1n << 55n) < 1n << BigInt(-exp) ? n : null;
}

export function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export function lcm(a: number, b: number): number {
  return (a / gcd(a, b)) * b;
}

/**
 * The nesting depth of a JSON-like value (objects and arrays; 0 for a scalar), stopping with GrammarBudgetError
 * past BUDGETS.nesting. Values shared by several parents are measured once; a value that contains itself (possible
 * for objects handed over in-thread or by structured clone, never for parsed JSON) is infinitely deep.
 */
export function checkJsonDepth(value: unknown, what: string): number {
  const height = new Map<object, number>(); // -1 while its children are being measured
  const stack: [object, Iterator<unknown>][] = [];
  const enter = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    const h = height.get(v);
    if (h === -1) checkBudget('nesting', Infinity, what);
    if (h !== undefined) return;
    height.set(v, -1);
    stack.push([v, (Array.isArray(v) ? v : Object.values(v)).values()]);
    checkBudget('nesting', stack.length, what);
  };
  let top = 0;
  enter(value);
  while (stack.length) {
    const [v, children] = stack[stack.length - 1]!;
    const next = children.next();
    if (!next.done) {
      enter(next.value);
      continue;
    }
    let h = 1;
    for (const c of Array.isArray(v) ? v : Object.values(v)) if (c !== null && typeof c === 'object') h = Math.max(h, 1 + height.get(c)!);
    checkBudget('nesting', h, what); // reached first by a short path, a shared value may still be deep
    height.set(v, h);
    top = h;
    stack.pop();
  }
  return top;
}
