// Objects and arrays of a schema branch, as small state machines over "which member comes next".
// Objects: declared properties in order (required ones mandatory, optional ones skippable), then additional
// properties (when allowed) whose keys are "any string but the declared names", split by which patternProperties
// they match; counters for min/maxProperties and a bitmask for dependentRequired. Arrays: positions (prefixItems)
// then the rest, counters for min/maxItems and minContains, and a used-value mask for decidable uniqueItems.
// Dead combinations are pruned later by the graph's liveness analysis.

import type { GNode, Rule } from './graph.ts';
import { checkBudget } from './budget.ts';
import { GrammarBudgetError } from './errors.ts';
import { ComplementMachine, intersectAll, LiteralsMachine, type CharMachine } from './machine.ts';
import { RegexError, regexMachine } from './regex.ts';
import type { Branch, Part, SchemaCompiler } from './schema-compile.ts';
import { canonical, jsonType } from './schema-values.ts';
import type { Schema } from './schema-refs.ts';
import { SYNTHETIC } from './schema-negate.ts';

const MAX_STATES = 20_000;
const MAX_UNROLL = 4096;
const MAX_TRACKED = 10;
const MAX_UNIQUE_VALUES = 12;

type Obj = Record<string, unknown>;

function isSchema(v: unknown): v is Schema {
  return typeof v === 'boolean' || (v !== null && typeof v === 'object' && !Array.isArray(v));
}

/** The parts of the branch at or below `p` in the combinator tree (what p's unevaluated* keywords can see). */
function subtree(b: Branch, p: Part): Part[] {
  return b.filter((q) => {
    if (q !== p && SYNTHETIC.has(q.s)) return false;
    for (let x: Part | null = q; x; x = x.owner) if (x === p) return true;
    return false;
  });
}

interface PatternProp {
  part: Part;
  source: string;
  schema: Schema;
  machine: CharMachine | null;
}

