// What every kernel wrapper shares: buffer references, bind groups, uniform packing and dispatch grids.
// A wrapper records into a compute pass and never submits.

import type { Gpu } from './device.ts';
import { assertAlive } from './device.ts';
import type { BindingKind, CachedPipeline } from './pipeline-cache.ts';
import { LimitError, ShapeError } from './errors.ts';
import { PARAMS_SLOT_BYTES } from './uniforms.ts';

/** A buffer, or a byte range of one, holding a tensor. */
export type BufferRef = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

export function bufferOf(ref: BufferRef): GPUBuffer {
  return 'buffer' in ref && !(ref instanceof GPUBuffer) ? ref.buffer : (ref as GPUBuffer);
}

/** Bytes visible through a reference. */
export function refBytes(ref: BufferRef): number {
  if (ref instanceof GPUBuffer) return ref.size;
  return ref.size ?? ref.buffer.size - (ref.offset ?? 0);
}

function toBinding(ref: BufferRef | GPUBufferBinding): GPUBufferBinding {
  if (ref instanceof GPUBuffer) return { buffer: ref };
  return { buffer: ref.buffer, offset: ref.offset ?? 0, size: ref.size };
}

/** Throws ShapeError unless `ref` holds at least `bytes` bytes. */
export function requireBytes(kernel: string, arg: string, ref: BufferRef, bytes: number): void {
  const have = refBytes(ref);
  if (have < bytes) throw new ShapeError(kernel, arg, `at least ${bytes} bytes`, `${have} bytes`);
}

/** Throws ShapeError unless `value` is a positive integer (and a multiple of `multiple`). */
export function requireDim(kernel: string, arg: string, value: number, multiple = 1): void {
  if (!Number.isInteger(value) || value <= 0 || value % multiple !== 0) {
    const want = multiple > 1 ? `a positive multiple of ${multiple}` : 'a positive integer';
    throw new ShapeError(kernel, arg, want, String(value));
  }
}

/** Checks that one binding of `bytes` fits the adapter's storage binding limit. */
export function requireBindable(gpu: Gpu, what: string, bytes: number): void {
  const max = gpu.limits.maxStorageBufferBindingSize;
  if (bytes > max) {
    throw new LimitError(
      what,
      'maxStorageBufferBindingSize',
      bytes,
      max,
      'split it into row parts (createWeight does this), or use a smaller quantization or context.',
    );
  }
}

/** Packs u32/i32/f32 scalars into a 16-byte-aligned uniform block. */
export class Params {
  private readonly view: DataView;
  private readonly bytes: Uint8Array;
  private at = 0;
  constructor(words: number) {
    this.bytes = new Uint8Array(Math.ceil(words / 4) * 16);
    this.view = new DataView(this.bytes.buffer);
  }
  u32(v: number): this {
    this.view.setUint32(this.at, v >>> 0, true);
    this.at += 4;
    return this;
  }
  i32(v: number): this {
    this.view.setInt32(this.at, v | 0, true);
    this.at += 4;
    return this;
  }
  f32(v: number): this {
    this.view.setFloat32(this.at, v, true);
    this.at += 4;
    return this;
  }
  get data(): Uint8Array {
    return this.bytes;
  }
}

// Bind groups, built on first use and reused: a dispatch's resources (the params buffer and its storage buffers) are
// the same from step to step once the activations are allocated at load, so after warm-up no step creates one.
// Keyed by the first storage buffer (a WeakMap: entries go with their buffers), then by layout and every binding.
const bindGroups = new WeakMap<GPUBuffer, Map<string, GPUBindGroup>>();
const ids = new WeakMap<GPUBuffer, number>();
let nextId = 0;
const idOf = (b: GPUBuffer) => ids.get(b) ?? (ids.set(b, ++nextId), nextId);

/** Dispatches recorded and bind groups created so far, on every device (benchmarks count them per step). */
export const gpuStats = { dispatches: 0, bindGroups: 0 };

