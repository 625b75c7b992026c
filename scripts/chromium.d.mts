export declare function chromiumPath(): string;
export declare function chromiumArgs(): string[];
