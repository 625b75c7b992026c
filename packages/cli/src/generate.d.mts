// Types of generate.mjs for the TypeScript tests.
export declare function jobFromFlags(
  flags: Record<string, string | boolean>,
  mode: 'generate' | 'bench',
  model: { kind: 'gguf' | 'hf'; files: string[]; urls: string[] },
): {
  mode: 'generate' | 'bench';
  kind: 'gguf' | 'hf';
  files: string[];
  urls: string[];
  promptIds?: number[];
  prompt?: string;
  chat?: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  quantize?: string | boolean;
  ignoreEos: boolean;
  promptTokens: number;
  concurrency?: number;
  abortAfterTokens?: number;
  batch?: number[];
};
export declare function generate(flags: Record<string, string | boolean>, mode: 'generate' | 'bench'): Promise<number>;
