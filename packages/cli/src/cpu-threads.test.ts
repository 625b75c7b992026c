// intab's CPU kernels on wasm threads, end to end in headless Chromium: `intab generate --backend onnx-wasm
// --cpu-threads 2` serves its page cross-origin isolated, the engine's worker splits every large matrix across a
// helper thread, and the sampled ids (temperature 1, seeded: they follow the whole distribution) are those of one
// thread (each thread runs whole rows with one thread's arithmetic, so the logits are the same bits); the adapter says how many threads ran. Without --cpu-threads the page is not isolated, and the adapter
// says so and why. The model: make-model --like smollm2-135m, 2 layers, q4_0 (its matrices are past the split size).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runJob } from './browser.ts';
import { jobFromFlags } from './job.ts';
import { writeSyntheticModel } from './make-model.ts';
import { resolveModel } from './model-files.ts';
import type { PageRecord } from './records.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-cpu-threads-'));
const gguf = join(dir, 'smollm2-2layers.gguf');
beforeAll(() => void writeSyntheticModel({ like: 'smollm2-135m', dtype: 'q4_0', out: gguf, seed: 3, layers: 2 }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The done record of a seeded, sampled `generate` on the CPU kernels, with these extra flags (and page headers). */
async function generate(extra: Record<string, string>, headers?: Record<string, string>): Promise<{ ids: number[]; adapter: string; warnings?: string[] }> {
  const model = resolveModel(gguf);
  const flags = { 'prompt-ids': '1,400,261,310,263,411,300,290,275,301,330,266', 'max-tokens': '24', temperature: '1', seed: '7', 'ignore-eos': true, backend: 'onnx-wasm', ...extra };
  const records: PageRecord[] = [];
  const failed = await runJob({ job: jobFromFlags(flags, 'generate', model), modelDir: model.dir, timeoutS: 150, headers, onRecord: (r) => records.push(r) });
  expect(failed).toBe(false);
  const done = records.find((r) => r.done === true) as { ids: number[]; adapter: string; warnings?: string[] } | undefined;
  expect(done).toBeDefined();
  return done!;
}

describe('--cpu-threads', () => {
  test('2 threads on an isolated page give one thread\'s sampled ids; without it the adapter says why 1', { timeout: 300_000 }, async () => {
    const two = await generate({ 'cpu-threads': '2' });
    const one = await generate({ 'cpu-threads': '1' });
    const plain = await generate({});
    expect(two.adapter).toBe("intab's wasm SIMD128 kernels (q4_0, 2 threads)");
    expect(one.adapter).toBe("intab's wasm SIMD128 kernels (q4_0, 1 thread)");
    expect(plain.adapter).toMatch(/^intab's wasm SIMD128 kernels \(q4_0, 1 thread: the page is not cross-origin isolated \(serve it with COOP same-origin and COEP require-corp or credentialless\)\)$/);
    expect(two.ids).toHaveLength(24);
    expect(new Set(two.ids).size).toBeGreaterThan(4); // sampled: not one token repeated
    expect(two.ids).toEqual(one.ids);
    expect(plain.ids).toEqual(one.ids);
  });

  test("a CSP whose worker-src refuses blob: keeps the helpers from starting: one thread runs, and the adapter and a warning say why", { timeout: 150_000 }, async () => {
    const done = await generate({ 'cpu-threads': '2' }, { 'Content-Security-Policy': "worker-src 'self'" });
    const why = "its helper threads could not start (the helper thread's script did not load (a Content-Security-Policy needs worker-src blob: for wasm threads))";
    expect(done.adapter).toBe(`intab's wasm SIMD128 kernels (q4_0, 1 thread: ${why})`);
    expect(done.ids).toHaveLength(24);
  });

  test('flags: a whole number of threads, on the CPU only', () => {
    const model = resolveModel(gguf);
    const job = (extra: Record<string, string>) => jobFromFlags({ 'prompt-ids': '1,2', ...extra }, 'generate', model);
    expect(job({ backend: 'onnx-wasm', 'cpu-threads': '3' }).cpuThreads).toBe(3);
    expect(job({ backend: 'auto' }).cpuThreads).toBeUndefined();
    expect(() => job({ backend: 'onnx-wasm', 'cpu-threads': '0' })).toThrow(/--cpu-threads needs a whole number from 1 to 56/);
    expect(() => job({ backend: 'onnx-wasm', 'cpu-threads': '2.5' })).toThrow(/--cpu-threads needs a whole number/);
    expect(() => job({ 'cpu-threads': '2' })).toThrow(/give it with --backend onnx-wasm \(or auto\), not webgpu/);
  });
});
