// `intab bench store` in the page: what the model store costs and saves, on one file served by the CLI (HTTP Range
// on loopback), in one run: the raw fetch of the file against downloading it into the store (hashing and writing
// chunks as it streams), SHA-256 alone, a store hit (ensure() on a stored copy: what createEngine pays before its
// worker starts; it hashes nothing unless a chunk changed), reading every weight's bytes as a load does through the
// network's ByteSource against the store's (the part of a load the store can change), and loading the model through
// createEngine from the network against from the store (the backend's own work included: on a software adapter,
// 'auto' builds an ONNX graph for onnxruntime's wasm, which dwarfs the rest). Medians of --repeats, one JSON record.

import { createSHA256 } from 'hash-wasm';
import { openModel } from '@intab/engine';
import type { ModelSource } from '@intab/engine/contract';
import { ModelStore, createEngine, opfsBackend } from 'intab';
import { median, round } from './shared.ts';

export interface StoreJob {
  urls: string[];
  repeats?: number;
}

type Report = (record: unknown) => void;

export async function benchStore(job: StoreJob, report: Report): Promise<void> {
  const url = new URL(job.urls[0], location.href).href;
  if (job.urls.length !== 1 || !/\.gguf$/i.test(new URL(url).pathname)) throw new Error('bench store measures one GGUF file: pass --model <file.gguf>');
  const backend = await opfsBackend();
  if (!backend) throw new Error('this browser has no Origin Private File System');
  const store = new ModelStore({ backend });
  const repeats = job.repeats ?? 3;
  const times: Record<string, number[]> = { fetch: [], download: [], sha256: [], verify: [], readNetwork: [], readStore: [], loadNetwork: [], loadStore: [] };
  let bytes = 0;
  let rehashed = 0;
  let loadBackend = '';
  // Every weight's bytes, tensor after tensor, through the ByteSources the worker's loader opens for `source`.
  const readWeights = async (source: ModelSource) => {
    for (const t of (await openModel(source)).tensors.values()) await t.source.read(t.offset, t.byteLength);
  };
  const timed = async (key: string, f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    times[key].push(performance.now() - t0);
  };
  for (let i = 0; i < repeats; i++) {
    await timed('fetch', async () => {
      const res = await fetch(url, { cache: 'no-store' });
      const reader = res.body!.getReader();
      bytes = 0;
      for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.byteLength;
    });
    await store.clear();
    await timed('download', () => store.ensure({ kind: 'url', url }));
    const stored = (await store.ensure({ kind: 'url', url })).source as { files: { blob: Blob }[] };
    const data = new Uint8Array(await stored.files[0].blob.arrayBuffer());
    await timed('sha256', async () => {
      const h = await createSHA256();
      h.init();
      for (let at = 0; at < data.length; at += 8 << 20) h.update(data.subarray(at, at + (8 << 20)));
      h.digest('hex');
    });
    await timed('verify', async () => (rehashed = (await store.ensure({ kind: 'url', url })).rehashed));
    await timed('readNetwork', () => readWeights({ kind: 'url', url }));
    await timed('readStore', async () => readWeights((await store.ensure({ kind: 'url', url })).source));
    await timed('loadNetwork', async () => {
      const engine = await createEngine({ model: url, cache: false });
      loadBackend = engine.info.backend.name;
      await engine.destroy();
    });
    await timed('loadStore', async () => (await createEngine({ model: url, store })).destroy());
  }
  await store.clear();
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  const mbs = (ms: number) => round(bytes / 2 ** 20 / (ms / 1000));
  report({
    type: 'bench',
    bench: 'store',
    bytes,
    repeats,
    raw_fetch_ms: round(m.fetch),
    raw_fetch_mib_s: mbs(m.fetch),
    store_download_ms: round(m.download),
    store_download_mib_s: mbs(m.download),
    download_vs_raw: round(m.fetch / m.download),
    sha256_mib_s: mbs(m.sha256),
    verify_ms: round(m.verify),
    verify_mib_s: mbs(m.verify),
    verify_rehashed_bytes: rehashed,
    read_network_ms: round(m.readNetwork),
    read_store_ms: round(m.readStore),
    read_store_vs_network: round(m.readStore / m.readNetwork),
    load_backend: loadBackend,
    load_network_ms: round(m.loadNetwork),
    load_store_ms: round(m.loadStore),
    load_store_vs_network: round(m.loadStore / m.loadNetwork),
    samples: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, v.map(round)])),
  });
}
