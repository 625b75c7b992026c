// Device acquisition: asks the adapter for its real limits (not WebGPU's conservative defaults),
// enables the optional features kernels can use, and surfaces device loss as a typed error.
// One Gpu object owns the device and everything cached on it.

import { DeviceLostError, IntabGpuError, WebGpuUnavailableError } from './errors.ts';
import { PipelineCache } from './pipeline-cache.ts';
import { Readback } from './readback.ts';
import { UniformTable } from './uniforms.ts';

/** Optional features the kernels know how to use, as enabled on this device. */
export interface GpuFeatures {
  readonly subgroups: boolean;
  readonly shaderF16: boolean;
  readonly timestampQuery: boolean;
}

/** The limits kernels and loaders consult (the device's, equal to the adapter's maxima). */
export interface GpuLimits {
  readonly maxStorageBufferBindingSize: number;
  readonly maxBufferSize: number;
  readonly maxComputeWorkgroupStorageSize: number;
  readonly maxComputeInvocationsPerWorkgroup: number;
  readonly maxComputeWorkgroupSizeX: number;
  readonly maxComputeWorkgroupsPerDimension: number;
  readonly maxStorageBuffersPerShaderStage: number;
  readonly minStorageBufferOffsetAlignment: number;
  readonly minUniformBufferOffsetAlignment: number;
}

export interface RequestGpuOptions {
  /** 'high-performance' by default: prefer the discrete GPU. */
  powerPreference?: GPUPowerPreference;
  /** Turn features off even when present (tests use this to exercise the f32 / no-subgroup paths). */
  disable?: Partial<Record<keyof GpuFeatures, boolean>>;
  /** Called once if the device is lost after creation (not on destroy()). */
  onLost?: (error: DeviceLostError) => void;
  /** Label prefix for the device and its objects. */
  label?: string;
  /**
   * The WebGPU entry point to ask for an adapter: `navigator.gpu` by default. Outside a browser, the object the
   * `webgpu` package (Dawn for Node) returns from `create([...])`.
   */
  gpu?: GPU;
  /**
   * 'compatibility' asks for a WebGPU compatibility-mode adapter (OpenGL ES / D3D11-class backends, such as Dawn's
   * OpenGL backend in Node, which offers no core adapter); its limits are lower, and are read from the adapter like
   * any other. Core by default.
   */
  featureLevel?: 'core' | 'compatibility';
}

/** Adapters that compute on the CPU: the browser's fallback adapter (SwiftShader), or Mesa's software drivers under Dawn. */
const SOFTWARE = /llvmpipe|lavapipe|softpipe|swiftshader/i;

/**
 * Whether a WebGPU adapter is a software one: what it says of itself (isFallbackAdapter: SwiftShader in Chromium), or
 * its name (Dawn in Node over Mesa's llvmpipe says nothing, but its device is 'llvmpipe (LLVM 15.0.6, 256 bits)').
 * Kernels pick their barrier-free variants there (a barrier costs a coroutine switch per SIMD lane group on a CPU).
 * @example
 * isSoftwareAdapter({ vendor: '', architecture: '', device: 'llvmpipe-llvm-15-0-6-256-bits-', description: 'OpenGL version 4.5 (Core Profile) Mesa 22.3.6', isFallbackAdapter: false }); // true
 */
export function isSoftwareAdapter(a: Gpu['adapterInfo']): boolean {
  return a.isFallbackAdapter || SOFTWARE.test(`${a.vendor} ${a.architecture} ${a.device} ${a.description}`);
}

/** The runtime: one device and what is cached on it. Create with requestGpu(), end with destroy(). */
export interface Gpu {
  readonly device: GPUDevice;
  readonly adapterInfo: { vendor: string; architecture: string; device: string; description: string; isFallbackAdapter: boolean };
  readonly features: GpuFeatures;
  readonly limits: GpuLimits;
  readonly pipelines: PipelineCache;
  readonly readback: Readback;
  /** The params of every dispatch recorded since the last submit (one upload per submit). */
  readonly uniforms: UniformTable;
  /** Uploads the recorded dispatches' params, then submits (use it instead of device.queue.submit). */
  submit(commandBuffers: GPUCommandBuffer[]): void;
  /** Resolves with a DeviceLostError when the device is lost for any reason but destroy(). */
  readonly lost: Promise<DeviceLostError>;
  readonly destroyed: boolean;
  /** GPUBuffers created on this device and not destroyed yet (a long run's leak check, `intab bench soak`, reads it). */
  readonly liveBuffers: number;
  /** Frees every cached GPU object and the device. Idempotent. */
  destroy(): void;
}

const LIMIT_NAMES = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
  'maxBindGroups',
  'maxUniformBufferBindingSize',
] as const;

