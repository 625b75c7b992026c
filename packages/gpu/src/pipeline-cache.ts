// Compute pipelines cached per device, keyed by kernel + variant + override constants, each with an
// explicit bind-group layout (so bind groups can be built once at load time and reused across steps).

import type { GpuFeatures } from './device.ts';
import { LimitError } from './errors.ts';

/** How one binding is used by a kernel, in binding-index order. */
/** 'uniform': the per-dispatch params (at a dynamic offset); 'constant': a uniform that never changes (a table). */
export type BindingKind = 'uniform' | 'constant' | 'read' | 'storage';

export interface KernelSpec {
  /** Kernel name, e.g. 'gemv'. */
  readonly name: string;
  /** Variant, e.g. 'q4_0' or 'q4_0+subgroups'; with name it identifies the WGSL source. */
  readonly variant: string;
  /** The full WGSL source (kernel file joined with its lib helpers). */
  readonly code: string;
  /** Binding kinds of group 0, in binding order. */
  readonly bindings: readonly BindingKind[];
  /** Values for the kernel's `override` constants. */
  readonly constants?: Readonly<Record<string, number>>;
  readonly entryPoint?: string;
}

export interface CachedPipeline {
  readonly key: string;
  readonly pipeline: GPUComputePipeline;
  readonly layout: GPUBindGroupLayout;
}

export class PipelineCache {
  private readonly pipelines = new Map<string, CachedPipeline>();
  private readonly modules = new Map<string, GPUShaderModule>();
  private readonly layouts = new Map<string, GPUBindGroupLayout>();

  constructor(
    private readonly device: GPUDevice,
    readonly features: GpuFeatures,
  ) {}

  get size(): number {
    return this.pipelines.size;
  }

  /** The pipeline for a kernel spec, compiled on first use. */
  get(spec: KernelSpec): CachedPipeline {
    const key = pipelineKey(spec);
    let hit = this.pipelines.get(key);
    if (!hit) {
      const { descriptor, layout } = this.describe(key, spec);
      hit = { key, pipeline: this.device.createComputePipeline(descriptor), layout };
      this.pipelines.set(key, hit);
    }
    return hit;
  }

  /** Compile asynchronously (load time), so the first step does not stall on shader compilation. */
  async warm(spec: KernelSpec): Promise<CachedPipeline> {
    const key = pipelineKey(spec);
    const hit = this.pipelines.get(key);
    if (hit) return hit;
    const { descriptor, layout } = this.describe(key, spec);
    const entry = { key, pipeline: await this.device.createComputePipelineAsync(descriptor), layout };
    this.pipelines.set(key, entry);
    return entry;
  }

  private describe(key: string, spec: KernelSpec): { descriptor: GPUComputePipelineDescriptor; layout: GPUBindGroupLayout } {
    const layout = this.layoutFor(spec.bindings, `${spec.name} (${spec.variant})`);
    return {
      layout,
      descriptor: {
        label: key,
        layout: this.device.createPipelineLayout({ label: key, bindGroupLayouts: [layout] }),
        compute: {
          module: this.moduleFor(spec),
          entryPoint: spec.entryPoint ?? 'main',
          constants: spec.constants as Record<string, number> | undefined,
        },
      },
    };
  }

  clear(): void {
    this.pipelines.clear();
    this.modules.clear();
    this.layouts.clear();
  }

  private moduleFor(spec: KernelSpec): GPUShaderModule {
    const key = `${spec.name}|${spec.variant}`;
    let module = this.modules.get(key);
    if (!module) {
      module = this.device.createShaderModule({ label: key, code: spec.code });
      this.modules.set(key, module);
    }
    return module;
  }

  private layoutFor(bindings: readonly BindingKind[], kernel: string): GPUBindGroupLayout {
    const key = bindings.join(',');
    let layout = this.layouts.get(key);
    if (!layout) {
      checkBindingLimits(this.device.limits, bindings, kernel);
      layout = this.device.createBindGroupLayout({
        label: `layout(${key})`,
        entries: bindings.map((kind, binding) => ({
          binding,
          visibility: GPUShaderStage.COMPUTE,
          // Params live in one buffer at a dynamic offset per dispatch (uniforms.ts), so bind groups are reusable.
          buffer:
            kind === 'uniform'
              ? { type: 'uniform', hasDynamicOffset: true }
              : kind === 'constant'
                ? { type: 'uniform' }
                : { type: kind === 'read' ? 'read-only-storage' : 'storage' },
        })),
      });
      this.layouts.set(key, layout);
    }
    return layout;
  }
}

/**
 * Throws LimitError when one kernel binds more buffers of a kind than the device allows per shader stage, instead of
 * the validation error the layout would get. Kernels bind at most 8 storage buffers (WebGPU's default, core and
 * compatibility mode alike) and one uniform of each kind; requestGpu asks for the adapter's own limits, often higher.
 */
export function checkBindingLimits(limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage' | 'maxUniformBuffersPerShaderStage'>, bindings: readonly BindingKind[], kernel: string): void {
  const storage = bindings.filter((b) => b === 'read' || b === 'storage').length;
  if (storage > limits.maxStorageBuffersPerShaderStage) {
    throw new LimitError(`${kernel}'s bind group`, 'maxStorageBuffersPerShaderStage', storage, limits.maxStorageBuffersPerShaderStage,
      'this adapter cannot run the kernel; use an adapter with more storage buffers per shader stage (a core-mode WebGPU adapter has at least 8).', 'count');
  }
  const uniform = bindings.length - storage;
  if (uniform > limits.maxUniformBuffersPerShaderStage) {
    throw new LimitError(`${kernel}'s bind group`, 'maxUniformBuffersPerShaderStage', uniform, limits.maxUniformBuffersPerShaderStage,
      'this adapter cannot run the kernel; use an adapter with more uniform buffers per shader stage.', 'count');
  }
}

function pipelineKey(spec: KernelSpec): string {
  const c = spec.constants;
  const consts = c
    ? Object.keys(c)
        .sort()
        .map((k) => `${k}=${c[k]}`)
        .join(',')
    : '';
  return `${spec.name}|${spec.variant}|${consts}|${spec.entryPoint ?? 'main'}`;
}
