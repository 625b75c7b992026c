// Types of model-files.mjs for the TypeScript callers (the Node runtime).
export declare const MODEL_PREFIX: string;
export declare const DRAFT_PREFIX: string;
export declare function resolveModel(spec: string, o?: { prefix?: string; flag?: string }): { kind: 'gguf' | 'hf'; dir?: string; files: string[]; urls: string[] };