export function emitObject(c: SchemaCompiler, from: GNode, b: Branch, to: GNode): void {
  const g = c.g;
  // ---- gather ----
  const names: string[] = [];
  const seen = new Set<string>();
  const addName = (n: string): void => {
    if (!seen.has(n)) {
      seen.add(n);
      names.push(n);
    }
  };
  const required = new Set<string>();
  const deps: [string, string][] = [];
  const patterns: PatternProp[] = [];
  let minP = 0;
  let maxP = Infinity;
  const nameMachines: CharMachine[] = [];
  const nameSchemas: object[] = [];
  for (const p of b) {
    const s = p.s;
    if (s.properties && typeof s.properties === 'object') for (const n of Object.keys(s.properties)) addName(n);
  }
  for (const p of b) {
    const s = p.s;
    if (Array.isArray(s.required)) for (const n of s.required) if (typeof n === 'string') (required.add(n), addName(n));
    for (const key of ['dependentRequired', 'dependencies']) {
      const d = s[key];
      if (d === null || typeof d !== 'object') continue;
      for (const [a, list] of Object.entries(d as Obj)) {
        if (!Array.isArray(list)) continue; // schema dependencies are reported by scan()
        for (const t of list) {
          if (typeof t !== 'string' || t === a) continue;
          addName(a);
          addName(t);
          deps.push([a, t]);
        }
      }
    }
    if (typeof s.minProperties === 'number') minP = Math.max(minP, Math.ceil(s.minProperties));
    if (minP > 0) checkBudget('count', minP, 'minProperties asks for that many properties', p.info.path);
    if (typeof s.maxProperties === 'number') maxP = Math.min(maxP, Math.floor(s.maxProperties));
    if (s.patternProperties && typeof s.patternProperties === 'object') {
      for (const [src, sch] of Object.entries(s.patternProperties as Obj)) {
        let machine: CharMachine | null = null;
        try {
          machine = regexMachine(src, { search: true });
        } catch (e) {
          if (!(e instanceof RegexError)) throw e;
          c.report(p, 'patternProperties', `pattern ${JSON.stringify(src)}: ${e.problem}`);
        }
        if (isSchema(sch)) patterns.push({ part: p, source: src, schema: sch, machine });
      }
    }
    if ('propertyNames' in s && isSchema(s.propertyNames)) {
      nameMachines.push(namesMachine(c, s.propertyNames, p));
      nameSchemas.push(typeof s.propertyNames === 'object' ? s.propertyNames : { b: s.propertyNames });
    }
  }
  const nameOk = (n: string): boolean => nameMachines.every((m) => m.matches(n));
  const matching = (n: string, pp: PatternProp): boolean => pp.machine !== null && pp.machine.matches(n);

  // unevaluatedProperties: per part, what its subtree evaluates
  const unevals = b
    .filter((p) => 'unevaluatedProperties' in p.s && isSchema(p.s.unevaluatedProperties))
    .map((p) => {
      const sub = subtree(b, p);
      return {
        schema: p.s.unevaluatedProperties as Schema,
        all: sub.some((q) => 'additionalProperties' in q.s || (q !== p && 'unevaluatedProperties' in q.s)),
        names: new Set(sub.flatMap((q) => (q.s.properties && typeof q.s.properties === 'object' ? Object.keys(q.s.properties) : []))),
        parts: new Set(sub),
      };
    });

  const declaredValue = (n: string): Rule => {
    const schemas: Schema[] = [];
    if (!nameOk(n)) schemas.push(false);
    for (const p of b) {
      const props = p.s.properties as Obj | undefined;
      const inProps = props !== undefined && props !== null && typeof props === 'object' && Object.prototype.hasOwnProperty.call(props, n);
      if (inProps && isSchema(props![n])) schemas.push(props![n] as Schema);
      const own = patterns.filter((pp) => pp.part === p && matching(n, pp));
      for (const pp of own) schemas.push(pp.schema);
      if (!inProps && own.length === 0 && 'additionalProperties' in p.s && isSchema(p.s.additionalProperties)) schemas.push(p.s.additionalProperties as Schema);
    }
    for (const u of unevals) {
      const evaluated = u.all || u.names.has(n) || patterns.some((pp) => u.parts.has(pp.part) && matching(n, pp));
      if (!evaluated) schemas.push(u.schema);
    }
    return c.value(schemas);
  };

  // ---- extra keys, split by the set of patterns they match ----
  const extras: { key: Rule; value: Rule }[] = [];
  const usable = patterns.filter((pp) => pp.machine !== null);
  const subsets: PatternProp[][] = [[]];
  const full = usable.length <= 3;
  for (let mask = 1; mask < 1 << usable.length; mask++) {
    const set = usable.filter((_, i) => mask & (1 << i));
    if (full || set.length === 1) subsets.push(set);
  }
  for (const set of subsets) {
    const schemas: Schema[] = set.map((pp) => pp.schema);
    for (const p of b) {
      if (!set.some((pp) => pp.part === p) && 'additionalProperties' in p.s && isSchema(p.s.additionalProperties)) schemas.push(p.s.additionalProperties as Schema);
    }
    for (const u of unevals) {
      if (!(u.all || set.some((pp) => u.parts.has(pp.part)))) schemas.push(u.schema);
    }
    if (schemas.includes(false)) continue;
    // any key pattern that was unusable (unsupported syntax) means we cannot tell what it matches: no extras then
    if (patterns.length !== usable.length) continue;
    const ms: CharMachine[] = [new ComplementMachine(new LiteralsMachine(names)), ...nameMachines];
    for (const pp of usable) ms.push(set.includes(pp) ? pp.machine! : new ComplementMachine(pp.machine!));
    const km = intersectAll(ms)!;
    let empty: boolean;
    try {
      empty = km.isEmpty();
    } catch (e) {
      if (!(e instanceof GrammarBudgetError && e.budget === 'automatonStates')) throw e;
      continue; // too complex to analyse: allow no such keys (a sound restriction)
    }
    if (empty) continue;
    const value = c.value(schemas);
    const keyId = `key\u0000${names.join('\u0000')}\u0001${usable.map((pp) => (set.includes(pp) ? '+' : '-') + pp.source).join('\u0000')}\u0001${nameSchemas.map((x) => c.idOf(x)).join(',')}`;
    const key = c.memo(keyId, 'key', (r) => {
      const close = g.node();
      g.embed(g.text(r.start, '"'), km, 'json', close);
      g.eps(c.ws.colon(g, g.text(close, '":')), r.end);
    });
    extras.push({ key, value });
  }

  // ---- dependencies ----
  const tracked = [...new Set(deps.flat())];
  if (tracked.length > MAX_TRACKED) {
    c.report(b[0] ?? null, 'dependentRequired', `more than ${MAX_TRACKED} properties take part in dependencies`);
    tracked.length = 0;
  }
  const bit = (n: string): number => {
    const i = tracked.indexOf(n);
    return i < 0 ? 0 : 1 << i;
  };
  const depsOk = (mask: number): boolean => deps.every(([a, t]) => !(mask & bit(a)) || !!(mask & bit(t)) || !tracked.length);

  // ---- the member automaton ----
  const n = names.length;
  const values = names.map((nm) => declaredValue(nm));
  const loCap = minP;
  const hiTracked = Number.isFinite(maxP);
  const nodes = new Map<string, GNode>();
  const queue: [number, boolean, number, number, number, boolean][] = [];
  const state = (i: number, any: boolean, lo: number, hi: number, mask: number, xs: boolean): GNode => {
    const k = `${i},${+any},${lo},${hi},${mask},${+xs}`;
    let node = nodes.get(k);
    if (node === undefined) {
      node = g.node();
      nodes.set(k, node);
      queue.push([i, any, lo, hi, mask, xs]);
    }
    return node;
  };
  const open = g.text(from, '{');
  g.eps(open, state(0, false, 0, 0, 0, false));
  const member = (node: GNode, any: boolean): GNode => (any ? c.ws.line(g, g.text(node, ',')) : c.ws.line(g, node));
  // `"name":value` is a rule shared by every object with that property name and value schema
  const member_ = (i: number): Rule => c.memo(`kv\u0000${names[i]}\u0000${values[i]!.id}`, 'member', (r) => {
    g.call(c.ws.colon(g, g.text(r.start, JSON.stringify(names[i]!) + ':')), values[i]!, r.end);
  });
  for (let qi = 0; qi < queue.length; qi++) {
    if (qi > MAX_STATES) {
      c.report(b[0] ?? null, 'maxProperties', 'the object constraints need too many states');
      break;
    }
    const [i, any, lo, hi, mask, xs] = queue[qi]!;
    const node = nodes.get(`${i},${+any},${lo},${hi},${mask},${+xs}`)!;
    const room = !hiTracked || hi < maxP;
    if (i < n) {
      const nm = names[i]!;
      if (!required.has(nm)) g.eps(node, state(i + 1, any, lo, hi, mask, xs));
      if (room) g.call(member(node, any), member_(i), state(i + 1, true, Math.min(lo + 1, loCap), hiTracked ? hi + 1 : 0, mask | bit(nm), xs));
    } else {
      if (lo >= minP && depsOk(mask)) g.eps(g.text(any ? c.ws.line(g, node) : node, '}'), to);
      if (room) {
        for (const x of extras) {
          const mid = g.node();
          g.call(member(node, any), x.key, mid);
          g.call(mid, x.value, state(n, true, xs ? lo : Math.min(lo + 1, loCap), hiTracked ? hi + 1 : 0, mask, true));
        }
      }
    }
  }
}

