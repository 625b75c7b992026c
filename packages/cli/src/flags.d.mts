export declare function flagsByCommand(usage: string): Map<string, Set<string>>;
export declare function checkFlags(command: string, flags: Record<string, string | boolean>, known: Map<string, Set<string>>, also?: string[]): void;
