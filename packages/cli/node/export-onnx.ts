// `intab export-onnx` in Node (loaded through Vite's SSR loader by packages/cli/src/export-onnx.mjs, so the workspace's
// TypeScript runs as it is): a GGUF or Hugging Face checkpoint on disk written as an onnx-community folder by
// @intab/onnx (config.json, tokenizer files, onnx/model.onnx + onnx/model.onnx_data). `intab bench compare` uses it to
// give transformers.js the very graph intab's onnx backends run.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { openGguf, openHfFolder, pathSource, type ModelFiles } from '@intab/model';
import { onnxFolderFiles } from '@intab/onnx';

/** A model as resolveModel (packages/cli/src/model-files.mjs) describes it, its files in `dir`. */
export interface ModelOnDisk {
  kind: 'gguf' | 'hf';
  dir?: string;
  files: string[];
}

/** Writes `model` as an ONNX folder into `out` (created); resolves with the paths written and their bytes. */
export async function exportOnnxFolder(model: ModelOnDisk, out: string): Promise<{ path: string; bytes: number }[]> {
  if (!model.dir) throw new Error('export-onnx reads a model on disk: give --model a .gguf file or a Hugging Face folder');
  const paths = model.files.map((f) => join(model.dir!, f));
  let files: ModelFiles;
  if (model.kind === 'gguf') files = await openGguf(await Promise.all(paths.map((p) => pathSource(p))));
  else {
    if (model.files.some((f) => f.endsWith('.onnx'))) throw new Error(`${model.dir} is an ONNX folder already`);
    files = await openHfFolder(new Map(await Promise.all(model.files.map(async (f, i) => [f, await pathSource(paths[i])] as const))));
  }
  const written: { path: string; bytes: number }[] = [];
  for (const [name, bytes] of await onnxFolderFiles(files)) {
    const path = join(out, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
    written.push({ path, bytes: bytes.byteLength });
  }
  return written;
}
