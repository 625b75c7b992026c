// The assistant's notes: what the user added by hand (typed, pasted, or a .txt/.md file) or asked the assistant to keep
// (its save_note tool, once they confirm it), stored on this device in IndexedDB so they survive reloads and work
// offline, listed in the sidebar, and searched by the search_notes tool. Beside each note, its passages (chunking.ts)
// with their vectors from an embedding model (note-index.ts keeps them): deleting a note deletes them in the same
// transaction. Where IndexedDB is unavailable (some private modes) all of it lives in memory for this tab, and
// `persistent` says so.

import { IntabError } from 'intab';

export interface Note {
  id: string;
  title: string;
  text: string;
  /** When it was saved (ms since the epoch). */
  created: number;
}

/** A passage of a note with its vector: what search by meaning compares a query with. */
export interface NoteChunk {
  /** `${noteId}:${index}`. */
  id: string;
  noteId: string;
  /** Its place in the note (0, 1, ...). */
  index: number;
  /** The passage, `note.text.slice(start, end)`. */
  text: string;
  start: number;
  end: number;
  /** Which embedding model and chunking made the vector (note-index.ts's indexKey): others' vectors are never compared. */
  model: string;
  /** (dimensions), of unit length: a dot product is the cosine. */
  vector: Float32Array;
}

/** The notes, wherever they are kept. */
export interface NotesStore {
  /** false: kept in memory for this tab only (IndexedDB was unavailable). */
  readonly persistent: boolean;
  /** Counts the changes made to the notes, by this tab or another: what caches of its contents compare. */
  readonly revision: number;
  /** Calls `listener` after another tab (or window) of the app changed the notes. */
  onExternalChange(listener: () => void): void;
  /** Every note, newest first. */
  list(): Promise<Note[]>;
  /** Keeps a note: a title or a text (trimmed; the title defaults to the text's start) within NOTE_LIMITS. */
  add(note: { title: string; text: string }): Promise<Note>;
  /** Deletes a note and its passages and vectors (nothing when it is gone already). */
  delete(id: string): Promise<void>;
  /** Every note's passages with their vectors. */
  chunks(): Promise<NoteChunk[]>;
  /** Replaces a note's passages; false (and nothing kept) when the note was deleted meanwhile. */
  setChunks(noteId: string, chunks: NoteChunk[]): Promise<boolean>;
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

/**
 * The longest title, and text, that a note keeps: `text` is what the assistant may save (its tool's schema says so to
 * the model), `document` what the user may add by hand (a pasted text or a file); at most `notes` notes.
 */
export const NOTE_LIMITS = { title: 80, text: 1000, document: 100_000, notes: 1000 } as const;

/** A text longer than `limit` characters: the error the user or the model reads. */
export function tooLong(text: string, limit: number): NotesError {
  return new NotesError('invalid_note', `A note's text holds at most ${limit} characters (this one has ${text.length}): shorten it.`);
}

/** A note's fields, trimmed and checked. */
function checked(note: { title: string; text: string }): { title: string; text: string } {
  const title = typeof note.title === 'string' ? note.title.trim() : '';
  const text = typeof note.text === 'string' ? note.text.trim() : '';
  if (!title && !text) throw new NotesError('invalid_note', 'A note needs a title or a text: both are empty.');
  if (title.length > NOTE_LIMITS.title) throw new NotesError('invalid_note', `A note's title holds at most ${NOTE_LIMITS.title} characters (this one has ${title.length}): shorten it.`);
  if (text.length > NOTE_LIMITS.document) throw tooLong(text, NOTE_LIMITS.document);
  return { title: title || text.slice(0, 40), text };
}

const newId = () => crypto.randomUUID();
const tooMany = () => new NotesError('invalid_note', `There are already ${NOTE_LIMITS.notes} notes: delete some first.`);

/** Notes in memory (this tab only). */
export function memoryNotes(): NotesStore {
  const notes: Note[] = [];
  let chunks: NoteChunk[] = [];
  let revision = 0;
  return {
    persistent: false,
    get revision() {
      return revision;
    },
    list: async () => [...notes].sort((a, b) => b.created - a.created),
    async add(note) {
      if (notes.length >= NOTE_LIMITS.notes) throw tooMany();
      const saved: Note = { id: newId(), ...checked(note), created: Date.now() };
      notes.push(saved);
      revision++;
      return saved;
    },
    async delete(id) {
      const i = notes.findIndex((n) => n.id === id);
      if (i >= 0) notes.splice(i, 1);
      chunks = chunks.filter((c) => c.noteId !== id);
      revision++;
    },
    onExternalChange() {
      // Memory is this tab's own.
    },
    chunks: async () => [...chunks],
    async setChunks(noteId, replace) {
      if (!notes.some((n) => n.id === noteId)) return false;
      chunks = [...chunks.filter((c) => c.noteId !== noteId), ...replace];
      revision++;
      return true;
    },
  };
}

const DB = 'intab-assistant';
/** Version 1: notes. Version 2 adds the passages and their vectors (CHUNKS, indexed by noteId); the notes stay. */
const DB_VERSION = 2;
const NOTES = 'notes';
const CHUNKS = 'chunks';

const storageFailed = (err: DOMException | null) => new NotesError('storage_failed', `The notes could not be read or saved: ${err?.message ?? 'IndexedDB failed'}.`, { cause: err });

/** IndexedDB's request, as a promise. */
const done = <T>(req: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(storageFailed(req.error));
  });

