// The whole model on the GPU against golden ids: stories260K (real trained weights, GQA) from its GGUF
// file (llama.cpp layout, 'normal' rope) and from its Hugging Face folder (permuted q/k, 'neox' rope) must
// reproduce golden.json's greedy continuations exactly, one sequence at a time and all batched together.
import { describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { fetchShared } from '@intab/testing/gpu';
import { Runner } from './runner.ts';
import { openGguf, openHfFolder, type ModelFiles } from './load.ts';
import { bytesSource } from './source.ts';

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const fetchBytes = (name: string) => fetchShared(`models/stories260K/${name}`);

async function open(layout: 'gguf' | 'hf'): Promise<ModelFiles> {
  if (layout === 'gguf') return openGguf(bytesSource('stories260K.gguf', await fetchBytes('stories260K.gguf')));
  return openHfFolder(
    new Map([
      ['config.json', bytesSource('config.json', await fetchBytes('hf/config.json'))],
      ['model.safetensors', bytesSource('model.safetensors', await fetchBytes('hf/model.safetensors'))],
    ]),
  );
}

let gpu: Gpu;
async function device(): Promise<Gpu> {
  return (gpu ??= await requestGpu());
}

describe('stories260K greedy ids equal golden.json', () => {
  for (const layout of ['gguf', 'hf'] as const) {
    test(`${layout}: one sequence at a time`, async () => {
      const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
      const model = await open(layout);
      expect(model.config.rope.style).toBe(layout === 'gguf' ? 'normal' : 'neox');
      const runner = await Runner.load(await device(), model.config, model.tensors, { kvBudgetBytes: 4 << 20 });
      try {
        for (const [i, c] of golden.cases.entries()) {
          runner.alloc(i);
          const ids: number[] = [];
          let next = (await runner.step([{ seq: i, tokens: c.prompt }]))[0].id;
          ids.push(next);
          while (ids.length < c.greedy.length) {
            next = (await runner.step([{ seq: i, tokens: [next] }]))[0].id;
            ids.push(next);
          }
          runner.free(i);
          expect(ids, `case ${i} (prompt ${c.prompt.join(',')})`).toEqual(c.greedy);
        }
      } finally {
        runner.destroy();
      }
    });

    test(`${layout}: every case in one batch (mixed prefill, then batched decode)`, async () => {
      const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchBytes('golden.json')));
      const model = await open(layout);
      const runner = await Runner.load(await device(), model.config, model.tensors, { kvBudgetBytes: 4 << 20 });
      try {
        const outs = golden.cases.map(() => [] as number[]);
        golden.cases.forEach((_, i) => runner.alloc(i));
        let entries = golden.cases.map((c, i) => ({ seq: i, tokens: c.prompt }));
        while (entries.length) {
          const results = await runner.step(entries);
          entries = entries
            .map((e, j) => {
              outs[e.seq].push(results[j].id);
              return { seq: e.seq, tokens: [results[j].id] };
            })
            .filter((e) => outs[e.seq].length < golden.cases[e.seq].greedy.length);
        }
        golden.cases.forEach((c, i) => expect(outs[i], `case ${i}`).toEqual(c.greedy));
      } finally {
        runner.destroy();
      }
    });
  }
});

