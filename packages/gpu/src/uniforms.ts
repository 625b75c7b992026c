// Per-dispatch parameters (sizes, offsets, scalars) go into slices of one growing uniform buffer,
// bump-allocated while a step is recorded and reset after its submit. writeBuffer calls are queued
// ahead of the submit that uses them, so recording never submits.

export class UniformArena {
  private chunks: GPUBuffer[] = [];
  private chunk = 0;
  private offset = 0;
  private static readonly CHUNK_BYTES = 64 * 1024;

  constructor(
    private readonly device: GPUDevice,
    private readonly align: number,
  ) {}

  /** Copy `data` (≤ 64 KiB) into the arena and return its binding. */
  write(data: ArrayBufferView): GPUBufferBinding {
    const size = Math.ceil(data.byteLength / 16) * 16;
    if (this.offset + size > UniformArena.CHUNK_BYTES) {
      this.chunk++;
      this.offset = 0;
    }
    if (this.chunk >= this.chunks.length) {
      this.chunks.push(
        this.device.createBuffer({
          label: `uniforms#${this.chunks.length}`,
          size: UniformArena.CHUNK_BYTES,
          usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
        }),
      );
    }
    const buffer = this.chunks[this.chunk];
    const offset = this.offset;
    this.device.queue.writeBuffer(buffer, offset, data.buffer, data.byteOffset, data.byteLength);
    this.offset += Math.ceil(size / this.align) * this.align;
    return { buffer, offset, size };
  }

  /**
   * Start reusing the arena from the beginning. Safe once every submit that used earlier slices has been
   * queued: later writeBuffer calls are ordered after those submits on the queue timeline.
   */
  reset(): void {
    this.chunk = 0;
    this.offset = 0;
  }

  destroy(): void {
    for (const b of this.chunks) b.destroy();
    this.chunks = [];
    this.reset();
  }
}
