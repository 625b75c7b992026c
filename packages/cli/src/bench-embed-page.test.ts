// `intab bench embed --runtime chromium` end to end on a one-layer embedding GGUF (make-model --like all-minilm-l6
// --layers 1), one batch, one repeat: the CLI writes the transformers.js folder, serves it and the GGUF, and the page
// (packages/cli/page/bench-embed.ts) loads intab through createEngine and transformers.js's feature-extraction pipeline
// in the same headless Chromium. What is asserted is what the lines say, not how fast: both systems ran every text, on
// the backends asked, with the same token counts and vectors within cosine 0.9999, and the ratio line quotes a ratio.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { benchEmbed, benchEmbedOptions, benchTexts } from './bench-embed.ts';
import { writeSyntheticModel } from './make-model.ts';

const dir = mkdtempSync(join(tmpdir(), 'intab-bench-embed-page-'));
const gguf = join(dir, 'minilm-1layer.gguf');
beforeAll(() => void writeSyntheticModel({ like: 'all-minilm-l6', dtype: 'f32', out: gguf, seed: 5, layers: 1 }));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The JSON lines of one `bench embed --runtime chromium` run, parsed. */
async function run(backend: string, batch: number): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const code = await benchEmbed({ model: gguf, backend, batch: String(batch), repeats: '1', 'no-native': true, json: true }, 'chromium', (l) => lines.push(l));
  expect(code).toBe(0);
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('intab bench embed --runtime chromium', () => {
  test('flags: the page\'s backends with --runtime chromium only', () => {
    expect(benchEmbedOptions({ model: gguf, backend: 'onnx-webgpu' }, 'chromium')).toMatchObject({ runtime: 'chromium', backend: 'onnx-webgpu', timeoutS: 1800 });
    expect(benchEmbedOptions({ model: gguf }).runtime).toBe('node');
    expect(benchEmbedOptions({ model: gguf }, 'chromium').worker).toBe(true);
    expect(benchEmbedOptions({ model: gguf, 'no-worker': true }, 'chromium').worker).toBe(false);
    expect(() => benchEmbedOptions({ model: gguf, 'no-worker': true })).toThrow(/--no-worker goes with --runtime chromium/);
    expect(() => benchEmbedOptions({ model: gguf, backend: 'onnx-webgpu' })).toThrow(/--backend takes auto, webgpu, onnx-wasm with --runtime node \(onnx-webgpu and the page's backends: --runtime chromium\)/);
    expect(() => benchEmbedOptions({ model: gguf, backend: 'cpu' }, 'chromium')).toThrow(/--backend takes auto, onnx-wasm, onnx-webgpu, webgpu with --runtime chromium/);
  });

  for (const [backend, peer] of [
    ['onnx-wasm', 'wasm'],
    ['webgpu', 'webgpu'],
  ] as const) {
    test(`--backend ${backend}: intab/${backend} and transformers.js/${peer} in one page, same tokens and vectors, a ratio`, { timeout: 180_000 }, async () => {
      const batch = 3;
      const lines = await run(backend, batch);
      const [ours, theirs, ratio] = lines;
      expect(lines).toHaveLength(3);
      // The tokens of the texts timed, [CLS] and [SEP] included: both systems counted every one of them.
      expect(ours).toMatchObject({ bench: 'embed', host: 'chromium', system: `intab/${backend}`, backend, batch, worker: true, layers: 1 });
      expect(theirs).toMatchObject({ bench: 'embed', host: 'chromium', system: `transformers.js/${peer}`, backend: peer, batch, device: peer, tokens_equal: true, tokens: ours.tokens });
      expect(ours.tokens as number).toBeGreaterThan(benchTexts(batch).join(' ').split(' ').length);
      expect(theirs.vectors_match as number).toBeGreaterThanOrEqual(0.9999);
      for (const line of [ours, theirs]) {
        expect(line.inputs_per_s as number).toBeGreaterThan(0);
        // Both figures from the same median (each rounded to 3 significant digits).
        const tokensPerS = ((line.inputs_per_s as number) * (line.tokens as number)) / batch;
        expect(Math.abs((line.tokens_per_s as number) - tokensPerS) / tokensPerS).toBeLessThan(0.01);
      }
      expect(ratio).toMatchObject({ kind: 'ratio', batch, system: `intab/${backend}`, versus: `transformers.js/${peer}`, same_backend: true, backend, versus_backend: peer, tokens_equal: true, target: 1 });
      const quoted = (ours.inputs_per_s as number) / (theirs.inputs_per_s as number);
      expect(Math.abs((ratio.inputs_per_s_ratio as number) - quoted) / quoted).toBeLessThan(0.01);
      expect(ratio.refused).toBeUndefined();
    });
  }
});
