// Where createEngine({ model, remote, prefer }) runs a model: in this tab when WebGPU and memory allow, else on the
// remote server. These are the checks made before any download; a local load that then fails still falls back to
// the remote server (engine.ts), and engine.info.backend.reason says which ran and why.

import type { Backend, ModelSource } from '@intab/engine/contract';

/** Whether this tab can run a model of `bytes` (undefined: unknown), and why not. */
export interface LocalVerdict {
  ok: boolean;
  reason: string;
}

/** The GPU and memory facts the verdict is made of (navigator's, or given by a test). */
export interface LocalFacts {
  /** An adapter was found (navigator.gpu.requestAdapter()), and its description. */
  adapter: string | null;
  /** navigator.deviceMemory (GiB, rounded down by the browser, at most 8 in Chrome), when the browser says. */
  deviceMemoryGiB?: number;
}

const GiB = 2 ** 30;
const fmt = (n: number) => `${(n / GiB).toFixed(2)} GiB`;

/** What the browser says about its GPU and memory. */
export async function localFacts(): Promise<LocalFacts> {
  const nav = (globalThis as { navigator?: Navigator & { deviceMemory?: number } }).navigator;
  let adapter: string | null = null;
  try {
    const a = await nav?.gpu?.requestAdapter();
    if (a) adapter = [a.info?.vendor, a.info?.architecture, a.info?.description].filter(Boolean).join(' ') || 'a WebGPU adapter';
  } catch {
    adapter = null;
  }
  return { adapter, ...(typeof nav?.deviceMemory === 'number' ? { deviceMemoryGiB: nav.deviceMemory } : {}) };
}

/**
 * The verdict for a model of `bytes` on `backend`: WebGPU must have an adapter (unless the backend is onnx-wasm,
 * which runs on the CPU), and the weights must fit in half the device's memory (the rest is the browser's, the KV-cache's
 * and the page's).
 */
export function localVerdict(facts: LocalFacts, bytes: number | undefined, backend: Backend | undefined): LocalVerdict {
  if (!facts.adapter && backend !== 'onnx-wasm') return { ok: false, reason: 'this browser has no WebGPU adapter' };
  if (bytes !== undefined && facts.deviceMemoryGiB !== undefined && bytes > (facts.deviceMemoryGiB * GiB) / 2) {
    return { ok: false, reason: `the model's ${fmt(bytes)} exceed half of this device's ${facts.deviceMemoryGiB} GiB of memory` };
  }
  const size = bytes !== undefined ? `${fmt(bytes)}, ` : '';
  return { ok: true, reason: `it fits this tab (${size}${facts.adapter ?? 'CPU'}${facts.deviceMemoryGiB !== undefined ? `, ${facts.deviceMemoryGiB} GiB of memory` : ''})` };
}

/** The model's bytes: Blobs' sizes, or the servers' Content-Length (HEAD); undefined when a server does not say. */
export async function sourceBytes(source: ModelSource, signal?: AbortSignal): Promise<number | undefined> {
  if (source.kind === 'files') return source.files.reduce((n, f) => n + f.blob.size, 0);
  const urls = source.kind === 'url' ? [source.url] : Object.values(source.files);
  const sizes = await Promise.all(
    urls.map(async (url) => {
      try {
        const res = await fetch(url, { method: 'HEAD', signal });
        const n = Number(res.headers.get('content-length'));
        return res.ok && n > 0 ? n : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return sizes.some((n) => n === undefined) ? undefined : sizes.reduce((a, b) => a! + b!, 0);
}
