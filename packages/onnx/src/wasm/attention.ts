// The attention of intab's CPU forward as wasm SIMD128 (f32x4), over K/V rows the page table scatters: one query head
// against the positions it sees. Scores (q·k_j · scale), their softmax (activation.ts's expf: an exp per position and
// head, in JS it was a third of a 30-token prefill's attention at 250 positions) and the weighted sum of V rows. Same memory as the matmul kernels
// (CpuMatmul.memory): q, the K/V pages, the row offsets and the outputs are all pointers into it.
//
// Exports, all pointers byte offsets:
//   attn_scores(q, kv, offs, n, d, out, scale): out[j] = scale · Σ_i q[i]·kv[offs[j] + 4i], j < n   (f32, i32 offs)
//   attn_mix(p, kv, offs, n, d, out):           out[i] = Σ_j p[j]·kv[offs[j] + 4i], i < d
//   attn_softmax(p, n):                         p[0..n) = softmax(p[0..n)) in place
//   exp_sum(p, n, m) → f32:                     Σ_j exp(p[j] − m), n a multiple of 4 (a logits row's normaliser)
//   attn_tasks(tasks, from, to, d, scores, scale): for each task i in [from, to) of the table at `tasks` (ATTENTION_TASK
//                                               i32s each: q, k, v, offs, n, out), out = Σ_j softmax(scale·q·k_j)_j · v_j
//                                               with `scores` (n f32) as scratch: one query head of one token, and
//                                               threads take runs of tasks, each with its own scratch
// d (the head dimension) a multiple of 16; offs[j] the byte offset of position j's row from kv (the layer's K or V
// block plus the kv head's offset).

import { emitExp, f32x4 } from './activation.ts';
import { F32, I32, V128, WasmModule, type Code } from './wasm-module.ts';
import { isShared } from './wasm-threads.ts';

/** Head dimensions the kernels take: multiples of 16 floats (four f32x4 accumulators per pass). */
export const ATTENTION_HEAD_DIM_STEP = 16;

/** i32s per attn_tasks entry: q, k, v, offs (pointers), n, out (pointer). */
export const ATTENTION_TASK = 6;

/** The module's binary (`shared`: for a shared memory, wasm threads). */
export function buildAttentionModule(shared = false): Uint8Array<ArrayBuffer> {
  const mod = new WasmModule({ memoryPages: 1, shared });
  emitScores(mod.func('attn_scores', [I32, I32, I32, I32, I32, I32, F32], []));
  emitMix(mod.func('attn_mix', [I32, I32, I32, I32, I32, I32], []));
  emitSoftmax(mod.func('attn_softmax', [I32, I32], []));
  emitExpSum(mod.func('exp_sum', [I32, I32, F32], [F32]));
  emitTasks(mod.func('attn_tasks', [I32, I32, I32, I32, I32, F32], []), mod);
  return mod.encode();
}

const ZERO = new Uint8Array(16);

/** out[j] = scale · q·k_j: per row, four f32x4 partial sums over 16 floats at a time, summed across lanes at the end. */
function emitScores(c: Code): void {
  const [q, kv, offs, n, d, out, scale] = [0, 1, 2, 3, 4, 5, 6];
  const j = c.local(I32);
  const kp = c.local(I32);
  const qp = c.local(I32);
  const i = c.local(I32);
  const acc = [c.local(V128), c.local(V128), c.local(V128), c.local(V128)];
  c.get(n).i32_eqz().if_().return_().end();
  c.i32_const(0).set(j);
  c.loop();
  {
    c.get(kv).get(offs).get(j).i32_const(2).i32_shl().i32_add().i32_load(0).i32_add().set(kp);
    c.get(q).set(qp);
    for (const a of acc) c.v128_const(ZERO).set(a);
    c.get(d).i32_const(4).i32_shr_u().set(i); // d / 16 passes
    c.loop();
    for (let u = 0; u < 4; u++) c.get(acc[u]).get(qp).v128_load(16 * u).get(kp).v128_load(16 * u).f32x4_mul().f32x4_add().set(acc[u]);
    c.get(qp).i32_const(64).i32_add().set(qp);
    c.get(kp).i32_const(64).i32_add().set(kp);
    c.get(i).i32_const(1).i32_sub().tee(i).br_if(0);
    c.end();
    c.get(acc[0]).get(acc[1]).f32x4_add().get(acc[2]).get(acc[3]).f32x4_add().f32x4_add().set(acc[0]);
    c.get(out).get(j).i32_const(2).i32_shl().i32_add();
    c.get(acc[0]).f32x4_extract_lane(0).get(acc[0]).f32x4_extract_lane(1).f32_add();
    c.get(acc[0]).f32x4_extract_lane(2).get(acc[0]).f32x4_extract_lane(3).f32_add().f32_add();
    c.get(scale).f32_mul().f32_store(0);
    c.get(j).i32_const(1).i32_add().tee(j).get(n).i32_lt_u().br_if(0);
  }
  c.end();
}

