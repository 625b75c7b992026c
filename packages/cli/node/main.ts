// The CLI's Node runtime (`intab generate|bench decode|bench speculative|bench kernels --runtime node`): the same job
// (job.ts), the same page code (../page/run-job.ts: Engine, Runner, kernels, WGSL) and the same record printing
// (records.ts) as the browser runtime, but in this process, the model read from disk: intab's kernels on Dawn's
// GPUDevice (dawn.ts), or onnxruntime-node (ort.ts) for --backend auto|onnx-wasm|onnx-webgpu, chosen by the browser's
// rule (backend.ts). Built into one file (intab-node.mjs, by ../bin/intab.mjs) that runs with a plain `node` and
// dawn.node beside it.

import type { Backend } from '@intab/engine';
import type { Gpu } from '@intab/gpu';
import type { ModelFiles } from '@intab/model';
import { parseArgs } from '../src/args.ts';
import { jobFromFlags } from '../src/job.ts';
import { DRAFT_PREFIX, resolveModel } from '../src/model-files.ts';
import { kernelRecordPrinter, modelRecordPrinter, progressLine, type PageRecord } from '../src/records.ts';
import { runModelJob } from '../page/run-job.ts';
import { openModel, setReportSink, type Job } from '../page/shared.ts';
import { makeModel } from '../src/make-model.ts';
import { chooseNodeBackend } from './backend.ts';
import { DAWN_BACKENDS, requestDawnGpu, type DawnGpu } from './dawn.ts';
import type { DawnBackend } from './errors.ts';
import { runDeviceKit } from './kit-run.ts';
import { onDisk, sourceOf } from './model-source.ts';

export const NODE_USAGE = `usage (Node runtime: Dawn or onnxruntime-node, no browser):
  intab generate|bench decode|bench speculative --runtime node --model <gguf file | HF folder> [flags of the browser runtime]
  intab bench kernels --runtime node [--quick] [--filter TEXT] [--json]
  Common: [--dawn-backend auto|vulkan|opengl|...] [--dawn PATH/dawn.node] [--adapter NAME] [--timeout SECONDS]
      --backend webgpu (the default) runs intab's kernels on Dawn; auto takes Dawn's adapter when it is a hardware one,
      else onnxruntime-node's CPU execution provider (as the browser takes ORT's wasm); onnx-wasm runs on
      onnxruntime-node's CPU provider, onnx-webgpu on its WebGPU provider where it has one.
      --dawn-backend: Dawn's backend (or INTAB_DAWN_BACKEND); auto (the default) tries Vulkan, then OpenGL (Mesa's
      llvmpipe through EGL on a machine without a GPU, as a compatibility-mode adapter: f32, no subgroups).
      --dawn: the dawn.node to load (or INTAB_DAWN); else the webgpu package's, else one beside intab-node.mjs.
      Records are the browser runtime's, plus "runtime":"node", "dawn_backend" and "feature_level" (null on
      onnxruntime-node). bench kernels runs the kernel lab's checks (each kernel against its CPU twin: "check" lines)
      before its benchmark.
  intab make-model ... (as the CLI's: a random-weight GGUF with a real model's shapes)
  intab kit-run ... (the device kit's driver, which the kit's run.sh starts: run.sh --help)`;


