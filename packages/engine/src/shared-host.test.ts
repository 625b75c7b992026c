// The engine an origin's tabs share (shared-host.ts), on stories260K's CPU reference runner: sessions of one key load
// once and each gets the solo greedy ids, alone and all at once; a session reaches only its own streams; one that
// ends cancels its streams and frees their pages while the others go on (a tab's Web Lock let go, in real Chromium:
// e2e/share.spec.ts); a
// load in progress is joined, and stopped only when no session waits for it; the last session out frees the engine;
// admission is fair between sessions (from the runner's step log); a prefix one session preloads is a hit for another.
// The same host served over a BroadcastChannel to tabs that say hello (tab-host.ts: election mode without SharedWorker):
// Comlink sessions multiplexed by ids, golden ids, typed errors across, no tab reaching another's streams.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, test } from 'vitest';
import { configFromGguf, parseGguf, pathSource, tokenizerFromGguf, type LlamaConfig, type Tokenizer } from '@intab/model';
import * as Comlink from 'comlink';
import { readGgufLite } from '@intab/model/reference';
import type { LoadOptions, LoadProgress, ModelInfo, ModelSource } from './contract.ts';
import { Engine } from './engine.ts';
import { EngineClosedError, EngineStateError, SharedMemoryError, UnknownStreamError } from './errors.ts';
import { GpuOutOfMemoryError } from '@intab/gpu';
import { ReferenceRunner } from './reference/runner.ts';
import { SharedHost, type HostLoader, type HostSession } from './shared-host.ts';
import { channelEndpoint, hostChannelName, serveTabs, type ChannelHere } from './tab-host.ts';
import { collect } from './test-streams.ts';
import { registerTransferHandlers } from './transfer.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../shared/', import.meta.url));
const STORIES = join(SHARED, 'models/stories260K');

let config: LlamaConfig;
let tensors: Map<string, Float32Array>;
let tokenizer: Tokenizer;
let golden: { prompt: number[]; greedy: number[] }[];

beforeAll(async () => {
  const path = join(STORIES, 'stories260K-vocab-ud.gguf');
  const gguf = readGgufLite(new Uint8Array(readFileSync(path)), path);
  config = configFromGguf(gguf.metadata, path, gguf.tensorInfos);
  tensors = new Map([...gguf.tensors].map(([name, t]) => [name, t.data]));
  tokenizer = tokenizerFromGguf((await parseGguf(await pathSource(path))).metadata, path);
  golden = JSON.parse(readFileSync(join(STORIES, 'golden.json'), 'utf8')).cases;
});

const SOURCE: ModelSource = { kind: 'url', url: 'https://example.test/stories260K.gguf' };
const INFO = { backend: { name: 'webgpu', reason: 'test' }, arch: 'llama', layers: 5, hidden: 64, vocab: 512, contextLength: 512, hasTokenizer: true, hasChatTemplate: false, toolFormat: null, weightBytes: 1_000_000, kvPages: 64, kvBudget: { asked: 4096, granted: 4096 }, adapter: 'reference' } as ModelInfo;

/** A host whose loads build an engine over the CPU reference runner; `gate` holds loads until it resolves. */
function host(o: { maxBatch?: number; pages?: number; gate?: Promise<void> } = {}) {
  const loads: { options: LoadOptions; signal: AbortSignal; runner: ReferenceRunner; engine: Engine }[] = [];
  const loader: HostLoader = async (_source, options, onProgress, signal) => {
    const runner = new ReferenceRunner(config, (n) => tensors.get(n), { pages: o.pages ?? 64, pageSize: 16, maxBatch: o.maxBatch ?? 16 });
    const engine = new Engine({ runner, tokenizer, options: { seed: 5, maxBatch: o.maxBatch ?? 16, prefixCache: options.prefixCache } });
    loads.push({ options, signal, runner, engine });
    onProgress({ loaded: 0, total: 1, phase: 'upload' });
    await o.gate;
    if (signal.aborted) {
      await engine.destroy();
      throw signal.reason;
    }
    onProgress({ loaded: 1, total: 1, phase: 'upload' });
    return { engine, info: { ...INFO } };
  };
  return { host: new SharedHost(loader), loads, loader };
}

