// Types of generate.mjs for the TypeScript tests.
export { jobFromFlags, formatFromFlags } from './job.mjs';
export declare function generate(flags: Record<string, string | boolean>, mode: 'generate' | 'bench' | 'speculative'): Promise<number>;
