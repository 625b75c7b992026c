// The CPU forward's f32x4 kernels against their CPU twins (plain JS in float64): attention's scores and weighted sum
// over rows scattered through the memory as a page table scatters them (head dimensions 16, 64 and 256; 1 to 37
// positions), its softmax (every length's tail), the per-task loop the threads split (attn_tasks), the gated activation (SiLU and GELU's tanh form) over the whole range of f32 inputs, the clamped
// tails and zero included; RMSNorm (float64 sums, in place too) and the residual add.

import { describe, expect, test } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import { ACTIVATION_COEFFICIENTS, createActivationKernel } from './activation.ts';
import { ATTENTION_TASK, createAttentionKernels } from './attention.ts';
import { createNormKernels } from './norm.ts';

const memory = () => new WebAssembly.Memory({ initial: 64 });

describe('attention kernels', () => {
  for (const d of [16, 64, 256]) {
    for (const n of [1, 5, 37]) {
      test(`d = ${d}, ${n} positions: scores and the weighted sum equal the twin's to f32 rounding`, async () => {
        const mem = memory();
        const k = await createAttentionKernels(mem);
        const f = new Float32Array(mem.buffer);
        const rng = mulberry32(d * 100 + n);
        const rows = 64; // rows of the "cache": positions map to shuffled rows
        const [q, kv, offs, scores, out] = [0, 4096, 4096 + rows * d * 4, 4096 + rows * d * 4 + 4096, 4096 + rows * d * 4 + 8192];
        for (let i = 0; i < d; i++) f[q / 4 + i] = rng() * 2 - 1;
        for (let i = 0; i < rows * d; i++) f[kv / 4 + i] = rng() * 2 - 1;
        const order = Array.from({ length: rows }, (_, i) => i).sort(() => rng() - 0.5);
        const table = new Int32Array(mem.buffer, offs, n);
        for (let j = 0; j < n; j++) table[j] = order[j] * d * 4;
        k.attn_scores(q, kv, offs, n, d, scores, 0.125);
        for (let j = 0; j < n; j++) {
          let s = 0;
          for (let i = 0; i < d; i++) s += f[q / 4 + i] * f[(kv + table[j]) / 4 + i];
          expect(f[scores / 4 + j]).toBeCloseTo(s * 0.125, 5);
        }
        // Weights p_j (any: the kernel does not normalise), then Σ p_j v_j.
        for (let j = 0; j < n; j++) f[scores / 4 + j] = rng();
        k.attn_mix(scores, kv, offs, n, d, out);
        for (let i = 0; i < d; i++) {
          let o = 0;
          for (let j = 0; j < n; j++) o += f[scores / 4 + j] * f[(kv + table[j]) / 4 + i];
          expect(f[out / 4 + i]).toBeCloseTo(o, 5);
        }
      });
    }
  }
});

describe('attention tasks', () => {
  test('attn_tasks runs each task as attn_scores, attn_softmax and attn_mix do, bit for bit, only in [from, to)', async () => {
    const mem = memory();
    const k = await createAttentionKernels(mem);
    const f = new Float32Array(mem.buffer);
    const rng = mulberry32(77);
    const [d, rows, heads] = [32, 48, 5];
    const [q, kv, offs, tasks, scores, out, want] = [0, 8192, 8192 + rows * d * 4, 32768, 36864, 40960, 49152];
    for (let i = 0; i < heads * d; i++) f[q / 4 + i] = rng() * 2 - 1;
    for (let i = 0; i < rows * d; i++) f[kv / 4 + i] = rng() * 2 - 1;
    const table = new Int32Array(mem.buffer, offs, rows);
    for (let j = 0; j < rows; j++) table[j] = ((j * 29) % rows) * d * 4;
    // task h: head h's query against the first 3 + 7h positions, K and V from the same rows (V half a row on)
    const t = new Int32Array(mem.buffer, tasks, heads * ATTENTION_TASK);
    for (let h = 0; h < heads; h++) t.set([q + h * d * 4, kv, kv + 64, offs, 3 + 7 * h, out + h * d * 4], h * ATTENTION_TASK);
    f.fill(NaN, out / 4, out / 4 + heads * d);
    k.attn_tasks(tasks, 1, 4, d, scores, 0.25);
    for (let h = 0; h < heads; h++) {
      const n = 3 + 7 * h;
      k.attn_scores(q + h * d * 4, kv, offs, n, d, scores, 0.25);
      k.attn_softmax(scores, n);
      k.attn_mix(scores, kv + 64, offs, n, d, want + h * d * 4);
      const got = [...f.subarray(out / 4 + h * d, out / 4 + (h + 1) * d)];
      if (h >= 1 && h < 4) expect(got, `task ${h}`).toEqual([...f.subarray(want / 4 + h * d, want / 4 + (h + 1) * d)]);
      else expect(got.every(Number.isNaN), `task ${h} is outside [1, 4)`).toBe(true);
    }
  });
});

describe('attention softmax', () => {
  test('every length from 1 to 37 and 256, scores of any size: within 2e-7 of the float64 softmax', async () => {
    const mem = memory();
    const k = await createAttentionKernels(mem);
    const rng = mulberry32(3);
    for (const n of [...Array.from({ length: 37 }, (_, i) => i + 1), 256]) {
      const p = new Float32Array(mem.buffer, 64, n);
      for (let j = 0; j < n; j++) p[j] = (rng() * 2 - 1) * (j % 5 === 0 ? 60 : 4);
      const x = Array.from(p);
      const max = Math.max(...x);
      const sum = x.reduce((a, v) => a + Math.exp(v - max), 0);
      const guard = new Float32Array(mem.buffer, 64 + 4 * n, 4).fill(7); // past n: untouched
      k.attn_softmax(64, n);
      for (let j = 0; j < n; j++) expect(Math.abs(p[j] - Math.exp(x[j] - max) / sum), `n = ${n}, j = ${j}`).toBeLessThan(2e-7);
      expect([...guard]).toEqual([7, 7, 7, 7]);
    }
  });
});

