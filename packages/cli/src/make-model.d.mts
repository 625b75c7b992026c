// Types of make-model.mjs for the TypeScript tests.
import type { ViteDevServer } from 'vite';
export declare const MODEL_TOKENIZERS: string[];
export interface MakeModelOptions {
  like: string;
  dtype: string;
  out: string;
  seed: number;
  tokenizer?: string;
}
export declare function makeModelOptions(flags: Record<string, string | boolean>): MakeModelOptions;
export declare function withSsr<T>(fn: (server: ViteDevServer) => Promise<T>): Promise<T>;
export declare function writeSyntheticModel(
  server: ViteDevServer,
  o: MakeModelOptions,
): Promise<{ out: string; like: string; dtype: string; arch: string; vocab: number; tokenizer: string | null; bytes: number }>;
export declare function makeModel(flags: Record<string, string | boolean>): Promise<number>;
