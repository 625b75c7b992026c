// Types of args.mjs for the TypeScript callers (the Node runtime, the tests).
export declare function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string | boolean> };
export declare function wholeFlag(flags: Record<string, string | boolean>, name: string, dflt: number, min: number, max: number, example?: string | number): number;
