// The per-sequence recurrent state of linear-attention layers (Qwen3.5's Gated DeltaNet), documented once, and the
// step metadata and checks its kernels share (causal-conv1d, gated-delta). Unlike K/V, which grows a page at a time,
// a sequence's recurrent state has a fixed size, so each layer keeps one buffer of state slots and a step names the
// slot of each of its sequences; slots of sequences not in the step are neither read nor written.
//
// Per linear layer, two buffers of slots:
//   conv state   (slots, K−1, C) f32: the last K−1 inputs of the causal conv, oldest first (C = q|k|v channels)
//   delta state  (slots, Hv, Dk, Dv) f32: S per value head, S[h][i][j] at ((slot·Hv + h)·Dk + i)·Dv + j
// A step's T tokens carry seqIds (T) u32, the same rows as the attention kernels' (kernels/paged-kv.ts): each
// sequence's tokens consecutive and in order, and the rows nondecreasing (row 0's tokens first, the Runner's
// layout), which lets a kernel find a row's tokens by binary search (shaders/lib/seq-range.wgsl). The slot table
// is (B) u32: slotIds[b] is the slot of row b. A row with no token in the step, or a slot ≥ the buffer's slots,
// is skipped: nothing read, nothing written. Two rows of one step must not share a slot.

import type { BufferRef } from '../kernel.ts';
import { refBytes, requireBindable, requireBytes, requireDim } from '../kernel.ts';
import type { Gpu } from '../device.ts';

/** The tokens of one step and the state slots of its B sequence rows. */
export interface RecurrentStep {
  /** (T) u32: each token's sequence row, nondecreasing, each row's tokens consecutive and in order. */
  seqIds: BufferRef;
  /** (B) u32: the state slot of each sequence row. */
  slotIds: BufferRef;
  /** T: tokens in the step. */
  tokens: number;
  /** B: rows of slotIds. */
  sequences: number;
}

/** Checks the step metadata and a state buffer of `slotBytes` per slot; returns the number of slots it holds. */
export function checkRecurrentStep(gpu: Gpu, kernel: string, step: RecurrentStep, state: BufferRef, slotBytes: number): number {
  requireDim(kernel, 'tokens', step.tokens);
  requireDim(kernel, 'sequences', step.sequences);
  requireBytes(kernel, 'seqIds', step.seqIds, step.tokens * 4);
  requireBytes(kernel, 'slotIds', step.slotIds, step.sequences * 4);
  requireBytes(kernel, 'state', state, slotBytes);
  requireBindable(gpu, `${kernel} state`, refBytes(state));
  return Math.floor(refBytes(state) / slotBytes);
}

