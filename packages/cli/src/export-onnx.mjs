// @ts-check
// `intab export-onnx --model <gguf file | HF folder> --out DIR`: the checkpoint as an ONNX folder in the
// onnx-community layout (config.json, onnx/model.onnx, onnx/model.onnx_data), the graph intab's onnx backends run,
// which transformers.js and onnxruntime load too. The writer is the workspace's TypeScript (packages/cli/node/
// export-onnx.ts), run in Node through Vite's SSR module loader.
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { withSsr } from './make-model.mjs';
import { resolveModel } from './model-files.mjs';

/**
 * Writes the ONNX folder of `spec` into `out`; resolves with the files written.
 * @param {string} spec a .gguf file or a Hugging Face folder
 * @param {string} out
 * @returns {Promise<{ path: string, bytes: number }[]>}
 */
export async function writeOnnxFolder(spec, out) {
  const model = resolveModel(spec);
  return withSsr(async (server) => (await server.ssrLoadModule('/packages/cli/node/export-onnx.ts')).exportOnnxFolder(model, out));
}

/** @param {Record<string, string | boolean>} flags */
export async function exportOnnx(flags) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder> is required');
  if (typeof flags.out !== 'string') throw new Error('--out DIR is required: the folder to write (config.json, onnx/model.onnx, onnx/model.onnx_data)');
  const out = resolve(flags.out);
  if (existsSync(out) && readdirSync(out).length > 0) throw new Error(`--out ${flags.out}: the folder is not empty; give a new or empty one`);
  const written = await writeOnnxFolder(flags.model, out);
  for (const f of written) console.log(`${f.path}\t${f.bytes} bytes`);
  return 0;
}
