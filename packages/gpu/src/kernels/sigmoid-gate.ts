// The sigmoid output gate: out = sigmoid(x) * up (see shaders/elementwise/sigmoid-gate.wgsl), Qwen3.5's gated
// attention (its attention output times sigmoid of the gate half of the q projection). CPU twin:
// reference/elementwise.ts gated(sigmoid, ...).

import src from '../../../../shaders/elementwise/sigmoid-gate.wgsl?raw';
import type { Gpu } from '../device.ts';
import { dispatch, grid2d, withParams } from '../kernel.ts';
import { gatedParams, type GatedArgs } from './activation.ts';

/**
 * @example
 * // attention output (T, H·D) gated by the gate rows (T, H·D)
 * createSigmoidGate(gpu).encode(pass, { x: gate, up: att, out: att2, rows: T, cols: H * D });
 */
export function createSigmoidGate(gpu: Gpu): { encode(pass: GPUComputePassEncoder, args: GatedArgs): void } {
  const WG = 256;
  const cached = gpu.pipelines.get({ name: 'sigmoid-gate', variant: 'f32', code: src, bindings: withParams('read', 'read', 'storage'), constants: { WG_SIZE: WG } });
  return {
    encode(pass, a) {
      const [x, y] = grid2d(gpu, Math.ceil((a.rows * a.cols) / WG));
      dispatch(gpu, pass, cached, 'sigmoid-gate', gatedParams('sigmoid-gate', a, x), [a.x, a.up, a.out], [x, y]);
    },
  };
}
