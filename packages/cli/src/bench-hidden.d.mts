// Types of bench-hidden.mjs for the TypeScript tests.
export declare function hiddenJobFromFlags(flags: Record<string, string | boolean>): {
  model: { kind: 'gguf' | 'hf'; dir?: string; files: string[]; urls: string[] };
  backend: string;
  quantize?: 'q8_0' | 'q4_0';
  promptIds: number[];
  tokens: number;
  rounds: number;
};
export declare function benchHidden(flags: Record<string, string | boolean>): Promise<number>;
