// Types of grammar-stats.mjs for the TypeScript tests and the bench module.
export interface Summary {
  n: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}
export declare function percentile(sorted: ArrayLike<number>, p: number): number;
export declare function summarize(values: readonly number[], digits?: number): Summary;
export declare function round(x: number, digits?: number): number;
export declare const SUBSET_LABELS: Readonly<Record<string, string>>;
export interface PublishedCoverage {
  tools: string[];
  rows: Record<string, Record<string, number | null>>;
}
export declare function parsePublishedCoverage(markdown: string): PublishedCoverage;
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
export declare function coverageRows(results: readonly { subset: string; compiled: boolean }[], published: { rows: Record<string, Record<string, number | null>> }): CoverageRow[];
export declare function formatTable(columns: readonly string[], rows: readonly Record<string, unknown>[]): string;
