import { describe, expect, test } from 'vitest';
import { createGemv } from './gemv.ts';
import { createWeight } from '../weights.ts';
import { matmul } from '../reference/matmul.ts';
import { rmsnorm } from '../reference/norm.ts';
import { gated, geluTanh, silu } from '../reference/elementwise.ts';
import { WEIGHT_DTYPES, BLOCK } from '../formats/blocks.ts';
import { quantize } from '../formats/codecs.ts';
import { randomWeights } from '../reference/random.ts';
import { expectClose, mulberry32, randomF32, readF32, run, scratch, testGpu, upload } from '@intab/testing/gpu';

// Tolerance: f32 accumulation in a different order than the float64 reference.
const tol = (k: number) => ({ atol: 2e-5 * Math.sqrt(k), rtol: 2e-4 });

describe('gemv', () => {
  // B = 1 runs the one-vector kernel, B = 2..4 the multi-vector one (WIDTH 2 for B = 2, else 4); each with
  // and without bias and accumulate, on a ragged row count and a second, larger shape.
  for (const subgroups of [false, true]) {
    for (const dtype of WEIGHT_DTYPES) {
      const kq = BLOCK[dtype].elems === 256 ? 512 : dtype.startsWith('q') ? 96 : 172;
      for (const [n, k] of [[37, kq], [130, kq * 2]] as const) {
        test(`${dtype}${subgroups ? '+subgroups' : ''} (${n}x${k}), B = 1..4, bias and accumulate, matches CPU`, async () => {
          const gpu = await testGpu();
          const bytes = randomWeights(dtype, n, k, mulberry32(n * 31 + k));
          const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'w' });
          const modes = n === 37 ? [[false, false], [true, false], [false, true], [true, true]] : [[false, false], [true, true]];
          for (const [bias, accumulate] of modes) {
            const gemv = createGemv(gpu, { dtype, subgroups, bias, accumulate });
            for (let batch = 1; batch <= 4; batch++) {
              const seed = batch * 10 + (bias ? 2 : 0) + (accumulate ? 1 : 0);
              const x = randomF32(batch * k, k + seed);
              const b = bias ? randomF32(n, seed + 100) : undefined;
              const y0 = accumulate ? randomF32(batch * n, seed + 200) : undefined;
              const y = y0 ? upload(gpu, y0) : scratch(gpu, batch * n * 4);
              await run(gpu, (pass) => gemv.encode(pass, { weight, x: upload(gpu, x), y, bias: b && upload(gpu, b), batch }));
              const label = `${dtype} B=${batch}${bias ? ' bias' : ''}${accumulate ? ' accumulate' : ''}`;
              expectClose(await readF32(gpu, y, batch * n), matmul(dtype, bytes, n, k, x, batch, b, y0), { ...tol(k), label });
            }
          }
          weight.destroy();
        });
      }
    }
  }

  for (const subgroups of [false, true]) {
    for (const rowsPerInvocation of [1, 5, 16]) {
      test(`rows per ${subgroups ? 'subgroup' : 'invocation'} = ${rowsPerInvocation} cover ragged row counts (B = 1 and 3)`, async () => {
        const gpu = await testGpu();
        const [n, k] = [83, 512];
        for (const dtype of ['q4_0', 'q6_K'] as const) {
          const bytes = randomWeights(dtype, n, k, mulberry32(rowsPerInvocation));
          const x = randomF32(k, 9);
          const weight = createWeight(gpu, { dtype, n, k, data: bytes, label: 'w' });
          const y = scratch(gpu, n * 4);
          const tuning = subgroups ? { rowsPerInvocation, rowsPerWorkgroup: 24, workgroupSize: 16 } : { rowsPerInvocation, workgroupSize: 16 };
          const gemv = createGemv(gpu, { dtype, subgroups, ...tuning, multi: tuning });
          await run(gpu, (pass) => gemv.encode(pass, { weight, x: upload(gpu, x), y }));
          expectClose(await readF32(gpu, y, n), matmul(dtype, bytes, n, k, x, 1), { ...tol(k), label: dtype });
          // the multi-vector kernel with the same launch shape, over 3 vectors
          const x3 = randomF32(3 * k, 10);
          const y3 = scratch(gpu, 3 * n * 4);
          await run(gpu, (pass) => gemv.encode(pass, { weight, x: upload(gpu, x3), y: y3, batch: 3 }));
          expectClose(await readF32(gpu, y3, 3 * n), matmul(dtype, bytes, n, k, x3, 3), { ...tol(k), label: `${dtype} B=3` });
          weight.destroy();
        }
      });
    }
  }

  test('plain variant runs on a device without subgroups', async () => {
    const gpu = await testGpu({ disable: { subgroups: true } });
    const [n, k] = [70, 64];
    const bytes = randomWeights('q4_0', n, k, mulberry32(2));
    const x = randomF32(k, 3);
    const weight = createWeight(gpu, { dtype: 'q4_0', n, k, data: bytes, label: 'w' });
    const y = scratch(gpu, n * 4);
    expect(() => createGemv(gpu, { dtype: 'q4_0', subgroups: true })).toThrow(/subgroups/);
    await run(gpu, (pass) => createGemv(gpu, { dtype: 'q4_0' }).encode(pass, { weight, x: upload(gpu, x), y }));
    expectClose(await readF32(gpu, y, n), matmul('q4_0', bytes, n, k, x, 1), tol(k));
  });

  // Batches past 4 run groups of 4 vectors, then the rest (1: the one-vector kernel, 2: WIDTH 2, 3: a
  // partial group); multi: false is the one-vector kernel over B grid rows.
  for (const subgroups of [false, true])
  for (const [batch, multi] of [[3, true], [5, true], [6, true], [7, true], [8, true], [9, true], [3, false]] as const)
  test(`B = ${batch} vectors${multi ? '' : ' (one-vector kernel)'}, bias, accumulate, and a weight split into parts${subgroups ? ' (subgroups)' : ''}`, async () => {
    const gpu = await testGpu();
    const [n, k] = [301, 256];
    const bytes = randomWeights('q8_0', n, k, mulberry32(5));
    const x = randomF32(batch * k, 6);
    const bias = randomF32(n, 7);
    const y0 = randomF32(batch * n, 8);
    // 64 rows per part → 5 parts, the last one ragged.
    const weight = createWeight(gpu, { dtype: 'q8_0', n, k, data: bytes, label: 'w', maxPartBytes: 64 * 272 + 4 });
    expect(weight.parts.length).toBe(5);
    const y = upload(gpu, y0);
    await run(gpu, (pass) =>
      createGemv(gpu, { dtype: 'q8_0', bias: true, accumulate: true, subgroups, multi }).encode(pass, {
        weight, x: upload(gpu, x), y, bias: upload(gpu, bias), batch,
      }),
    );
    expectClose(await readF32(gpu, y, batch * n), matmul('q8_0', bytes, n, k, x, batch, bias, y0), tol(k));
  });

  // The fusions a decode layer uses: the RMSNorm of x before (norm), the gated activation of a [gate; up] weight
  // after (gated), and outputs placed in column ranges of a wider y (yColumn, yStride). Their CPU twin is the
  // composition of the unfused twins: rmsnorm, then matmul, then gated.
  for (const subgroups of [false, true]) {
    for (const dtype of ['f32', 'f16', 'q8_0', 'q4_0', 'q4_K', 'q6_K'] as const) {
      test(`${dtype}${subgroups ? '+subgroups' : ''}: norm, norm + SwiGLU / GeGLU, and column ranges, B = 1..5, match the unfused twins`, async () => {
        const gpu = await testGpu();
        const k = BLOCK[dtype].elems === 256 ? 512 : 128;
        const f = 45; // output rows of the gated GEMV: ragged against every launch shape
        const eps = 1e-5;
        const nw = randomF32(k, 11, 0.5).map((v) => 1 + v);
        const bytes = randomWeights(dtype, 2 * f, k, mulberry32(k + f));
        const weight = createWeight(gpu, { dtype, n: 2 * f, k, data: bytes, label: 'gate_up' });
        const normWeight = upload(gpu, nw);
        const norm = createGemv(gpu, { dtype, subgroups, norm: true });
        const swiglu = createGemv(gpu, { dtype, subgroups, norm: true, gated: 'silu' });
        const geglu = createGemv(gpu, { dtype, subgroups, norm: true, gated: 'gelu_tanh' });
        for (let batch = 1; batch <= 5; batch++) {
          const x = randomF32(batch * k, batch * 7, 3);
          const xn = rmsnorm(x, nw, batch, k, eps);
          const full = matmul(dtype, bytes, 2 * f, k, xn, batch); // (B, 2F): gate then up
          const xb = upload(gpu, x);
          // norm alone: y (B, 2F) = W · rmsnorm(x)
          const y = scratch(gpu, batch * 2 * f * 4);
          await run(gpu, (pass) => norm.encode(pass, { weight, x: xb, y, batch, normWeight, eps }));
          expectClose(await readF32(gpu, y, batch * 2 * f), full, { ...tol(k), label: `${dtype} norm B=${batch}` });
          for (const [gemv, act, label] of [[swiglu, silu, 'SwiGLU'], [geglu, geluTanh, 'GeGLU']] as const) {
            const out = scratch(gpu, batch * f * 4);
            await run(gpu, (pass) => gemv.encode(pass, { weight, x: xb, y: out, batch, normWeight, eps }));
            const want = gated(act, full, full, batch, f, 2 * f, 2 * f, f);
            // act(g) · u carries the error of g times |u| and that of u times |act(g)|: the tolerance scales with both.
            const got = await readF32(gpu, out, batch * f);
            const { atol, rtol } = tol(k);
            for (let b = 0; b < batch; b++) {
              for (let i = 0; i < f; i++) {
                const [g, u] = [full[b * 2 * f + i], full[b * 2 * f + f + i]];
                const allowed = atol * (1 + 1.2 * (Math.abs(g) + Math.abs(u))) + rtol * Math.abs(want[b * f + i]);
                const err = Math.abs(got[b * f + i] - want[b * f + i]);
                if (!(err <= allowed)) expect.fail(`${dtype} ${label} B=${batch} [${b}, ${i}]: got ${got[b * f + i]}, want ${want[b * f + i]} (gate ${g}, up ${u})`);
              }
            }
          }
        }
        // Column ranges: the gate rows and then the up rows written side by side into one (B, 2F + 3) y, with a bias
        // indexed by y's column, give the one-weight result (and leave the extra columns alone).
        const halves = [bytes.subarray(0, (bytes.length / 2) | 0), bytes.subarray((bytes.length / 2) | 0)];
        const gate = createWeight(gpu, { dtype, n: f, k, data: halves[0], label: 'gate' });
        const up = createWeight(gpu, { dtype, n: f, k, data: halves[1], label: 'up' });
        const withBias = createGemv(gpu, { dtype, subgroups, bias: true });
        const batch = 3;
        const stride = 2 * f + 3;
        const x = randomF32(batch * k, 5);
        const bias = randomF32(2 * f, 6);
        const y = upload(gpu, new Float32Array(batch * stride).fill(7));
        const xb = upload(gpu, x);
        const bb = upload(gpu, bias);
        await run(gpu, (pass) => {
          withBias.encode(pass, { weight: gate, x: xb, y, bias: bb, batch, yStride: stride, yColumn: 0 });
          withBias.encode(pass, { weight: up, x: xb, y, bias: bb, batch, yStride: stride, yColumn: f });
        });
        const want = matmul(dtype, bytes, 2 * f, k, x, batch, bias);
        const got = await readF32(gpu, y, batch * stride);
        for (let b = 0; b < batch; b++) {
          expectClose(got.subarray(b * stride, b * stride + 2 * f), want.subarray(b * 2 * f, (b + 1) * 2 * f), { ...tol(k), label: `${dtype} columns b=${b}` });
          expect([...got.subarray(b * stride + 2 * f, (b + 1) * stride)]).toEqual([7, 7, 7]);
        }
        for (const t of [weight, gate, up]) t.destroy();
      });
    }
  }

  test('a gated GEMV refuses a bias, accumulate, and a weight in several parts', async () => {
    const gpu = await testGpu();
    expect(() => createGemv(gpu, { dtype: 'q8_0', gated: 'silu', bias: true })).toThrow(TypeError);
    expect(() => createGemv(gpu, { dtype: 'q8_0', gated: 'silu', accumulate: true })).toThrow(TypeError);
    const split = createWeight(gpu, { dtype: 'q8_0', n: 8, k: 32, label: 'w', maxPartBytes: 4 * 34 + 4 });
    expect(split.parts.length).toBe(2);
    const gemv = createGemv(gpu, { dtype: 'q8_0', gated: 'silu' });
    await expect(run(gpu, (pass) => gemv.encode(pass, { weight: split, x: scratch(gpu, 128), y: scratch(gpu, 16) }))).rejects.toMatchObject({
      name: 'ShapeError',
      argument: 'weight',
    });
    const norm = createGemv(gpu, { dtype: 'q8_0', norm: true });
    await expect(run(gpu, (pass) => norm.encode(pass, { weight: split, x: scratch(gpu, 128), y: scratch(gpu, 32) }))).rejects.toThrow(/normWeight/);
    split.destroy();
  });

  test('large outliers in x and weights stay accurate', async () => {
    const gpu = await testGpu();
    const [n, k] = [20, 1024];
    const xs = randomF32(k, 3);
    xs[17] = 3e4;
    xs[900] = -2e4;
    const w = randomF32(n * k, 4, 0.02);
    w[5] = 40;
    const bytes = quantize('f16', w, n, k);
    const weight = createWeight(gpu, { dtype: 'f16', n, k, data: bytes, label: 'w' });
    const y = scratch(gpu, n * 4);
    await run(gpu, (pass) => createGemv(gpu, { dtype: 'f16' }).encode(pass, { weight, x: upload(gpu, xs), y }));
    expectClose(await readF32(gpu, y, n), matmul('f16', bytes, n, k, xs, 1), { atol: 1e-2, rtol: 1e-4 });
  });

  test('typed errors for a wrong dtype, ragged K and short buffers', async () => {
    const gpu = await testGpu();
    expect(() => createGemv(gpu, { dtype: 'q5_1' })).toThrow(/q5_1.*not supported/);
    expect(() => createWeight(gpu, { dtype: 'q4_0', n: 2, k: 48, label: 'bad' })).toThrow(expect.objectContaining({ name: 'ShapeError' }));
    const weight = createWeight(gpu, { dtype: 'f32', n: 4, k: 8, label: 'w' });
    await expect(
      run(gpu, (pass) => createGemv(gpu, { dtype: 'f32' }).encode(pass, { weight, x: scratch(gpu, 16), y: scratch(gpu, 16) })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'x' });
    await expect(
      run(gpu, (pass) => createGemv(gpu, { dtype: 'q8_0' }).encode(pass, { weight, x: scratch(gpu, 64), y: scratch(gpu, 16) })),
    ).rejects.toMatchObject({ name: 'ShapeError', argument: 'weight' });
  });
});

test('a binding over the adapter limit is a LimitError before anything is recorded', async () => {
  const real = await testGpu();
  // The same device, seen through a smaller limit (as on an adapter that binds only 1 KiB).
  const gpu = { ...real, destroyed: false, limits: { ...real.limits, maxStorageBufferBindingSize: 1024 } } as typeof real;
  const weight = createWeight(real, { dtype: 'q8_0', n: 4, k: 32, label: 'w' });
  const x = scratch(real, 2048, 'big.x');
  await expect(
    run(real, (pass) => createGemv(gpu, { dtype: 'q8_0' }).encode(pass, { weight, x, y: scratch(real, 16) })),
  ).rejects.toMatchObject({ name: 'LimitError', limit: 'maxStorageBufferBindingSize', requested: 2048, allowed: 1024 });
});
