// The recurrent state of a model's linear-attention layers (Qwen3.5's Gated DeltaNet) per sequence, on the GPU. Unlike
// K/V, which grows a page at a time, a sequence's state has a fixed size: each linear layer keeps one buffer of conv
// state slots and one of delta-rule state slots (layouts: @intab/gpu kernels/recurrent-state.ts), and a sequence holds
// one slot from alloc to free. Fork copies the slot; a new slot starts at zero.
//
// Rewinds (rejected speculative proposals) recompute instead of keeping a state per position: before a step that
// verifies proposals, the sequence's state is copied into its snapshot slot (a second set of buffers) with the
// tokens the step feeds from there; rewinding restores the snapshot and owes the tokens kept up to the new length,
// which the sequence's next step feeds first (replay: their K/V are already in the cache and are written again,
// identically). A rewind can therefore go back at most to the start of the sequence's last verify step, which is
// all speculative decoding asks of it (draft tokens come from another model or from n-grams, never from steps of
// this one that are later undone). A state per position would cost a slot per verified token: 1 MB a layer and
// token for Qwen3.5-0.8B, against one copy of the slot per verify step.
//
// Every copy and clear is owed until the next step's command encoder (recordPending), so they run in order with the
// steps on the GPU.

import type { Gpu } from '@intab/gpu';
import type { LinearAttentionSpec } from './config.ts';
import { IntabModelError, KvCacheFullError } from './errors.ts';

/** Bytes of one sequence's state in one linear layer: conv (K−1)·C and delta Hv·Dk·Dv, f32. */
export function stateSlotBytes(s: LinearAttentionSpec): { conv: number; delta: number } {
  const channels = 2 * s.kHeads * s.kDim + s.vHeads * s.vDim;
  return { conv: (s.convKernel - 1) * channels * 4, delta: s.vHeads * s.kDim * s.vDim * 4 };
}

/** Where a sequence may be rewound to: its snapshot's length and the tokens fed since. */
interface Snapshot {
  length: number;
  tokens: number[];
}

export class SequenceStates {
  /** Per linear layer (in config order): conv (slots, K−1, C) and delta (slots, Hv, Dk, Dv), live and snapshot. */
  readonly conv: GPUBuffer[] = [];
  readonly delta: GPUBuffer[] = [];
  private readonly convSnap: GPUBuffer[] = [];
  private readonly deltaSnap: GPUBuffer[] = [];
  private readonly slotOf = new Map<number, number>();
  private readonly freeSlots: number[] = [];
  private readonly snapshots = new Map<number, Snapshot>();
  /** Tokens each sequence's next step feeds first (after a rewind), from its snapshot's length on. */
  private readonly replays = new Map<number, number[]>();
  /** GPU work owed before the next step: clears of new slots, copies (live → snapshot, snapshot → live). */
  private pending: ((encoder: GPUCommandEncoder) => void)[] = [];
  readonly bytes: { conv: number; delta: number };
  private destroyed = false;

  constructor(
    gpu: Gpu,
    readonly spec: LinearAttentionSpec,
    readonly slots: number,
  ) {
    if (!Number.isInteger(slots) || slots < 1) throw new IntabModelError(`recurrent state: ${slots} slots: give at least one (maxBatch).`);
    this.bytes = stateSlotBytes(spec);
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    try {
      for (const l of spec.layers) {
        this.conv.push(gpu.device.createBuffer({ label: `L${l}.conv-state`, size: slots * this.bytes.conv, usage }));
        this.delta.push(gpu.device.createBuffer({ label: `L${l}.delta-state`, size: slots * this.bytes.delta, usage }));
        this.convSnap.push(gpu.device.createBuffer({ label: `L${l}.conv-state.snapshot`, size: slots * this.bytes.conv, usage }));
        this.deltaSnap.push(gpu.device.createBuffer({ label: `L${l}.delta-state.snapshot`, size: slots * this.bytes.delta, usage }));
      }
    } catch (err) {
      this.destroy();
      throw err;
    }
    for (let s = slots - 1; s >= 0; s--) this.freeSlots.push(s);
  }

  /** Bytes on the GPU: live and snapshot slots of every linear layer. */
  get totalBytes(): number {
    return 2 * this.slots * this.spec.layers.length * (this.bytes.conv + this.bytes.delta);
  }

  get freeSlotCount(): number {
    return this.freeSlots.length;
  }

  has(seq: number): boolean {
    return this.slotOf.has(seq);
  }

  slot(seq: number): number {
    const s = this.slotOf.get(seq);
    if (s === undefined) throw new IntabModelError(`recurrent state: sequence ${seq} has no state slot: alloc(${seq}) first.`);
    return s;
  }

