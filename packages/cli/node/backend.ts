// What runs a model in the Node runtime, by the browser's own rule (@intab/engine's chooseBackend): intab's WebGPU
// kernels on a hardware adapter, onnxruntime on the CPU where WebGPU is missing or only a software adapter exists. Here
// WebGPU is Dawn (dawn.ts) and onnxruntime is onnxruntime-node (ort.ts). The choice's reason says what Dawn gave or why
// it gave nothing, e.g. on a machine without a GPU: "auto: the only WebGPU adapter is a software one (llvmpipe...),
// where onnxruntime-node 1.30.0's cpu execution provider decodes faster [Dawn: opengl backend, compatibility]".

import { chooseBackend, type BackendChoice } from '@intab/engine';
import type { Backend } from '@intab/engine/contract';
import type { Gpu } from '@intab/gpu';
import type { ModelFiles } from '@intab/model';
import type { OrtRuntime } from '@intab/onnx';
import { requestDawnGpu, type DawnGpu, type DawnOptions } from './dawn.ts';
import { nodeOrt } from './ort.ts';

/** A choice in the Node runtime, and what Dawn gave when the choice runs on it. */
export type NodeBackendChoice = BackendChoice & { dawn?: Pick<DawnGpu, 'backend' | 'featureLevel'> };

export interface NodeBackendOptions extends DawnOptions {
  /** onnxruntime-node's threads per session [ort.ts's defaultThreads()]. */
  threads?: number;
}

/**
 * Resolves `asked` in Node: 'webgpu' takes Dawn's adapter (DawnUnavailableError without one), 'onnx-*' onnxruntime-node,
 * 'auto' asks Dawn and keeps it only for a hardware adapter. onnxruntime-node is loaded only when the choice needs it.
 * @example
 * const choice = await chooseNodeBackend('auto', opened.model, { backend: 'auto' });
 * // on a machine without a GPU: { name: 'onnx-wasm', ort: { name: 'onnxruntime-node 1.30.0', ... }, reason: 'auto: ...' }
 */
export async function chooseNodeBackend(asked: Backend, model: ModelFiles | undefined, o: NodeBackendOptions = {}): Promise<NodeBackendChoice> {
  let dawn: DawnGpu | undefined;
  const request = async (): Promise<Gpu> => (dawn = await requestDawnGpu(o)).gpu;
  if (asked === 'webgpu') {
    const choice = await chooseBackend('webgpu', model, request);
    return { ...choice, reason: `${choice.reason}${dawnNote(dawn)}`, dawn: facts(dawn) };
  }
  // 'auto' and the ORT backends need onnxruntime-node only when ORT is what runs: 'auto' on a hardware GPU does not.
  let ort: OrtRuntime | undefined;
  let ortError: unknown;
  try {
    ort = nodeOrt({ threads: o.threads });
  } catch (err) {
    if (asked !== 'auto') throw err;
    ortError = err;
  }
  const choice = await chooseBackend(asked, model, request, { ort });
  if (choice.name !== 'webgpu' && !choice.ort) throw ortError;
  // (Dawn refused: the reason quotes its error already.)
  return { ...choice, reason: `${choice.reason}${dawnNote(dawn)}`, ...(choice.name === 'webgpu' ? { dawn: facts(dawn) } : {}) };
}

function facts(dawn: DawnGpu | undefined): NodeBackendChoice['dawn'] {
  return dawn ? { backend: dawn.backend, featureLevel: dawn.featureLevel } : undefined;
}

/** Where the WebGPU adapter came from, for the reason. */
function dawnNote(dawn: DawnGpu | undefined): string {
  return dawn ? ` [Dawn: ${dawn.backend} backend, ${dawn.featureLevel}]` : '';
}
