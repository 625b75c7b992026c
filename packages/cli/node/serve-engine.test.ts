// The engine of `intab serve --runtime node`, in this process, on each backend the Node runtime has: intab's WebGPU
// kernels on Dawn (here OpenGL over Mesa's llvmpipe, a compatibility adapter) and onnxruntime-node's CPU execution
// provider. Each gives stories260K's golden greedy ids, and 4 streams at once (prompts of different lengths, so
// onnxruntime's batched decode steps are left-padded differently) give each exactly its solo ids; an abort frees the
// sequence's pages before the stream ends. `auto` follows the browser's rule on what Dawn offers (software adapter → onnxruntime on the CPU)
// and says so; onnxruntime's WebGPU provider without an adapter is a typed error that says what to load instead.
// Needs Mesa's EGL, as the rest of --runtime node's tests do.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import type { Chunk } from '@intab/engine/contract';
import { isSoftwareAdapter } from '@intab/engine';
import { openGguf, pathSource } from '@intab/model';
import { OnnxUnsupportedError } from '@intab/onnx';
import { resolveModel } from '../src/model-files.ts';
import type { ServeEngine } from '../src/serve-engine.ts';
import { chooseNodeBackend } from './backend.ts';
import { requestDawnGpu } from './dawn.ts';
import { nodeOrt } from './ort.ts';
import { startNodeEngine } from './serve-engine.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const GGUF = join(SHARED, 'models', 'stories260K', 'stories260K.gguf');
const golden = JSON.parse(readFileSync(join(SHARED, 'models', 'stories260K', 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];

const open: ServeEngine[] = [];
afterAll(async () => {
  for (const e of open) await e.close();
});

async function start(backend: 'webgpu' | 'auto' | 'onnx-wasm' | 'onnx-webgpu'): Promise<ServeEngine> {
  const engine = await startNodeEngine({ model: resolveModel(GGUF), name: 'stories260K', backend, maxBatch: 8, kvBudgetBytes: 4 << 20, maxQueuedChunks: 8, prefixCache: true, seed: 1, loadTimeoutMs: 60_000, log: () => {} });
  open.push(engine);
  return engine;
}

async function ids(engine: ServeEngine, prompt: number[], maxTokens: number, signal?: AbortSignal): Promise<{ ids: number[]; last: Chunk }> {
  const out: number[] = [];
  let last: Chunk | undefined;
  for await (const c of engine.generate({ promptIds: prompt, maxTokens, temperature: 0, ignoreEos: true }, { signal })) {
    out.push(...c.ids);
    last = c;
  }
  return { ids: out, last: last! };
}

describe("the Node runtime's engine (intab serve --runtime node)", { timeout: 120_000 }, () => {
  test("auto follows the browser's rule on Dawn's adapter, and says why", async () => {
    const dawn = await requestDawnGpu().catch(() => undefined);
    const software = dawn ? isSoftwareAdapter(dawn.gpu.adapterInfo) : true;
    dawn?.gpu.destroy();
    const model = await openGguf([await pathSource(GGUF)]);
    const choice = await chooseNodeBackend('auto', model);
    if (choice.name === 'webgpu') choice.gpu.destroy();
    if (software) {
      expect(choice.name).toBe('onnx-wasm');
      expect(choice.name !== 'webgpu' && choice.ort?.name).toMatch(/^onnxruntime-node \d+\.\d+\.\d+$/);
      expect(choice.reason).toMatch(dawn ? /^auto: the only WebGPU adapter is a software one \(.+\), where onnxruntime-node [\d.]+'s cpu execution provider decodes faster \[Dawn: \w+ backend, (core|compatibility)\]$/ : /^auto: WebGPU is unavailable here \(Dawn .*\), so onnxruntime-node/);
      expect(choice.dawn).toBeUndefined();
    } else {
      expect(choice).toMatchObject({ name: 'webgpu', reason: expect.stringMatching(/^auto: a hardware WebGPU adapter .* \[Dawn: /) });
    }
    // Asked by name, the ORT backends run on onnxruntime-node, and say so.
    const asked = await chooseNodeBackend('onnx-wasm', model);
    expect(asked).toMatchObject({ name: 'onnx-wasm', reason: expect.stringMatching(/^backend 'onnx-wasm' was asked for \(on onnxruntime-node [\d.]+\)$/) });
  });

  test("onnxruntime-node's providers: the CPU one for 'onnx-wasm', its WebGPU one where the package has it; threads as asked", () => {
    const runtime = nodeOrt({ threads: 3 });
    expect(runtime.providers['onnx-wasm']).toBe('cpu');
    expect(['webgpu', undefined]).toContain(runtime.providers['onnx-webgpu']);
    expect([runtime.threads, runtime.sessionOptions?.intraOpNumThreads]).toEqual([3, 3]);
    expect(nodeOrt().threads).toBeGreaterThanOrEqual(1);
  });

  for (const backend of ['webgpu', 'onnx-wasm'] as const) {
    test(`${backend}: golden ids; 4 streams at once equal their solo runs; an abort frees the pages`, async () => {
      const engine = await start(backend);
      expect(engine.info.backend.name).toBe(backend);
      expect(engine.info.adapter).toMatch(backend === 'webgpu' ? /./ : /^onnxruntime-node [\d.]+ CPU EP \(\d+ threads?\); graph written from the weights$/);
      for (const c of golden) expect((await ids(engine, c.prompt, c.greedy.length)).ids).toEqual(c.greedy);
      const prompts = [golden[0].prompt, golden[1].prompt, [1, 300], [1, 400, 401, 402, 403, 404, 405]];
      const solo: number[][] = [];
      for (const p of prompts) solo.push((await ids(engine, p, 48)).ids);
      const together = await Promise.all(prompts.map(async (p) => (await ids(engine, p, 48)).ids));
      together.forEach((t, i) => expect(t, `stream ${i}`).toEqual(solo[i]));

      // An abort ends the stream at once (no chunk is pulled after it), and its pages are free before the loop ends.
      const controller = new AbortController();
      let n = 0;
      let last: Chunk | undefined;
      for await (const c of engine.generate({ promptIds: golden[0].prompt, maxTokens: 400, temperature: 0, ignoreEos: true }, { signal: controller.signal })) {
        last = c;
        if (++n === 2) controller.abort();
      }
      expect([n, last!.finishReason]).toEqual([2, null]);
      const s = await engine.stats();
      expect([s.streams, s.running, s.availablePages]).toEqual([0, 0, s.totalPages]);
    });
  }

  test("onnx-webgpu: onnxruntime-node's WebGPU provider runs it, or without an adapter a typed error says what to load instead", async () => {
    const outcome = await start('onnx-webgpu').then(
      async (engine) => ({ ids: (await ids(engine, golden[1].prompt, golden[1].greedy.length)).ids }),
      (err: unknown) => ({ err }),
    );
    if ('ids' in outcome) expect(outcome.ids).toEqual(golden[1].greedy);
    else {
      expect(outcome.err).toBeInstanceOf(OnnxUnsupportedError);
      expect((outcome.err as OnnxUnsupportedError).code).toBe('onnx_unsupported');
      expect((outcome.err as Error).message).toMatch(/no GPU adapter here .*: load the model with backend 'onnx-wasm' \(onnxruntime on the CPU\) or 'auto'/);
    }
  });
});