/** Two sessions attached to one engine (key 'k'; `options` for the first, which loads it), and the host's loads. */
async function twoTabs(o: Parameters<typeof host>[0] = {}, options: LoadOptions = {}) {
  const { host: h, loads } = host(o);
  const a = h.session();
  const b = h.session();
  await a.attach('k', SOURCE, options);
  await b.attach('k', SOURCE, {});
  return { h, loads, a, b };
}

const greedy = (k: number, maxTokens = 24) => ({ promptIds: golden[k].prompt, maxTokens, temperature: 0 });
const run = async (s: HostSession, request: ReturnType<typeof greedy>) => (await collect(s as unknown as Engine, await s.start(request))).ids;

describe('SharedHost', () => {
  test('three sessions of one key: one load, each the solo greedy ids, alone and all at once', async () => {
    const { host: h, loads } = host();
    const [a, b, c] = [h.session(), h.session(), h.session()];
    const progress: LoadProgress[] = [];
    const ia = await a.attach('k', SOURCE, {}, (p) => progress.push(p));
    const ib = await b.attach('k', SOURCE, {});
    const ic = await c.attach('k', SOURCE, {});
    expect(loads).toHaveLength(1);
    expect(progress.map((p) => p.loaded)).toEqual([0, 1]);
    expect(ia.share).toMatchObject({ mode: 'shared-worker', attached: false });
    expect(ib.share).toMatchObject({ mode: 'shared-worker', attached: true });
    expect(ic.share?.attached).toBe(true);
    for (const s of [a, b, c]) expect(await run(s, greedy(0))).toEqual(golden[0].greedy.slice(0, 24));
    const all = await Promise.all([run(a, greedy(0)), run(b, greedy(1)), run(c, greedy(0))]);
    expect(all).toEqual([golden[0].greedy.slice(0, 24), golden[1].greedy.slice(0, 24), golden[0].greedy.slice(0, 24)]);
    const stats = b.stats();
    expect(stats.share).toEqual({ sessions: 3, requests: [0, 0, 0], loads: 1, bytesHeld: 1_004_096, bytesIfSeparate: 3 * 1_004_096 });
    expect(h.size).toBe(1);
    for (const s of [a, b, c]) await s.destroy();
    expect(h.size).toBe(0);
  });

  test('another key is another engine; load() is refused, attach twice too', async () => {
    const { host: h, loads } = host();
    const a = h.session();
    const b = h.session();
    await a.attach('k1', SOURCE, {});
    await b.attach('k2', SOURCE, { maxBatch: 4 });
    expect(loads.map((l) => l.options.maxBatch)).toEqual([undefined, 4]);
    expect(h.size).toBe(2);
    await expect(a.load()).rejects.toBeInstanceOf(EngineStateError);
    await expect(a.attach('k1', SOURCE, {})).rejects.toBeInstanceOf(EngineStateError);
    await a.destroy();
    expect(h.size).toBe(1);
    await expect(a.start(greedy(0))).rejects.toBeInstanceOf(EngineClosedError);
    await b.destroy();
  });

  test("a session reaches only its own streams; one that ends mid-stream frees its pages and the other's stream goes on", async () => {
    const { loads, a, b } = await twoTabs();
    const { runner } = loads[0];
    const long = { promptIds: golden[0].prompt, maxTokens: 200, temperature: 0, ignoreEos: true };
    const ia = await a.start(greedy(1, 40));
    const ib1 = await b.start(long);
    const ib2 = await b.start(long);
    await expect(a.next(ib1)).rejects.toBeInstanceOf(UnknownStreamError);
    await a.cancel(ib1); // not a's: nothing happens
    expect((await b.next(ib1)).finishReason).toBeNull();
    expect(a.stats().share?.requests).toEqual([1, 2]);
    expect(a.stats().running).toBe(3);
    await b.destroy(); // the tab closed: its two streams end, their pages come back
    expect(a.stats().share).toMatchObject({ sessions: 1, requests: [1] });
    expect(a.stats().streams).toBe(1);
    expect((await collect(a as unknown as Engine, ia)).ids).toEqual(golden[1].greedy.slice(0, 40));
    expect(a.stats().availablePages).toBe(runner.kv.pages);
    await expect(b.next(ib2)).rejects.toBeInstanceOf(EngineClosedError);
    await a.destroy();
  });

  test('a load in progress is joined; an abort leaves it, and the load stops only when no session waits', async () => {
    let open!: () => void;
    const { host: h, loads } = host({ gate: new Promise<void>((r) => (open = r)) });
    const a = h.session();
    const b = h.session();
    const abortA = new AbortController();
    const pa = a.attach('k', SOURCE, {}, undefined, abortA.signal);
    const pb = b.attach('k', SOURCE, {});
    await Promise.resolve();
    abortA.abort(new Error('tab A gave up'));
    await expect(pa).rejects.toThrow('tab A gave up');
    expect(loads[0].signal.aborted).toBe(false);
    open();
    expect((await pb).share?.attached).toBe(true);
    expect(await run(b, greedy(0))).toEqual(golden[0].greedy.slice(0, 24));
    await b.destroy();

    let open2!: () => void;
    const second = host({ gate: new Promise<void>((r) => (open2 = r)) });
    const c = second.host.session();
    const abortC = new AbortController();
    const pc = c.attach('k', SOURCE, {}, undefined, abortC.signal);
    abortC.abort(new Error('the only tab gave up'));
    await expect(pc).rejects.toThrow('the only tab gave up');
    expect(second.loads[0].signal.aborted).toBe(true);
    open2();
    expect(second.host.size).toBe(0);
  });

  test("an engine whose device failed for good is left to its tabs: the next tab to attach (or restart) gets a new load", async () => {
    const { host: h, loads } = host();
    const a = h.session();
    await a.attach('k', SOURCE, {});
    Object.defineProperty(loads[0].engine, 'state', { get: () => 'failed' });
    const b = h.session();
    expect((await b.attach('k', SOURCE, {})).share?.attached).toBe(false);
    expect(loads).toHaveLength(2);
    expect(await run(b, greedy(0))).toEqual(golden[0].greedy.slice(0, 24));
    expect(a.stats().share?.sessions).toBe(1); // A stays on its engine until it restarts
    await a.destroy();
    expect(h.size).toBe(1);
    await b.destroy();
    expect(h.size).toBe(0);
  });

  test('admission is fair between sessions: a session with eight waiting requests does not starve another one', async () => {
    const { loads, a, b } = await twoTabs({ maxBatch: 2 });
    const { runner } = loads[0];
    const request = { promptIds: golden[0].prompt, maxTokens: 6, temperature: 0, ignoreEos: true };
    const ids = await Promise.all(Array.from({ length: 8 }, () => a.start(request)));
    const late = await b.start(request);
    const done = await Promise.all([...ids.map((id) => collect(a as unknown as Engine, id)), collect(b as unknown as Engine, late)]);
    for (const d of done) expect(d.ids).toEqual(golden[0].greedy.slice(0, 6));
    // B's request came ninth; with two slots, FIFO would admit it after A's 8th. It is admitted as soon as a slot frees.
    const firstStep = (seq: number) => runner.log.findIndex((step) => step.some((e) => e.seq === seq));
    expect(firstStep(late)).toBeLessThan(firstStep(ids[2]));
    for (const s of [a, b]) await s.destroy();
  });

  test("the step log shows each tab the engine's steps, its own requests as session 0: a tab's late request takes the first free slot ahead of another tab's queue", async () => {
    const { a, b } = await twoTabs({ maxBatch: 2 }, { stepLog: 256 });
    const request = (maxTokens: number) => ({ promptIds: golden[1].prompt, maxTokens, temperature: 0, ignoreEos: true });
    const [a1, a2] = [await a.start(request(8)), await a.start(request(16))];
    // Once A's two fill the batch: A's third waits, then B's one comes.
    let rest: Promise<number[][]> | undefined;
    const ids: { a3?: number; late?: number } = {};
    const first = collect(a as unknown as Engine, a1, async () => {
      if (rest) return;
      ids.a3 = await a.start(request(8));
      ids.late = await b.start(request(8));
      rest = Promise.all([collect(a as unknown as Engine, ids.a3), collect(b as unknown as Engine, ids.late)].map((p) => p.then((d) => d.ids)));
    });
    const done = await Promise.all([first.then((d) => d.ids), collect(a as unknown as Engine, a2).then((d) => d.ids)]);
    const [a3, late] = await rest!;
    expect([...done, a3, late]).toEqual([8, 16, 8, 8].map((n) => golden[1].greedy.slice(0, n)));
    const log = b.stats().stepLog!;
    const step = (stream: number, what: 'admitted' | 'tokens' | 'finish') => log.find((s) => s.requests.some((r) => r.stream === stream && r[what] !== undefined))!.step;
    // B's request was admitted at the step after A's first finished (the first free slot), A's third still waiting.
    expect(step(ids.late!, 'admitted')).toBe(step(a1, 'finish') + 1);
    expect(log.find((s) => s.step === step(ids.late!, 'admitted'))!.waiting).toBe(1);
    expect(step(ids.a3!, 'admitted')).toBeGreaterThan(step(ids.late!, 'admitted'));
    // Its prompt fits one step: its first token comes in the step that admitted it.
    expect(step(ids.late!, 'tokens')).toBe(step(ids.late!, 'admitted'));
    // Sessions as each tab sees them: its own 0, the other tab 1.
    const sessions = (l: typeof log) => new Map(l.flatMap((s) => s.requests.map((r) => [r.stream, r.session])));
    expect([...sessions(log)].sort(([x], [y]) => x - y)).toEqual([[a1, 1], [a2, 1], [ids.a3, 1], [ids.late, 0]]);
    expect([...sessions(a.stats().stepLog!)].sort(([x], [y]) => x - y)).toEqual([[a1, 0], [a2, 0], [ids.a3, 0], [ids.late, 1]]);
    for (const s of [a, b]) await s.destroy();
  });

  test("a prefix one session preloads is a hit for another's request; a session's preloads are released when it ends", async () => {
    const { a, b } = await twoTabs({}, { prefixCache: true });
    const prefix = golden[0].prompt.concat(golden[0].greedy.slice(0, 32));
    const pinned = await a.preload({ promptIds: prefix });
    const id = await b.start({ promptIds: [...prefix, ...golden[0].greedy.slice(32, 34)], maxTokens: 4, temperature: 0 });
    const got = await collect(b as unknown as Engine, id);
    expect(got.last.metrics?.cachedTokens).toBeGreaterThanOrEqual(32);
    expect(a.stats().prefixCache?.pinnedPages).toBeGreaterThan(0);
    await a.destroy();
    expect(b.stats().prefixCache?.pinnedPages).toBe(0);
    b.release(pinned.id); // not b's: nothing happens
    await b.destroy();
  });
});

