// Search of the notes by meaning, with a stand-in embedding model whose vectors are bags of words (texts that share
// words are close, as the e2e's random-weight model makes them): the ranking (brute-force top k by dot product, ties
// in order, overlapping passages of a note once), the index kept in step with the notes (notes saved before a model
// get embedded when it comes, in batches, each passage with its note's title; another model re-embeds everything; a
// deleted note takes its vectors along, even one deleted while it was being embedded), and keyword passages.
import { describe, expect, it } from 'vitest';
import { embedText, INDEX, indexKey, keywordPassages, noteIndex, rankPassages, topK, unit, type Embedder } from './note-index.ts';
import { memoryNotes, type Note, type NoteChunk } from './notes.ts';

const DIMS = 256;

/** A bag of words: each lowercase word adds ±1 to one of DIMS dimensions (FNV-1a hash), unit length. */
function bagOfWords(text: string): Float32Array {
  const v = new Float32Array(DIMS);
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let h = 0x811c9dc5;
    for (const ch of w) h = Math.imul(h ^ ch.codePointAt(0)!, 0x01000193) >>> 0;
    v[h % DIMS] += h & 0x80000000 ? 1 : -1;
  }
  return unit(v);
}

/** An embedder that records each call's inputs. */
function fakeEmbedder(model = 'test://bag-of-words'): Embedder & { calls: string[][] } {
  const calls: string[][] = [];
  return { model, calls, embed: async (texts) => (calls.push(texts), texts.map(bagOfWords)) };
}

const row = (...xs: number[]) => new Float32Array(xs);

describe('topK', () => {
  it('gives the k best rows by dot product, best first, earlier rows first on a tie', () => {
    const matrix = new Float32Array([0, 1, 1, 0, 0.6, 0.8, 1, 0, -1, 0]);
    expect(topK(row(1, 0), matrix, 2, 3)).toEqual([
      { index: 1, score: 1 },
      { index: 3, score: 1 },
      { index: 2, score: expect.closeTo(0.6, 6) },
    ]);
    expect(topK(row(1, 0), matrix, 2, 10).map((r) => r.index)).toEqual([1, 3, 2, 0, 4]);
    expect(topK(row(1, 0), new Float32Array(0), 2, 3)).toEqual([]);
    expect(() => topK(row(1, 0, 0), matrix, 2, 3)).toThrow('the query has 3 dimensions, the vectors 2');
  });

  it('agrees with sorting every score (1,000 random rows)', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32) - 0.5;
    const matrix = Float32Array.from({ length: 1000 * 16 }, rnd);
    const q = Float32Array.from({ length: 16 }, rnd);
    const all = Array.from({ length: 1000 }, (_, r) => ({ index: r, score: matrix.subarray(r * 16, r * 16 + 16).reduce((s, x, j) => s + x * q[j], 0) }));
    all.sort((a, b) => b.score - a.score);
    expect(topK(q, matrix, 16, 10).map((r) => r.index)).toEqual(all.slice(0, 10).map((r) => r.index));
  });
});

describe('rankPassages', () => {
  it('returns passages with their note and score, and only the better of two overlapping passages of a note', () => {
    const notes = new Map<string, Note>([
      ['a', { id: 'a', title: 'A', text: '…', created: 1 }],
      ['b', { id: 'b', title: 'B', text: '…', created: 2 }],
    ]);
    const chunk = (noteId: string, index: number, start: number, end: number, vector: Float32Array): NoteChunk => ({ id: `${noteId}:${index}`, noteId, index, text: `${noteId}${index}`, start, end, model: 'm', vector });
    const chunks = [chunk('a', 0, 0, 100, row(1, 0)), chunk('a', 1, 80, 180, row(0.9, Math.sqrt(0.19))), chunk('a', 2, 180, 250, row(0.8, 0.6)), chunk('b', 0, 0, 50, row(0.7, Math.sqrt(0.51))), chunk('gone', 0, 0, 9, row(1, 0))];
    const matrix = new Float32Array(chunks.flatMap((c) => [...c.vector]));
    const found = rankPassages(row(1, 0), chunks, matrix, 2, notes, 3);
    expect(found.map((p) => [p.title, p.text, Number(p.score!.toFixed(2))])).toEqual([
      ['A', 'a0', 1],
      ['A', 'a2', 0.8],
      ['B', 'b0', 0.7],
    ]);
    expect(found[2]).toMatchObject({ noteId: 'b', created: 2 });
  });
});

