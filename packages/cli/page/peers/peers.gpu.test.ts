// The peers of `intab bench compare` in headless Chromium: transformers.js on ORT's wasm and WebGPU execution
// providers (the ONNX folder @intab/onnx's builder wrote, served by the test hub) and wllama on the GGUF with a
// vocabulary each reproduce golden.json's greedy ids of stories260K from exactly the prompt ids (wllama 3.x through
// their text, which the vocabulary's user-defined pieces give back exactly), with every wasm binary served from
// node_modules, and report positive timings. Speeds are printed, never asserted.
import { afterAll, describe, expect, inject, test } from 'vitest';
import { fetchShared } from '@intab/testing/gpu';
import type { Peer } from './types.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    hubUrl: string;
  }
}

/** stories260K as an onnx-community folder, and its GGUF with a synthetic vocabulary (scripts/hub-server-setup.mjs). */
const ONNX_FOLDER = `${inject('hubUrl')}/test/stories-onnx/resolve/main/`;
const GGUF = `${inject('hubUrl')}/test/stories/resolve/main/stories260K-vocab-ud.gguf`;
const N = 32;

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}
const golden = async (): Promise<Golden> => JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));

const peers: Peer[] = [];
afterAll(async () => {
  for (const p of peers) await p.destroy();
});

async function check(peer: Peer): Promise<void> {
  peers.push(peer);
  const c = (await golden()).cases[1]; // prompt [1, 403, 261, 310, 263]
  const a = await peer.run(c.prompt, N);
  // A second run gives the same ids (no state carried over from the first) and is the one printed.
  const b = await peer.run(c.prompt, N);
  expect(a.ids).toEqual(c.greedy.slice(0, N));
  expect(b.ids).toEqual(a.ids);
  for (const r of [a, b]) {
    expect(r.ttftMs).toBeGreaterThan(0);
    expect(r.prefillTokS).toBeGreaterThan(0);
    expect(r.decodeTokS).toBeGreaterThan(0);
  }
  console.log(JSON.stringify({ peer: `${peer.system}/${peer.backend}`, ttft_ms: +b.ttftMs.toFixed(2), prefill_tok_s: +b.prefillTokS.toFixed(1), decode_tok_s: +b.decodeTokS.toFixed(1) }));
}

describe('peers of intab bench compare (stories260K, golden greedy ids)', () => {
  test('transformers.js, wasm', async () => {
    const { loadTransformersJs } = await import('./transformers.ts');
    await check(await loadTransformersJs('wasm', ONNX_FOLDER));
  });

  test('transformers.js, webgpu', async () => {
    const { loadTransformersJs } = await import('./transformers.ts');
    await check(await loadTransformersJs('webgpu', ONNX_FOLDER));
  });

  test('wllama (llama.cpp wasm)', async () => {
    const { loadWllama } = await import('./wllama.ts');
    await check(await loadWllama(GGUF, { contextSize: 256 }));
  });

  test('runs that do not fit the context are refused with a typed error', async () => {
    const { loadWllama } = await import('./wllama.ts');
    const peer = await loadWllama(GGUF, { contextSize: 64 });
    peers.push(peer);
    await expect(peer.run([1, 403, 261], 62)).rejects.toMatchObject({ name: 'PeerError', system: 'wllama', message: expect.stringContaining('context of 64 tokens') });
  });

  test('wllama refuses prompt ids it cannot take as text (3.x completions take text only) with a typed error', async () => {
    const { loadWllama } = await import('./wllama.ts');
    const peer = await loadWllama(GGUF, { contextSize: 64 });
    peers.push(peer);
    // 600 is past the 512-piece vocabulary: it decodes to nothing, so no text gives these ids back.
    await expect(peer.run([1, 403, 600], 4)).rejects.toMatchObject({ name: 'PeerError', system: 'wllama', message: expect.stringContaining('text only') });
    // No BOS first: llama.cpp would put one before the text.
    await expect(peer.run([403, 261], 4)).rejects.toMatchObject({ name: 'PeerError', system: 'wllama', message: expect.stringContaining('start them with BOS') });
    // The peer still runs after refusing.
    expect((await peer.run([1, 403, 261, 310, 263], 4)).ids).toEqual([343, 456, 465, 465]);
  });
});