describe('GPU memory between the models of an origin', () => {
  test("a model that does not fit beside the others is refused with a SharedMemoryError naming what the other tabs hold; alone, it is the GpuOutOfMemoryError itself", async () => {
    const { loader: stories } = host();
    const needs = { weights: 3 * 2 ** 30, kv: 2 ** 30, activations: 2 ** 20 };
    const oom = new GpuOutOfMemoryError('weights', 3 * 2 ** 30, needs, 'vkAllocateMemory failed');
    const big: ModelSource = { kind: 'url', url: 'https://example.test/big.gguf' };
    const loader: HostLoader = (source, options, onProgress, signal) => (source.kind === 'url' && source.url === big.url ? Promise.reject(oom) : stories(source, options, onProgress, signal));
    const h = new SharedHost(loader);
    const bigKey = JSON.stringify(['https://example.test/big.gguf', '', {}]);
    // Alone in the host: the GPU's own error, nothing else holds memory.
    await expect(h.session().attach(bigKey, big, {})).rejects.toBe(oom);
    const [a, b] = [h.session(), h.session()];
    const small = JSON.stringify(['hf:org/stories@main', '', {}]);
    await a.attach(small, SOURCE, {});
    await b.attach(small, SOURCE, {});
    const err = await h.session().attach(bigKey, big, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SharedMemoryError);
    expect(err).toMatchObject({ code: 'shared_gpu_memory_full', model: 'https://example.test/big.gguf', held: [{ model: 'org/stories@main', bytes: 1_000_000 + 4096, tabs: 2 }], cause: oom });
    expect((err as Error).message).toContain('org/stories@main (');
    expect((err as Error).message).toContain('2 tabs');
    // The refused load left nothing behind: the tabs on the other model go on.
    expect(h.size).toBe(1);
    expect(await run(a, greedy(0))).toEqual(golden[0].greedy.slice(0, 24));
    await Promise.all([a.destroy(), b.destroy()]);
  });
});

