// Search of the notes by meaning, on this device: each note cut into passages (chunking.ts), each passage embedded
// by an embedding model in this tab (engine.embed, in batches, `truncate: true`) with its note's title before it, the
// vectors kept beside the notes (notes.ts, IndexedDB); a query embedded the same way and compared with every passage
// by dot product (the vectors are unit length: the cosine), best first. Brute force over one Float32Array (kept
// until the notes change: 5,000 passages read from IndexedDB into it in ~130 ms in Chromium), measured against Orama
// 3.1.18's vector search (Node 20, 5,000 passages of 384 dimensions, top 5, 200 queries): 2.5 ms a query here (2.3 ms
// in Chromium), 3.1 ms in Orama (the same top 5 every time: it scans every vector too), which also costs 0.2 s to fill
// and 22 KB gzipped to load, against 0.5 KB. Without an embedding model the notes are searched by keywords
// (notes.ts's searchNotes), and passages are picked by the words they hold.

import type { IntabEngine } from 'intab';
import { chunkText } from './chunking.ts';
import { searchNotes, type Note, type NoteChunk, type NotesStore } from './notes.ts';

/** An embedding model, as the index uses it. */
export interface Embedder {
  /** Names the model (its URL): vectors of two models are never compared. */
  readonly model: string;
  /** One vector of unit length per text, in order. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

/** A passage the search found: its note, the text, and (by meaning) the cosine with the query. */
export interface Passage {
  noteId: string;
  title: string;
  text: string;
  /** The note's creation time (ms since the epoch). */
  created: number;
  /** Dot product of unit vectors, in [-1, 1]; absent from a search by keywords. */
  score?: number;
}

/** How the index embeds: inputs per embed() call. */
export const INDEX = { batch: 32 } as const;

/** The chunking's version: a change of chunking.ts that changes passages bumps it, and the notes are embedded again. */
const CHUNKS_VERSION = 1;

/** What a passage's vector was made by: the model and the chunking. */
export const indexKey = (model: string) => `${model}#chunks-v${CHUNKS_VERSION}`;

/** What embed() reads for a passage: the note's title gives a passage cut from its middle its topic. */
export const embedText = (title: string, text: string) => (text ? `${title}\n\n${text}` : title);

/**
 * An Embedder over an engine with an embedding model: inputs cut to the model's context (`truncate: true`), vectors
 * L2-normalised here when the model does not (a sentence-transformers folder without its Normalize module).
 * @example
 * index.use(engineEmbedder(await createEngine({ model: url }), url));
 */
export function engineEmbedder(engine: IntabEngine, model: string): Embedder {
  const normalized = engine.info.embedding?.normalized ?? false;
  return {
    model,
    async embed(texts, signal) {
      const { embeddings } = await engine.embed({ input: texts, truncate: true }, { signal });
      return normalized ? embeddings : embeddings.map(unit);
    },
  };
}

/** `v` scaled to length 1 (a zero vector stays zero). */
export function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  return n > 0 ? v.map((x) => x / n) : v;
}

/**
 * The `k` best rows of `matrix` (n rows of `dims`) for `query`: their indexes and dot products, best first (ties: the
 * earlier row first). Brute force: one pass over the matrix, a sorted list of k.
 * @example
 * topK(new Float32Array([1, 0]), new Float32Array([0, 1, 1, 0, 0.6, 0.8]), 2, 2); // [{ index: 1, score: 1 }, { index: 2, score: 0.6 }]
 */
export function topK(query: Float32Array, matrix: Float32Array, dims: number, k: number): { index: number; score: number }[] {
  if (query.length !== dims) throw new RangeError(`the query has ${query.length} dimensions, the vectors ${dims}`);
  const n = Math.floor(matrix.length / dims);
  const best: { index: number; score: number }[] = [];
  for (let r = 0; r < n; r++) {
    const o = r * dims;
    let s = 0;
    for (let j = 0; j < dims; j++) s += query[j] * matrix[o + j];
    if (best.length === k && s <= best[k - 1].score) continue;
    let i = best.length < k ? best.length : k - 1;
    while (i > 0 && best[i - 1].score < s) i--;
    best.splice(i, 0, { index: r, score: s });
    if (best.length > k) best.pop();
  }
  return best;
}

/**
 * The `k` best passages for `query` among `chunks` (all of one model, rows of `matrix`), at most one of two passages of
 * a note that overlap (the overlap chunking.ts adds would otherwise return one sentence twice).
 * @example
 * rankPassages(queryVector, chunks, matrix, 384, notesById, 5);
 */
export function rankPassages(query: Float32Array, chunks: readonly NoteChunk[], matrix: Float32Array, dims: number, notes: ReadonlyMap<string, Note>, k: number): Passage[] {
  const out: Passage[] = [];
  const taken: NoteChunk[] = [];
  for (const { index, score } of topK(query, matrix, dims, Math.min(chunks.length, 2 * k))) {
    const c = chunks[index];
    const note = notes.get(c.noteId);
    if (!note || taken.some((t) => t.noteId === c.noteId && t.start < c.end && c.start < t.end)) continue;
    taken.push(c);
    out.push({ noteId: c.noteId, title: note.title, text: c.text, created: note.created, score });
    if (out.length === k) break;
  }
  return out;
}

/**
 * Search by keywords (no embedding model): the notes searchNotes finds, each as its passage that holds most of the
 * query's words (the first on a tie; an empty query: the note's first passage), at most `k`.
 * @example
 * keywordPassages(await notes.list(), 'locker code', 5);
 */
