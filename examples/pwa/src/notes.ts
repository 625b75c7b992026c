// The assistant's notes: what the user (through the assistant's save_note tool, once they confirm it) asked it to
// keep, stored on this device in IndexedDB so they survive reloads and work offline, listed in the sidebar, and
// searched by the search_notes tool. Where IndexedDB is unavailable (some private modes) they live in memory for
// this tab, and `persistent` says so.

import { IntabError } from 'intab';

export interface Note {
  id: string;
  title: string;
  text: string;
  /** When it was saved (ms since the epoch). */
  created: number;
}

/** The notes, wherever they are kept. */
export interface NotesStore {
  /** false: kept in memory for this tab only (IndexedDB was unavailable). */
  readonly persistent: boolean;
  /** Every note, newest first. */
  list(): Promise<Note[]>;
  add(note: { title: string; text: string }): Promise<Note>;
  delete(id: string): Promise<void>;
}

/** A note the store would not keep, or the store failed (`problem`). */
export class NotesError extends IntabError {
  static override readonly code: string = 'notes_error';
  readonly problem: 'invalid_note' | 'storage_failed';
  constructor(problem: 'invalid_note' | 'storage_failed', message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NotesError';
    this.problem = problem;
  }
}

/** The longest title and text a note keeps (the tool's schema says the same to the model). */
export const NOTE_LIMITS = { title: 80, text: 1000, notes: 1000 } as const;

/** A note's fields, trimmed and checked. */
function checked(note: { title: string; text: string }): { title: string; text: string } {
  const title = typeof note.title === 'string' ? note.title.trim() : '';
  const text = typeof note.text === 'string' ? note.text.trim() : '';
  if (!title && !text) throw new NotesError('invalid_note', 'A note needs a title or a text: both are empty.');
  if (title.length > NOTE_LIMITS.title) throw new NotesError('invalid_note', `A note's title holds at most ${NOTE_LIMITS.title} characters (this one has ${title.length}): shorten it.`);
  if (text.length > NOTE_LIMITS.text) throw new NotesError('invalid_note', `A note's text holds at most ${NOTE_LIMITS.text} characters (this one has ${text.length}): shorten it.`);
  return { title: title || text.slice(0, 40), text };
}

const newId = () => crypto.randomUUID();

/** Notes in memory (this tab only). */
export function memoryNotes(): NotesStore {
  const notes: Note[] = [];
  return {
    persistent: false,
    list: async () => [...notes].sort((a, b) => b.created - a.created),
    async add(note) {
      if (notes.length >= NOTE_LIMITS.notes) throw new NotesError('invalid_note', `There are already ${NOTE_LIMITS.notes} notes: delete some first.`);
      const saved: Note = { id: newId(), ...checked(note), created: Date.now() };
      notes.push(saved);
      return saved;
    },
    async delete(id) {
      const i = notes.findIndex((n) => n.id === id);
      if (i >= 0) notes.splice(i, 1);
    },
  };
}

const DB = 'intab-assistant';
const STORE = 'notes';

/** IndexedDB's request, as a promise. */
const done = <T>(req: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new NotesError('storage_failed', `The notes could not be read or saved: ${req.error?.message ?? 'IndexedDB failed'}.`, { cause: req.error }));
  });

/** The notes in this origin's IndexedDB; in memory when it cannot be opened. */
export async function openNotes(): Promise<NotesStore> {
  let db: IDBDatabase;
  try {
    const open = indexedDB.open(DB, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE, { keyPath: 'id' });
    db = await done(open);
  } catch (err) {
    console.warn(`Notes are kept for this tab only: ${(err as Error).message}`);
    return memoryNotes();
  }
  const store = (mode: IDBTransactionMode) => db.transaction(STORE, mode).objectStore(STORE);
  return {
    persistent: true,
    list: async () => ((await done(store('readonly').getAll())) as Note[]).sort((a, b) => b.created - a.created),
    async add(note) {
      if ((await done(store('readonly').count())) >= NOTE_LIMITS.notes) throw new NotesError('invalid_note', `There are already ${NOTE_LIMITS.notes} notes: delete some first.`);
      const saved: Note = { id: newId(), ...checked(note), created: Date.now() };
      await done(store('readwrite').add(saved));
      return saved;
    },
    async delete(id) {
      await done(store('readwrite').delete(id));
    },
  };
}

/**
 * The notes that match `query` (every word of it, case- and accent-insensitive, in the title or the text), best first
 * (title matches before text matches, then newest), at most `limit`. An empty query: the newest notes.
 * @example
 * searchNotes(notes, 'locker code'); // the notes that mention both words
 */
export function searchNotes(notes: readonly Note[], query: string, limit = 10): Note[] {
  const fold = (s: string) => s.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
  const words = fold(query).split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const scored: { note: Note; score: number }[] = [];
  for (const note of notes) {
    const title = fold(note.title);
    const text = fold(note.text);
    let score = 0;
    for (const w of words) {
      if (title.includes(w)) score += 2;
      else if (text.includes(w)) score += 1;
      else {
        score = -1;
        break;
      }
    }
    if (score >= 0) scored.push({ note, score });
  }
  scored.sort((a, b) => b.score - a.score || b.note.created - a.note.created);
  return scored.slice(0, Math.max(0, limit)).map((s) => s.note);
}
