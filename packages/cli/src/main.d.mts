export declare function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string | boolean> };
export declare function main(argv: string[]): Promise<number>;
/** The usage text: every command's synopsis and flags (the CLI refuses flags it does not list). */
export declare const USAGE: string;