/** Runs one CLI command in this process (Dawn or onnxruntime-node); resolves with the exit code. */
export async function runNode(argv: string[]): Promise<number> {
  const { positional, flags } = parseArgs(argv);
  if (flags.help || positional.length === 0) {
    console.log(NODE_USAGE);
    return positional.length === 0 && !flags.help ? 2 : 0;
  }
  if (flags.runtime !== undefined && flags.runtime !== 'node') throw new Error(`this is the Node runtime: --runtime ${String(flags.runtime)} runs through the repository's intab CLI`);
  const [cmd, sub] = positional;
  // The device kit (src/device-kit.ts) carries only this file: it makes its models and runs its steps through it.
  if (cmd === 'make-model') return makeModel(flags);
  if (cmd === 'kit-run') return runDeviceKit(flags);
  const command = cmd === 'generate' ? 'generate' : cmd === 'bench' && (sub === 'decode' || sub === 'speculative' || sub === 'kernels') ? sub : undefined;
  if (!command) {
    console.error(`intab: '${positional.join(' ')}' has no Node runtime (generate, bench decode, bench speculative and bench kernels have)\n${NODE_USAGE}`);
    return 2;
  }
  for (const f of ['compare', 'rounds', 'headed']) {
    if (flags[f] !== undefined) throw new Error(`--${f} is not for the Node runtime: drop --runtime node to use it`);
  }
  const dawnBackend = String(flags['dawn-backend'] ?? process.env.INTAB_DAWN_BACKEND ?? 'auto') as DawnBackend;
  if (!DAWN_BACKENDS.includes(dawnBackend)) throw new Error(`--dawn-backend takes ${DAWN_BACKENDS.join(', ')}, e.g. --dawn-backend vulkan`);
  const dawnPath = typeof flags.dawn === 'string' ? flags.dawn : process.env.INTAB_DAWN || undefined;
  const adapter = typeof flags.adapter === 'string' ? flags.adapter : undefined;
  const dawnOptions = { backend: dawnBackend, dawnPath, adapter, onLost: (e: Error) => console.error(`intab: ${e.name}: ${e.message}`) };
  if (flags.timeout !== undefined) {
    const s = Number(flags.timeout);
    if (!(s > 0)) throw new Error('--timeout needs seconds, e.g. --timeout 600');
    setTimeout(() => {
      console.error(`intab: timed out after ${s} s (--timeout)`);
      process.exit(1);
    }, s * 1000).unref();
  }

  // The job is built (and its flags checked) before the GPU is touched, as the browser runtime does.
  let job: Job | undefined;
  const mode = command === 'generate' ? 'generate' : command === 'decode' ? 'bench' : 'speculative';
  if (command !== 'kernels') {
    if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
    const model = onDisk(resolveModel(flags.model));
    if (flags.draft !== undefined && typeof flags.draft !== 'string') throw new Error('--draft needs a model: --draft <gguf file | HF folder | URL>');
    const draft = typeof flags.draft === 'string' ? onDisk(resolveModel(flags.draft, { prefix: DRAFT_PREFIX, flag: 'draft' })) : undefined;
    job = jobFromFlags(flags, mode, model, draft);
  }

  if (command === 'kernels') {
    let dawn: DawnGpu;
    try {
      dawn = await requestDawnGpu(dawnOptions);
    } catch (err) {
      console.error(`intab: ${(err as Error).name}: ${(err as Error).message}`);
      return 1;
    }
    try {
      const printer = kernelRecordPrinter(flags, { runtime: 'node', dawn_backend: dawn.backend, feature_level: dawn.featureLevel });
      // Imported once Dawn's globals are set: the lab's modules read GPUBufferUsage at the top level.
      const { runKernels } = await import('./kernels.ts');
      await runKernels(dawn.gpu, printer.onRecord, { quick: Boolean(flags.quick), filter: typeof flags.filter === 'string' ? flags.filter : undefined });
      return printer.failed() ? 1 : 0;
    } finally {
      dawn.gpu.destroy();
    }
  }

  // What runs the model: Dawn's adapter (intab's kernels), or onnxruntime-node; the records say which.
  const extra: Record<string, unknown> = { runtime: 'node', dawn_backend: null, feature_level: null };
  let gpu: Gpu | undefined;
  const choose = async (asked: Backend, model: ModelFiles) => {
    const choice = await chooseNodeBackend(asked, model, dawnOptions);
    if (choice.name === 'webgpu') gpu = choice.gpu;
    Object.assign(extra, { dawn_backend: choice.dawn?.backend ?? null, feature_level: choice.dawn?.featureLevel ?? null });
    return choice;
  };
  try {
    const print = modelRecordPrinter(flags, mode, extra);
    setReportSink((r) => {
      const rec = r as { type: string; loaded: number; total: number; model?: string };
      // stdout holds only the records; loading progress goes to stderr
      if (rec.type === 'progress') process.stderr.write(progressLine(rec));
      else print(r as PageRecord);
    });
    await runModelJob(job!, async () => (await requestDawnGpu(dawnOptions)).gpu, (ref) => openModel(ref, sourceOf), choose);
    return 0;
  } catch (err) {
    console.error(`intab: ${(err as Error).name}: ${(err as Error).message}`);
    return 1;
  } finally {
    setReportSink(undefined);
    gpu?.destroy();
  }
}
