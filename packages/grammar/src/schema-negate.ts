// Negation of schemas, as branches of synthetic schema objects: `not`, the else-side of if/then/else, and exact
// oneOf (each alternative AND NOT the others it may overlap with). A schema is a disjunction of conjunctions of
// keywords, so NOT(schema) is a conjunction over branches of a disjunction over keywords of NOT(keyword). Most
// keywords negate exactly (type, enum/const, required, properties, bounds, lengths, pattern, format, items,
// contains); the rest (uniqueItems, multipleOf, additionalProperties…) contribute nothing, which under-approximates
// the negation: the grammar then accepts a subset of what the schema allows (sound), and says so in `warnings`.

import { charge } from './budget.ts';
import { stringFormatKind } from './formats.ts';
import type { Part, SchemaCompiler } from './schema-compile.ts';
import type { Schema } from './schema-refs.ts';

type Obj = Record<string, unknown>;

const ALL_TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number'];
/** Keywords represented by other parts of a flattened branch (or not constraints at all). */
const STRUCTURAL = new Set(['$ref', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', '$defs', 'definitions']);

export interface Negation {
  branches: Part[][];
  exact: boolean;
}

const synthCache = new WeakMap<object, Map<string, Obj>>();
/** Synthetic schemas state constraints but produce no annotations (they never "evaluate" properties or items). */
export const SYNTHETIC = new WeakSet<object>();

/** A synthetic schema object, stable per (owner, key) so that rule memoization keeps working. */
export function synth(c: SchemaCompiler, owner: Part, key: string, build: () => Obj): Obj {
  let m = synthCache.get(owner.s);
  if (!m) synthCache.set(owner.s, (m = new Map()));
  let o = m.get(key);
  if (!o) {
    o = build();
    SYNTHETIC.add(o);
    m.set(key, o);
    c.reg.setInfo(o, owner.info);
  }
  return o;
}

export function negate(c: SchemaCompiler, s: Schema, owner: Part, stack: Set<object>, tag: string): Negation {
  if (s === true) return { branches: [], exact: true };
  if (s === false) return { branches: [[]], exact: true };
  const xs = c.flatten(s, owner, stack);
  let result: Part[][] = [[]];
  let exact = true;
  for (const x of xs) {
    const disj: Part[][] = [];
    for (const p of x) {
      for (const [k, v] of Object.entries(p.s)) {
        if (STRUCTURAL.has(k)) continue;
        const r = negKeyword(c, p, k, v, `${tag}|${k}`);
        if (r === null) continue; // not a constraint: its negation is empty, exactly
        if (!r.exact) exact = false;
        for (const o of r.objs) disj.push(...c.flatten(o, p, stack));
      }
    }
    const out: Part[][] = [];
    for (const a of result) {
      for (const b of disj) {
        charge(1 + a.length + b.length);
        out.push([...a, ...b]);
      }
    }
    result = out;
    if (result.length > 256) {
      c.report(owner, 'not', 'the negation expands to too many alternatives');
      return { branches: result.slice(0, 256), exact: false };
    }
  }
  return { branches: result, exact };
}

/** NOT(one keyword) as a disjunction of synthetic schemas; null when the keyword constrains nothing. */
function negKeyword(c: SchemaCompiler, p: Part, k: string, v: unknown, tag: string): { objs: Obj[]; exact: boolean } | null {
  const s = p.s;
  const mk = (suffix: string, o: () => Obj): Obj => synth(c, p, `${tag}${suffix}`, o);
  const num = (o: Obj): { objs: Obj[]; exact: boolean } => ({ objs: [mk('', () => ({ type: 'number', ...o }))], exact: true });
  switch (k) {
    case 'type': {
      const names = typeof v === 'string' ? [v] : Array.isArray(v) ? (v as string[]) : [];
      // NOT integer would be "non-integer numbers", which the number grammar cannot express: leave numbers out
      const rest = ALL_TYPES.filter((t) => !names.includes(t) && !(t === 'number' && names.includes('integer')));
      const exact = !(names.includes('integer') && !names.includes('number'));
      return { objs: rest.length ? [mk('', () => ({ type: rest }))] : [], exact };
    }
    case 'enum':
    case 'const': {
      const values = k === 'const' ? [v] : Array.isArray(v) ? v : null;
      if (values === null) return null;
      const present = new Set<string>(values.map((x) => (x === null ? 'null' : Array.isArray(x) ? 'array' : typeof x)));
      const objs: Obj[] = [];
      const others = ALL_TYPES.filter((t) => !present.has(t === 'number' ? 'number' : t));
      if (others.length) objs.push(mk('o', () => ({ type: others })));
      const strings = values.filter((x) => typeof x === 'string');
      if (strings.length) objs.push(mk('s', () => ({ type: 'string', '@notEnum': strings })));
      if (present.has('boolean')) {
        const rest = [true, false].filter((b) => !values.includes(b));
        if (rest.length) objs.push(mk('b', () => ({ enum: rest })));
      }
      const exact = !present.has('number') && !present.has('object') && !present.has('array');
      return { objs, exact };
    }
    case 'required': {
      if (!Array.isArray(v)) return null;
      return { objs: v.filter((n) => typeof n === 'string').map((n) => mk(n, () => ({ type: 'object', properties: { [n]: false } }))), exact: true };
    }
    case 'properties': {
      if (v === null || typeof v !== 'object') return null;
      const objs = Object.entries(v as Obj).map(([n, sub]) => mk(n, () => ({ type: 'object', required: [n], properties: { [n]: { not: sub } } })));
      return { objs, exact: true };
    }
    case 'minimum':
      if (typeof v !== 'number') return null;
      return num(s.exclusiveMinimum === true ? { maximum: v } : { exclusiveMaximum: v });
    case 'maximum':
      if (typeof v !== 'number') return null;
      return num(s.exclusiveMaximum === true ? { minimum: v } : { exclusiveMinimum: v });
    case 'exclusiveMinimum':
      return typeof v === 'number' ? num({ maximum: v }) : null;
    case 'exclusiveMaximum':
      return typeof v === 'number' ? num({ minimum: v }) : null;
    case 'minLength':
      if (typeof v !== 'number') return null;
      return { objs: v >= 1 ? [mk('', () => ({ type: 'string', maxLength: Math.ceil(v) - 1 }))] : [], exact: true };
    case 'maxLength':
      return typeof v === 'number' ? { objs: [mk('', () => ({ type: 'string', minLength: Math.floor(v) + 1 }))], exact: true } : null;
    case 'minItems':
      if (typeof v !== 'number') return null;
      return { objs: v >= 1 ? [mk('', () => ({ type: 'array', maxItems: Math.ceil(v) - 1 }))] : [], exact: true };
    case 'maxItems':
      return typeof v === 'number' ? { objs: [mk('', () => ({ type: 'array', minItems: Math.floor(v) + 1 }))], exact: true } : null;
    case 'minProperties':
      if (typeof v !== 'number') return null;
      return { objs: v >= 1 ? [mk('', () => ({ type: 'object', maxProperties: Math.ceil(v) - 1 }))] : [], exact: true };
    case 'maxProperties':
      // "more than n properties" needs distinct keys; extra keys may repeat, so only declared names could count
      return typeof v === 'number' ? { objs: [], exact: false } : null;
    case 'pattern':
      return typeof v === 'string' ? { objs: [mk('', () => ({ type: 'string', '@notPattern': v }))], exact: true } : null;
    case 'format':
      if (typeof v !== 'string') return null;
      if (stringFormatKind(v) === 'ignored') return null;
      if (stringFormatKind(v) === 'unsupported') return { objs: [], exact: false };
      return { objs: [mk('', () => ({ type: 'string', '@notFormat': v }))], exact: true };
    case 'prefixItems':
    case 'items':
      if (Array.isArray(v)) {
        // some position i exists and violates its schema
        const objs = v.map((sub, i) => mk(String(i), () => ({ type: 'array', minItems: i + 1, [k]: [...Array(i).fill(true), { not: sub }] })));
        return { objs, exact: true };
      }
      if (k === 'prefixItems') return null;
      if (v === true || v === undefined) return null;
      if ('prefixItems' in s) return { objs: [], exact: false };
      return { objs: [mk('', () => ({ type: 'array', contains: { not: v } }))], exact: true };
    case 'contains':
      if ('minContains' in s || 'maxContains' in s) return { objs: [], exact: false };
      return { objs: [mk('', () => ({ type: 'array', items: { not: v } }))], exact: true };
    case 'additionalProperties':
    case 'patternProperties':
    case 'propertyNames':
    case 'additionalItems':
    case 'unevaluatedItems':
    case 'unevaluatedProperties':
    case 'uniqueItems':
    case 'multipleOf':
    case 'dependentRequired':
    case 'dependencies':
    case 'minContains':
    case 'maxContains':
    case '@notEnum':
    case '@notPattern':
    case '@notFormat':
      if (k === 'uniqueItems' && v !== true) return null;
      if (k === 'additionalProperties' && v === true) return null;
      return { objs: [], exact: false };
    default:
      return null; // annotations and unknown keywords constrain nothing
  }
}
