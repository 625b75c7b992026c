// Types of bench-compare.mjs for the TypeScript tests.
export declare function compareOptions(flags: Record<string, string | boolean>): { ref: string; rounds: number; args: string[] };
export declare function benchCompare(flags: Record<string, string | boolean>): Promise<number>;