  /** A zeroed slot for a new sequence (KvCacheFullError when none is free: as many sequences as maxBatch hold one). */
  alloc(seq: number): void {
    if (this.slotOf.has(seq)) throw new IntabModelError(`recurrent state: sequence ${seq} already has a slot; free it first.`);
    const slot = this.take();
    this.slotOf.set(seq, slot);
    this.pending.push((e) => this.eachLayer((buffers, bytes) => e.clearBuffer(buffers.live, slot * bytes, bytes)));
  }

  /** `dst` starts with `src`'s state (parallel samples). */
  fork(src: number, dst: number): void {
    const from = this.slot(src);
    if (this.slotOf.has(dst)) throw new IntabModelError(`recurrent state: sequence ${dst} already has a slot; free it first.`);
    if (this.replays.has(src)) throw new IntabModelError(`recurrent state: sequence ${src} owes a replay after a rewind; fork it after its next step.`);
    const to = this.take();
    this.slotOf.set(dst, to);
    // WebGPU copies never have one buffer at both ends: through dst's snapshot slot, free to use until its first verify step.
    this.pending.push((e) =>
      this.eachLayer((b, bytes) => {
        e.copyBufferToBuffer(b.live, from * bytes, b.snap, to * bytes, bytes);
        e.copyBufferToBuffer(b.snap, to * bytes, b.live, to * bytes, bytes);
      }),
    );
  }

  free(seq: number): void {
    const slot = this.slotOf.get(seq);
    if (slot === undefined) return;
    this.slotOf.delete(seq);
    this.snapshots.delete(seq);
    this.replays.delete(seq);
    this.restored.delete(seq);
    this.freeSlots.push(slot);
  }

  /** The tokens `seq`'s next step feeds before its own (a rewind's replay); empty when none. */
  replayOf(seq: number): readonly number[] {
    return this.replays.get(seq) ?? [];
  }

  /**
   * Before a step: a sequence about to verify proposals keeps a snapshot of its state (taken now, or the one a
   * rewind just restored, whose replay comes first), and every sequence's snapshot learns the tokens the step feeds.
   * A plain step forgets the snapshot: no rewind reaches behind it.
   */
  beforeStep(seq: number, length: number, tokens: readonly number[], verifies: boolean): void {
    const replay = this.replays.get(seq) ?? [];
    this.replays.delete(seq);
    if (!verifies) {
      this.snapshots.delete(seq);
      return;
    }
    const snap = replay.length > 0 || this.restored.has(seq) ? this.snapshots.get(seq) : undefined;
    this.restored.delete(seq);
    if (snap) {
      snap.tokens = [...replay, ...tokens];
      return;
    }
    const slot = this.slot(seq);
    this.pending.push((e) => this.eachLayer((b, bytes) => e.copyBufferToBuffer(b.live, slot * bytes, b.snap, slot * bytes, bytes)));
    this.snapshots.set(seq, { length, tokens: [...tokens] });
  }

  /** Sequences whose state was just restored to their snapshot with nothing to replay. */
  private readonly restored = new Set<number>();

  /**
   * Drops `seq`'s last tokens down to `length`: restores the snapshot of its last verify step and owes the tokens from
   * there to `length` to its next step. Throws IntabModelError when no snapshot reaches back that far.
   */
  rewind(seq: number, length: number): void {
    const slot = this.slot(seq);
    const snap = this.snapshots.get(seq);
    if (!snap || length < snap.length || length > snap.length + snap.tokens.length) {
      throw new IntabModelError(
        `recurrent state: sequence ${seq} cannot go back to ${length} tokens: a linear-attention model rewinds only into its last verify step${snap ? ` (${snap.length}..${snap.length + snap.tokens.length})` : ''}.`,
      );
    }
    this.pending.push((e) => this.eachLayer((b, bytes) => e.copyBufferToBuffer(b.snap, slot * bytes, b.live, slot * bytes, bytes)));
    const replay = snap.tokens.slice(0, length - snap.length);
    snap.tokens = replay;
    if (replay.length > 0) this.replays.set(seq, replay);
    else this.restored.add(seq);
  }

  /** Records the owed clears and copies into `encoder`, before the step's passes. */
  recordPending(encoder: GPUCommandEncoder): void {
    for (const f of this.pending) f(encoder);
    this.pending = [];
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of [...this.conv, ...this.delta, ...this.convSnap, ...this.deltaSnap]) b.destroy();
  }

  private take(): number {
    const slot = this.freeSlots.pop();
    if (slot === undefined) throw new KvCacheFullError(1, 0, this.slots, 'recurrent state slots');
    return slot;
  }

  /** Runs `f` over every layer's conv and delta buffers (live and snapshot) with the bytes of one slot. */
  private eachLayer(f: (buffers: { live: GPUBuffer; snap: GPUBuffer }, slotBytes: number) => void): void {
    this.conv.forEach((live, i) => f({ live, snap: this.convSnap[i] }, this.bytes.conv));
    this.delta.forEach((live, i) => f({ live, snap: this.deltaSnap[i] }, this.bytes.delta));
  }
}
