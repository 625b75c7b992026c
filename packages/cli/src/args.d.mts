// Types of args.mjs for the TypeScript callers (the Node runtime, the tests).
export declare function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string | boolean> };
