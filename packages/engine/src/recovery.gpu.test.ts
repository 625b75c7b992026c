// Device loss in the real engine (headless Chromium, WebGPU): the device is destroyed under the engine mid-stream, as a
// driver reset would take it. The stream ends with finishReason 'error' and a DeviceLostError after the tokens it had
// (a prefix of stories260K's golden ids), the engine reloads the model on a new device by itself ('recovering', then
// 'ready'), a request sent meanwhile waits and then gives the golden ids, preloads are pinned again, and a second loss
// inside the window turns the engine 'failed' with a DeviceRecoveryError (recovery.test.ts has the window's policy). A
// real GPU-process crash is e2e/device-loss.spec.ts.
import { describe, expect, test } from 'vitest';
import { DeviceLostError, type Gpu } from '@intab/gpu';
import { fetchShared, sharedUrl } from '@intab/testing/gpu';
import type { EngineStatus } from './contract.ts';
import { Engine, type EngineOptions } from './engine.ts';
import { DeviceRecoveryError } from './errors.ts';
import { collect } from './test-streams.ts';

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

const golden: Golden = JSON.parse(new TextDecoder().decode(await fetchShared('models/stories260K/golden.json')));
const { prompt, greedy } = golden.cases[1];
const request = { promptIds: prompt, maxTokens: greedy.length, temperature: 0, ignoreEos: true };

async function load(options: EngineOptions = {}): Promise<Engine> {
  return Engine.load({ kind: 'url', url: sharedUrl('models/stories260K/stories260K.gguf') }, { backend: 'webgpu', kvBudgetBytes: 4 << 20, maxBatch: 4, restoreCache: false, seed: 1, ...options });
}

/** The device under the engine, destroyed as a driver reset would take it (the engine did not ask for it). */
function loseDevice(engine: Engine): void {
  (engine as unknown as { gpu: Gpu }).gpu.device.destroy();
}

/** The first status in `state` after `since`. */
async function until(engine: Engine, state: EngineStatus['state'], since = 0): Promise<EngineStatus> {
  for (let s = await engine.status(since); ; s = await engine.status(s.version)) if (s.state === state) return s;
}

describe('device loss, recovered (stories260K on WebGPU)', () => {
  test('a lost device ends the stream with DeviceLostError after its tokens; the engine reloads and answers with the golden ids', async () => {
    const engine = await load();
    expect((await engine.status()).state).toBe('ready');
    const pinned = await engine.preload({ promptIds: prompt.slice(0, -1) });
    const id = await engine.start(request);
    const first = await engine.next(id);
    loseDevice(engine);
    const rest = await collect(engine, id);
    const ids = [...first.ids, ...rest.ids];
    expect(rest.last.finishReason).toBe('error');
    expect(rest.last.error).toBeInstanceOf(DeviceLostError);
    expect(rest.last.error?.message).toMatch(/reloading the model on a new device by itself/);
    expect(ids.length).toBeLessThan(greedy.length);
    expect(ids).toEqual(greedy.slice(0, ids.length)); // what was delivered is right
    // Sent while the engine recovers: it waits for the new device.
    const during = engine.start(request).then((i) => collect(engine, i));
    const ready = await until(engine, 'ready');
    expect(ready).toMatchObject({ losses: 1, recoveries: 1 });
    expect(ready.recoveryMs).toBeGreaterThan(0);
    expect((await during).ids).toEqual(greedy);
    // The preload was pinned again on the new device: the next request's prefix comes from it.
    expect(engine.stats().prefixCache?.pinnedPages).toBeGreaterThan(0);
    const after = await collect(engine, await engine.start(request));
    expect(after.ids).toEqual(greedy);
    expect(after.last.metrics?.cachedTokens).toBeGreaterThan(0);
    engine.release(pinned.id);
    await engine.destroy();
  });

  test('a second loss within the window, even mid-recovery, is not recovered from: requests fail with DeviceRecoveryError', async () => {
    const engine = await load({ lossWindowMs: 60_000 });
    await engine.preload({ promptIds: prompt.slice(0, -1) }); // pinned again during the recovery, after the new device is up
    const gpuOf = () => (engine as unknown as { gpu?: Gpu }).gpu;
    const first = gpuOf();
    loseDevice(engine);
    // The new device is lost while the recovery is still pinning the preload on it.
    while (gpuOf() === undefined || gpuOf() === first) await new Promise((r) => setTimeout(r, 0));
    expect((await engine.status()).state).toBe('recovering');
    loseDevice(engine);
    const failed = await until(engine, 'failed');
    await (engine as unknown as { recovery?: Promise<void> }).recovery; // the first recovery's end must not overwrite it
    expect(await engine.status()).toBe(failed); // nothing changed since: no 'ready', no other error
    expect(failed).toMatchObject({ state: 'failed', losses: 2, recoveries: 0 });
    expect(failed.error).toBeInstanceOf(DeviceRecoveryError);
    expect((failed.error as DeviceRecoveryError).reason).toBe('repeated');
    expect(failed.error?.message).toMatch(/engine\.restart\(\)/);
    await expect(engine.start(request)).rejects.toBeInstanceOf(DeviceRecoveryError);
    await engine.destroy();
  });
});
