// Per-dispatch parameters (sizes, offsets, scalars) of everything recorded before a submit live in one uniform
// buffer, each dispatch at its own dynamic offset: recording copies them into a CPU mirror, and gpu.submit() writes
// what was recorded with one writeBuffer before the submit. So a step costs one upload for all its dispatches' params,
// and since the buffer never changes, a dispatch's bind group can be built once and reused (kernel.ts).

/** Bytes one dispatch's params may take (a binding's size; WGSL params structs are far smaller). */
export const PARAMS_SLOT_BYTES = 256;

export class UniformTable {
  /** The uniform buffer every params binding points into (at a dynamic offset). */
  readonly buffer: GPUBuffer;
  private readonly mirror: Uint8Array;
  private used = 0;
  private flushed = 0;
  private readonly stride: number;
  private destroyed = false;

  constructor(
    private readonly device: GPUDevice,
    align: number,
    /** Dispatches recorded between two resets at most. */
    readonly capacity = 8192,
  ) {
    this.stride = Math.ceil(Math.max(PARAMS_SLOT_BYTES, align) / align) * align;
    this.mirror = new Uint8Array(capacity * this.stride);
    this.buffer = device.createBuffer({ label: 'params', size: this.mirror.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  }

  /** Copies one dispatch's params (≤ 256 bytes) and returns its dynamic offset. */
  write(data: Uint8Array): number {
    if (data.byteLength > PARAMS_SLOT_BYTES) throw new RangeError(`params of ${data.byteLength} bytes exceed a slot of ${PARAMS_SLOT_BYTES}`);
    if (this.used + this.stride > this.mirror.byteLength) {
      throw new RangeError(`more than ${this.capacity} dispatches were recorded without a submit: submit (gpu.submit) more often, or record fewer dispatches at once`);
    }
    const offset = this.used;
    this.mirror.set(data, offset);
    this.used += this.stride;
    return offset;
  }

  /** Uploads the params recorded since the last flush (one writeBuffer); gpu.submit() calls it. */
  flush(): void {
    if (this.destroyed || this.used === this.flushed) return;
    this.device.queue.writeBuffer(this.buffer, this.flushed, this.mirror, this.flushed, this.used - this.flushed);
    this.flushed = this.used;
  }

  /**
   * Reuses the table from its start. Safe once every submit that used it was queued: later writeBuffer calls are
   * ordered after those submits on the queue timeline.
   */
  reset(): void {
    this.flush();
    this.used = 0;
    this.flushed = 0;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.buffer.destroy();
  }
}
