// A GPUDevice in Node from Dawn (the `webgpu` package's dawn.node), handed to the same requestGpu the browser uses,
// so the kernels, the Runner and the WGSL run unchanged. Dawn's backend is chosen by `--dawn-backend`: 'auto' tries Vulkan
// (a real GPU) and then OpenGL, which on a machine without a GPU is Mesa's llvmpipe through EGL, offered only as a
// WebGPU compatibility-mode adapter (no subgroups, no shader-f16, 128 MiB storage bindings): the kernels' f32,
// no-subgroup path. requestGpu asks the adapter for its real limits, as in the browser.

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestGpu, WebGpuUnavailableError, type Gpu, type DeviceLostError } from '@intab/gpu';
import { DawnUnavailableError, type DawnBackend } from './errors.ts';

export const DAWN_BACKENDS: readonly DawnBackend[] = ['auto', 'vulkan', 'opengl', 'opengles', 'metal', 'd3d12', 'd3d11', 'null'];

/** What dawn.node exports (and the webgpu package re-exports). */
interface DawnModule {
  create(flags: string[]): GPU;
  globals: object;
}

export interface DawnOptions {
  /** Dawn's backend; 'auto' (the default) tries Vulkan, then OpenGL. */
  backend?: DawnBackend;
  /** A dawn.node to load instead of the webgpu package's (or the one beside the bundle). */
  dawnPath?: string;
  /** Dawn's adapter name filter (`adapter=NAME`), for a machine with several GPUs. */
  adapter?: string;
  onLost?: (error: DeviceLostError) => void;
}

export interface DawnGpu {
  gpu: Gpu;
  /** The backend that gave the adapter. */
  backend: string;
  featureLevel: 'core' | 'compatibility';
  /** Where dawn.node came from: 'webgpu' (the package) or a path. */
  dawn: string;
}

const firstLine = (err: unknown) => String((err as Error)?.message ?? err).split('\n')[0];

// Dawn's instance must outlive every device made from it: kept here for the process's life.
const instances: GPU[] = [];

/** Loads dawn.node: an explicit path, else the webgpu package, else a dawn.node beside this file (the bundle). */
async function loadDawn(path: string | undefined): Promise<{ module: DawnModule; from: string }> {
  const require = createRequire(import.meta.url);
  if (path) {
    const abs = resolve(path);
    try {
      return { module: require(abs) as DawnModule, from: abs };
    } catch (cause) {
      throw new DawnUnavailableError('no-dawn', [], `${abs}: ${firstLine(cause)}`, { cause });
    }
  }
  let packageError: unknown;
  try {
    const specifier = 'webgpu';
    return { module: (await import(/* @vite-ignore */ specifier)) as DawnModule, from: 'webgpu' };
  } catch (cause) {
    packageError = cause;
  }
  const beside = fileURLToPath(new URL('./dawn.node', import.meta.url));
  if (existsSync(beside)) {
    try {
      return { module: require(beside) as DawnModule, from: beside };
    } catch (cause) {
      throw new DawnUnavailableError('no-dawn', [], `${beside}: ${firstLine(cause)}`, { cause });
    }
  }
  throw new DawnUnavailableError('no-dawn', [], `no webgpu package (${firstLine(packageError)}) and no ${beside}`, { cause: packageError });
}

/**
 * A Gpu on Dawn: the first backend (of `backend`, or Vulkan then OpenGL) that gives an adapter, core feature level
 * where the backend has it, else compatibility. Throws DawnUnavailableError saying what to install or pass.
 * @example
 * const { gpu, backend } = await requestDawnGpu({ backend: 'opengl' });
 */
export async function requestDawnGpu(o: DawnOptions = {}): Promise<DawnGpu> {
  const backend = o.backend ?? 'auto';
  if (!DAWN_BACKENDS.includes(backend)) throw new Error(`--dawn-backend takes ${DAWN_BACKENDS.join(', ')}; got '${backend}'`);
  const { module, from } = await loadDawn(o.dawnPath);
  // GPUBufferUsage, GPUMapMode, GPUBuffer (instanceof) and the other WebGPU globals the kernels use.
  Object.assign(globalThis, module.globals);
  const backends = backend === 'auto' ? ['vulkan', 'opengl'] : [backend];
  for (const b of backends) {
    // Mesa's EGL picks a display platform from the environment; surfaceless needs no X or Wayland server.
    if ((b === 'opengl' || b === 'opengles') && !process.env.EGL_PLATFORM) process.env.EGL_PLATFORM = 'surfaceless';
    const entry = module.create([`backend=${b}`, ...(o.adapter ? [`adapter=${o.adapter}`] : [])]);
    instances.push(entry);
    const levels: ('core' | 'compatibility')[] = b === 'opengl' || b === 'opengles' ? ['compatibility'] : ['core', 'compatibility'];
    for (const featureLevel of levels) {
      try {
        const gpu = await requestGpu({ gpu: entry, featureLevel, onLost: o.onLost, label: 'intab-node' });
        return { gpu, backend: b, featureLevel, dawn: from };
      } catch (err) {
        if (err instanceof WebGpuUnavailableError && err.reason === 'no-adapter') continue;
        if (err instanceof WebGpuUnavailableError) throw new DawnUnavailableError('request-device-failed', [b], String(err.cause ?? err.message), { cause: err });
        throw err;
      }
    }
  }
  throw new DawnUnavailableError('no-adapter', backends, '');
}
