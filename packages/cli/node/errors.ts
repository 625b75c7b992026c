// Typed errors of the CLI's Node runtime (`--runtime node`), each declared with errorClass: each says what to install
// or which flag to pass.

import { errorClass } from '@intab/errors';
import { IntabGpuError } from '@intab/gpu';
import { IntabOnnxError } from '@intab/onnx';

/** The Dawn backends `--dawn-backend` takes: 'auto' tries Vulkan, then OpenGL. */
export type DawnBackend = 'auto' | 'vulkan' | 'opengl' | 'opengles' | 'metal' | 'd3d12' | 'd3d11' | 'null';

const DRIVERS: Record<string, string> = {
  vulkan:
    "Vulkan: the GPU driver's Vulkan ICD and the loader libvulkan.so.1 (Debian: apt-get install libvulkan1, plus the NVIDIA driver or mesa-vulkan-drivers for AMD/Intel; `vulkaninfo --summary` must list the GPU; Dawn does not take Debian 12's lavapipe, a software Vulkan)",
  opengl:
    'OpenGL through EGL, e.g. Mesa\'s llvmpipe on a machine without a GPU (Debian: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri; EGL_PLATFORM=surfaceless is set unless you set it)',
};

/** Dawn (dawn.node) could not be loaded, found no adapter, or its adapter refused a device. */
export class DawnUnavailableError extends errorClass(IntabGpuError, 'DawnUnavailableError', 'dawn_unavailable')<{
  readonly reason: 'no-dawn' | 'no-adapter' | 'request-device-failed';
  /** The backends tried, in order. */
  readonly backends: string[];
}> {
  constructor(reason: DawnUnavailableError['reason'], backends: string[], detail: string, options?: { cause?: unknown }) {
    const advice =
      reason === 'no-dawn'
        ? 'In the repository run `pnpm install` (the webgpu package ships dawn.node for Linux, macOS and Windows); ' +
          'elsewhere put dawn.node beside intab-node.mjs (`intab bundle-node` does), or pass --dawn /path/to/dawn.node (or set INTAB_DAWN).'
        : `Install what the backend needs: ${backends.map((b) => DRIVERS[b] ?? b).join('; or ')}. ` +
          (backends.includes('opengl') ? 'Pass --dawn-backend vulkan on a machine with a GPU.' : 'Or pass --dawn-backend opengl for the software path.') +
          " Or run on onnxruntime-node's CPU provider (--backend auto or onnx-wasm), or in headless Chromium (--runtime chromium), which need none of this.";
    const what = {
      'no-dawn': 'Dawn for Node (dawn.node) could not be loaded',
      'no-adapter': `Dawn found no GPU adapter on backend ${backends.join(', then ')}`,
      'request-device-failed': `Dawn's ${backends.join('/')} adapter refused to create a device`,
    }[reason];
    super({ reason, backends }, `${what}${detail ? ` (${detail})` : ''}. ${advice}`, options);
  }
}

/** onnxruntime-node (the Node runtime's onnxruntime: ORT's native CPU provider) could not be loaded. */
export class OrtNodeUnavailableError extends errorClass(IntabOnnxError, 'OrtNodeUnavailableError', 'onnxruntime_node_unavailable')<{
  /** What failed: the package's load, or its native binding. */
  readonly detail: string;
}> {
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      { detail },
      `onnxruntime-node could not be loaded (${detail}). In the repository run \`pnpm install\` (onnxruntime-node ships its CPU binary for Linux, macOS and Windows in its npm package; no download is needed), or run on intab's WebGPU kernels with --backend webgpu where Dawn finds a GPU, or pass --runtime chromium.`,
      options,
    );
  }
}
