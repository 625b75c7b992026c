// JSONSchemaBench sample (100 schemas from each of 10 subsets): coverage (schemas that compile in strict mode,
// and in lenient mode) next to the published figures, and generation: for every schema that compiles strictly,
// random documents (seeded walk over allowed bytes, then the shortest completion) must parse with JSON.parse and
// validate with ajv + ajv-formats. Any invalid document fails the test. Also logs (not asserted) compile time
// p50/p99 over the sample and step() cost: ns per cached step inside a string, and per step on first visits.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { compileJsonSchema, UnsupportedSchemaError, type Grammar } from './index.ts';
import { oracle } from './oracle.ts';
import { feed, randomDocument, rng } from './testing.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));

/** Published empirical coverage on the full benchmark (JSONSchemaBench paper, Table 4; ../shared/schemas/README.md). */
const PUBLISHED: Record<string, { llguidance: number; llamacpp: number; xgrammar: number | null; outlines: number }> = {
  Glaiveai2K: { llguidance: 0.96, llamacpp: 0.95, xgrammar: 0.93, outlines: 0.95 },
  Github_easy: { llguidance: 0.86, llamacpp: 0.75, xgrammar: 0.79, outlines: 0.59 },
  Github_medium: { llguidance: 0.69, llamacpp: 0.57, xgrammar: 0.52, outlines: 0.29 },
  Github_hard: { llguidance: 0.41, llamacpp: 0.39, xgrammar: 0.28, outlines: 0.03 },
  Kubernetes: { llguidance: 0.91, llamacpp: 0.76, xgrammar: 0.07, outlines: 0.57 },
  Snowplow: { llguidance: 0.82, llamacpp: 0.74, xgrammar: null, outlines: 0.36 },
  WashingtonPost: { llguidance: 0.86, llamacpp: 0.94, xgrammar: 0.64, outlines: 0.22 },
  JsonSchemaStore: { llguidance: 0.3, llamacpp: 0.38, xgrammar: 0.33, outlines: 0.09 },
};

/** Strict coverage reached per subset (out of 100); a drop is a regression. */
const REACHED: Record<string, number> = {
  Github_easy: 99, Github_hard: 96, Github_medium: 96, Github_trivial: 98, Github_ultra: 79,
  Glaiveai2K: 100, JsonSchemaStore: 64, Kubernetes: 100, Snowplow: 99, WashingtonPost: 100,
};

const DOCS_PER_SCHEMA = 2;
const RANDOM_BYTES = 120;

test('JSONSchemaBench sample: coverage and valid generation', () => {
  const rows: { id: string; subset: string; schema: unknown }[] = readFileSync(join(SHARED, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const cov: Record<string, { total: number; strict: number; lenient: number }> = {};
  const reasons: Record<string, number> = {};
  const times: number[] = [];
  const bad: string[] = [];
  let docs = 0;
  let oracleless = 0;
  const phase = { compile: 0, oracle: 0, generate: 0 };
  const dec = new TextDecoder();
  for (const row of rows) {
    const c = (cov[row.subset] ??= { total: 0, strict: 0, lenient: 0 });
    c.total++;
    let g: Grammar | null = null;
    const t0 = performance.now();
    try {
      g = compileJsonSchema(row.schema);
    } catch (e) {
      const why = e instanceof UnsupportedSchemaError ? [...new Set(e.keywords.map((k) => k.keyword))].join('+') : (e as Error).name;
      reasons[why] = (reasons[why] ?? 0) + 1;
    }
    times.push(performance.now() - t0);
    if (g === null) {
      try {
        compileJsonSchema(row.schema, { strict: false });
        c.lenient++;
      } catch {
        // invalid schema (bad $ref, unsatisfiable)
      }
      continue;
    }
    c.strict++;
    c.lenient++;
    let validate: (d: unknown) => boolean;
    const t1 = performance.now();
    phase.compile += t1 - t0;
    try {
      validate = oracle(row.schema);
      phase.oracle += performance.now() - t1;
    } catch {
      oracleless++; // ajv cannot compile this schema (e.g. an unresolvable remote $ref)
      continue;
    }
    const r = rng(row.id.length * 7919 + docs);
    for (let k = 0; k < DOCS_PER_SCHEMA; k++) {
      docs++;
      const bytes = randomDocument(g, r, RANDOM_BYTES);
      if (bytes === null) {
        bad.push(`${row.id}: walk reached a dead end`);
        continue;
      }
      const text = dec.decode(bytes);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        bad.push(`${row.id}: not JSON: ${text.slice(0, 200)}`);
        continue;
      }
      if (!validate(value)) bad.push(`${row.id}: ajv rejects ${text.slice(0, 200)}`);
    }
    phase.generate += performance.now() - t1;
  }
  console.log(JSON.stringify({ phaseMs: phase }));
  times.sort((a, b) => a - b);
  const pct = (p: number): number => times[Math.min(times.length - 1, Math.floor(times.length * p))]!;
  const table = Object.entries(cov).map(([subset, x]) => ({
    subset,
    strict: x.strict / x.total,
    lenient: x.lenient / x.total,
    ...(PUBLISHED[subset] ?? {}),
  }));
  console.log(JSON.stringify({ bench: 'jsonschemabench-sample', coverage: table, docs, invalidDocs: bad.length, oracleless, compileMs: { p50: +pct(0.5).toFixed(2), p99: +pct(0.99).toFixed(1) }, notCompiled: reasons }));
  console.log('coverage (strict / lenient) vs llguidance:\n' + table.map((t) => `  ${t.subset.padEnd(16)} ${t.strict.toFixed(2)} / ${t.lenient.toFixed(2)}   llguidance ${t.llguidance ?? '—'}`).join('\n'));
  console.log(`compile p50 ${pct(0.5).toFixed(2)} ms, p99 ${pct(0.99).toFixed(1)} ms over ${times.length} schemas`);
  expect(bad).toEqual([]);
  for (const t of table) expect(Math.round(t.strict * 100), t.subset).toBeGreaterThanOrEqual(REACHED[t.subset]!);
}, 240_000);

test('step() cost (logged, not asserted)', () => {
  const g = compileJsonSchema({ type: 'object', properties: { text: { type: 'string' }, n: { type: 'integer' } }, required: ['text', 'n'], additionalProperties: false });
  let s = feed(g, g.initial, '{"text":"')!;
  const bytes = new TextEncoder().encode('the quick brown fox jumps over the lazy dog, ünïcödé 😀 ');
  for (const b of bytes) s = g.step(s, b)!; // warm the transition cache
  const N = 2_000_000;
  const t0 = performance.now();
  let x = s;
  for (let i = 0; i < N; i++) x = g.step(x, bytes[i % bytes.length]!)!;
  const warm = ((performance.now() - t0) * 1e6) / N;
  // first visits: a fresh grammar walked once over random documents
  const cold = compileJsonSchema({ type: 'object', properties: { a: { type: 'array', items: { type: 'number', minimum: 0 } }, b: { type: 'string', format: 'date-time' } } });
  const r = rng(3);
  let steps = 0;
  const t1 = performance.now();
  for (let i = 0; i < 20; i++) steps += randomDocument(cold, r, 200)?.length ?? 0;
  const coldNs = ((performance.now() - t1) * 1e6) / steps;
  console.log(JSON.stringify({ bench: 'step', warmNsPerStep: +warm.toFixed(1), walkNsPerByte: +coldNs.toFixed(0), note: 'walk = 256 probes per byte + completion search' }));
  expect(x).not.toBeNull();
});
