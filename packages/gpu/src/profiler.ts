// Times GPU work. With 'timestamp-query' it writes begin/end timestamps around each compute pass and
// resolves them after the submit; without it, it falls back to wall-clock time from submit to
// onSubmittedWorkDone (which includes queue latency, so only whole submits are timed).

import type { Gpu } from './device.ts';

export interface PassTiming {
  label: string;
  ms: number;
}

export class Profiler {
  readonly mode: 'timestamp' | 'wall-clock';
  private readonly querySet?: GPUQuerySet;
  private readonly resolveBuf?: GPUBuffer;
  private labels: string[] = [];
  private readonly capacity: number;

  constructor(
    private readonly gpu: Gpu,
    options: { maxPasses?: number; forceWallClock?: boolean } = {},
  ) {
    this.capacity = options.maxPasses ?? 256;
    this.mode = gpu.features.timestampQuery && !options.forceWallClock ? 'timestamp' : 'wall-clock';
    if (this.mode === 'timestamp') {
      this.querySet = gpu.device.createQuerySet({ label: 'profiler', type: 'timestamp', count: this.capacity * 2 });
      this.resolveBuf = gpu.device.createBuffer({
        label: 'profiler.resolve',
        size: this.capacity * 16,
        usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
      });
    }
  }

  /** A compute pass descriptor that times the pass when timestamps are available. */
  pass(label: string): GPUComputePassDescriptor {
    if (!this.querySet || this.labels.length >= this.capacity) return { label };
    const i = this.labels.length;
    this.labels.push(label);
    return {
      label,
      timestampWrites: { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 },
    };
  }

  /**
   * Submit `encoder` and return the per-pass GPU times (timestamp mode) or one wall-clock entry
   * covering the whole submit.
   */
  async submit(encoder: GPUCommandEncoder, label = 'submit'): Promise<PassTiming[]> {
    const labels = this.labels;
    this.labels = [];
    let ticket;
    if (this.querySet && this.resolveBuf && labels.length) {
      encoder.resolveQuerySet(this.querySet, 0, labels.length * 2, this.resolveBuf, 0);
      ticket = this.gpu.readback.encodeCopy(encoder, this.resolveBuf, 0, labels.length * 16);
    }
    const t0 = performance.now();
    this.gpu.submit([encoder.finish()]);
    await this.gpu.device.queue.onSubmittedWorkDone();
    const wall = performance.now() - t0;
    if (!ticket) return [{ label, ms: wall }];
    const ts = new BigUint64Array(await ticket.read());
    return labels.map((l, i) => ({ label: l, ms: Number(ts[2 * i + 1] - ts[2 * i]) / 1e6 }));
  }

  destroy(): void {
    this.querySet?.destroy();
    this.resolveBuf?.destroy();
  }
}