/** out = Σ_j p_j · v_j: per 16 floats of the output, four f32x4 accumulators over every row, then stored. */
function emitMix(c: Code): void {
  const [p, kv, offs, n, d, out] = [0, 1, 2, 3, 4, 5];
  const chunk = c.local(I32); // byte offset of the 16 floats being summed
  const j = c.local(I32);
  const vp = c.local(I32);
  const pj = c.local(V128);
  const acc = [c.local(V128), c.local(V128), c.local(V128), c.local(V128)];
  c.get(d).i32_eqz().if_().return_().end();
  c.i32_const(0).set(chunk);
  c.loop();
  {
    for (const a of acc) c.v128_const(ZERO).set(a);
    c.i32_const(0).set(j);
    c.block();
    c.get(n).i32_eqz().br_if(0);
    c.loop();
    c.get(p).get(j).i32_const(2).i32_shl().i32_add().f32_load(0).f32x4_splat().set(pj);
    c.get(kv).get(offs).get(j).i32_const(2).i32_shl().i32_add().i32_load(0).i32_add().get(chunk).i32_add().set(vp);
    for (let u = 0; u < 4; u++) c.get(acc[u]).get(pj).get(vp).v128_load(16 * u).f32x4_mul().f32x4_add().set(acc[u]);
    c.get(j).i32_const(1).i32_add().tee(j).get(n).i32_lt_u().br_if(0);
    c.end();
    c.end();
    for (let u = 0; u < 4; u++) c.get(out).get(chunk).i32_add().get(acc[u]).v128_store(16 * u);
    c.get(chunk).i32_const(64).i32_add().tee(chunk).get(d).i32_const(2).i32_shl().i32_lt_u().br_if(0);
  }
  c.end();
}

/**
 * p[0..n) = softmax(p[0..n)) in place: the max, then exp(p − max) (activation.ts's expf) and their sum, then each
 * times 1/sum; four lanes at a time, the last n mod 4 one by one.
 */
function emitSoftmax(c: Code): void {
  const [p, n] = [0, 1];
  const full = c.local(I32); // bytes of the whole vectors
  const i = c.local(I32);
  const acc = c.local(V128);
  const mv = c.local(V128);
  const m = c.local(F32);
  const sum = c.local(F32);
  const t = [c.local(V128), c.local(V128), c.local(V128)] as const;
  const lanes = (op: 'max' | 'add') => {
    c.get(acc).f32x4_extract_lane(0).get(acc).f32x4_extract_lane(1);
    if (op === 'max') c.f32_max(); else c.f32_add();
    c.get(acc).f32x4_extract_lane(2).get(acc).f32x4_extract_lane(3);
    if (op === 'max') c.f32_max().f32_max(); else c.f32_add().f32_add();
  };
  /** for (i = from; i < to; i += step) body, i a byte offset */
  const each = (from: () => void, to: () => void, step: number, body: () => void) => {
    from();
    c.set(i);
    c.block().loop();
    c.get(i);
    to();
    c.i32_ge_u().br_if(1);
    body();
    c.get(i).i32_const(step).i32_add().set(i);
    c.br(0).end().end();
  };
  c.get(n).i32_eqz().if_().return_().end();
  c.get(n).i32_const(-4).i32_and().i32_const(2).i32_shl().set(full);
  const end = () => c.get(n).i32_const(2).i32_shl();
  // the max
  c.v128_const(f32x4(-Infinity)).set(acc);
  each(() => c.i32_const(0), () => c.get(full), 16, () => c.get(acc).get(p).get(i).i32_add().v128_load(0).f32x4_max().set(acc));
  lanes('max');
  c.set(m);
  each(() => c.get(full), end, 4, () => c.get(m).get(p).get(i).i32_add().f32_load(0).f32_max().set(m));
  c.get(m).f32x4_splat().set(mv);
  // exp(p − max) and its sum
  c.v128_const(f32x4(0)).set(acc);
  each(() => c.i32_const(0), () => c.get(full), 16, () => {
    c.get(p).get(i).i32_add();
    c.get(p).get(i).i32_add().v128_load(0).get(mv).f32x4_sub();
    emitExp(c, t);
    c.tee(t[0]).v128_store(0);
    c.get(acc).get(t[0]).f32x4_add().set(acc);
  });
  lanes('add');
  c.set(sum);
  each(() => c.get(full), end, 4, () => {
    c.get(p).get(i).i32_add();
    c.get(p).get(i).i32_add().v128_load32_splat(0).get(mv).f32x4_sub();
    emitExp(c, t);
    c.f32x4_extract_lane(0).tee(m).f32_store(0); // m is free again: the lane's exp
    c.get(sum).get(m).f32_add().set(sum);
  });
  // · 1/sum
  c.f32_const(1).get(sum).f32_div().tee(sum).f32x4_splat().set(mv);
  each(() => c.i32_const(0), () => c.get(full), 16, () => c.get(p).get(i).i32_add().get(p).get(i).i32_add().v128_load(0).get(mv).f32x4_mul().v128_store(0));
  each(() => c.get(full), end, 4, () => c.get(p).get(i).i32_add().get(p).get(i).i32_add().f32_load(0).get(sum).f32_mul().f32_store(0));
}

