// Types of bench-soak.mjs for the TypeScript tests.
export declare const FLAT_TOLERANCE: number;
export declare function soakOptions(flags: Record<string, string | boolean>): {
  model: string;
  draft: string | undefined;
  minutes: number;
  everyS: number;
  intervals: number;
  streams: number;
  seed: number;
  kvMib: number;
  maxBatch: number;
  json: boolean;
};
export declare function summaryLine(lines: Record<string, any>[], drained: Record<string, any>, ready: Record<string, any>, seconds: number): Record<string, any>;
export declare function benchSoak(flags: Record<string, string | boolean>): Promise<number>;
