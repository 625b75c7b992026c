// Types of job.mjs for the TypeScript callers (the Node runtime, the tests).
export declare function jobFromFlags(
  flags: Record<string, string | boolean>,
  mode: 'generate' | 'bench' | 'speculative',
  model: { kind: 'gguf' | 'hf'; files: string[]; urls: string[] },
  draft?: { kind: 'gguf' | 'hf'; files: string[]; urls: string[] },
): {
  mode: 'generate' | 'bench' | 'speculative';
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
  draft?: { kind: 'gguf' | 'hf'; files: string[]; urls: string[] };
  speculative?: string | { method: string; k?: number; adaptive?: boolean };
  methods?: string[];
  specK?: number;
  groundedPrompt?: string;
  repeats?: number;
  format?: { responseFormat?: Record<string, unknown>; grammar?: string; regex?: string };
};
export declare function formatFromFlags(
  flags: Record<string, string | boolean>,
  mode: 'generate' | 'bench' | 'speculative',
): { responseFormat?: Record<string, unknown>; grammar?: string; regex?: string } | undefined;
