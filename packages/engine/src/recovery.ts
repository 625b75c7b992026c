// What the engine tells the main thread about its device, and when it stops trying. A lost GPU device (a GPU-process
// crash, a driver reset, a device destroyed under it) ends every request with a DeviceLostError; the engine then
// reloads the model on a new device by itself ('recovering', then 'ready'). A second loss soon after the last one is
// not retried: a GPU that keeps failing would loop reloading gigabytes, so the engine turns 'failed' with a
// DeviceRecoveryError that says what to do. The main thread follows the state by long-polling status(since).

import type { EngineStatus } from './contract.ts';

/** A second loss within this long of the previous one is not recovered from [60 s]. */
export const LOSS_WINDOW_MS = 60_000;

/**
 * The engine's state, versioned: wait(since) resolves once the version passes `since` (at once when it already has),
 * so one pending call per watcher follows every change without polling.
 * @example
 * const board = new StatusBoard();
 * board.set({ state: 'recovering', error });
 * const s = await board.wait(0); // { version: 1, state: 'recovering', ... }
 */
export class StatusBoard {
  private status: EngineStatus = { version: 0, state: 'ready', losses: 0, recoveries: 0 };
  private waiters: { since: number; resolve: (s: EngineStatus) => void }[] = [];

  get current(): EngineStatus {
    return this.status;
  }

  set(change: Partial<Omit<EngineStatus, 'version'>>): void {
    const next: EngineStatus = { ...this.status, ...change, version: this.status.version + 1 };
    if (change.state === 'ready') delete next.error;
    this.status = next;
    const due = this.waiters.filter((w) => w.since < next.version);
    this.waiters = this.waiters.filter((w) => w.since >= next.version);
    for (const w of due) w.resolve(next);
  }

  /** The status once its version is past `since` [-1: now]. */
  wait(since = -1): Promise<EngineStatus> {
    if (this.status.version > since) return Promise.resolve(this.status);
    return new Promise((resolve) => this.waiters.push({ since, resolve }));
  }
}

/**
 * Decides whether a device loss is recovered from: not when the previous one was less than `windowMs` ago.
 * @example
 * const policy = new LossPolicy(60_000);
 * policy.record(now) // true: recover
 */
export class LossPolicy {
  private last = -Infinity;
  constructor(readonly windowMs = LOSS_WINDOW_MS) {}

  /** Records a loss at `at` (ms); true when the engine should recover from it. */
  record(at: number): boolean {
    const recover = at - this.last >= this.windowMs;
    this.last = at;
    return recover;
  }
}

/**
 * Asks for a device again after a loss: right after a GPU-process crash the browser may need a moment to start a new
 * one, so a refused request is retried a few times with growing pauses before giving up.
 * @example
 * const gpu = await reacquire(() => requestGpu(), 5);
 */
export async function reacquire<T>(request: () => Promise<T>, attempts = 5, firstDelayMs = 100): Promise<T> {
  let delay = firstDelayMs;
  for (let i = 1; ; i++) {
    try {
      return await request();
    } catch (err) {
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, delay));
      delay *= 2;
    }
  }
}

/**
 * A device's loss, for the step loop to race: `race(step)` settles with the step or with the loss, whichever comes
 * first, and leaves nothing behind once the step settles (a long-lived promise raced once per step would keep one
 * reaction per step alive for as long as the device lives).
 * @example
 * const loss = new LossSignal();
 * device.lost.then((info) => loss.fire(new DeviceLostError(info.reason, info.message)));
 * const results = await loss.race(runner.step(entries));
 */
export class LossSignal<E = unknown> {
  private error?: E;
  private readonly listeners = new Set<(err: E) => void>();

  get lost(): boolean {
    return this.error !== undefined;
  }

  fire(err: E): void {
    if (this.error !== undefined) return;
    this.error = err;
    for (const l of this.listeners) l(err);
    this.listeners.clear();
  }

  /** `work`'s outcome, or a rejection with the loss if it comes first. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.error !== undefined) {
      work.catch(() => {});
      return Promise.reject(this.error);
    }
    return new Promise<T>((resolve, reject) => {
      this.listeners.add(reject);
      work.then(resolve, reject).finally(() => this.listeners.delete(reject));
    });
  }

  /** Whether the loss comes within `ms` (true at once if it came already). */
  within(ms: number): Promise<boolean> {
    if (this.error !== undefined) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const onLoss = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(onLoss);
        resolve(false);
      }, ms);
      this.listeners.add(onLoss);
    });
  }
}