describe('KV-cache fork (copy-on-write pages)', () => {
  test('forked sequences continue like independent ones, and pages return to the pool', async () => {
    const model = await open('gguf');
    const runner = await Runner.load(await device(), model.config, model.tensors, { kvBudgetBytes: 1 << 20, pageSize: 4 });
    try {
      const freeAtStart = runner.kv.freePageCount;
      const prompt = [1, 403, 261, 310, 263, 400]; // 6 tokens: the last page (of 4) is half full
      const logitsOf = async (seq: number, tokens: number[]) => (await runner.step([{ seq, tokens }], { logits: true }))[0];
      // Reference: two independent sequences that share nothing.
      runner.alloc(10);
      runner.alloc(11);
      const a0 = await logitsOf(10, prompt);
      await logitsOf(11, prompt);
      const refA = await logitsOf(10, [a0.id]);
      const refB = await logitsOf(11, [300]);
      // Fork after the prompt: both continue from shared pages, each with a different token.
      runner.alloc(0);
      const first = await logitsOf(0, prompt);
      expect(first.id).toBe(a0.id);
      const pagesBefore = runner.kv.freePageCount;
      runner.fork(0, 1);
      expect(runner.kv.freePageCount).toBe(pagesBefore); // sharing costs no page
      const [forkA, forkB] = await runner.step(
        [
          { seq: 0, tokens: [a0.id] },
          { seq: 1, tokens: [300] },
        ],
        { logits: true },
      );
      // One copy-on-write page was taken for the second writer of the shared half-full page.
      expect(runner.kv.freePageCount).toBe(pagesBefore - 1);
      const close = (a: Float32Array, b: Float32Array) => a.every((v, i) => Math.abs(v - b[i]) <= 1e-4 * (1 + Math.abs(b[i])));
      expect(close(forkA.logits!, refA.logits!)).toBe(true);
      expect(close(forkB.logits!, refB.logits!)).toBe(true);
      expect(close(forkA.logits!, forkB.logits!)).toBe(false);
      // Rewinding into the shared region and freeing everything returns every page to the pool.
      runner.rewind(1, 2);
      expect(runner.kv.length(1)).toBe(5);
      for (const s of [0, 1, 10, 11]) runner.free(s);
      expect(runner.kv.freePageCount).toBe(freeAtStart);
    } finally {
      runner.destroy();
    }
  });
});

test('a step whose GPU work fails validation throws instead of returning garbage ids', async () => {
  const model = await open('gguf');
  const runner = await Runner.load(await device(), model.config, model.tensors, { kvBudgetBytes: 1 << 20 });
  try {
    runner.alloc(0);
    runner.kv.k[2].destroy(); // the step's submit now references a destroyed buffer
    await expect(runner.step([{ seq: 0, tokens: [1, 403] }])).rejects.toMatchObject({ name: 'GpuValidationError' });
  } finally {
    runner.destroy();
  }
});

describe('loading', () => {
  test('progress reaches the total; an abort stops the upload with the AbortSignal reason', async () => {
    const model = await open('gguf');
    const events: { loaded: number; total: number }[] = [];
    const runner = await Runner.load(await device(), model.config, model.tensors, { kvBudgetBytes: 1 << 20, onProgress: (p) => events.push(p) });
    runner.destroy();
    expect(events.length).toBeGreaterThan(10);
    expect(events.at(-1)!.loaded).toBe(events.at(-1)!.total);
    expect(events.every((e, i) => i === 0 || e.loaded >= events[i - 1].loaded)).toBe(true);

    const controller = new AbortController();
    let seen = 0;
    const load = Runner.load(await device(), model.config, model.tensors, {
      signal: controller.signal,
      onProgress: () => {
        if (++seen === 3) controller.abort(new DOMException('user cancelled', 'AbortError'));
      },
    });
    await expect(load).rejects.toMatchObject({ name: 'AbortError' });
  });

  test('a tensor whose shape disagrees with the config is a typed error before anything is uploaded', async () => {
    const model = await open('hf');
    const wrong = { ...model.config, ffn: model.config.ffn + 4 };
    await expect(Runner.load(await device(), wrong, model.tensors)).rejects.toMatchObject({
      name: 'ModelMismatchError',
      field: "tensor 'blk.0.ffn_gate.weight' shape",
    });
    const missing = new Map(model.tensors);
    missing.delete('blk.3.attn_v.weight');
    await expect(Runner.load(await device(), model.config, missing)).rejects.toMatchObject({ name: 'ModelMismatchError', field: "tensor 'blk.3.attn_v.weight'" });
  });
});
