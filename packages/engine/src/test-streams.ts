// Reading a request's stream to its end, for the engine's tests (node and GPU; not part of the package's API).
import { expect } from 'vitest';
import { mulberry32 } from '@intab/gpu';
import type { Chunk, GenerateRequest, SpeculativeMethod } from './contract.ts';
import type { Engine } from './engine.ts';

export interface Collected {
  ids: number[];
  text: string;
  chunks: Chunk[];
  last: Chunk;
}

/** Pulls a stream to its end; `onChunk` may act between pulls (abort, start other requests). */
export async function collect(engine: Engine, id: number, onChunk?: (c: Chunk, soFar: number[]) => void | Promise<void>): Promise<Collected> {
  const ids: number[] = [];
  const chunks: Chunk[] = [];
  let text = '';
  for (;;) {
    const c = await engine.next(id);
    chunks.push(c);
    ids.push(...c.ids);
    text += c.text;
    if (c.finishReason) return { ids, text, chunks, last: c };
    await onChunk?.(c, ids);
  }
}

/**
 * Seeded random traffic on an engine with a prefix cache: `ops` operations, each a preload of a stem's start (1 in
 * 10), a release of a pin (1 in 10), or a request (`requests[k]`, sometimes speculative by one of `methods`, aborted
 * at a random point 3 in 10 times), awaiting what is pending now and then. Every request's ids must equal
 * `expected[k]` (an aborted one's, a prefix of them); at the end every pin is released. Returns how many finished.
 */
export async function prefixTraffic(
  engine: Engine,
  o: { seed: number; ops: number; stems: number[][]; requests: GenerateRequest[]; expected: number[][]; methods: (SpeculativeMethod | false)[] },
): Promise<number> {
  const rng = mulberry32(o.seed);
  const int = (n: number) => Math.floor(rng() * n);
  const pins: number[] = [];
  const pending: Promise<void>[] = [];
  let finished = 0;
  for (let i = 0; i < o.ops; i++) {
    const op = int(10);
    if (op === 0) {
      pending.push(engine.preload({ promptIds: o.stems[int(o.stems.length)].slice(0, 8 + int(30)) }).then((p) => void pins.push(p.id), () => {}));
    } else if (op === 1 && pins.length) {
      await engine.release(pins.splice(int(pins.length), 1)[0]);
    } else {
      const k = int(o.requests.length);
      const controller = new AbortController();
      const abortAt = op < 4 ? int(8) : -1;
      const speculative = o.methods[int(o.methods.length)];
      const id = await engine.start({ ...o.requests[k], ...(speculative ? { speculative: { method: speculative, k: 3, adaptive: false } } : {}) }, controller.signal);
      if (abortAt === 0) controller.abort();
      pending.push(
        collect(engine, id, (_c, ids) => {
          if (abortAt > 0 && ids.length >= abortAt) controller.abort();
        }).then((r) => {
          if (r.last.finishReason === 'abort') expect(r.ids).toEqual(o.expected[k].slice(0, r.ids.length));
          else {
            expect(r.ids, `request ${k}`).toEqual(o.expected[k]);
            finished++;
          }
        }),
      );
    }
    if (int(4) === 0) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  for (const p of pins) await engine.release(p);
  return finished;
}

/** Starts a request and pulls its stream to its end. */
export const runRequest = async (engine: Engine, r: GenerateRequest, signal?: AbortSignal): Promise<Collected> => collect(engine, await engine.start(r, signal));

/** Seeded story-word ids (3..502), as stand-ins for a chat's messages. */
export function storyWords(seed: number, n: number): number[] {
  const rng = mulberry32(seed);
  return Array.from({ length: n }, () => 3 + Math.floor(rng() * 500));
}
