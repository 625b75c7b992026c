export declare function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string | boolean> };
export declare function main(argv: string[]): Promise<number>;
