// intab bench grammar's pure parts: percentiles, the coverage table beside the published figures (the real README
// of ../shared/schemas, which must be there), the plain-text table, and the bench's bounded end search on a small schema.
// Smoke tests: no timing is asserted.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileJsonSchema } from '@intab/grammar';
import { mulberry32 } from '@intab/testing/random';
import { checkDocument, searchEnd } from './grammar-bench.ts';
import { coverageRows, formatTable, parsePublishedCoverage, percentile, round, summarize } from './grammar-stats.ts';
import { SHARED } from './repo.ts';


const TABLE = `Published coverage:

| subset | llguidance | llama.cpp | XGrammar | Outlines |
|---|---|---|---|---|
| GlaiveAI | 0.96 | 0.95 | 0.93 | 0.95 |
| GitHub Easy | 0.86 | 0.75 | 0.79 | 0.59 |
| Snowplow | 0.82 | 0.74 | NA | 0.36 |
`;

describe('bench grammar statistics', () => {
  it('percentiles by nearest rank', () => {
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(percentile([1, 2, 3, 4], 0.75)).toBe(3);
    expect(percentile([7], 0.99)).toBe(7);
    expect(Number.isNaN(percentile([], 0.5))).toBe(true);
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 0.99)).toBe(99);
    expect(percentile(hundred, 1)).toBe(100);
    expect(percentile(hundred, 0)).toBe(1);
  });

  it('summaries sort their input and round to 3 significant digits', () => {
    const s = summarize([5, 1, 4, 2, 3, 1000.4]);
    expect(s).toEqual({ n: 6, p50: 3, p90: 1000, p99: 1000, max: 1000, mean: 169 });
    expect(summarize([])).toEqual({ n: 0, p50: null, p90: null, p99: null, max: null, mean: null });
    expect(round(0.0123456)).toBe(0.0123);
    expect(round(123456.7)).toBe(123457);
    expect(round(0)).toBe(0);
  });

  it('parses the published table: tools, rows, NA as null', () => {
    const p = parsePublishedCoverage(TABLE);
    expect(p.tools).toEqual(['llguidance', 'llama.cpp', 'XGrammar', 'Outlines']);
    expect(p.rows.GlaiveAI).toEqual({ llguidance: 0.96, 'llama.cpp': 0.95, XGrammar: 0.93, Outlines: 0.95 });
    expect(p.rows.Snowplow.XGrammar).toBeNull();
    expect(Object.keys(p.rows)).toEqual(['GlaiveAI', 'GitHub Easy', 'Snowplow']);
  });

  it('reads the real README: the eight published subsets', () => {
    const readme = join(SHARED, 'schemas/README.md');
    expect(existsSync(readme), `${readme} is missing: put the shared test data (../shared, with schemas/README.md) beside the repository, or set INTAB_SHARED to it`).toBe(true);
    const p = parsePublishedCoverage(readFileSync(readme, 'utf8'));
    expect(Object.keys(p.rows).sort()).toEqual(['GitHub Easy', 'GitHub Hard', 'GitHub Medium', 'GlaiveAI', 'JsonSchemaStore', 'Kubernetes', 'Snowplow', 'Washington Post']);
    expect(p.rows.Kubernetes.llguidance).toBe(0.91);
  });

  it('coverage rows: compiled / total per subset beside the published row, compared with llguidance', () => {
    const results = [
      ...Array.from({ length: 10 }, (_, i) => ({ subset: 'Glaiveai2K', compiled: i < 9 })),
      ...Array.from({ length: 4 }, () => ({ subset: 'Github_easy', compiled: true })),
      { subset: 'Github_trivial', compiled: false },
    ];
    const rows = coverageRows(results, parsePublishedCoverage(TABLE));
    expect(rows.map((r) => r.subset)).toEqual(['Glaiveai2K', 'Github_easy', 'Github_trivial']);
    expect(rows[0]).toMatchObject({ label: 'GlaiveAI', compiled: 9, total: 10, coverage: 0.9, vs_llguidance: -0.06, meets_llguidance: false });
    expect(rows[0].published).toEqual({ llguidance: 0.96, 'llama.cpp': 0.95, XGrammar: 0.93, Outlines: 0.95 });
    expect(rows[1]).toMatchObject({ label: 'GitHub Easy', coverage: 1, vs_llguidance: 0.14, meets_llguidance: true });
    expect(rows[2]).toMatchObject({ label: 'GitHub Trivial', compiled: 0, total: 1, coverage: 0, published: null, vs_llguidance: null, meets_llguidance: null });
  });

  it('plain-text tables pad columns; missing cells are "-"', () => {
    const text = formatTable(['subset', 'coverage', 'llguidance'], [{ subset: 'Kubernetes', coverage: 0.95, llguidance: 0.91 }, { subset: 'x', coverage: 1 }]);
    expect(text.split('\n')).toEqual(['subset      coverage  llguidance', 'Kubernetes  0.95      0.91', 'x           1         -']);
  });
});

describe('bench grammar walk helpers', () => {
  it('searchEnd finishes a document the schema accepts, and gives up past its budget', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' }, tags: { type: 'array', items: { type: 'integer' }, minItems: 2 } }, required: ['name', 'tags'] };
    const g = compileJsonSchema(schema);
    const path = searchEnd(g, g.initial)!;
    const text = new TextDecoder().decode(path);
    expect(JSON.parse(text)).toMatchObject({ name: expect.any(String), tags: expect.any(Array) });
    expect(checkDocument({ id: 't', subset: 't', schema }, text)).toEqual({ valid: true });
    expect(checkDocument({ id: 't', subset: 't', schema }, '{"name":"a","tags":[1]}').valid).toBe(false);
    expect(checkDocument({ id: 't', subset: 't', schema }, '{"name":').valid).toBe(false);
    expect(searchEnd(g, g.initial, 3)).toBeNull();
  });

  it('the seeded generator repeats', () => {
    const a = mulberry32(5);
    const b = mulberry32(5);
    const xs = Array.from({ length: 5 }, () => a());
    expect(xs).toEqual(Array.from({ length: 5 }, () => b()));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });
});