/** The bind group of a cached pipeline for resources in binding order, built once. */
export function bindGroup(gpu: Gpu, cached: CachedPipeline, label: string, resources: readonly (BufferRef | GPUBufferBinding)[]): GPUBindGroup {
  const bindings = resources.map((r) => toBinding(r as BufferRef));
  const anchor = bindings.find((b) => b.buffer !== gpu.uniforms.buffer)?.buffer ?? gpu.uniforms.buffer;
  let byKey = bindGroups.get(anchor);
  if (!byKey) bindGroups.set(anchor, (byKey = new Map()));
  const key = `${cached.key}#${bindings.map((b) => `${idOf(b.buffer)}:${b.offset ?? 0}:${b.size ?? ''}`).join(',')}`;
  let group = byKey.get(key);
  if (!group) {
    gpuStats.bindGroups++;
    group = gpu.device.createBindGroup({ label, layout: cached.layout, entries: bindings.map((resource, binding) => ({ binding, resource })) });
    byKey.set(key, group);
  }
  return group;
}

/** Records one dispatch: pipeline, bind group (params first at binding 0), workgroup grid. */
export function dispatch(
  gpu: Gpu,
  pass: GPUComputePassEncoder,
  cached: CachedPipeline,
  label: string,
  params: Params | null,
  buffers: readonly BufferRef[],
  workgroups: readonly [number, number?, number?],
): void {
  assertAlive(gpu);
  const maxBinding = gpu.limits.maxStorageBufferBindingSize;
  for (let i = 0; i < buffers.length; i++) {
    const bytes = refBytes(buffers[i]);
    if (bytes > maxBinding) {
      const b = bufferOf(buffers[i]);
      throw new LimitError(
        `${label}: binding ${i + 1} ('${b.label || 'unlabelled'}')`,
        'maxStorageBufferBindingSize',
        bytes,
        maxBinding,
        'bind a smaller range ({ buffer, offset, size }), split the tensor (createWeight splits weights), or use a smaller batch or context.',
      );
    }
  }
  const resources: (BufferRef | GPUBufferBinding)[] = params ? [{ buffer: gpu.uniforms.buffer, offset: 0, size: PARAMS_SLOT_BYTES }, ...buffers] : [...buffers];
  pass.setPipeline(cached.pipeline);
  if (params) pass.setBindGroup(0, bindGroup(gpu, cached, label, resources), [gpu.uniforms.write(params.data)]);
  else pass.setBindGroup(0, bindGroup(gpu, cached, label, resources));
  const [x, y = 1, z = 1] = workgroups;
  const max = gpu.limits.maxComputeWorkgroupsPerDimension;
  if (x > max || y > max || z > max) {
    throw new LimitError(label, 'maxComputeWorkgroupsPerDimension', Math.max(x, y, z), max, 'use grid2d() for large dispatches.');
  }
  if (x > 0 && y > 0 && z > 0) {
    pass.dispatchWorkgroups(x, y, z);
    gpuStats.dispatches++;
  }
}

/**
 * Spread `count` workgroups over x and y so neither exceeds the per-dimension limit.
 * Kernels recover the linear index as `wid.y * num_workgroups.x + wid.x` and skip ids ≥ count.
 */
export function grid2d(gpu: Gpu, count: number): [number, number] {
  const max = gpu.limits.maxComputeWorkgroupsPerDimension;
  if (count <= max) return [count, 1];
  const y = Math.ceil(count / max);
  return [Math.ceil(count / y), y];
}

/** Binding kinds with the params uniform first. */
export function withParams(...rest: BindingKind[]): BindingKind[] {
  return ['uniform', ...rest];
}

const dummies = new WeakMap<Gpu, GPUBuffer>();

/** A 16-byte storage buffer for bindings a variant declares but does not use. */
export function unusedBinding(gpu: Gpu): GPUBuffer {
  let b = dummies.get(gpu);
  if (!b) {
    b = gpu.device.createBuffer({ label: 'unused-binding', size: 16, usage: GPUBufferUsage.STORAGE });
    dummies.set(gpu, b);
  }
  return b;
}
