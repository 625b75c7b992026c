// JSON Schema -> byte grammar. A value rule per distinct set of schemas (memoized, so $ref cycles become rule
// cycles). Each rule: the schemas' in-place combinators ($ref, allOf, anyOf, oneOf) are flattened into branches
// (a disjunction of conjunctions of plain schema objects); each branch is merged per JSON type and emitted as
// alternatives. enum/const values become literal tries, filtered by the branch's other keywords (checked by running
// the branch's own grammar on each literal). Objects and arrays are in schema-structs.ts. Past 500 lines as one job:
// one compiler whose rules, memo and budget charge are shared by every keyword it merges.

import { charge, checkBudget, compiling } from './budget.ts';
import { GrammarBudgetError, IntabGrammarError, InvalidSchemaError, UnsupportedSchemaError, type UnsupportedKeyword } from './errors.ts';
import { formatMachines, numberFormat, stringFormatKind } from './formats.ts';
import type { CompileOptions, Grammar, GrammarWarning } from './grammar.ts';
import { Graph, type GNode, type Rule } from './graph.ts';
import { ComplementMachine, CountedMachine, intersectAll, LengthMachine, LiteralsMachine, type CharMachine } from './machine.ts';
import { RtnGrammar } from './matcher.ts';
import { nextDouble, NumberMachine, prevDouble } from './numbers.ts';
import { RegexError, regexMachine } from './regex.ts';
import { Registry, type Schema, type SchemaInfo } from './schema-refs.ts';
import { negate, synth } from './schema-negate.ts';
import { emitArray, emitObject } from './schema-structs.ts';
import { ANNOTATIONS, canonical, dedupe, ENUM_SIBLINGS_FREE, jsonType, lcm, reciprocal, sigDisjoint, type Signature, type TypeName } from './schema-values.ts';

export interface Part {
  readonly s: Record<string, unknown>;
  readonly owner: Part | null;
  readonly info: SchemaInfo;
}
export type Branch = readonly Part[];

const MAX_BRANCHES = 256;
import { TYPES } from './schema-values.ts';

/** Keywords that never constrain output. Unknown keywords are ignored too (validators ignore them). */
const UNSUPPORTED_ALWAYS: Record<string, string> = {
  $dynamicRef: 'dynamic references are not supported; use $ref',
  $recursiveRef: 'recursive references ($recursiveRef) are not supported; use $ref',
};

export interface Whitespace {
  /** Node after optional whitespace where a pretty printer breaks lines (after '{' '[' ',' and before '}' ']'). */
  line(g: Graph, from: GNode): GNode;
  /** After ':' */
  colon(g: Graph, from: GNode): GNode;
}

function makeWhitespace(opt: CompileOptions['whitespace']): Whitespace {
  if (opt === undefined || opt === 'compact') return { line: (_g, n) => n, colon: (_g, n) => n };
  const indent = opt === 'pretty' ? 2 : Math.max(0, Math.min(8, Math.floor(opt.indent)));
  const maxSpaces = indent * 24;
  // one shared rule: "" | "\n" followed by 0..maxSpaces spaces (pretty printers indent by depth; the model picks)
  const rules = new WeakMap<Graph, Rule>();
  const wsRule = (g: Graph): Rule => {
    let r = rules.get(g);
    if (r === undefined) {
      r = g.rule('ws');
      rules.set(g, r);
      g.eps(r.start, r.end);
      let cur = g.text(r.start, '\n');
      g.eps(cur, r.end);
      for (let i = 0; i < maxSpaces; i++) {
        cur = g.text(cur, ' ');
        g.eps(cur, r.end);
      }
    }
    return r;
  };
  return {
    line(g, from) {
      const end = g.node();
      g.call(from, wsRule(g), end);
      return end;
    },
    colon(g, from) {
      const end = g.node();
      g.eps(from, end);
      g.eps(g.text(from, ' '), end);
      return end;
    },
  };
}