/** A transaction's end: resolves once it is committed, rejects when it aborts. */
const committed = (tx: IDBTransaction) =>
  new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(storageFailed(tx.error));
  });

/** Deletes every passage of a note, in `tx`, then calls `then` (whose requests run after the deletes). */
function deleteChunksOf(tx: IDBTransaction, noteId: string, then?: () => void): void {
  const chunks = tx.objectStore(CHUNKS);
  chunks.index('noteId').getAllKeys(IDBKeyRange.only(noteId)).onsuccess = (e) => {
    for (const key of (e.target as IDBRequest<IDBValidKey[]>).result) chunks.delete(key);
    then?.();
  };
}

/** The notes in this origin's IndexedDB (upgraded from version 1, notes kept); in memory when it cannot be opened. */
export async function openNotes(): Promise<NotesStore> {
  let db: IDBDatabase;
  try {
    const open = indexedDB.open(DB, DB_VERSION);
    open.onupgradeneeded = (e) => {
      const db = open.result;
      if (e.oldVersion < 1) db.createObjectStore(NOTES, { keyPath: 'id' });
      if (e.oldVersion < 2) db.createObjectStore(CHUNKS, { keyPath: 'id' }).createIndex('noteId', 'noteId');
    };
    db = await done(open);
    // A newer version of the app in another tab upgrades the database: let it (this tab's store then fails, and says so).
    db.onversionchange = () => db.close();
  } catch (err) {
    console.warn(`Notes are kept for this tab only: ${(err as Error).message}`);
    return memoryNotes();
  }
  const store = (mode: IDBTransactionMode) => db.transaction(NOTES, mode).objectStore(NOTES);
  let revision = 0;
  // The app's other tabs hear of each change (their caches of the vectors and lists go stale), and this one of theirs.
  const channel = typeof BroadcastChannel === 'undefined' ? undefined : new BroadcastChannel(`${DB}-notes`);
  const listeners: (() => void)[] = [];
  if (channel) {
    channel.onmessage = () => {
      revision++;
      for (const l of listeners) l();
    };
  }
  const changed = () => {
    revision++;
    channel?.postMessage('changed');
  };
  return {
    persistent: true,
    get revision() {
      return revision;
    },
    onExternalChange(listener) {
      listeners.push(listener);
    },
    list: async () => ((await done(store('readonly').getAll())) as Note[]).sort((a, b) => b.created - a.created),
    async add(note) {
      if ((await done(store('readonly').count())) >= NOTE_LIMITS.notes) throw tooMany();
      const saved: Note = { id: newId(), ...checked(note), created: Date.now() };
      await done(store('readwrite').add(saved));
      changed();
      return saved;
    },
    async delete(id) {
      // The note and its passages in one transaction: never a vector of a deleted note.
      const tx = db.transaction([NOTES, CHUNKS], 'readwrite');
      tx.objectStore(NOTES).delete(id);
      deleteChunksOf(tx, id);
      await committed(tx);
      changed();
    },
    chunks: async () => (await done(db.transaction(CHUNKS, 'readonly').objectStore(CHUNKS).getAll())) as NoteChunk[],
    async setChunks(noteId, replace) {
      // In one transaction with a look at the note: a note deleted while it was being embedded gets no passages back.
      const tx = db.transaction([NOTES, CHUNKS], 'readwrite');
      const end = committed(tx);
      let kept = false;
      tx.objectStore(NOTES).getKey(noteId).onsuccess = (e) => {
        if ((e.target as IDBRequest<IDBValidKey | undefined>).result === undefined) return;
        kept = true;
        // The new passages after the old ones are deleted (a transaction's requests run in the order they are made).
        deleteChunksOf(tx, noteId, () => {
          for (const c of replace) tx.objectStore(CHUNKS).put(c);
        });
      };
      await end;
      if (kept) changed();
      return kept;
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