describe('served to other tabs over a BroadcastChannel (tab-host.ts, election mode without SharedWorker)', () => {
  test("a tab says hello, is answered with the host's life lock, and its session on the channel gets the golden ids; typed errors cross; another tab's messages are not its own", async () => {
    registerTransferHandlers();
    const { host: h, loads } = host();
    const stop = serveTabs(h, 'k', 'intab-host-life-1');
    const channel = new BroadcastChannel(hostChannelName('k'));
    const hello = (self: string) =>
      new Promise<ChannelHere>((resolve) => {
        channel.addEventListener('message', (ev: MessageEvent) => void (ev.data?.type === 'here' && ev.data.to === self && resolve(ev.data)));
        channel.postMessage({ type: 'hello', from: self });
      });
    const [here1, here2] = await Promise.all([hello('tab-1'), hello('tab-2')]);
    expect(here1).toMatchObject({ life: 'intab-host-life-1', host: here2.host });
    const [t1, t2] = [here1, here2].map((here, k) => Comlink.wrap<HostSession>(channelEndpoint(channel, `tab-${k + 1}`, here.host)));
    await t1.attach('k', SOURCE, {});
    expect((await t2.attach('k', SOURCE, {})).share?.attached).toBe(true);
    expect(loads).toHaveLength(1);
    const pull = async (s: typeof t1, id: number) => {
      const ids: number[] = [];
      for (let c = await s.next(id); ; c = await s.next(id)) {
        ids.push(...c.ids);
        if (c.finishReason !== null) return ids;
      }
    };
    const [s1, s2] = [await t1.start(greedy(0)), await t2.start(greedy(1))];
    expect(await Promise.all([pull(t1, s1), pull(t2, s2)])).toEqual([golden[0].greedy.slice(0, 24), golden[1].greedy.slice(0, 24)]);
    const s3 = await t1.start(greedy(0));
    await expect(t2.next(s3)).rejects.toBeInstanceOf(UnknownStreamError); // tab 1's stream, asked for by tab 2
    await t1.cancel(s3);
    expect((await t1.stats()).share).toMatchObject({ sessions: 2, loads: 1 });
    expect(() => channelEndpoint(channel, 'tab-1', here1.host).postMessage({}, [new MessageChannel().port1])).toThrow(TypeError);
    await Promise.all([t1.destroy(), t2.destroy()]);
    expect(h.size).toBe(0);
    stop();
    channel.close();
  });
});
