// Fuzzing compileJsonSchema: real schemas (JSONSchemaBench and JSON-Schema-Test-Suite, the smaller ones) mutated —
// keys dropped, values swapped for junk or extremes, subtrees copied elsewhere, wrapped in combinators, $refs bent
// to cycles and nowhere — and schemas generated keyword by keyword. Every case must compile (then a walk and
// sometimes a token mask run over it) or end in a typed IntabGrammarError; nothing else, and no case may hang.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { IntabGrammarError } from '../errors.ts';
import { compileJsonSchema } from '../schema-compile.ts';
import { exercise } from './test-exercise.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
/** Seconds one case may take before it counts as a hang (cases take well under a millisecond to a second). */
const HANG_MS = 5_000;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** The real schemas mutated: those under 600 bytes of JSON (compiling a big one costs more than a case should). */
function realSchemas(): Json[] {
  const bench = readFileSync(join(SHARED, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8').trim().split('\n');
  const suite = readFileSync(join(SHARED, 'schemas/json-schema-test-suite/draft2020-12.jsonl'), 'utf8').trim().split('\n');
  return [...bench, ...suite].map((l) => (JSON.parse(l) as { schema: Json }).schema).filter((s) => JSON.stringify(s).length < 600);
}

// ---- generation ----

const TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number', 'integer', 'strnig', 'any'];
const FORMATS = ['date-time', 'date', 'time', 'email', 'uuid', 'uri', 'ipv4', 'ipv6', 'hostname', 'duration', 'regex', 'byte', 'int32', 'x-custom'];
const PATTERNS = ['^[a-z]+$', '^\\d{3}-\\d{4}$', '.*a.{8}', '(ab|cd)*e', '^[A-Z]{2,10}$', '[', '(?=x)', '\\p{L}', '^(a|b)+$', 'x{3,1}', '^.{0,100000}$', '(((((a)))))', '^\\u00e9+$', ''];
const NUMBERS = [0, 1, -1, 0.5, 3, 10, 100, 1e6, -1e6, 1e21, 1e308, -1e308, 5e-324, 2 ** 53, 0.1, 0.01, 7.5, 99999, 100001];
/** Counts (lengths, items, properties): mostly small; one in ten extreme (big ones cost a case up to a second). */
const count = (r: Random) => (r.chance(0.9) ? r.pick([0, 1, 2, 3, 5, 8, 64]) : r.pick(NUMBERS));
const STRINGS = ['', 'a', 'name', 'id', 'é', '😀', '"', '\\', '#', '#/$defs/a', '#/definitions/x', 'http://x/y.json', '#foo', '%25', '%E0%A4%A', '~1', '/'];

function scalar(r: Random): Json {
  switch (r.int(6)) {
    case 0:
      return r.pick(NUMBERS);
    case 1:
      return r.pick(STRINGS);
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
      return r.int(20);
    default:
      return r.pick(TYPES);
  }
}

function value(r: Random, depth: number): Json {
  if (depth <= 0 || r.chance(0.6)) return scalar(r);
  if (r.chance(0.5)) return Array.from({ length: r.int(4) }, () => value(r, depth - 1));
  const o: Record<string, Json> = {};
  for (let k = r.int(4); k > 0; k--) o[r.pick(STRINGS)] = value(r, depth - 1);
  return o;
}

/** A schema built keyword by keyword (depth-bounded), with a $defs section its $refs may name. */
function schema(r: Random, depth: number): Json {
  if (depth <= 0 || r.chance(0.1)) return r.chance(0.8) ? { type: r.pick(TYPES.slice(0, 7)) } : r.chance(0.5);
  const s: Record<string, Json> = {};
  const sub = () => schema(r, depth - 1);
  const subs = () => Array.from({ length: 1 + r.int(r.chance(0.8) ? 2 : 4) }, sub);
  for (let k = 1 + r.int(3); k > 0; k--) {
    switch (r.int(30)) {
      case 0: s.type = r.chance(0.7) ? r.pick(TYPES) : [r.pick(TYPES), r.pick(TYPES)]; break;
      case 1: s.properties = Object.fromEntries(Array.from({ length: r.int(5) }, () => [r.pick(STRINGS) + r.int(9), sub()])); break;
      case 2: s.required = Array.from({ length: r.int(4) }, () => r.pick(STRINGS) + r.int(9)); break;
      case 3: s.additionalProperties = r.chance(0.5) ? r.chance(0.5) : sub(); break;
      case 4: s.items = r.chance(0.8) ? sub() : subs(); break;
      case 5: s.prefixItems = subs(); break;
      case 6: s.anyOf = subs(); break;
      case 7: s.oneOf = subs(); break;
      case 8: s.allOf = subs(); break;
      case 9: s.not = sub(); break;
      case 10: s.if = sub(); s.then = sub(); if (r.chance(0.5)) s.else = sub(); break;
      case 11: s.enum = Array.from({ length: r.int(6) }, () => value(r, 2)); break;
      case 12: s.const = value(r, 2); break;
      case 13: s.pattern = r.pick(PATTERNS); break;
      case 14: s.format = r.pick(FORMATS); break;
      case 15: s.minLength = count(r); break;
      case 16: s.maxLength = count(r); break;
      case 17: s.minimum = r.pick(NUMBERS); break;
      case 18: s.maximum = r.pick(NUMBERS); break;
      case 19: s.exclusiveMinimum = r.chance(0.3) ? true : r.pick(NUMBERS); break;
      case 20: s.multipleOf = r.chance(0.8) ? r.pick([2, 3, 0.5, 0.01, 7]) : r.pick(NUMBERS); break;
      case 21: s.minItems = count(r); break;
      case 22: s.maxItems = count(r); break;
      case 23: s.uniqueItems = r.chance(0.7); break;
      case 24: s.contains = sub(); if (r.chance(0.5)) s.minContains = r.int(4); break;
      case 25: s.$ref = r.pick(['#', '#/$defs/a', '#/$defs/b', '#/$defs/missing', '#/properties', 'other.json', '#foo', '#/$defs/a/properties/x']); break;
      case 26: s.$defs = { a: sub(), b: r.chance(0.5) ? { $ref: '#/$defs/a' } : sub() }; break;
      case 27: s.patternProperties = { [r.pick(PATTERNS)]: sub() }; break;
      case 28: s.minProperties = count(r); s.maxProperties = count(r); break;
      default: s.dependentRequired = { [r.pick(STRINGS)]: [r.pick(STRINGS)] }; break;
    }
  }
  return s;
}

// ---- mutation ----

/** Every container in a value, with how to replace each of its members. */
function slots(root: Json): { get: () => Json; set: (v: Json) => void; remove: () => void }[] {
  const out: { get: () => Json; set: (v: Json) => void; remove: () => void }[] = [];
  const walk = (v: Json) => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        out.push({ get: () => v[i]!, set: (y) => (v[i] = y), remove: () => v.splice(i, 1) });
        walk(x);
      });
    } else if (v !== null && typeof v === 'object') {
      for (const k of Object.keys(v)) {
        out.push({ get: () => v[k]!, set: (y) => (v[k] = y), remove: () => delete v[k] });
        walk(v[k]!);
      }
    }
  };
  walk(root);
  return out;
}