/**
 * Acquire a WebGPU device with the adapter's real limits and the optional features intab can use.
 *
 * @example
 * const gpu = await requestGpu();
 * console.log(gpu.features); // { subgroups: true, shaderF16: false, timestampQuery: true }
 * gpu.destroy();
 */
export async function requestGpu(options: RequestGpuOptions = {}): Promise<Gpu> {
  const entry = options.gpu ?? (globalThis as { navigator?: Navigator }).navigator?.gpu;
  if (!entry) throw new WebGpuUnavailableError('no-navigator-gpu');
  let adapter: GPUAdapter | null;
  try {
    adapter = await entry.requestAdapter({
      powerPreference: options.powerPreference ?? 'high-performance',
      ...(options.featureLevel ? { featureLevel: options.featureLevel } : {}),
    });
  } catch (cause) {
    throw new WebGpuUnavailableError('no-adapter', String(cause), { cause });
  }
  if (!adapter) throw new WebGpuUnavailableError('no-adapter');

  const want = (name: GPUFeatureName, key: keyof GpuFeatures) =>
    adapter.features.has(name) && !options.disable?.[key];
  const requiredFeatures: GPUFeatureName[] = [];
  if (want('subgroups' as GPUFeatureName, 'subgroups')) requiredFeatures.push('subgroups' as GPUFeatureName);
  if (want('shader-f16', 'shaderF16')) requiredFeatures.push('shader-f16');
  if (want('timestamp-query', 'timestampQuery')) requiredFeatures.push('timestamp-query');

  const requiredLimits: Record<string, number> = {};
  for (const name of LIMIT_NAMES) {
    const v = (adapter.limits as unknown as Record<string, number>)[name];
    if (typeof v === 'number') requiredLimits[name] = v;
  }

  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      label: options.label ?? 'intab',
      requiredFeatures,
      requiredLimits,
    });
  } catch (cause) {
    throw new WebGpuUnavailableError('request-device-failed', String(cause), { cause });
  }

  const info = adapter.info ?? ({} as GPUAdapterInfo);
  const has = (f: string) => device.features.has(f as GPUFeatureName);
  const features: GpuFeatures = {
    subgroups: has('subgroups'),
    shaderF16: has('shader-f16'),
    timestampQuery: has('timestamp-query'),
  };
  const l = device.limits;
  const limits: GpuLimits = {
    maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
    maxBufferSize: l.maxBufferSize,
    maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
    maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
    maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    minStorageBufferOffsetAlignment: l.minStorageBufferOffsetAlignment,
    minUniformBufferOffsetAlignment: l.minUniformBufferOffsetAlignment,
  };

  // Every buffer is counted from creation to its destroy(): a few closures per buffer, and buffers are made at load
  // and when scratch space grows, never per step.
  let liveBuffers = 0;
  const createBuffer = device.createBuffer.bind(device);
  device.createBuffer = (descriptor: GPUBufferDescriptor) => {
    const buffer = createBuffer(descriptor);
    liveBuffers++;
    const destroyBuffer = buffer.destroy.bind(buffer);
    let freed = false;
    buffer.destroy = () => {
      if (!freed) liveBuffers--;
      freed = true;
      destroyBuffer();
    };
    return buffer;
  };

  let destroyed = false;
  const lost = device.lost.then((i) => new DeviceLostError(i.reason ?? 'unknown', i.message));
  lost.then((err) => {
    if (!destroyed && err.reason !== 'destroyed') options.onLost?.(err);
  });

  const gpu: Gpu = {
    device,
    adapterInfo: {
      vendor: info.vendor ?? '',
      architecture: info.architecture ?? '',
      device: info.device ?? '',
      description: info.description ?? '',
      isFallbackAdapter: Boolean((info as { isFallbackAdapter?: boolean }).isFallbackAdapter),
    },
    features,
    limits,
    pipelines: new PipelineCache(device, features),
    readback: new Readback(device),
    uniforms: new UniformTable(device, limits.minUniformBufferOffsetAlignment),
    submit(commandBuffers) {
      gpu.uniforms.flush();
      device.queue.submit(commandBuffers);
    },
    lost,
    get destroyed() {
      return destroyed;
    },
    get liveBuffers() {
      return liveBuffers;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      gpu.uniforms.destroy();
      gpu.readback.destroy();
      gpu.pipelines.clear();
      device.destroy();
      liveBuffers = 0; // the device took its buffers with it
    },
  };
  return gpu;
}

/** Throws if the runtime was destroyed; kernels call this before recording. */
export function assertAlive(gpu: Gpu): void {
  if (gpu.destroyed) throw new IntabGpuError('This Gpu runtime was destroyed: create a new one with requestGpu().');
}
