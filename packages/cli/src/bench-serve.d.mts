// Types of bench-serve.mjs for the TypeScript tests.
export declare function benchServeOptions(flags: Record<string, string | boolean>): {
  url: string | undefined;
  apiKey: string | undefined;
  clients: number;
  seconds: number;
  maxTokens: number;
  promptTokens: number;
  seed: number;
  transport: 'http1' | 'h2';
};
export declare function benchServe(flags: Record<string, string | boolean>): Promise<number>;
