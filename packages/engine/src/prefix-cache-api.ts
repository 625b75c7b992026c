// The engine's API over its prefix cache: preload() prefills a prefix (a system prompt, text or ids) as a
// prefill-only request and pins it, so requests that start with it skip its prefill; release() unpins it; saveCache()
// writes the pinned prefixes (or every cached page) to the Origin Private File System and restore() reads them back
// at load. After a device loss the pins go with the device, and pinAgain() prefills the same preloads on the new one.

import type { StepRunner } from '@intab/model';
import type { Chunk, ModelInfo, PreloadInfo, PreloadRequest, SaveCacheResult } from './contract.ts';
import { contextLimit, fitMaxTokens } from './context.ts';
import { EngineClosedError, EngineStateError } from './errors.ts';
import { opfsFolder } from './kv-file.ts';
import { restoreKvCache, saveKvCache } from './kv-persist.ts';
import type { Pin, PrefixCache } from './prefix-cache.ts';
import { resolveOptions, type ResolvedOptions } from './sequence.ts';
import type { Stream } from './stream-delivery.ts';

/** What the prefix-cache API uses of the engine. */
export interface PrefixHost {
  now(): number;
  closed(): boolean;
  /** The runner, or an EngineClosedError when the engine has none (destroyed, or nothing loaded). */
  ready(): { runner: StepRunner };
  /** The prefix cache, when it is on. */
  cache(): PrefixCache | undefined;
  /** A preload's token ids: messages rendered up to their end (no generation prompt), text with BOS, or ids. */
  encodePrefix(request: PreloadRequest): number[];
  /** Starts a prefill-only request for `prompt`: its stream's pin is set once the prefix is in the cache. */
  prefill(prompt: number[], options: ResolvedOptions, signal?: AbortSignal): { id: number; stream: Stream };
  /** The stream's next chunk. */
  next(id: number): Promise<Chunk>;
}

/**
 * Preloaded prefixes, pinned in the prefix cache, and the cache's saves to the OPFS.
 * @example
 * const prefixes = new PrefixCacheApi(host);
 * const sys = await prefixes.preload({ messages: [{ role: 'system', content: 'You are terse.' }] });
 * prefixes.release(sys.id);
 */
export class PrefixCacheApi {
  /** Preloaded prefixes by id. */
  private readonly pins = new Map<number, Pin>();
  /** The preloads' requests by id, pinned again after a recovery. */
  private readonly preloads = new Map<number, PreloadRequest>();
  private nextPin = 0;

  constructor(private readonly host: PrefixHost) {}

  /** Prefills a prefix and pins it in the prefix cache (the part already cached is not prefilled again). */
  async preload(request: PreloadRequest, signal?: AbortSignal): Promise<PreloadInfo> {
    const t0 = this.host.now();
    const { pin, tokens, cachedTokens } = await this.pinPrefix(request, signal);
    const id = this.nextPin++;
    this.pins.set(id, pin);
    this.preloads.set(id, request);
    return { id, tokens, cachedTokens, ms: this.host.now() - t0 };
  }

  /** Unpins a preloaded prefix; its pages stay cached (evictable) until pages run short. Idempotent. */
  release(preload: number): void {
    const pin = this.pins.get(preload);
    this.preloads.delete(preload);
    if (!pin) return;
    this.pins.delete(preload);
    this.host.cache()?.unpin(pin);
  }

  /** Writes the pinned prefixes (with `all`, every cached page) to the Origin Private File System. */
  async saveCache(options: { all?: boolean } = {}): Promise<SaveCacheResult> {
    const { runner } = this.host.ready();
    const cache = this.host.cache();
    if (!cache) throw new EngineStateError(`saveCache() writes the prefix cache, which this engine has off: ${noCacheAdvice(runner)}.`);
    const folder = await opfsFolder();
    if (!folder) throw new EngineStateError("saveCache() writes to the Origin Private File System, which this context lacks (navigator.storage.getDirectory): the prefix cache is kept in memory only.");
    return saveKvCache(cache, runner, folder, options, this.host.now);
  }

  /** Reads the prefix cache saved for this model back, where the OPFS exists, and notes what happened in `info`. */
  async restore(info: ModelInfo | undefined): Promise<void> {
    const { runner } = this.host.ready();
    const cache = this.host.cache();
    if (!cache) return;
    const folder = await opfsFolder();
    if (!folder) return;
    const outcome = await restoreKvCache(cache, runner, folder, this.host.now);
    if (!info) return;
    if (outcome.restored) info.restored = outcome.restored;
    if (outcome.warning) info.warnings = [...(info.warnings ?? []), outcome.warning];
  }

  /** The device went, and its pages with it: the pins are gone (the preloads are kept, to pin them again). */
  dropPins(): void {
    this.pins.clear();
  }

  /**
   * Pins every preload again (on a new device). Pinning again only saves prefill time: a preload that fails now is
   * dropped, with a warning in `info`, unless `gone()` says the failure is the engine's end (then it is thrown).
   */
  async pinAgain(gone: () => boolean, info: ModelInfo | undefined): Promise<void> {
    for (const [id, request] of [...this.preloads]) {
      try {
        this.pins.set(id, (await this.pinPrefix(request)).pin);
      } catch (err) {
        if (gone()) throw err;
        this.preloads.delete(id);
        if (info) info.warnings = [...(info.warnings ?? []), `preload ${id} was not pinned again after the GPU device was lost (${(err as Error).message}).`];
      }
    }
  }

  /** Prefills a prefix as a prefill-only request, and pins it in the prefix cache. */
  private async pinPrefix(request: PreloadRequest, signal?: AbortSignal): Promise<{ pin: Pin; tokens: number; cachedTokens: number }> {
    const { runner } = this.host.ready();
    const cache = this.host.cache();
    if (!cache) throw new EngineStateError(`preload() pins a prefix in the prefix cache, which this engine has off: ${noCacheAdvice(runner)}.`);
    const prompt = this.host.encodePrefix(request);
    const options = resolveOptions({ promptIds: prompt, maxTokens: 1, temperature: 0 }, runner.config.vocab, false);
    fitMaxTokens(prompt.length, options, contextLimit(runner, cache, prompt));
    const { id, stream } = this.host.prefill(prompt, options, signal);
    let last: Chunk;
    do last = await this.host.next(id);
    while (!last.finishReason);
    if (last.finishReason !== 'stop' || !stream.pin) {
      if (last.error) throw last.error;
      if (this.host.closed()) throw new EngineClosedError('destroyed');
      throw signal?.reason ?? new DOMException('The preload was aborted.', 'AbortError');
    }
    return { pin: stream.pin, tokens: prompt.length, cachedTokens: last.metrics?.cachedTokens ?? 0 };
  }
}

/** Why the prefix cache is off for `runner`, and what turns it on. */
export function noCacheAdvice(runner: StepRunner | undefined): string {
  if (runner?.capabilities?.sharedPages === false) {
    if (runner.capabilities.why) return `${runner.capabilities.why}: this model has no prefix cache on any backend (every request prefills its whole prompt)`;
    return "this backend keeps each sequence's K/V apart and cannot share prefixes: load the model with backend 'webgpu' to use it";
  }
  return 'load it with prefixCache: true (the default)';
}