export class SchemaCompiler {
  readonly g = new Graph();
  readonly reg: Registry;
  readonly strict: boolean;
  readonly ws: Whitespace;
  private readonly problems = new Map<string, UnsupportedKeyword>();
  private readonly notes = new Map<string, GrammarWarning>();
  private readonly rules = new Map<string, Rule>();
  private readonly ids = new WeakMap<object, number>();
  private nextId = 1;
  private readonly pending: GNode[] = [];
  private readonly checkers = new Map<Rule, RtnGrammar>();
  private readonly scanned = new WeakSet<object>();

  constructor(schema: unknown, options: CompileOptions & { remotes?: Record<string, unknown> }) {
    this.strict = options.strict ?? true;
    this.ws = makeWhitespace(options.whitespace);
    if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
      throw new InvalidSchemaError('', 'a schema must be an object or a boolean', 'Pass a JSON Schema object (for example { "type": "object", ... }).');
    }
    this.reg = new Registry(schema, options.remotes);
  }

  compile(): Grammar {
    const root = this.value([this.reg.root as Schema]);
    // deferred literal checks (enum/const filtered by their siblings) may create more deferred nodes
    for (let i = 0; i < this.pending.length; i++) {
      const n = this.pending[i]!;
      const f = n.expand;
      if (f) {
        n.expand = null;
        f();
      }
    }
    this.checkers.clear();
    if (this.strict && this.problems.size > 0) throw new UnsupportedSchemaError([...this.problems.values()]);
    if (!this.g.analyze(root)) {
      throw new InvalidSchemaError('', 'no JSON value satisfies this schema (as far as the compiler can tell)', 'Check required properties, enums, bounds and type constraints for contradictions.');
    }
    const warnings = [...this.problems.values(), ...this.notes.values()];
    return new RtnGrammar(this.g, root, warnings);
  }

  // ---- reporting ----

  report(part: Part | SchemaInfo | null, keyword: string, reason: string): void {
    const path = part === null ? '' : 'info' in part ? part.info.path : part.path;
    const k = `${path}\u0000${keyword}`;
    if (!this.problems.has(k)) this.problems.set(k, { path, keyword, reason });
  }

  note(part: Part, keyword: string, reason: string): void {
    const k = `${part.info.path}\u0000${keyword}`;
    if (!this.notes.has(k)) this.notes.set(k, { path: part.info.path, keyword, reason });
  }

  idOf(o: object): number {
    let id = this.ids.get(o);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(o, id);
    }
    return id;
  }

  // ---- value rules ----

  /** The rule for a JSON value satisfying every schema in the list (memoized by the set of schemas). */
  value(schemas: readonly Schema[]): Rule {
    if (schemas.some((s) => s === false)) return this.memo('F', 'false', () => {});
    const objs = [...new Set(schemas.filter((s): s is Record<string, unknown> => typeof s === 'object'))];
    objs.sort((a, b) => this.idOf(a) - this.idOf(b));
    const key = objs.map((o) => this.idOf(o)).join(',') || 'T';
    return this.memo(key, key === 'T' ? 'any' : this.reg.infoOf(objs[0]!).path || '/', (rule) => {
      let branches: Part[][] = [[]];
      for (const o of objs) branches = this.cross(branches, this.flatten(o, null, new Set()), null);
      for (const b of branches) this.emitBranch(rule.start, b, rule.end, false);
    });
  }

  /** A rule for one branch with enum/const ignored (to check enum literals against the other keywords). */
  private branchRule(branch: Branch): Rule {
    const key = 'e' + branch.map((p) => this.idOf(p.s)).sort((a, b) => a - b).join(',');
    return this.memo(key, 'enum-check', (rule) => this.emitBranch(rule.start, branch, rule.end, true));
  }

  /** Rule bodies being built inside each other (subschemas of subschemas: the compiler recurses per level). */
  private depth = 0;

  memo(key: string, name: string, body: (r: Rule) => void): Rule {
    let r = this.rules.get(key);
    if (r === undefined) {
      r = this.g.rule(name);
      this.rules.set(key, r);
      checkBudget('nesting', ++this.depth, 'the schema nests subschemas (through properties, items and $ref)', name);
      try {
        body(r);
      } finally {
        this.depth--;
      }
    }
    return r;
  }

  // ---- flattening ----

  cross(a: Part[][], b: Part[][], at: Part | null, keyword = 'anyOf'): Part[][] {
    const out: Part[][] = [];
    // Stops at the cap rather than building the whole product first (two wide combinators multiply).
    for (const x of a) {
      for (const y of b) {
        if (out.length === MAX_BRANCHES) {
          this.report(at, keyword, `the combinators expand to more than ${MAX_BRANCHES} alternatives (oneOf/not/if need the negation of overlapping alternatives)`);
          return out;
        }
        charge(1 + x.length + y.length);
        out.push([...x, ...y]);
      }
    }
    return out;
  }

  flatten(s: Schema, owner: Part | null, stack: Set<object>): Part[][] {
    if (s === true) return [[]];
    if (s === false) return [];
    if (s === null || typeof s !== 'object' || Array.isArray(s)) {
      throw new InvalidSchemaError(owner?.info.path ?? '', 'a subschema must be an object or a boolean', 'Fix the schema.');
    }
    const info = this.reg.infoOf(s);
    const part: Part = { s, owner, info };
    charge(1);
    if (stack.has(s)) {
      this.report(part, '$ref', 'the schema refers to itself without consuming input (an infinite loop)');
      return [[]];
    }
    this.scan(part);
    stack.add(s);
    checkBudget('nesting', stack.size, 'the schema nests combinators and $refs', info.path || '/');
    let acc: Part[][] = [[part]];
    if (typeof s.$ref === 'string') {
      let target: Schema | null = null;
      try {
        target = this.reg.resolve(s.$ref, s).schema;
      } catch (e) {
        if (!(e instanceof InvalidSchemaError) || this.strict) throw e;
        this.report(part, '$ref', e.message);
      }
      if (target !== null) acc = this.cross(acc, this.flatten(target, part, stack), part);
    }
    if (Array.isArray(s.allOf)) for (const sub of s.allOf) acc = this.cross(acc, this.flatten(sub as Schema, part, stack), part);
    if (Array.isArray(s.anyOf)) {
      const alts = s.anyOf.flatMap((sub) => this.flatten(sub as Schema, part, stack));
      charge(alts.length);
      acc = this.cross(acc, alts, part);
    }
    if (Array.isArray(s.oneOf)) {
      const oneOf = s.oneOf as Schema[];
      const alts = oneOf.map((sub) => this.flatten(sub as Schema, part, stack));
      const sigs = alts.map((branches) => branches.map((b) => this.signature(b)));
      const disjoint = (i: number, j: number): boolean => sigs[i]!.every((a) => sigs[j]!.every((b) => sigDisjoint(a, b)));
      const out: Part[][] = [];
      let exact = true;
      alts.forEach((alt, i) => {
        // alternative i and none of the others it may overlap with
        let branches = alt;
        alts.forEach((_, j) => {
          if (j === i || disjoint(i, j)) return;
          const n = negate(this, oneOf[j]!, part, stack, `oneOf${j}`);
          if (!n.exact) exact = false;
          branches = this.cross(branches, n.branches, part, 'oneOf');
        });
        out.push(...branches);
      });
      if (!exact) this.note(part, 'oneOf', 'enforced more strictly than the schema (some negations are approximated): the output is valid but some valid values cannot be produced');
      acc = this.cross(acc, out, part);
    }
    if ('not' in s && s.not !== undefined) {
      const n = negate(this, s.not as Schema, part, stack, 'not');
      if (!n.exact) this.note(part, 'not', 'enforced more strictly than the schema (the negation is approximated): the output is valid but some valid values cannot be produced');
      acc = this.cross(acc, n.branches, part);
    }
    if ('if' in s && ('then' in s || 'else' in s)) {
      const cond = s.if as Schema;
      const yes = this.cross(this.flatten(cond, part, stack), this.flatten((s.then ?? true) as Schema, part, stack), part);
      const n = negate(this, cond, part, stack, 'if');
      if (!n.exact) this.note(part, 'if', 'the else-branch is enforced more strictly than the schema (the negation of `if` is approximated)');
      const no = this.cross(n.branches, this.flatten((s.else ?? true) as Schema, part, stack), part);
      acc = this.cross(acc, [...yes, ...no], part);
    }
    for (const key of ['dependentSchemas', 'dependencies']) {
      const d = s[key];
      if (d === null || typeof d !== 'object' || Array.isArray(d)) continue;
      for (const [name, sub] of Object.entries(d as Record<string, unknown>)) {
        if (Array.isArray(sub)) continue; // property-list dependencies: handled by the object emitter
        // either the property is absent, or it is present and the object satisfies the schema
        const absent = synth(this, part, `${key}|${name}|absent`, () => ({ properties: { [name]: false } }));
        const present = synth(this, part, `${key}|${name}|present`, () => ({ required: [name] }));
        const yes = this.cross(this.flatten(sub as Schema, part, stack), this.flatten(present, part, stack), part);
        acc = this.cross(acc, [...this.flatten(absent, part, stack), ...yes], part);
      }
    }
    stack.delete(s);
    return acc;
  }

  /** Keyword-level checks that do not depend on the type being emitted (reported once per schema object). */
  private scan(part: Part): void {
    if (this.scanned.has(part.s)) return;
    this.scanned.add(part.s);
    for (const [k, reason] of Object.entries(UNSUPPORTED_ALWAYS)) if (k in part.s) this.report(part, k, reason);
    const t = part.s.type;
    for (const name of typeof t === 'string' ? [t] : Array.isArray(t) ? t : []) {
      if (!TYPES.includes(name as TypeName)) throw new InvalidSchemaError(part.info.path, `unknown type ${JSON.stringify(name)}`, `Use one of ${TYPES.join(', ')}.`);
    }
  }

  private signature(b: Branch): Signature {
    const types = this.types(b);
    const values = this.enumValues(b);
    const required = new Set<string>();
    for (const p of b) if (Array.isArray(p.s.required)) for (const n of p.s.required) if (typeof n === 'string') required.add(n);
    // property value constraints that can tell alternatives apart: enum/const of a required property
    const discriminators = new Map<string, string[]>();
    let closed: Set<string> | null = null;
    for (const p of b) {
      const props = p.s.properties as Record<string, unknown> | undefined;
      if (props && typeof props === 'object') {
        for (const name of required) {
          const sub = props[name];
          if (sub === undefined || typeof sub === 'boolean') continue;
          let vals: string[] | null = [];
          try {
            for (const br of this.flatten(sub as Schema, null, new Set())) {
              const ev = this.enumValues(br);
              if (ev === null) {
                vals = null;
                break;
              }
              vals.push(...ev.map(canonical));
            }
          } catch (e) {
            if (e instanceof GrammarBudgetError) throw e;
            vals = null;
          }
          if (vals !== null) discriminators.set(name, vals);
        }
      }
      // additionalProperties: false without patterns: only the declared names may appear
      if (p.s.additionalProperties === false && !p.s.patternProperties) {
        const names = new Set(props && typeof props === 'object' ? Object.keys(props) : []);
        closed = closed === null ? names : new Set([...(closed as Set<string>)].filter((n) => names.has(n)));
      }
    }
    return { types, values: values ? values.map(canonical) : null, discriminators, required, closed };
  }

  // ---- branches ----

  /** The JSON types a branch allows ('integer' alone means integers only; 'number' includes integers). */
  types(b: Branch): Set<TypeName> {
    let allowed = new Set<TypeName>(TYPES);
    const restrict = (names: unknown[], negate: boolean): void => {
      const set = new Set<TypeName>();
      for (const n of names) {
        set.add(n as TypeName);
        if (n === 'number') set.add('integer');
      }
      allowed = new Set([...allowed].filter((t) => (negate ? !set.has(t) : set.has(t))));
      if (!negate && set.has('integer') && !set.has('number')) allowed.delete('number');
    };
    for (const p of b) {
      const t = p.s.type;
      if (typeof t === 'string') restrict([t], false);
      else if (Array.isArray(t)) restrict(t, false);
    }
    return allowed;
  }

  /** enum/const values allowed by every part (intersection), or null when no part restricts them. */
  enumValues(b: Branch): unknown[] | null {
    let values: unknown[] | null = null;
    for (const p of b) {
      const lists: unknown[][] = [];
      if ('const' in p.s) lists.push([p.s.const]);
      if (Array.isArray(p.s.enum)) lists.push(p.s.enum);
      for (const l of lists) {
        if (values === null) values = dedupe(l);
        else {
          const keys = new Set(l.map(canonical));
          values = values.filter((v) => keys.has(canonical(v)));
        }
      }
    }
    return values;
  }

  emitBranch(from: GNode, b: Branch, to: GNode, ignoreEnum: boolean): void {
    const types = this.types(b);
    if (!ignoreEnum) {
      const values = this.enumValues(b);
      if (values !== null) {
        const check = this.needsCheck(b) ? this.branchRule(b) : null;
        const ok = values.filter((v) => types.has(jsonType(v)) || (jsonType(v) === 'integer' && types.has('number')));
        this.literals(from, to, ok, check);
        return;
      }
    }
    const g = this.g;
    if (types.has('null')) g.eps(g.text(from, 'null'), to);
    if (types.has('boolean')) {
      g.eps(g.text(from, 'true'), to);
      g.eps(g.text(from, 'false'), to);
    }
    if (types.has('string')) this.emitString(from, b, to);
    if (types.has('number') || types.has('integer')) this.emitNumber(from, b, to, !types.has('number'));
    if (types.has('object')) emitObject(this, from, b, to);
    if (types.has('array')) emitArray(this, from, b, to);
  }

  /** Whether any keyword besides enum/const/type/annotations could reject an enum value. */
  private needsCheck(b: Branch): boolean {
    for (const p of b) for (const k of Object.keys(p.s)) if (!ENUM_SIBLINGS_FREE.has(k)) return true;
    return false;
  }

  /** Literal JSON values (as a byte trie), each kept only if `check` accepts it — decided lazily, before analysis. */
  literals(from: GNode, to: GNode, values: readonly unknown[], check: Rule | null): void {
    const g = this.g;
    const n = g.node();
    g.eps(from, n);
    this.pending.push(n);
    n.expand = () => {
      const texts = [...new Set(values.map((v) => JSON.stringify(v)))].filter((t) => check === null || this.accepts(check, t));
      this.trie(n, texts, to);
    };
  }

  /** A deterministic byte trie of the given texts from `from` to `to`. */
  trie(from: GNode, texts: readonly string[], to: GNode): void {
    const enc = new TextEncoder();
    const kids = new Map<GNode, Map<number, GNode>>();
    for (const t of texts) {
      let cur = from;
      for (const byte of enc.encode(t)) {
        let m = kids.get(cur);
        if (!m) kids.set(cur, (m = new Map()));
        let nx = m.get(byte);
        if (!nx) {
          nx = this.g.node();
          m.set(byte, nx);
          this.g.edge(cur, byte, byte, nx);
        }
        cur = nx;
      }
      this.g.eps(cur, to);
    }
  }

  accepts(rule: Rule, text: string): boolean {
    let m = this.checkers.get(rule);
    if (m === undefined) {
      try {
        m = new RtnGrammar(this.g, rule, [], false);
      } catch (e) {
        if (e instanceof IntabGrammarError && !(e instanceof GrammarBudgetError)) return false;
        throw e;
      }
      this.checkers.set(rule, m);
    }
    let s: ReturnType<RtnGrammar['step']> = m.initial;
    for (const byte of new TextEncoder().encode(text)) {
      s = m.step(s, byte);
      if (s === null) return false;
    }
    return m.accepting(s);
  }

  // ---- scalars ----

  /** The code-point machine for strings satisfying the branch's string keywords (null: no string qualifies). */
  stringMachine(b: Branch): CharMachine {
    const ms: CharMachine[] = [];
    let min = 0;
    let max = Infinity;
    for (const p of b) {
      if (typeof p.s.minLength === 'number') min = Math.max(min, Math.ceil(p.s.minLength));
      if (typeof p.s.maxLength === 'number') max = Math.min(max, Math.floor(p.s.maxLength));
    }
    if (min > 0) checkBudget('count', min, 'minLength asks for that many characters', b.find((p) => typeof p.s.minLength === 'number')?.info.path);
    for (const p of b) {
      if (typeof p.s.pattern === 'string') {
        try {
          ms.push(regexMachine(p.s.pattern, { search: true }));
        } catch (e) {
          if (!(e instanceof RegexError)) throw e;
          this.report(p, 'pattern', `${e.problem} (outside the supported regex subset)`);
        }
      }
      const np = p.s['@notPattern'];
      if (typeof np === 'string') {
        try {
          ms.push(new ComplementMachine(regexMachine(np, { search: true })));
        } catch (e) {
          if (!(e instanceof RegexError)) throw e;
          this.report(p, 'pattern', `${e.problem} (outside the supported regex subset)`);
        }
      }
      const nf = p.s['@notFormat'];
      if (typeof nf === 'string') ms.push(new ComplementMachine(intersectAll(formatMachines(nf))!));
      const ne = p.s['@notEnum'];
      if (Array.isArray(ne)) ms.push(new ComplementMachine(new LiteralsMachine(ne as string[])));
      const f = p.s.format;
      if (typeof f === 'string') {
        const kind = stringFormatKind(f);
        if (kind === 'supported') ms.push(...formatMachines(f));
        else if (kind === 'unsupported') this.report(p, 'format', `format "${f}" is not supported`);
      }
    }
    // A pattern that counts a class (^[a-z]{1,64}$) joins its bounds to the length's: one count over both.
    for (let i = 0; i < ms.length; i++) {
      const m = ms[i]!;
      if (!(m instanceof CountedMachine)) continue;
      min = Math.max(min, m.min);
      max = Math.min(max, m.max);
      ms[i] = m.rest;
    }
    const rest = intersectAll(ms) ?? new LengthMachine(0, Infinity);
    // The length bound outermost and apart, so that the grammar can run the string as `rest` plus a count.
    return min > 0 || max < Infinity ? new CountedMachine(min, max, rest) : rest;
  }

  emitString(from: GNode, b: Branch, to: GNode): void {
    const g = this.g;
    const open = g.text(from, '"');
    const close = g.node();
    g.eps(g.text(close, '"'), to);
    g.embed(open, this.stringMachine(b), 'json', close);
  }

  emitNumber(from: GNode, b: Branch, to: GNode, integerOnly: boolean): void {
    let min: number | null = null;
    let max: number | null = null;
    let integer = integerOnly;
    let mult = 0;
    const lower = (v: number): void => {
      min = min === null ? v : Math.max(min, v);
    };
    const upper = (v: number): void => {
      max = max === null ? v : Math.min(max, v);
    };
    for (const p of b) {
      const s = p.s;
      if (typeof s.minimum === 'number') lower(s.exclusiveMinimum === true ? nextDouble(s.minimum) : s.minimum);
      if (typeof s.maximum === 'number') upper(s.exclusiveMaximum === true ? prevDouble(s.maximum) : s.maximum);
      if (typeof s.exclusiveMinimum === 'number') lower(nextDouble(s.exclusiveMinimum));
      if (typeof s.exclusiveMaximum === 'number') upper(prevDouble(s.exclusiveMaximum));
      if (typeof s.format === 'string') {
        const nf = numberFormat(s.format);
        if (nf) {
          integer = integer || nf.integer;
          if (nf.min !== undefined) lower(nf.min);
          if (nf.max !== undefined) upper(nf.max);
        }
      }
      if (typeof s.multipleOf === 'number' && s.multipleOf > 0) {
        const m = s.multipleOf;
        const n = reciprocal(m);
        if (Number.isInteger(m)) mult = mult === 0 ? m : lcm(mult, m);
        else if (n !== null) {
          // ajv tests (x / m) === parseInt(x / m) in floating point; for integers x that quotient is exactly x * n
          // here, so integer outputs are always valid (a narrowing of the schema for type "number")
          integer = true;
          lower(-Math.floor(2 ** 53 / n));
          upper(Math.floor(2 ** 53 / n));
          if (!integerOnly) this.note(p, 'multipleOf', `multipleOf ${m}: only integers are produced (exact under floating-point division)`);
        } else this.report(p, 'multipleOf', `multipleOf ${m} is not supported (integer divisors, or 1/n where integers divide exactly in floating point)`);
      }
    }
    if (mult > 2 ** 40) {
      this.report(b[0] ?? null, 'multipleOf', 'multipleOf too large');
      mult = 0;
    }
    const m = new NumberMachine({ integer, min, max, multipleOf: mult || null });
    this.g.embed(from, m, 'raw', to);
  }
}


