// Pure helpers of `intab bench grammar`: percentiles, the JSONSchemaBench coverage table beside the published
// figures (../shared/schemas/README.md), and the plain-text table printed without --json.

/**
 * The p-quantile (0..1) of ascending `sorted` by nearest rank: the smallest value with at least p of the values at
 * or below it (p50 of [1, 2, 3, 4] is 2, p99 of 100 values is the 99th). NaN when empty.
 */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** n, p50, p90, p99, max and mean of `values`: what summarize() gives (null figures when there are none). */
export interface Summary {
  n: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/**
 * n, p50, p90, p99, max and mean of `values` (any order), each rounded to `digits` significant digits; null
 * figures when there are no values.
 */
export function summarize(values: readonly number[], digits = 3): Summary {
  if (values.length === 0) return { n: 0, p50: null, p90: null, p99: null, max: null, mean: null };
  const s = Float64Array.from(values).sort();
  const r = (x: number) => round(x, digits);
  return {
    n: s.length,
    p50: r(percentile(s, 0.5)),
    p90: r(percentile(s, 0.9)),
    p99: r(percentile(s, 0.99)),
    max: r(s[s.length - 1]),
    mean: r(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

/** `x` to `digits` significant digits (integers of more digits stay whole). */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x) || x === 0) return x;
  if (Math.abs(x) >= 10 ** digits) return Math.round(x);
  return Number(x.toPrecision(digits));
}

/** JSONSchemaBench subset ids (the sample's `subset`) → the row names of the published table. */
export const SUBSET_LABELS: Readonly<Record<string, string>> = Object.freeze({
  Glaiveai2K: 'GlaiveAI',
  Github_trivial: 'GitHub Trivial',
  Github_easy: 'GitHub Easy',
  Github_medium: 'GitHub Medium',
  Github_hard: 'GitHub Hard',
  Github_ultra: 'GitHub Ultra',
  Kubernetes: 'Kubernetes',
  Snowplow: 'Snowplow',
  WashingtonPost: 'Washington Post',
  JsonSchemaStore: 'JsonSchemaStore',
});

/** The published figures: tool names, and per row name each tool's coverage (null where the table says NA). */
export interface PublishedCoverage {
  tools: string[];
  rows: Record<string, Record<string, number | null>>;
}

/**
 * The published coverage table of ../shared/schemas/README.md (`| subset | llguidance | llama.cpp | ... |`):
 * row name → tool → coverage (0..1), null where the table says NA. Rows that are not numbers are skipped.
 */
export function parsePublishedCoverage(markdown: string): PublishedCoverage {
  let tools: string[] = [];
  const rows: Record<string, Record<string, number | null>> = {};
  const cells = (line: string) => line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  for (const line of markdown.split('\n')) {
    if (!line.trim().startsWith('|')) continue;
    const c = cells(line);
    if (c[0].toLowerCase() === 'subset') {
      tools = c.slice(1);
      continue;
    }
    if (!tools.length || c.every((x) => /^:?-+:?$/.test(x))) continue;
    const row: Record<string, number | null> = {};
    let numbers = 0;
    tools.forEach((tool, i) => {
      const v = c[i + 1];
      const n = Number(v);
      if (v !== undefined && v !== '' && Number.isFinite(n)) {
        row[tool] = n;
        numbers++;
      } else row[tool] = null;
    });
    if (numbers > 0) rows[c[0]] = row;
  }
  return { tools, rows };
}

/** One subset's coverage row (coverageRows). */
export interface CoverageRow {
  subset: string;
  label: string;
  compiled: number;
  total: number;
  coverage: number;
  published: Record<string, number | null> | null;
  vs_llguidance: number | null;
  meets_llguidance: boolean | null;
}

/**
 * Coverage per subset (compiled / total), in the order subsets first appear, beside the published figures of the
 * subset's row (null when the table has none, e.g. GitHub Trivial and Ultra). `vs_llguidance` is coverage minus
 * llguidance's figure; `meets_llguidance` whether it is at least that (null without a figure). `results`: one per schema.
 */
export function coverageRows(results: readonly { subset: string; compiled: boolean }[], published: Pick<PublishedCoverage, 'rows'>): CoverageRow[] {
  const by = new Map<string, { compiled: number; total: number }>();
  for (const r of results) {
    const c = by.get(r.subset) ?? { compiled: 0, total: 0 };
    c.total++;
    if (r.compiled) c.compiled++;
    by.set(r.subset, c);
  }
  return [...by].map(([subset, { compiled, total }]) => {
    const label = SUBSET_LABELS[subset] ?? subset;
    const pub = published.rows[label] ?? null;
    const coverage = total > 0 ? round(compiled / total, 3) : 0;
    const ll = pub?.llguidance ?? null;
    return {
      subset,
      label,
      compiled,
      total,
      coverage,
      published: pub,
      vs_llguidance: ll === null ? null : round(coverage - ll, 3),
      meets_llguidance: ll === null ? null : coverage >= ll,
    };
  });
}

/** A plain-text table: a header line, then one line per row, columns padded to their widest cell. */
export function formatTable(columns: readonly string[], rows: readonly Record<string, unknown>[]): string {
  const text = (v: unknown) => (v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const grid = [columns.map(String), ...rows.map((r) => columns.map((c) => text(r[c])))];
  const widths = columns.map((_, i) => Math.max(...grid.map((line) => line[i].length)));
  return grid.map((line) => line.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}
