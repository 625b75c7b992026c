// The streaming-read baseline kernel (see shaders/bench/stream-read.wgsl): benchmarks divide a
// kernel's bandwidth by this one's to show how close it gets to what the device can read.

import src from '../../../../shaders/bench/stream-read.wgsl?raw';
import type { Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, grid2d, requireBytes, requireDim, withParams } from '../kernel.ts';

export interface StreamReadArgs {
  /** The bytes to read (a multiple of 16). */
  src: BufferRef;
  bytes: number;
  /** One u32 per invocation: ceil(bytes / spanBytes) * 4 bytes. */
  out: BufferRef;
}

/** Bytes `out` needs for a given span. */
export function streamReadOutBytes(bytes: number, spanBytes: number): number {
  return Math.ceil(bytes / spanBytes) * 4;
}

/**
 * @example
 * createStreamRead(gpu, { workgroupSize: 64, spanBytes: 4096 }).encode(pass, { src, bytes, out });
 */
export function createStreamRead(gpu: Gpu, options: { workgroupSize: number; spanBytes: number }) {
  const { workgroupSize: wg, spanBytes } = options;
  requireDim('stream-read', 'spanBytes', spanBytes, 16);
  const cached = gpu.pipelines.get({ name: 'stream-read', variant: 'u32', code: src, bindings: withParams('read', 'storage'), constants: { WG_SIZE: wg } });
  return {
    encode(pass: GPUComputePassEncoder, a: StreamReadArgs) {
      requireDim('stream-read', 'bytes', a.bytes, 16);
      requireBytes('stream-read', 'src', a.src, a.bytes);
      requireBytes('stream-read', 'out', a.out, streamReadOutBytes(a.bytes, spanBytes));
      const invocations = Math.ceil(a.bytes / spanBytes);
      const [x, y] = grid2d(gpu, Math.ceil(invocations / wg));
      dispatch(gpu, pass, cached, 'stream-read', new Params(4).u32(a.bytes / 16).u32(spanBytes / 16).u32(x), [a.src, a.out], [x, y]);
    },
  };
}