describe('a logits row\'s normaliser', () => {
  test('exp_sum(p, n, max) within 1e-6 relative of the float64 sum, 4 to 4096 values', async () => {
    const mem = memory();
    const k = await createAttentionKernels(mem);
    const rng = mulberry32(5);
    for (const n of [4, 8, 100, 4096]) {
      const p = new Float32Array(mem.buffer, 0, n);
      for (let j = 0; j < n; j++) p[j] = (rng() * 2 - 1) * 30;
      const max = Math.max(...p);
      const want = Array.from(p).reduce((a, v) => a + Math.exp(v - max), 0);
      expect(Math.abs(k.exp_sum(0, n, max) - want) / want, `n = ${n}`).toBeLessThan(1e-6);
    }
  });
});

describe('the gated activation', () => {
  for (const [name, [a, b]] of Object.entries(ACTIVATION_COEFFICIENTS)) {
    // Relative to |a·g + b·g³| + 2: where sigmoid is e^−t, an f32 rounding of t moves it by t·2^-24 relative.
    test(`${name}: g · sigmoid(a·g + b·g³) · u within 2.5e-7·(|t| + 2) relative (or 1e-30 absolute) of the float64 twin`, async () => {
      const mem = memory();
      const act = await createActivationKernel(mem);
      const rng = mulberry32(7);
      const xs = [0, -0, 1e-20, -1e-20, 0.5, -0.5, 3, -3, 20, -20, 87, -87, 90, -90, 200, -200, 1e4, -1e4];
      while (xs.length < 4096) xs.push((rng() * 2 - 1) * 12);
      const n = xs.length;
      const g = new Float32Array(mem.buffer, 0, n);
      const u = new Float32Array(mem.buffer, 4 * n, n);
      g.set(xs);
      for (let i = 0; i < n; i++) u[i] = rng() * 4 - 2;
      const want = xs.map((x, i) => Math.fround(x) * (1 / (1 + Math.exp(-(a * Math.fround(x) + b * Math.fround(x) ** 3)))) * u[i]);
      act.act_mul(0, 4 * n, n, a, b);
      for (let i = 0; i < n; i++) {
        const x = Math.fround(xs[i]);
        const tol = Math.max(2.5e-7 * (Math.abs(a * x + b * x ** 3) + 2) * Math.abs(want[i]), 1e-30);
        expect(Math.abs(g[i] - want[i]), `x = ${xs[i]}`).toBeLessThanOrEqual(tol);
      }
    });
  }
});

describe('RMSNorm and the residual add', () => {
  test('rms_norm: each row x·w / √(mean x² + ε) as the float64 twin rounds it to f32 (within an ulp: Σx² sums in another order), in place too', async () => {
    const mem = memory();
    const norm = await createNormKernels(mem);
    const rng = mulberry32(11);
    for (const [n, rows] of [[4, 1], [64, 3], [576, 5], [1024, 2]]) {
      const x = new Float32Array(mem.buffer, 0, n * rows);
      const w = new Float32Array(mem.buffer, 4 * n * rows, n);
      const out = new Float32Array(mem.buffer, 8 * n * rows + 64, n * rows);
      for (let i = 0; i < n * rows; i++) x[i] = (rng() * 2 - 1) * (i % 7 === 0 ? 50 : 1);
      for (let i = 0; i < n; i++) w[i] = 1 + (rng() - 0.5) * 0.2;
      const want = new Float32Array(n * rows);
      for (let r = 0; r < rows; r++) {
        let ss = 0;
        for (let i = 0; i < n; i++) ss += x[r * n + i] * x[r * n + i];
        const inv = 1 / Math.sqrt(ss / n + 1e-6);
        for (let i = 0; i < n; i++) want[r * n + i] = x[r * n + i] * inv * w[i];
      }
      norm.rms_norm(0, 4 * n * rows, out.byteOffset, n, rows, 1e-6);
      for (let i = 0; i < n * rows; i++) expect(Math.abs(out[i] - want[i]), `n ${n} element ${i}`).toBeLessThanOrEqual(Math.abs(want[i]) * 2 ** -23);
      norm.rms_norm(0, 4 * n * rows, 0, n, rows, 1e-6); // in place
      expect([...x]).toEqual([...out]);
    }
    norm.rms_norm(0, 0, 0, 64, 0, 1e-6); // no rows: nothing read or written
  });

  test('add: y += x in f32, as a Float32Array sum', async () => {
    const mem = memory();
    const norm = await createNormKernels(mem);
    const rng = mulberry32(12);
    const n = 1000;
    const y = new Float32Array(mem.buffer, 0, n);
    const x = new Float32Array(mem.buffer, 4 * n, n);
    for (let i = 0; i < n; i++) [y[i], x[i]] = [rng() * 100 - 50, rng() * 1e-3];
    const want = Float32Array.from(y, (v, i) => v + x[i]);
    norm.add(0, 4 * n, n);
    expect([...y]).toEqual([...want]);
  });
});