/** The language of property names allowed by a propertyNames schema (union over its branches). */
function namesMachine(c: SchemaCompiler, s: Schema, at: Part): CharMachine {
  const branches = c.flatten(s, at, new Set());
  const ms: CharMachine[] = [];
  for (const br of branches) {
    const types = c.types(br);
    if (!types.has('string')) continue;
    const vals = c.enumValues(br);
    let m = c.stringMachine(br);
    if (vals !== null) m = intersectAll([m, new LiteralsMachine(vals.filter((v): v is string => typeof v === 'string'))])!;
    ms.push(m);
  }
  if (ms.length === 0) return new LiteralsMachine([]);
  // union of branches = complement of the intersection of complements
  if (ms.length === 1) return ms[0]!;
  return new ComplementMachine(intersectAll(ms.map((m) => new ComplementMachine(m)))!);
}

// ---- arrays ----

export function emitArray(c: SchemaCompiler, from: GNode, b: Branch, to: GNode): void {
  const g = c.g;
  interface Shape {
    part: Part;
    prefix: Schema[];
    rest: Schema | undefined;
  }
  const shapes: Shape[] = b.map((p) => {
    const s = p.s;
    if (Array.isArray(s.items)) return { part: p, prefix: s.items.filter(isSchema), rest: isSchema(s.additionalItems) ? s.additionalItems : undefined };
    return { part: p, prefix: Array.isArray(s.prefixItems) ? s.prefixItems.filter(isSchema) : [], rest: isSchema(s.items) ? s.items : undefined };
  });
  let minI = 0;
  let maxI = Infinity;
  let unique = false;
  let contains: { part: Part; schema: Schema; min: number } | null = null;
  for (const p of b) {
    const s = p.s;
    if (typeof s.minItems === 'number') minI = Math.max(minI, Math.ceil(s.minItems));
    if (minI > 0) checkBudget('count', minI, 'minItems asks for that many items', p.info.path);
    if (typeof s.maxItems === 'number') maxI = Math.min(maxI, Math.floor(s.maxItems));
    if (s.uniqueItems === true) unique = true;
    if ('contains' in s && isSchema(s.contains)) {
      const min = typeof s.minContains === 'number' ? s.minContains : 1;
      if ('maxContains' in s) c.report(p, 'maxContains', 'maxContains is not supported');
      if (contains !== null && min > 0) c.report(p, 'contains', 'more than one contains in a schema is not supported');
      else if (min > 0) contains = { part: p, schema: s.contains as Schema, min };
    }
  }
  if (Number.isFinite(maxI) && maxI > MAX_UNROLL && minI <= MAX_UNROLL) maxI = MAX_UNROLL; // a sound restriction
  if (minI > MAX_UNROLL) c.report(b[0] ?? null, 'minItems', `minItems above ${MAX_UNROLL} is not supported`);
  const P = Math.max(0, ...shapes.map((sh) => sh.prefix.length));
  const unevals = b
    .filter((p) => 'unevaluatedItems' in p.s && isSchema(p.s.unevaluatedItems))
    .map((p) => {
      const sub = new Set(subtree(b, p));
      const shs = shapes.filter((sh) => sub.has(sh.part));
      const nested = [...sub].some((q) => q !== p && 'unevaluatedItems' in q.s);
      return { schema: p.s.unevaluatedItems as Schema, upTo: nested || shs.some((sh) => sh.rest !== undefined) ? Infinity : Math.max(0, ...shs.map((sh) => sh.prefix.length)) };
    });
  const schemasAt = (pos: number): Schema[] => {
    const out: Schema[] = [];
    for (const sh of shapes) {
      if (pos < sh.prefix.length) out.push(sh.prefix[pos]!);
      else if (sh.rest !== undefined) out.push(sh.rest);
    }
    for (const u of unevals) if (pos >= u.upTo) out.push(u.schema);
    return out;
  };
  const ruleAt = (pos: number): Rule => c.value(schemasAt(Math.min(pos, P)));
  const containsAt = (pos: number): Rule | null => (contains ? c.value([...schemasAt(Math.min(pos, P)), contains.schema]) : null);

  // uniqueItems: decidable when every position draws from a small finite set of values
  let universe: string[] | null = null;
  let valuesAt: ((pos: number) => unknown[]) | null = null;
  if (unique && maxI > 1) {
    const sets: unknown[][] = [];
    for (let pos = 0; pos <= P; pos++) {
      const vals = finiteValues(c, schemasAt(pos));
      if (vals === null) {
        sets.length = 0;
        break;
      }
      sets.push(vals);
    }
    const all = new Map<string, unknown>();
    for (const s of sets) for (const v of s) all.set(canonical(v), v);
    if (sets.length === 0 || all.size > MAX_UNIQUE_VALUES || contains) {
      c.report(b.find((p) => p.s.uniqueItems === true) ?? null, 'uniqueItems', 'uniqueItems is enforced only for items drawn from a small finite set (enum/const/boolean/null)');
    } else {
      universe = [...all.keys()];
      valuesAt = (pos) => sets[Math.min(pos, P)]!;
      maxI = Math.min(maxI, universe.length);
    }
  }

  const cap = Number.isFinite(maxI) ? maxI : Math.max(P, minI, 1);
  const minC = contains?.min ?? 0;
  const nodes = new Map<string, GNode>();
  const queue: [number, number, number][] = [];
  const state = (pos: number, cnt: number, mask: number): GNode => {
    const k = `${pos},${cnt},${mask}`;
    let node = nodes.get(k);
    if (node === undefined) {
      node = g.node();
      nodes.set(k, node);
      queue.push([pos, cnt, mask]);
    }
    return node;
  };
  g.eps(g.text(from, '['), state(0, 0, 0));
  for (let qi = 0; qi < queue.length; qi++) {
    if (qi > MAX_STATES) {
      c.report(b[0] ?? null, 'maxItems', 'the array constraints need too many states');
      break;
    }
    const [pos, cnt, mask] = queue[qi]!;
    const node = nodes.get(`${pos},${cnt},${mask}`)!;
    if (pos >= minI && cnt >= minC) g.eps(g.text(pos > 0 ? c.ws.line(g, node) : node, ']'), to);
    if (pos >= maxI) continue;
    const at = pos > 0 ? c.ws.line(g, g.text(node, ',')) : c.ws.line(g, node);
    const next = Math.min(pos + 1, cap);
    if (universe !== null && valuesAt !== null) {
      for (const v of valuesAt(pos)) {
        const u = universe.indexOf(canonical(v));
        if (mask & (1 << u)) continue;
        c.literals(at, state(next, cnt, mask | (1 << u)), [v], ruleAt(pos));
      }
      continue;
    }
    g.call(at, ruleAt(pos), state(next, cnt, mask));
    const cr = containsAt(pos);
    if (cr !== null && cnt < minC) g.call(at, cr, state(next, cnt + 1, mask));
  }
}

/** The finite set of values a list of schemas allows (enum/const/boolean/null only), or null. */
function finiteValues(c: SchemaCompiler, schemas: Schema[]): unknown[] | null {
  let branches: Part[][] = [[]];
  for (const s of schemas) {
    const f = c.flatten(s, null, new Set());
    const out: Part[][] = [];
    for (const x of branches) for (const y of f) out.push([...x, ...y]);
    branches = out;
    if (branches.length > 64) return null;
  }
  const vals = new Map<string, unknown>();
  for (const br of branches) {
    const types = c.types(br);
    const ev = c.enumValues(br);
    if (ev !== null) {
      for (const v of ev) if (types.has(jsonType(v)) || (jsonType(v) === 'integer' && types.has('number'))) vals.set(canonical(v), v);
      continue;
    }
    if ([...types].some((t) => t !== 'null' && t !== 'boolean')) return null;
    if (types.has('null')) vals.set('null', null);
    if (types.has('boolean')) {
      vals.set('true', true);
      vals.set('false', false);
    }
  }
  return [...vals.values()];
}
