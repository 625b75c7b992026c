// onnxruntime-node, the Node runtime's onnxruntime: handed to @intab/onnx as an OrtRuntime (the browser's builds of
// onnxruntime-web are never loaded in Node, and the library never names this native addon, so no browser bundle sees
// it). ORT's native CPU execution provider runs what the browser runs on ORT's wasm ('onnx-wasm', and 'auto' where no
// hardware GPU is found); its WebGPU provider (bundled on Linux x64, macOS and Windows) runs 'onnx-webgpu' where it is
// listed. Loaded once, on first use: a run on intab's kernels never pays for it.

import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import type { Ort, OrtRuntime } from '@intab/onnx';
import { OrtNodeUnavailableError } from './errors.ts';

/** What the package exports besides the common API. */
type OrtNode = Ort & { listSupportedBackends?: () => { name: string; bundled: boolean }[] };

let module: OrtNode | undefined;

/**
 * Threads one session computes with: one per core, at most 4 (ORT's own default is every physical core). A bound, not
 * a measured optimum: `--threads` sets it for a machine and a model (measured only on 2 cores here).
 */
export function defaultThreads(): number {
  return Math.max(1, Math.min(4, cpus().length));
}

/**
 * onnxruntime-node as an OrtRuntime (the package is loaded once); `threads` [defaultThreads()] sets each session's
 * intra-op threads. Throws OrtNodeUnavailableError when the package or its native binding cannot be loaded.
 * @example
 * const runtime = nodeOrt();
 * const choice = await chooseBackend('auto', opened.model, dawnRequest, { ort: runtime });
 */
export function nodeOrt(o: { threads?: number } = {}): OrtRuntime {
  try {
    // A plain require from this file's place (the CLI's build in packages/cli/dist/cli/<key>/, or its source): the
    // package is the CLI's dependency, and a native addon is never bundled.
    module ??= createRequire(import.meta.url)('onnxruntime-node') as OrtNode;
  } catch (cause) {
    throw new OrtNodeUnavailableError(String((cause as Error)?.message ?? cause).split('\n')[0], { cause });
  }
  const ort = module;
  const threads = o.threads ?? defaultThreads();
  const listed = ort.listSupportedBackends?.() ?? [{ name: 'cpu', bundled: true }];
  const bundled = (name: string) => listed.some((b) => b.name === name && b.bundled);
  ort.env.logLevel = 'error';
  return {
    name: `onnxruntime-node ${ort.env.versions.node ?? ort.env.versions.common}`,
    ort,
    providers: { 'onnx-wasm': 'cpu', ...(bundled('webgpu') ? { 'onnx-webgpu': 'webgpu' } : {}) },
    threads,
    sessionOptions: {
      intraOpNumThreads: threads,
      // Inter-op parallelism runs independent branches of a graph at once: a decoder's layers are one chain.
      interOpNumThreads: 1,
      executionMode: 'sequential',
      // ORT's idle workers spin by default, on the cores the JavaScript thread needs to plan the next step and serve
      // the clients. Measured (intab bench serve, stories260K, 8 clients, 2 threads on 2 cores): 715 tok/s spinning,
      // 2,466 not.
      extra: { session: { intra_op: { allow_spinning: '0' } } },
    },
  };
}
