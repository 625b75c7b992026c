// Pooled readback: copies a GPU range into a reusable MAP_READ staging buffer, inside the caller's
// command encoder, so reading back the sampled ids costs no extra submit.

export interface ReadbackTicket {
  /** Resolves with a copy of the bytes once the submit that holds the copy has finished. */
  read(): Promise<ArrayBuffer>;
}

/** Smallest staging buffer (bytes). */
const MIN_STAGING = 256;

export class Readback {
  private readonly free: GPUBuffer[] = [];
  private readonly all = new Set<GPUBuffer>();

  constructor(private readonly device: GPUDevice) {}

  /** Record a copy of `size` bytes of `src` at `offset` into a staging buffer; read after submit. */
  encodeCopy(encoder: GPUCommandEncoder, src: GPUBuffer, offset = 0, size = src.size - offset): ReadbackTicket {
    const padded = Math.ceil(size / 4) * 4;
    const staging = this.take(padded);
    encoder.copyBufferToBuffer(src, offset, staging, 0, padded);
    let done: Promise<ArrayBuffer> | undefined;
    return {
      read: () =>
        (done ??= staging.mapAsync(GPUMapMode.READ, 0, padded).then(
          () => {
            const out = staging.getMappedRange(0, padded).slice(0, size);
            staging.unmap();
            this.give(staging);
            return out;
          },
          (err) => {
            this.give(staging);
            throw err;
          },
        )),
    };
  }

  /** Copy and read in one call (own submit). For tests and one-off reads, not for the hot path. */
  async read(src: GPUBuffer, offset = 0, size = src.size - offset): Promise<ArrayBuffer> {
    const encoder = this.device.createCommandEncoder({ label: 'readback' });
    const ticket = this.encodeCopy(encoder, src, offset, size);
    this.device.queue.submit([encoder.finish()]);
    return ticket.read();
  }

  destroy(): void {
    for (const b of this.all) b.destroy();
    this.all.clear();
    this.free.length = 0;
  }

  private take(size: number): GPUBuffer {
    // Buffers are at least MIN_STAGING bytes, so small reads (4 words per sequence) must reuse those, or
    // every small read would add a staging buffer to the pool.
    const i = this.free.findIndex((b) => b.size >= size && b.size <= Math.max(MIN_STAGING, size * 4));
    if (i >= 0) return this.free.splice(i, 1)[0];
    const b = this.device.createBuffer({
      label: `readback(${size})`,
      size: Math.max(MIN_STAGING, 2 ** Math.ceil(Math.log2(size))),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    this.all.add(b);
    return b;
  }

  private give(b: GPUBuffer): void {
    if (this.all.has(b)) this.free.push(b);
  }
}
