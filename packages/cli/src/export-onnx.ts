// `intab export-onnx --model <gguf file | HF folder> --out DIR`: the checkpoint as an ONNX folder in the
// onnx-community layout (config.json, tokenizer files, onnx/model.onnx, onnx/model.onnx_data), written by @intab/onnx:
// the graph intab's onnx backends run, which transformers.js and onnxruntime load too. `intab bench compare` uses it
// to give transformers.js the very graph intab's onnx backends run.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { openGguf, openHfFolder, pathSource, type ModelFiles } from '@intab/model';
import { onnxFolderFiles } from '@intab/onnx';
import type { Flags } from './args.ts';
import { resolveModel, type ResolvedModel } from './model-files.ts';

/** Writes `model` (on disk) as an ONNX folder into `out` (created); resolves with the paths written and their bytes. */
export async function exportOnnxFolder(model: ResolvedModel, out: string): Promise<{ path: string; bytes: number }[]> {
  const dir = model.dir;
  if (!dir) throw new Error('export-onnx reads a model on disk: give --model a .gguf file or a Hugging Face folder');
  const paths = model.files.map((f) => join(dir, f));
  let files: ModelFiles;
  if (model.kind === 'gguf') files = await openGguf(await Promise.all(paths.map((p) => pathSource(p))));
  else {
    if (model.files.some((f) => f.endsWith('.onnx'))) throw new Error(`${dir} is an ONNX folder already`);
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

/** Writes the ONNX folder of `spec` (a .gguf file or a Hugging Face folder) into `out`; resolves with the files written. */
export function writeOnnxFolder(spec: string, out: string): Promise<{ path: string; bytes: number }[]> {
  return exportOnnxFolder(resolveModel(spec), out);
}

export async function exportOnnx(flags: Flags): Promise<number> {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder> is required');
  if (typeof flags.out !== 'string') throw new Error('--out DIR is required: the folder to write (config.json, onnx/model.onnx, onnx/model.onnx_data)');
  const out = resolve(flags.out);
  if (existsSync(out) && readdirSync(out).length > 0) throw new Error(`--out ${flags.out}: the folder is not empty; give a new or empty one`);
  const written = await writeOnnxFolder(flags.model, out);
  for (const f of written) console.log(`${f.path}\t${f.bytes} bytes`);
  return 0;
}
