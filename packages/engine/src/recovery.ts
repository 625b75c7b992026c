// The engine's recovery from a lost GPU device, and what it tells the main thread about it. A lost device (a
// GPU-process crash, a driver reset, a device destroyed under it) ends every request with a DeviceLostError; the engine
// then reloads the model on a new device by itself ('recovering', then 'ready'), from the files load() opened, and pins
// its preloads again. A second loss soon after the last one is not retried: a GPU that keeps failing would loop
// reloading gigabytes, so the engine turns 'failed' with a DeviceRecoveryError that says what to do. The main thread
// follows the state by long-polling status(since).

import { DeviceLostError, requestGpu, type Gpu } from '@intab/gpu';
import type { EmbeddingModelFiles, EncoderRunner, StepRunner, Tokenizer } from '@intab/model';
import type { EngineStatus } from './contract.ts';
import { DeviceRecoveryError, EngineClosedError } from './errors.ts';
import { loadEncoderModel, loadOnBackend, type OpenedModels, type RunnersOptions } from './load.ts';

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

// ---- the engine's recovery ----

/** What the engine says on a DeviceLostError it recovers from. */
const RECOVERING = 'The engine is reloading the model on a new device by itself (engine.state is \'recovering\', then \'ready\'): send the request again; requests sent meanwhile wait for it.';

/**
 * What load() put on the GPU, kept to load it again on a new device after a loss: a text model's runners (`opened`),
 * or an embedding model's or reranker's encoder (`encoder`).
 */
export type Reload = { reason: string } & (
  | { opened: OpenedModels; options: RunnersOptions & { prefixCache?: boolean } }
  | { encoder: EmbeddingModelFiles; options: { quantize?: 'q8_0' | 'q4_0'; maxTokensPerPass?: number } }
);

/** What the recovery does to the engine. */
export interface RecoveryHost {
  now(): number;
  closed(): boolean;
  /** The device the model runs on now. */
  gpu(): Gpu | undefined;
  /** Ends every request with `err` and frees the lost device's model (its runners, the device, the pins). */
  dropModel(err: DeviceLostError): void;
  /** Puts a model loaded on a new device in place (its prefix cache and scheduler anew). */
  attach(gpu: Gpu, loaded: { runner: StepRunner; draft?: StepRunner }, tokenizer: Tokenizer | undefined): void;
  /** Puts an encoder loaded on a new device in place (a new queue for its embed() and rerank() calls). */
  attachEncoder(gpu: Gpu, encoder: EncoderRunner, tokenizer: Tokenizer | undefined): void;
  /** Pins the preloads again on the new device; `gone` says whether a failure is the engine's end (that device lost too, or destroy()). */
  pinAgain(gone: () => boolean): Promise<void>;
}

/**
 * Follows the engine's device: its loss (not the engine's own destroy()) ends every request, and the model is loaded
 * again on a new device unless the previous loss was too recent. Requests wait for a recovery in progress.
 * @example
 * const devices = new DeviceRecovery(host, 60_000);
 * devices.watch(gpu, { opened, options, reason }); // after load()
 * await devices.recovered(); // before each request: throws the DeviceRecoveryError once it gave up
 */
export class DeviceRecovery {
  /** The state status() reports (device losses and recoveries). */
  readonly board = new StatusBoard();
  private readonly policy: LossPolicy;
  /** Set when the model is on intab's WebGPU kernels: what a recovery reloads. */
  private reloadable?: Reload;
  /** A recovery in progress (new device, weights reloaded). */
  inProgress?: Promise<void>;
  /** The current device's loss: a step in flight races it. */
  lost?: LossSignal<DeviceLostError>;

  constructor(
    private readonly host: RecoveryHost,
    windowMs?: number,
  ) {
    this.policy = new LossPolicy(windowMs);
  }

