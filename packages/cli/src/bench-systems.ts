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
import { llamaCppLine, llamaCppRuns } from './bench-llamacpp.ts';
import { openGguf, openTokenizer, pathSource } from '@intab/model';
import { cpuRunnable } from '@intab/onnx';
import { benchPromptIds } from '../page/bench-prompt.ts';

/**
 * What --systems takes (system/backend), in report order; the page (bench-systems.ts) runs the list it is sent, and
 * llama.cpp/native (node-llama-cpp's prebuilt CPU build) runs here after it.
 */
export const SYSTEMS = ['intab/webgpu', 'intab/onnx-wasm', 'intab/onnx-webgpu', 'transformers.js/wasm', 'transformers.js/webgpu', 'wllama/wasm', 'llama.cpp/native'];
const NATIVE = 'llama.cpp/native';
/** Earlier names of systems, still taken by --systems. */
const ALIASES: Readonly<Record<string, string>> = { 'llama.cpp/cpu': NATIVE };

/**
 * The systems to run: --systems, else every one that applies to the model (intab/webgpu needs a checkpoint, wllama and
 * llama.cpp a GGUF). A bare name stands for its backends that apply: `--systems intab,llama.cpp`.
 */
export function systemsFromFlags(flags: Flags, model: { onnx: boolean; gguf: boolean }): string[] {
  const applies = (s: string) => (s !== 'intab/webgpu' || !model.onnx) && ((s !== 'wllama/wasm' && s !== NATIVE) || model.gguf);
  if (flags.systems === undefined) return SYSTEMS.filter(applies);
  if (typeof flags.systems !== 'string') throw new Error(`--systems needs a comma-separated list of ${SYSTEMS.join(', ')}`);
  const asked = flags.systems.split(',').map((s) => s.trim()).filter(Boolean).map((s) => ALIASES[s] ?? s);
  const list: string[] = [];
  for (const s of asked) {
    const family = s.includes('/') ? [] : SYSTEMS.filter((x) => x.startsWith(`${s}/`));
    if (!SYSTEMS.includes(s) && family.length === 0) throw new Error(`--systems: '${s}' is not one of ${SYSTEMS.join(', ')} (or a name before the slash)`);
    if (family.length > 0) {
      const usable = family.filter(applies);
      if (usable.length === 0) throw new Error(`--systems: ${s} cannot run this model (${s === 'intab' ? "intab's WebGPU kernels run GGUF and safetensors checkpoints, not ONNX graphs" : `${s} runs GGUF files`})`);
      list.push(...usable.filter((x) => !list.includes(x)));
      continue;
    }
    if (!applies(s)) throw new Error(`--systems: ${s} cannot run this model (${s === 'wllama/wasm' || s === NATIVE ? `${s.split('/')[0]} runs GGUF files` : "intab's WebGPU kernels run GGUF and safetensors checkpoints, not ONNX graphs"})`);
    if (!list.includes(s)) list.push(s);
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
  let systems = systemsFromFlags(flags, { onnx, gguf });
  const native = systems.includes(NATIVE);
  const threads = whole('threads', 1, 1, 256);
  const promptTokens = whole('prompt-tokens', 32, 1, 4096);
  const maxTokens = whole('max-tokens', 64, 2, 4096);
  const rounds = whole('rounds', 3, 1, 20);
  const seed = whole('seed', 0, 0, 2 ** 31 - 1);
  // The peers' ONNX folder: the model itself, or the checkpoint written as one (the graph intab's onnx backends run),
  // when a system asked runs one.
  // intab's onnx-wasm runs a GGUF its CPU kernels read (q4_0 / q8_0) itself, as createEngine does.
  const cpuKernels = gguf && cpuRunnable(await openGguf(await pathSource(join(model.dir, model.files[0])))) === undefined;
  const runsOnnx = (s: string) => (s.startsWith('intab/onnx-') && !(s === 'intab/onnx-wasm' && cpuKernels)) || s.startsWith('transformers.js/');
  const tmp = onnx || !systems.some(runsOnnx) ? undefined : mkdtempSync(join(tmpdir(), 'intab-compare-'));
  try {
    let onnxFiles = model.files;
    if (tmp) {
      process.stderr.write('writing the ONNX folder for the peers\n');
      try {
        const written = await writeOnnxFolder(flags.model, tmp);
        onnxFiles = written.map((f) => f.path.slice(tmp.length + 1).split('\\').join('/'));
      } catch (err) {
        // a model no ONNX graph runs (Qwen3.5): each ONNX system's line says why, the others run
        for (const name of systems.filter(runsOnnx)) {
          const [system, backend] = name.split('/');
          process.stdout.write(`${JSON.stringify({ bench: 'compare', system, backend, error: `${(err as Error).name}: ${(err as Error).message}` })}\n`);
        }
        systems = systems.filter((s) => !runsOnnx(s));
      }
    }
    const job = {
      mode: 'compare',
      kind: model.kind,
      files: model.files,
      urls: model.urls,
      onnxUrl: tmp ? ONNX_PREFIX : model.urls[0].slice(0, model.urls[0].lastIndexOf('/') + 1),
      onnxFiles,
      ...(gguf ? { ggufUrl: model.urls[0] } : {}),
      systems: systems.filter((s) => s !== NATIVE),
      rounds,
      promptTokens,
      maxTokens,
      temperature: 0,
      seed,
      // intab's CPU kernels on as many threads as llama.cpp (runJob isolates the page above 1); the peers keep one
      ...(threads > 1 ? { cpuThreads: threads } : {}),
    };
    const intab = new Map<string, { decode_tok_s: number; prefill_tok_s: number; ttft_ms: number; ids?: number[] }>();
    const speeds = new Map<string, number>();
    let summary: Record<string, unknown> | undefined;
    const failed = job.systems.length === 0 ? false : await runJob({
      timeoutS: Number(flags.timeout ?? 3600),
      headed: Boolean(flags.headed),
      modelDir: model.dir,
      onnxDir: tmp,
      job,
      onRecord(r) {
        if (r.type !== 'bench' && r.type !== 'compare-run') return;
        const { type, ...rest } = r;
        // the summary closes the output, after llama.cpp's line when it runs
        if (type === 'bench' && rest.summary === true && native) return void (summary = rest);
        if (type === 'bench' && rest.error === undefined && typeof rest.decode_tok_s === 'number') speeds.set(`${String(rest.system)}/${String(rest.backend)}`, rest.decode_tok_s);
        if (type === 'bench' && rest.system === 'intab' && rest.error === undefined) intab.set(`intab/${String(rest.backend)}`, rest as never);
        // Runs only with --json; the per-system lines and the summary always.
        if (type === 'bench' || flags.json) process.stdout.write(`${JSON.stringify(type === 'compare-run' ? { type, ...rest } : rest)}\n`);
      },
    });
    if (native) {
      // the page's seeded prompt ids (page/bench-systems.ts), for llama.cpp on this CPU
      const file = join(model.dir, model.files[0]);
      const gguf = await openGguf(await pathSource(file));
      const promptIds = benchPromptIds(gguf.config, openTokenizer(gguf), promptTokens, seed);
      process.stderr.write(`llama.cpp on the CPU (${threads} thread${threads === 1 ? '' : 's'})\n`);
      try {
        const { runs, loadMs } = await llamaCppRuns(file, promptIds, maxTokens, rounds, threads);
        if (flags.json) runs.forEach((run, round) => process.stdout.write(`${JSON.stringify({ type: 'compare-run', bench: 'compare', system: 'llama.cpp', backend: 'native', round, decode_tok_s: run.decodeTokS, prefill_tok_s: run.prefillTokS, ttft_ms: run.ttftMs, tokens: run.ids.length })}\n`));
        const line = llamaCppLine(runs, { threads, promptTokens, rounds, loadMs, intab });
        speeds.set(NATIVE, line.decode_tok_s as number);
        process.stdout.write(`${JSON.stringify(line)}\n`);
      } catch (err) {
        // as the page reports a system that fails to load: the line says why, the others stand
        process.stdout.write(`${JSON.stringify({ bench: 'compare', system: 'llama.cpp', backend: 'native', error: `${(err as Error).name}: ${(err as Error).message}` })}\n`);
      }
    }
    if (summary) {
      const fastest = [...speeds].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
      process.stdout.write(`${JSON.stringify({ ...summary, fastest_system: fastest })}\n`);
    }
    return failed ? 1 : 0;
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
