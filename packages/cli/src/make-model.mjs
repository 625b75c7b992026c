// @ts-check
// `intab make-model`: writes a random-weight GGUF with a real model's shapes (for decode benchmarks).
// The generator is TypeScript in @intab/model; Vite's SSR loader runs it here without a build step.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'vite';
import { ROOT } from '../../../scripts/ensure-install.mjs';

/** @param {Record<string, string | boolean>} flags */
export async function makeModel(flags) {
  const like = String(flags.like ?? 'smollm2-135m');
  const dtype = String(flags.dtype ?? 'q4_0');
  const out = flags.out;
  if (typeof out !== 'string') throw new Error('--out <file.gguf> is required');
  const server = await createServer({
    configFile: join(ROOT, 'vite.config.ts'),
    root: ROOT,
    logLevel: 'error',
    server: { middlewareMode: true, hmr: false, watch: null },
    appType: 'custom',
  });
  try {
    const mod = await server.ssrLoadModule('/packages/model/src/reference/synthetic.ts');
    const shape = mod.SYNTHETIC_SHAPES[like];
    if (!shape) throw new Error(`--like ${like}: known shapes are ${Object.keys(mod.SYNTHETIC_SHAPES).join(', ')}`);
    const bytes = mod.syntheticGguf(shape, dtype, Number(flags.seed ?? 1));
    writeFileSync(out, bytes);
    console.log(JSON.stringify({ out, like, dtype, bytes: bytes.byteLength }));
  } finally {
    await server.close();
  }
  return 0;
}
