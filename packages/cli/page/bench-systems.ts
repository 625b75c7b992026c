// `intab bench compare` in the page: intab's engine on its three backends (its WebGPU kernels on the checkpoint; on
// onnx-wasm its CPU kernels on a q4_0 / q8_0 GGUF, else onnxruntime's wasm on the ONNX graph; onnxruntime's WebGPU
// execution provider on the ONNX graph) and the peers (transformers.js on the same
// ONNX folder, wasm and WebGPU; wllama on the GGUF), all loaded in this one browser sitting, then run in alternating
// rounds (each round in a rotated order, so the adapter's drift hits every system alike) on the same seeded prompt
// ids, greedy, EOS ignored. Every run is timed here the same way: start → first token (TTFT, prefill speed) → last
// token (decode speed). One 'compare-run' record per run, one 'bench' record per system (medians, ids_equal against
// intab's WebGPU kernels, ratios), and a summary with the backend 'auto' picks on this machine and the fastest.

import { requestGpu, type Gpu } from '@intab/gpu';
import { chooseBackend, Engine, openModels, type Backend } from '@intab/engine';
import { openOnnxFolder, urlSource, type ByteSource, type ModelFiles } from '@intab/model';
import { cpuRunnable } from '@intab/onnx';
import { benchPromptIds } from './bench-prompt.ts';
import { timedRun, type Peer, type PeerRun } from './peers/types.ts';
import { consume, loadEngine, median, report, round, type Job, type ModelRef } from './shared.ts';

/** What bench compare adds to the job: where the ONNX folder and the GGUF are served, and what to run. */
export interface CompareJob {
  /** The ONNX folder's base URL (ends with '/') and its files (config.json, onnx/model.onnx, ...). */
  onnxUrl?: string;
  onnxFiles?: string[];
  /** The GGUF for wllama (absent when the model is not a GGUF). */
  ggufUrl?: string;
  /** Systems to run, as 'system/backend' ('intab/webgpu', 'transformers.js/wasm', 'wllama/wasm', ...): the CLI checks them. */
  systems: string[];
  rounds?: number;
}

/** A loaded system: one greedy run of the prompt. */
interface Runnable {
  name: string;
  /** intab's systems: what ran the model (ModelInfo.adapter). */
  adapter?: string;
  run(promptIds: number[], maxTokens: number): Promise<PeerRun>;
  destroy(): Promise<void>;
}

