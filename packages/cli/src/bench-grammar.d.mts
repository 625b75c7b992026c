// Types of bench-grammar.mjs for the TypeScript tests.
export declare const BENCH_TOKENIZERS: string[];
export declare const DEFAULT_DECODE_MODEL: { like: string; dtype: string; tokenizer: string; seed: number };
export declare const DECODE_PROMPT: string;
export declare function grammarBenchOptions(flags: Record<string, string | boolean>): {
  json: boolean;
  tokenizers: string[];
  schemas: number | undefined;
  seed: number;
  decode: boolean;
  model: string | undefined;
  maxTokens: number;
  repeats: number;
  temperature: number;
  decodeSchema: string | undefined;
  timeoutS: number;
  headed: boolean;
};
export declare function benchGrammar(flags: Record<string, string | boolean>): Promise<number>;