/**
 * Compiles a JSON Schema (drafts 4, 6, 7, 2019-09, 2020-12) to a byte-level grammar. The contract: every document
 * the grammar accepts is JSON that ajv (with ajv-formats) accepts against the schema.
 *
 * Output shape (the documented policies):
 * - Compact JSON by default; `whitespace: 'pretty' | { indent }` additionally allows a newline plus indentation
 *   where a pretty printer breaks lines, and one space after ':'.
 * - Properties come in declared order (properties of allOf parts in order, then required names not declared);
 *   required ones always, optional ones may be skipped. Additional properties, when the schema allows them
 *   (additionalProperties absent/true/a schema, patternProperties), may follow the declared ones; their keys are
 *   any string that is not a declared name.
 * - Strings: a JSON escape denotes its character for pattern, format and length purposes (\uXXXX escapes denote
 *   control and non-ASCII BMP characters, never printable ASCII, which is written as itself or \" \\ \/; lone
 *   surrogates are never produced); lengths count code points, as ajv does.
 * - Numbers: integers without exponent; bounded numbers without exponent; never "-0"; nothing that parses to
 *   Infinity. multipleOf: integer divisors exactly; 1/n divisors (0.01, 0.5…) by producing integers only.
 * - oneOf is exact: each alternative is combined with the negation of the alternatives it may overlap with. not,
 *   if/then/else and dependentSchemas likewise. Negations of a few keywords (uniqueItems, multipleOf,
 *   additionalProperties, type integer…) are under-approximated: the output stays valid, fewer values are
 *   reachable, and `warnings` says so.
 * - uniqueItems is enforced when items come from a small finite set (enum/const/boolean/null); otherwise reported.
 * - Formats date-time, date, time, email, uuid, uri, uri-reference, uri-template, ipv4, ipv6, hostname, duration,
 *   json-pointer, relative-json-pointer, byte are regular languages (subsets of ajv-formats'); formats ajv-formats
 *   does not know are annotations; `regex` and `url` are reported.
 * - Strict (default): unsupported keywords throw UnsupportedSchemaError listing every one with its path; with
 *   `strict: false` they are dropped and listed in `warnings` (the output then may violate them).
 * - Remote $refs resolve only through `options.remotes` (URI -> schema); nothing is fetched.
 *
 * @example
 * const g = compileJsonSchema({ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
 * matches(g, '{"name":"Ada"}'); // true
 */
export function compileJsonSchema(schema: unknown, options: CompileOptions & { remotes?: Record<string, unknown> } = {}): Grammar {
  return compiling('schema', () => new SchemaCompiler(schema, options).compile());
}

/**
 * Any JSON value (response_format `json_object`). `root: 'object'` requires an object at the top, as OpenAI's
 * json_object mode does; the default is any value.
 *
 * @example
 * const g = anyJson({ root: 'object' });
 */
export function anyJson(options: Omit<CompileOptions, 'strict'> & { root?: 'any' | 'object' } = {}): Grammar {
  return compileJsonSchema(options.root === 'object' ? { type: 'object' } : true, { whitespace: options.whitespace });
}

