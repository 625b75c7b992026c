// `intab bench compare --model M`: intab's three backends against the peers (transformers.js on the same ONNX
// graph, wasm and WebGPU; wllama on the GGUF) in one headless Chromium sitting (packages/cli/page/bench-systems.ts).
// Here: the flags are checked, a checkpoint is written as an ONNX folder (intab export-onnx) into a temporary folder
// so the peers and intab's onnx backends run the very same graph, and the page's records are printed as JSON lines.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wholeFlag, type Flags } from './args.ts';
import { runJob } from './browser.ts';
import { writeOnnxFolder } from './export-onnx.ts';
import { ONNX_PREFIX, resolveModel } from './model-files.ts';

/** What --systems takes (system/backend), in report order; the page (bench-systems.ts) runs the list it is sent. */
export const SYSTEMS = ['intab/webgpu', 'intab/onnx-wasm', 'intab/onnx-webgpu', 'transformers.js/wasm', 'transformers.js/webgpu', 'wllama/wasm'];

/**
 * The systems to run: --systems, else every one that applies to the model (intab/webgpu needs a checkpoint, wllama a
 * GGUF).
 */
export function systemsFromFlags(flags: Flags, model: { onnx: boolean; gguf: boolean }): string[] {
  const applies = (s: string) => (s !== 'intab/webgpu' || !model.onnx) && (s !== 'wllama/wasm' || model.gguf);
  if (flags.systems === undefined) return SYSTEMS.filter(applies);
  if (typeof flags.systems !== 'string') throw new Error(`--systems needs a comma-separated list of ${SYSTEMS.join(', ')}`);
  const list = flags.systems.split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of list) {
    if (!SYSTEMS.includes(s)) throw new Error(`--systems: '${s}' is not one of ${SYSTEMS.join(', ')}`);
    if (!applies(s)) throw new Error(`--systems: ${s} cannot run this model (${s === 'wllama/wasm' ? 'wllama runs GGUF files' : "intab's WebGPU kernels run GGUF and safetensors checkpoints, not ONNX graphs"})`);
  }
  if (!list.length) throw new Error('--systems is empty');
  return list;
}

export async function benchSystems(flags: Flags): Promise<number> {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | ONNX folder> is required');
  const whole = (name: string, dflt: number, min: number, max: number) => wholeFlag(flags, name, dflt, min, max);
  const model = resolveModel(flags.model);
  if (!model.dir) throw new Error('--model: bench compare reads a model on disk (the peers load it from the CLI\'s server)');
  const onnx = model.files.some((f) => f.endsWith('.onnx'));
  const gguf = model.kind === 'gguf' && model.files.length === 1;
  const systems = systemsFromFlags(flags, { onnx, gguf });
  const promptTokens = whole('prompt-tokens', 32, 1, 4096);
  const maxTokens = whole('max-tokens', 64, 2, 4096);
  const rounds = whole('rounds', 3, 1, 20);
  const seed = whole('seed', 0, 0, 2 ** 31 - 1);
  // The peers' ONNX folder: the model itself, or the checkpoint written as one (the graph intab's onnx backends run).
  const tmp = onnx ? undefined : mkdtempSync(join(tmpdir(), 'intab-compare-'));
  try {
    let onnxFiles = model.files;
    if (tmp) {
      process.stderr.write('writing the ONNX folder for the peers\n');
      const written = await writeOnnxFolder(flags.model, tmp);
      onnxFiles = written.map((f) => f.path.slice(tmp.length + 1).split('\\').join('/'));
    }
    const job = {
      mode: 'compare',
      kind: model.kind,
      files: model.files,
      urls: model.urls,
      onnxUrl: tmp ? ONNX_PREFIX : model.urls[0].slice(0, model.urls[0].lastIndexOf('/') + 1),
      onnxFiles,
      ...(gguf ? { ggufUrl: model.urls[0] } : {}),
      systems,
      rounds,
      promptTokens,
      maxTokens,
      temperature: 0,
      seed,
    };
    const failed = await runJob({
      timeoutS: Number(flags.timeout ?? 3600),
      headed: Boolean(flags.headed),
      modelDir: model.dir,
      onnxDir: tmp,
      job,
      onRecord(r) {
        if (r.type !== 'bench' && r.type !== 'compare-run') return;
        const { type, ...rest } = r;
        // Runs only with --json; the per-system lines and the summary always.
        if (type === 'bench' || flags.json) process.stdout.write(`${JSON.stringify(type === 'compare-run' ? { type, ...rest } : rest)}\n`);
      },
    });
    return failed ? 1 : 0;
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