describe('noteIndex', () => {
  const LOCKER = 'The gym locker is number 42 and the combination is 4512. Bring a towel.';
  const TRIP = 'Flights to Lisbon leave at nine from terminal two. The hotel is near the river.';

  it('embeds the notes saved before the model came, searches by meaning, and embeds a new note at the next sync', async () => {
    const notes = memoryNotes();
    const locker = await notes.add({ title: 'Gym', text: LOCKER });
    await notes.add({ title: 'Trip', text: TRIP });
    const index = noteIndex(notes);
    expect(await index.search('locker', 3)).toBeUndefined(); // no model: the caller searches by keywords
    expect(await index.sync()).toEqual({ embedded: 0, passages: 0, notes: 0, pending: 2 });

    const e = fakeEmbedder();
    index.use(e);
    expect(await index.sync()).toEqual({ embedded: 2, passages: 2, notes: 2, pending: 0 });
    // Each passage is embedded with its note's title; both notes in one call.
    const listed = await notes.list();
    expect(e.calls).toEqual([listed.map((n) => embedText(n.title, n.text))]);
    const chunks = await notes.chunks();
    expect(chunks.map((c) => [c.id, c.model, c.vector.length])).toEqual(listed.map((n) => [`${n.id}:0`, indexKey(e.model), DIMS]));

    const found = (await index.search('what is the combination of my gym locker', 2))!;
    expect(found.map((p) => p.title)).toEqual(['Gym', 'Trip']);
    expect(found[0]).toMatchObject({ noteId: locker.id, text: LOCKER });
    expect(found[0].score!).toBeGreaterThan(found[1].score!);
    // Nothing left to embed: no call.
    expect(await index.sync()).toEqual({ embedded: 0, passages: 2, notes: 2, pending: 0 });
    expect(e.calls).toHaveLength(2); // the syncs above, and the query

    await notes.add({ title: 'Towels', text: 'Buy two new towels.' });
    expect(await index.sync()).toMatchObject({ embedded: 1, passages: 3, notes: 3 });
    expect((await index.search('towels to buy', 1))!.map((p) => p.title)).toEqual(['Towels']);
  });

  it('embeds in batches, each note stored once all its passages have vectors, with progress', async () => {
    const notes = memoryNotes();
    // 40 notes of 2 passages each (a paragraph of ~150 pieces, twice).
    const long = (i: number) => `${`Paragraph ${i} holds many words about the same thing. `.repeat(12)}\n\n${`And then ${i} more words here today. `.repeat(18)}`;
    for (let i = 0; i < 40; i++) await notes.add({ title: `Note ${i}`, text: long(i) });
    const index = noteIndex(notes);
    const e = fakeEmbedder();
    index.use(e);
    const progress: number[] = [];
    const state = await index.sync({ onProgress: (s) => progress.push(s.pending) });
    expect(state).toEqual({ embedded: 40, passages: 80, notes: 40, pending: 0 });
    expect(e.calls.map((c) => c.length)).toEqual([32, 32, 16]);
    expect(progress).toEqual([24, 8, 0]);
    const chunks = await notes.chunks();
    expect(new Set(chunks.map((c) => c.noteId)).size).toBe(40);
    expect(chunks.every((c) => c.index < 2 && Math.abs(Math.hypot(...c.vector) - 1) < 1e-5)).toBe(true);
    expect(INDEX.batch).toBe(32);
  });

  it('re-embeds every note for another model, and never compares vectors of two models', async () => {
    const notes = memoryNotes();
    await notes.add({ title: 'Gym', text: LOCKER });
    const index = noteIndex(notes);
    index.use(fakeEmbedder('model-a'));
    await index.sync();
    const b = fakeEmbedder('model-b');
    index.use(b);
    // Before its sync: model-a's vectors are not model-b's, so nothing is found yet.
    expect(await index.search('locker', 3)).toEqual([]);
    expect(await index.sync()).toMatchObject({ embedded: 1, passages: 1 });
    expect((await notes.chunks()).map((c) => c.model)).toEqual([indexKey('model-b')]);
    expect((await index.search('locker', 3))!.map((p) => p.title)).toEqual(['Gym']);
  });

  it("deletes a note's vectors with it, also when it is deleted while being embedded", async () => {
    const notes = memoryNotes();
    const gym = await notes.add({ title: 'Gym', text: LOCKER });
    const trip = await notes.add({ title: 'Trip', text: TRIP });
    const index = noteIndex(notes);
    const e = fakeEmbedder();
    index.use(e);
    await index.sync();
    await notes.delete(gym.id);
    expect((await notes.chunks()).map((c) => c.noteId)).toEqual([trip.id]);
    expect((await index.search('gym locker combination', 5))!.map((p) => p.title)).toEqual(['Trip']);

    // Deleted between its embedding and its storing: no vectors come back.
    const late = await notes.add({ title: 'Late', text: 'Deleted before it was stored.' });
    e.embed = async (texts) => {
      await notes.delete(late.id);
      return texts.map(bagOfWords);
    };
    expect(await index.sync()).toMatchObject({ embedded: 0, passages: 1, pending: 0 });
    expect((await notes.chunks()).map((c) => c.noteId)).toEqual([trip.id]);
  });

  it('runs one sync at a time, and a search waits for the sync in progress', async () => {
    const notes = memoryNotes();
    await notes.add({ title: 'Gym', text: LOCKER });
    const index = noteIndex(notes);
    const e = fakeEmbedder();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inner = e.embed;
    e.embed = async (texts) => {
      await gate;
      return inner(texts);
    };
    index.use(e);
    const first = index.sync();
    const second = index.sync();
    const search = index.search('locker', 1);
    release();
    expect(await first).toMatchObject({ embedded: 1 });
    expect(await second).toMatchObject({ embedded: 0, passages: 1 });
    expect((await search)!.map((p) => p.title)).toEqual(['Gym']);
  });
});

describe('keywordPassages', () => {
  it("gives each matching note's passage that holds most of the words", () => {
    const text = `${'Nothing about it here at all. '.repeat(30)}\n\n${'The locker code is 4512. '.repeat(3)}`;
    const notes: Note[] = [{ id: 'n', title: 'Gym', text, created: 5 }];
    const [p] = keywordPassages(notes, 'locker code', 5);
    expect(p).toMatchObject({ noteId: 'n', title: 'Gym', created: 5 });
    // The second of two passages (the first holds 22 of the 30 sentences that say nothing).
    expect(p.text.endsWith('The locker code is 4512.')).toBe(true);
    expect(p.score).toBeUndefined();
    // Words only in the title: the first passage.
    expect(keywordPassages(notes, 'gym', 5)[0].text).toBe('Nothing about it here at all. '.repeat(22).trim());
    expect(keywordPassages(notes, 'absent', 5)).toEqual([]);
  });
});