function mutate(r: Random, base: Json): Json {
  let root = structuredClone(base);
  for (let m = 1 + r.int(3); m > 0; m--) {
    const all = slots(root);
    const at = all.length > 0 ? r.pick(all) : null;
    switch (r.int(9)) {
      case 0: at?.remove(); break;
      case 1: at?.set(scalar(r)); break;
      case 2: at?.set(value(r, 3)); break;
      case 3: if (at && all.length > 1) at.set(structuredClone(r.pick(all).get())); break; // a subtree copied elsewhere
      case 4: root = { [r.pick(['allOf', 'anyOf', 'oneOf'])]: [root, schema(r, 2)] }; break;
      case 5: root = { not: root }; break;
      case 6: at?.set(schema(r, 2)); break;
      case 7: if (at && typeof at.get() === 'number') at.set(r.pick(NUMBERS)); else at?.set({ $ref: r.pick(['#', '#/$defs/a', '#/definitions/x', '#/%ZZ', '#/properties/a']) }); break;
      default: if (root !== null && typeof root === 'object' && !Array.isArray(root)) root.$defs = { a: root.$defs ?? {}, x: { $ref: '#' } }; break;
    }
  }
  return root;
}

test('fuzz: JSON Schemas compile or end in a typed IntabGrammarError, none hangs', async () => {
  const real = realSchemas();
  const report = await fuzz<{ schema: Json; strict: boolean; walk: Random }>({
    name: 'json-schema',
    seed: 0x5eed01,
    generate: (r, i) => ({ schema: i % 3 === 2 ? schema(r, 3) : mutate(r, r.pick(real)), strict: r.chance(0.7), walk: r }),
    run: ({ schema: s, strict, walk }) => exercise(compileJsonSchema(s, { strict }), walk),
    typed: (e) => e instanceof IntabGrammarError,
    show: ({ schema: s, strict }) => `strict=${strict} ${JSON.stringify(s)}`,
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.compiled ?? 0).toBeGreaterThan(report.cases / 10); // the fuzzer reaches the compiler's depths
}, fuzzTestTimeout());
