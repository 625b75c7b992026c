// Types of records.mjs for the TypeScript callers (the Node runtime).
export declare function modelRecordPrinter(flags: Record<string, string | boolean>, mode: 'generate' | 'bench' | 'speculative', extra?: Record<string, unknown>): (r: any) => void;
export declare function kernelRecordPrinter(flags: Record<string, string | boolean>, extra?: Record<string, unknown>): { onRecord: (r: any) => void; failed: () => boolean };
export declare function progressLine(r: { model?: string; loaded: number; total: number }): string;
