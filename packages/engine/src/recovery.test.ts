// The pieces of device-loss recovery that need no GPU: the versioned status a watcher long-polls, the window that stops
// a failing GPU from reloading in a loop, the retries of a refused device request, and the loss a step races.
import { describe, expect, test } from 'vitest';
import { LossPolicy, LossSignal, StatusBoard, reacquire } from './recovery.ts';

describe('StatusBoard', () => {
  test('wait() answers at once without since, and otherwise once the version passes it', async () => {
    const board = new StatusBoard();
    expect(await board.wait()).toMatchObject({ version: 0, state: 'ready' });
    const next = board.wait(0);
    let seen = false;
    void next.then(() => (seen = true));
    await Promise.resolve();
    expect(seen).toBe(false);
    const error = new Error('lost');
    board.set({ state: 'recovering', losses: 1, error });
    expect(await next).toMatchObject({ version: 1, state: 'recovering', losses: 1, error });
    board.set({ state: 'ready', recoveries: 1 });
    const ready = await board.wait(1);
    expect(ready).toMatchObject({ version: 2, state: 'ready', losses: 1, recoveries: 1 });
    expect(ready.error).toBeUndefined(); // a ready engine carries no error
  });
});

describe('LossPolicy', () => {
  test('the first loss is recovered from; one within the window is not; one after it is', () => {
    const policy = new LossPolicy(60_000);
    expect(policy.record(1_000)).toBe(true);
    expect(policy.record(30_000)).toBe(false);
    expect(policy.record(90_001)).toBe(true);
  });
});

describe('reacquire', () => {
  test('retries a refused request, then gives up with its last error', async () => {
    let calls = 0;
    expect(await reacquire(async () => (++calls < 3 ? Promise.reject(new Error('no adapter yet')) : 'device'), 5, 1)).toBe('device');
    expect(calls).toBe(3);
    calls = 0;
    await expect(reacquire(async () => (calls++, Promise.reject(new Error('no adapter'))), 3, 1)).rejects.toThrow('no adapter');
    expect(calls).toBe(3);
  });
});

describe('LossSignal', () => {
  const listeners = (s: LossSignal<Error>) => (s as unknown as { listeners: Set<unknown> }).listeners.size;

  test('race() settles with the work and keeps nothing once it has (one race per step must not pile up)', async () => {
    const loss = new LossSignal<Error>();
    for (let i = 0; i < 1000; i++) expect(await loss.race(Promise.resolve(i))).toBe(i);
    await expect(loss.race(Promise.reject(new Error('step failed')))).rejects.toThrow('step failed');
    expect(listeners(loss)).toBe(0);
  });

  test('a loss ends a pending race at once; later races and within() answer with it', async () => {
    const loss = new LossSignal<Error>();
    const pending = loss.race(new Promise<never>(() => {}));
    const soon = loss.within(10_000);
    loss.fire(new Error('lost'));
    await expect(pending).rejects.toThrow('lost');
    expect(await soon).toBe(true);
    expect(loss.lost).toBe(true);
    await expect(loss.race(Promise.resolve(1))).rejects.toThrow('lost');
    expect(await loss.within(0)).toBe(true);
  });

  test('within() is false when no loss comes in time, and forgets its listener', async () => {
    const loss = new LossSignal<Error>();
    expect(await loss.within(5)).toBe(false);
    expect(listeners(loss)).toBe(0);
  });
});
