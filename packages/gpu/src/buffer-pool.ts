// A pool of GPU buffers bucketed by usage and size class (powers of two, then 1/4 steps), so
// per-step scratch tensors are reused instead of created and destroyed every step.

import { LimitError } from './errors.ts';

export class BufferPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly owned = new Set<GPUBuffer>();
  private readonly sizeOf = new Map<GPUBuffer, string>();

  constructor(private readonly device: GPUDevice) {}

  /** Bytes held by the pool, in use or free. */
  get bytes(): number {
    let n = 0;
    for (const b of this.owned) n += b.size;
    return n;
  }

  /** A buffer of at least `size` bytes with exactly `usage`. Give it back with release(). */
  acquire(size: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    const max = this.device.limits.maxBufferSize;
    if (size > max) {
      throw new LimitError(label, 'maxBufferSize', size, max, 'split the tensor into parts or use a smaller shape.');
    }
    const cls = Math.min(sizeClass(Math.max(size, 16)), max);
    const key = `${usage}:${cls}`;
    const list = this.free.get(key);
    const reused = list?.pop();
    if (reused) {
      reused.label = label;
      return reused;
    }
    const buffer = this.device.createBuffer({ label, size: cls, usage });
    this.owned.add(buffer);
    this.sizeOf.set(buffer, key);
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    const key = this.sizeOf.get(buffer);
    if (!key) return; // not ours (or already destroyed): ignore, release is idempotent
    const list = this.free.get(key) ?? [];
    if (!list.includes(buffer)) list.push(buffer);
    this.free.set(key, list);
  }

  /** Destroys the free buffers (keeps those in use). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const b of list) {
        this.owned.delete(b);
        this.sizeOf.delete(b);
        b.destroy();
      }
    }
    this.free.clear();
  }

  destroy(): void {
    for (const b of this.owned) b.destroy();
    this.owned.clear();
    this.sizeOf.clear();
    this.free.clear();
  }
}

/** Round up to a power of two, in quarter steps above 4 KiB so large buffers waste at most 25%. */
export function sizeClass(size: number): number {
  const p = 2 ** Math.ceil(Math.log2(size));
  if (p <= 4096) return p;
  const quarter = p / 8; // p/2 .. p in steps of p/8
  return Math.ceil(size / quarter) * quarter;
}
