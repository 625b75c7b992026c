// Reading a request's stream to its end, for the engine's tests (node and GPU; not part of the package's API).
import type { Chunk } from './contract.ts';
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