export function keywordPassages(notes: readonly Note[], query: string, k: number): Passage[] {
  const fold = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
  const words = fold(query).split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return searchNotes(notes, query, k).map((note) => {
    let best = note.text;
    let most = -1;
    for (const c of chunkText(note.text)) {
      const text = fold(c.text);
      const held = words.filter((w) => text.includes(w)).length;
      if (held > most) [best, most] = [c.text, held];
    }
    return { noteId: note.id, title: note.title, text: best, created: note.created };
  });
}

/** How an index run went: notes embedded now, and passages and notes indexed in all. */
export interface IndexState {
  embedded: number;
  passages: number;
  notes: number;
  /** Notes still to embed (0 once a run ends). */
  pending: number;
}

export interface NoteIndex {
  /** The embedding model in use (undefined: search by keywords). */
  readonly embedder: Embedder | undefined;
  /** Uses `embedder` from now on (undefined: none); the notes are then embedded by the next sync(). */
  use(embedder: Embedder | undefined): void;
  /**
   * Embeds every note that has no passages of the model in use (new notes, notes saved before an embedding model was
   * loaded, and all of them after a change of model), INDEX.batch passages an embed() call, each note stored once all
   * its passages are; `onProgress` after each call. Runs one at a time: a call while one runs waits for it, then runs.
   */
  sync(o?: { onProgress?(s: IndexState): void; signal?: AbortSignal }): Promise<IndexState>;
  /** The `k` best passages for `query` by meaning (after the sync in progress); undefined without an embedding model. */
  search(query: string, k: number, signal?: AbortSignal): Promise<Passage[] | undefined>;
}

/**
 * The notes' index over `notes`.
 * @example
 * const index = noteIndex(await openNotes());
 * index.use(engineEmbedder(engine, url));
 * await index.sync();
 * const found = await index.search('where is my locker', 5);
 */
export function noteIndex(notes: NotesStore): NoteIndex {
  let embedder: Embedder | undefined;
  let running: Promise<IndexState> = Promise.resolve({ embedded: 0, passages: 0, notes: 0, pending: 0 });
  /** The model's passages as one matrix, and the notes by id, for one revision of the store. */
  let cache: { revision: number; key: string; chunks: NoteChunk[]; matrix: Float32Array; dims: number; notes: Map<string, Note> } | undefined;

  const run = async (e: Embedder, o: { onProgress?(s: IndexState): void; signal?: AbortSignal }): Promise<IndexState> => {
    const key = indexKey(e.model);
    const indexed = await matrixOf(key);
    const all = [...indexed.notes.values()];
    const have = new Set(indexed.chunks.map((c) => c.noteId));
    const todo = all.filter((n) => !have.has(n.id));
    const state: IndexState = { embedded: 0, passages: 0, notes: all.length - todo.length, pending: todo.length };
    // Every passage to embed, in order; a note is stored once its last passage has its vector.
    const work = todo.flatMap((note) => {
      const parts = chunkText(note.text);
      // A note of a title only is one passage: the title.
      const chunks = parts.length ? parts : [{ text: '', start: 0, end: 0 }];
      return chunks.map((c, index) => ({ note, index, last: index === chunks.length - 1, c }));
    });
    let done: NoteChunk[] = [];
    for (let i = 0; i < work.length; i += INDEX.batch) {
      o.signal?.throwIfAborted();
      const batch = work.slice(i, i + INDEX.batch);
      const vectors = await e.embed(batch.map((w) => embedText(w.note.title, w.c.text)), o.signal);
      for (const [j, w] of batch.entries()) {
        done.push({ id: `${w.note.id}:${w.index}`, noteId: w.note.id, index: w.index, text: w.c.text || w.note.title, start: w.c.start, end: w.c.end, model: key, vector: vectors[j] });
        if (!w.last) continue;
        if (await notes.setChunks(w.note.id, done)) {
          state.notes++;
          state.embedded++;
        }
        state.pending--;
        done = [];
      }
      o.onProgress?.({ ...state });
    }
    return state;
  };

  const matrixOf = async (key: string) => {
    if (cache && cache.revision === notes.revision && cache.key === key) return cache;
    const revision = notes.revision;
    const byId = new Map((await notes.list()).map((n) => [n.id, n]));
    const chunks = (await notes.chunks()).filter((c) => c.model === key && byId.has(c.noteId));
    const dims = chunks[0]?.vector.length ?? 0;
    const matrix = new Float32Array(chunks.length * dims);
    for (const [i, c] of chunks.entries()) matrix.set(c.vector, i * dims);
    return (cache = { revision, key, chunks, matrix, dims, notes: byId });
  };

  return {
    get embedder() {
      return embedder;
    },
    use(e) {
      embedder = e;
      cache = undefined;
    },
    sync(o = {}) {
      const e = embedder;
      const next = running.catch(() => undefined).then(async () => {
        if (!e) return { embedded: 0, passages: 0, notes: 0, pending: (await notes.list()).length };
        const state = await run(e, o);
        state.passages = (await matrixOf(indexKey(e.model))).chunks.length;
        return state;
      });
      running = next;
      return next;
    },
    async search(query, k, signal) {
      await running.catch(() => undefined);
      const e = embedder;
      if (!e) return undefined;
      const [q] = await e.embed([query], signal);
      const { chunks, matrix, dims, notes: byId } = await matrixOf(indexKey(e.model));
      return chunks.length ? rankPassages(q, chunks, matrix, dims, byId, k) : [];
    },
  };
}