  /** Follows `gpu`'s device: its loss (not our own destroy()) ends every request and starts a recovery. */
  watch(gpu: Gpu, reload?: Reload): void {
    if (reload) this.reloadable = reload;
    const loss = (this.lost = new LossSignal<DeviceLostError>());
    void gpu.device.lost.then((info) => {
      if (this.host.closed() || gpu !== this.host.gpu() || gpu.destroyed) return;
      const err = new DeviceLostError(info.reason ?? 'unknown', info.message, RECOVERING);
      loss.fire(err);
      this.onDeviceLost(err);
    });
  }

  /** Waits for a recovery in progress; after a failed one, throws its DeviceRecoveryError. */
  async recovered(): Promise<void> {
    if (this.inProgress) await this.inProgress;
    const s = this.board.current;
    if (s.state === 'failed' && s.error) throw s.error;
  }

  /**
   * Every request ends now with `err` (what they produced was delivered or is in their last chunk), the dead device's
   * objects are dropped, and the model is loaded again on a new device, unless the previous loss was too recent.
   */
  private onDeviceLost(err: DeviceLostError): void {
    const losses = this.board.current.losses + 1;
    const recover = this.policy.record(this.host.now());
    this.host.dropModel(err);
    this.lost = undefined;
    const windowMs = this.policy.windowMs;
    if (!recover) {
      this.board.set({ state: 'failed', losses, error: new DeviceRecoveryError('repeated', losses, windowMs, { cause: err }) });
      return;
    }
    this.board.set({ state: 'recovering', losses, error: err });
    const t0 = this.host.now();
    // A loss of the new device during this recovery is handled by its own onDeviceLost, which then owns the state.
    const current = () => this.board.current.losses === losses;
    const recovery: Promise<void> = this.reload()
      .then(
        () => {
          if (current()) this.board.set({ state: 'ready', recoveries: this.board.current.recoveries + 1, recoveryMs: this.host.now() - t0 });
        },
        (cause) => {
          if (current()) this.board.set({ state: 'failed', error: cause instanceof EngineClosedError ? cause : new DeviceRecoveryError('reacquire', losses, windowMs, { cause }) });
        },
      )
      .finally(() => {
        if (this.inProgress === recovery) this.inProgress = undefined;
      });
    this.inProgress = recovery;
  }

  /** A new device, the model loaded on it (the same files: the model store's, when the main thread used it), preloads pinned again. */
  private async reload(): Promise<void> {
    const r = this.reloadable!;
    const gpu = await reacquire(() => requestGpu());
    if ('encoder' in r) return this.reloadEncoder(gpu, r.encoder, r.options, r.reason);
    let loaded: { runner: StepRunner; draft?: StepRunner };
    try {
      loaded = await loadOnBackend({ name: 'webgpu', gpu, reason: r.reason }, r.opened, r.options);
    } catch (err) {
      gpu.destroy();
      throw err;
    }
    if (this.host.closed()) {
      loaded.draft?.destroy();
      loaded.runner.destroy();
      gpu.destroy();
      throw new EngineClosedError('destroyed');
    }
    this.host.attach(gpu, loaded, r.opened.tokenizer);
    this.watch(gpu);
    const loss = this.lost!;
    // Pinning again only saves prefill time: a preload that fails now is dropped, with a warning in info, rather than
    // failing the engine (unless the new device went too: that loss's own recovery takes over).
    await this.host.pinAgain(() => loss.lost || this.host.closed());
  }

  /** An encoder on the new device (warmed up as at load), in place of the lost one. */
  private async reloadEncoder(gpu: Gpu, files: EmbeddingModelFiles, options: { quantize?: 'q8_0' | 'q4_0'; maxTokensPerPass?: number }, reason: string): Promise<void> {
    let loaded: { encoder: EncoderRunner; tokenizer?: Tokenizer };
    try {
      loaded = await loadEncoderModel(files, { name: 'webgpu', gpu, reason }, options);
    } catch (err) {
      gpu.destroy();
      throw err;
    }
    if (this.host.closed()) {
      loaded.encoder.destroy();
      gpu.destroy();
      throw new EngineClosedError('destroyed');
    }
    this.host.attachEncoder(gpu, loaded.encoder, loaded.tokenizer);
    this.watch(gpu);
  }
}