/** Σ_j exp(p[j] − m) for j < n (n a multiple of 4: a vocabulary's logits row, m its max), for the row's logprobs. */
function emitExpSum(c: Code): void {
  const [p, n, m] = [0, 1, 2];
  const end = c.local(I32);
  const mv = c.local(V128);
  const acc = c.local(V128);
  const t = [c.local(V128), c.local(V128), c.local(V128)] as const;
  c.get(m).f32x4_splat().set(mv);
  c.v128_const(f32x4(0)).set(acc);
  c.get(p).get(n).i32_const(2).i32_shl().i32_add().set(end);
  c.block().loop();
  c.get(p).get(end).i32_ge_u().br_if(1);
  c.get(acc);
  c.get(p).v128_load(0).get(mv).f32x4_sub();
  emitExp(c, t);
  c.f32x4_add().set(acc);
  c.get(p).i32_const(16).i32_add().set(p);
  c.br(0).end().end();
  c.get(acc).f32x4_extract_lane(0).get(acc).f32x4_extract_lane(1).f32_add();
  c.get(acc).f32x4_extract_lane(2).get(acc).f32x4_extract_lane(3).f32_add().f32_add();
}

/** attn_tasks: per task, attn_scores, attn_softmax and attn_mix on its fields (ATTENTION_TASK). */
function emitTasks(c: Code, mod: WasmModule): void {
  const [tasks, from, to, d, scores, scale] = [0, 1, 2, 3, 4, 5];
  const t = c.local(I32); // the task's address
  const end = c.local(I32);
  const field = (i: number) => c.get(t).i32_load(4 * i);
  const [Q, K, V, OFFS, N, OUT] = [0, 1, 2, 3, 4, 5];
  c.get(tasks).get(from).i32_const(4 * ATTENTION_TASK).i32_mul().i32_add().set(t);
  c.get(tasks).get(to).i32_const(4 * ATTENTION_TASK).i32_mul().i32_add().set(end);
  c.block().loop();
  c.get(t).get(end).i32_ge_u().br_if(1);
  field(Q); field(K); field(OFFS); field(N);
  c.get(d).get(scores).get(scale).call(mod.index('attn_scores'));
  c.get(scores);
  field(N);
  c.call(mod.index('attn_softmax'));
  c.get(scores);
  field(V); field(OFFS); field(N);
  c.get(d);
  field(OUT);
  c.call(mod.index('attn_mix'));
  c.get(t).i32_const(4 * ATTENTION_TASK).i32_add().set(t);
  c.br(0).end().end();
}

/** The attention kernels, instantiated over a memory (CpuMatmul.memory). */
export interface AttentionKernels {
  attn_scores(q: number, kv: number, offs: number, n: number, d: number, out: number, scale: number): void;
  attn_mix(p: number, kv: number, offs: number, n: number, d: number, out: number): void;
  attn_softmax(p: number, n: number): void;
  exp_sum(p: number, n: number, m: number): number;
  attn_tasks(tasks: number, from: number, to: number, d: number, scores: number, scale: number): void;
}

/**
 * The kernels over `memory`, from `module` (buildAttentionModule's, compiled: the one the CPU threads also run) or
 * one built for the memory.
 * @example
 * const attention = await createAttentionKernels(cpu.memory);
 * attention.attn_scores(qPtr, keysPtr, offsPtr, n, 64, scoresPtr, 0.125);
 */
export async function createAttentionKernels(memory: WebAssembly.Memory, module?: WebAssembly.Module): Promise<AttentionKernels> {
  const compiled = module ?? (await WebAssembly.compile(buildAttentionModule(isShared(memory))));
  const instance = await WebAssembly.instantiate(compiled, { env: { memory } });
  return instance.exports as unknown as AttentionKernels;
}