export async function benchSystems(job: Job & CompareJob, openModel: (ref: ModelRef) => Promise<ModelFiles>): Promise<void> {
  const opened = await openModels(openModel, job);
  // The same ids llama.cpp gets in src/bench-systems.ts: a text's encoding where the model has a tokenizer.
  const promptIds = benchPromptIds(opened.model.config, opened.tokenizer, job.promptTokens ?? 32, job.seed);
  const maxTokens = job.maxTokens;
  const wanted = job.systems;
  let gpu: Gpu | undefined;
  const gpuOnce = async () => (gpu ??= await requestGpu());

  // ---- load every system (failures are reported and the system skipped) ----
  const loaded: Runnable[] = [];
  const loadMs = new Map<string, number>();
  for (const name of wanted) {
    const t0 = performance.now();
    try {
      loaded.push(await load(name));
      loadMs.set(name, performance.now() - t0);
    } catch (err) {
      report({ type: 'bench', bench: 'compare', ...split(name), error: `${(err as Error).name}: ${(err as Error).message}` });
    }
  }

  async function load(name: string): Promise<Runnable> {
    const [system, backend] = name.split('/');
    if (system === 'intab') {
      // The WebGPU kernels run the checkpoint, and so does onnx-wasm where intab's CPU kernels read its matrices (a q4_0 /
      // q8_0 GGUF: what createEngine runs on it); otherwise the onnx backends run the very ONNX folder the peers load.
      const onnx = backend !== 'webgpu' && !(backend === 'onnx-wasm' && cpuRunnable(opened.model) === undefined);
      if (onnx && !job.onnxUrl) throw new Error('no ONNX folder was served');
      const model = onnx ? await openOnnxFolder(await served(job.onnxUrl!, job.onnxFiles!)) : opened.model;
      const choice = await chooseBackend(backend as Backend, model, gpuOnce);
      const { engine, info } = await loadEngine(choice, job, { ...opened, model, draftModel: undefined }, { maxBatch: 1, kvBudgetBytes: 64 << 20, seed: job.seed, prefixCache: false, restoreCache: false });
      return { name, adapter: info.adapter, run: (ids, n) => runEngine(engine, ids, n), destroy: () => engine.destroy() };
    }
    if (system === 'transformers.js') {
      if (!job.onnxUrl) throw new Error('no ONNX folder was served');
      const { loadTransformersJs } = await import('./peers/transformers.ts');
      return named(name, await loadTransformersJs(backend as 'wasm' | 'webgpu', new URL(job.onnxUrl, location.href).href));
    }
    if (system === 'wllama') {
      if (!job.ggufUrl) throw new Error('wllama runs GGUF models: give --model a .gguf file');
      const { loadWllama } = await import('./peers/wllama.ts');
      return named(name, await loadWllama(new URL(job.ggufUrl, location.href).href));
    }
    throw new Error(`unknown system '${name}'`);
  }

  // ---- alternating rounds ----
  const runs = new Map<string, PeerRun[]>(loaded.map((s) => [s.name, []]));
  const rounds = job.rounds ?? 3;
  for (let r = 0; r < rounds; r++) {
    const order = loaded.map((_, i) => loaded[(i + r) % loaded.length]);
    for (const sys of order) {
      let run: PeerRun;
      try {
        run = await sys.run(promptIds, maxTokens);
      } catch (err) {
        // As a system that fails to load: its line says why, it leaves the rounds, the others stand (wllama 3.x
        // refuses prompt ids that no text gives back).
        report({ type: 'bench', bench: 'compare', ...split(sys.name), error: `${(err as Error).name}: ${(err as Error).message}` });
        loaded.splice(loaded.indexOf(sys), 1);
        runs.delete(sys.name);
        await sys.destroy().catch(() => {});
        continue;
      }
      runs.get(sys.name)!.push(run);
      report({ type: 'compare-run', bench: 'compare', ...split(sys.name), round: r, decode_tok_s: round(run.decodeTokS), prefill_tok_s: round(run.prefillTokS), ttft_ms: round(run.ttftMs), tokens: run.ids.length });
    }
  }
  const adapters = new Map(loaded.map((sys) => [sys.name, sys.adapter]));
  for (const sys of loaded) await sys.destroy();

  // ---- one line per system, then the summary ----
  const stats = new Map([...runs].map(([name, rs]) => [name, { decode: median(rs.map((x) => x.decodeTokS)), prefill: median(rs.map((x) => x.prefillTokS)), ttft: median(rs.map((x) => x.ttftMs)), ids: rs[0].ids }]));
  const reference = stats.get('intab/webgpu') ?? stats.get('intab/onnx-wasm');
  const sameBackend = (name: string) => stats.get(name.endsWith('/webgpu') ? 'intab/onnx-webgpu' : 'intab/onnx-wasm');
  for (const [name, s] of stats) {
    const ours = name.startsWith('intab/') ? undefined : sameBackend(name);
    const webgpu = stats.get('intab/webgpu');
    report({
      type: 'bench',
      bench: 'compare',
      ...split(name),
      decode_tok_s: round(s.decode),
      prefill_tok_s: round(s.prefill),
      ttft_ms: round(s.ttft),
      ids_equal: reference ? s.ids.length === reference.ids.length && s.ids.every((id, i) => id === reference.ids[i]) : null,
      ids: s.ids,
      prompt_tokens: promptIds.length,
      generated_tokens: s.ids.length,
      rounds,
      load_ms: round(loadMs.get(name) ?? 0),
      ...(adapters.get(name) ? { adapter: adapters.get(name) } : {}),
      // Ratios against ours: intab's WebGPU kernels, and (for a peer) intab on the same kind of backend.
      ...(webgpu && name !== 'intab/webgpu' ? { decode_vs_intab_webgpu: round(s.decode / webgpu.decode), prefill_vs_intab_webgpu: round(s.prefill / webgpu.prefill) } : {}),
      ...(ours ? { decode_vs_intab_same_backend: round(s.decode / ours.decode), prefill_vs_intab_same_backend: round(s.prefill / ours.prefill), ttft_vs_intab_same_backend: round(s.ttft / ours.ttft) } : {}),
    });
  }
  const auto = await chooseBackend('auto', opened.model, gpuOnce);
  const intab = [...stats].filter(([name]) => name.startsWith('intab/')).sort((a, b) => b[1].decode - a[1].decode);
  report({
    type: 'bench',
    bench: 'compare',
    summary: true,
    auto_backend: auto.name,
    auto_reason: auto.reason,
    fastest_intab_backend: intab[0]?.[0].slice('intab/'.length) ?? null,
    auto_is_fastest: intab.length ? intab[0][0] === `intab/${auto.name}` : null,
    fastest_system: [...stats].sort((a, b) => b[1].decode - a[1].decode)[0]?.[0] ?? null,
  });
  gpu?.destroy();
}

/** 'intab/onnx-wasm' → { system: 'intab', backend: 'onnx-wasm' }. */
function split(name: string): { system: string; backend: string } {
  const [system, backend] = name.split('/');
  return { system, backend };
}

function named(name: string, peer: Peer): Runnable {
  return { name, run: (ids, n) => peer.run(ids, n), destroy: () => peer.destroy() };
}

/** The served ONNX folder's files as byte sources, by their paths (onnx/model.onnx, ...). */
async function served(base: string, files: string[]): Promise<Map<string, ByteSource>> {
  const out = new Map<string, ByteSource>();
  for (const f of files) out.set(f, await urlSource(new URL(base + f, location.href).href));
  return out;
}

/** One greedy request through intab's engine (shared.ts's consume), timed on the page as the peers are (timedRun). */
async function runEngine(engine: Engine, promptIds: number[], maxTokens: number): Promise<PeerRun> {
  const r = await consume(engine, 0, { promptIds, maxTokens, temperature: 0, ignoreEos: true }, undefined);
  return timedRun(promptIds.length, r.startedAt, r.ids, r.arrivals.flatMap((a) => Array<number>(a.tokens).fill(a.at)));
}
