// Responses kept in IndexedDB while they stream. aggregate() is a pass-through transform (pipeThrough) that stores each
// chunk's text before passing the chunk on, so a reload in the middle of an answer leaves what had been shown (read
// back as incomplete) and a finished stream leaves the whole text. Responses reads them back: list(), get(id),
// delete(id), clear(). Layout: one small header per response, written when its stream starts and when it ends, and an
// append-only store of text pieces keyed [id, index]: a chunk costs one small write, never a rewrite of the text.
// A header still 'in_progress' is live while its writer holds a Web Lock; once the writing page is gone it reads back
// as 'incomplete'. Past 500 lines as one job: the writer (aggregate) and the reader (Responses) are the two sides of
// this one layout and its lock, and change together.

import { openDB, type DBSchema, type IDBPDatabase, type IDBPTransaction } from 'idb';
import type { Chunk, RequestMetrics } from '@intab/engine/contract';
import type { ChatCompletionChunk, CompletionUsage } from './openai.ts';
import { ResponseStoreError } from './errors.ts';

export { ResponseStoreError, type ResponseStoreProblem } from './errors.ts';

// ---- types ----

/**
 * in_progress: its stream is still running (in this or another tab). completed: the stream ended normally (a finish
 * reason other than abort/error, or the end of a plain text stream). incomplete: it stopped early (the reader
 * cancelled, the request was aborted, or the page went away mid-answer). failed: the source or the store failed.
 */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** A stored response without its text (what list() returns). */
export interface ResponseHeader {
  id: string;
  /** Milliseconds since the epoch: when the stream started, and when its last piece (or its end) was stored. */
  createdAt: number;
  updatedAt: number;
  status: ResponseStatus;
  /** status === 'completed': the text is the whole answer. */
  complete: boolean;
  /** The last chunk's finishReason / finish_reason ('stop', 'length', 'abort', 'error' or a server's own), else null. */
  finishReason: string | null;
  /** Length of the text in UTF-16 code units (String length). */
  textLength: number;
  /** AggregateOptions.model, else the model named by the chunks (ChatCompletionChunk.model). */
  model?: string;
  /** AggregateOptions.request, as given (e.g. the messages). */
  request?: unknown;
  /** The OpenAI completion id of ChatCompletionChunk streams (`chatcmpl-…`). */
  completionId?: string;
  /** The engine's metrics (last Chunk) or OpenAI usage (last ChatCompletionChunk), when the stream carried them. */
  metrics?: RequestMetrics;
  usage?: CompletionUsage;
  /** Why a failed (or cancelled-with-a-reason) stream stopped. */
  error?: { name: string; message: string };
}

/** A stored response with its text. */
export interface StoredResponse extends ResponseHeader {
  /** Everything that had arrived: the whole answer when complete, else a prefix of it. */
  text: string;
}

/** What aggregate() stores: engine chunks, OpenAI chat completion chunks (choice 0) or plain text. */
export type AggregateChunk = string | Pick<Chunk, 'text'> | ChatCompletionChunk;

export interface AggregateOptions {
  /** The response's id [crypto.randomUUID()]; taken ids are a ResponseStoreError ('exists'). */
  id?: string;
  /** The model's name, stored in the header. */
  model?: string;
  /** What was asked (e.g. `{ messages }`), stored in the header: plain data (structured-cloneable). */
  request?: unknown;
  /** Where to store it [the default `responses`]. */
  store?: Responses;
}

export interface ResponsesOptions {
  /** The IndexedDB database ['intab-responses']. */
  name?: string;
}

export interface ListOptions {
  /** At most this many [all]. */
  limit?: number;
  /** Only responses older than this one (an id from a previous page): pagination. */
  before?: string;
}

// ---- storage layout ----

type HeaderRow = Omit<ResponseHeader, 'complete' | 'textLength'> & { textLength?: number };
interface PieceRow {
  id: string;
  index: number;
  text: string;
  /** When it was stored (ms since the epoch). */
  at: number;
}
interface Schema extends DBSchema {
  responses: { key: string; value: HeaderRow; indexes: { byCreated: [number, string] } };
  pieces: { key: [string, number]; value: PieceRow };
}
type Db = IDBPDatabase<Schema>;
type Tx = IDBPTransaction<Schema, ('responses' | 'pieces')[], 'readonly' | 'readwrite'>;

const VERSION = 1;
const piecesOf = (id: string) => IDBKeyRange.bound([id, 0], [id, Infinity]);

/** body's result once the transaction committed; a failed request or commit rejects (never unhandled). */
async function committed<R>(tx: { done: Promise<void> }, body: () => Promise<R>): Promise<R> {
  const done = tx.done;
  try {
    const result = await body();
    await done;
    return result;
  } catch (err) {
    done.catch(() => {});
    throw err;
  }
}

/** An IndexedDB failure as a ResponseStoreError that says what to do. */
function storeError(err: unknown, what: string, extra: { responseId?: string; text?: string } = {}): ResponseStoreError {
  if (err instanceof ResponseStoreError) return err;
  const { name = 'Error', message = String(err) } = (err ?? {}) as { name?: string; message?: string };
  const options = { ...extra, cause: err };
  if (name === 'QuotaExceededError') {
    return new ResponseStoreError('quota', `${what}: this site's storage is full. Delete responses you no longer need (responses.list() / delete(id) / clear()) or free disk space.`, options);
  }
  if (name === 'DataCloneError') {
    return new ResponseStoreError('invalid', `${what}: the request or model cannot be stored (${message}): pass plain data (strings, numbers, arrays, objects), no functions or class instances.`, options);
  }
  if (name === 'ConstraintError') {
    return new ResponseStoreError('exists', `${what}: a response with this id is already stored: delete it first (responses.delete(id)) or leave the id out to get a fresh one.`, options);
  }
  return new ResponseStoreError('failed', `${what}: IndexedDB failed (${name}: ${message}). Check that this page may use storage (not blocked by the browser's settings) and try again.`, options);
}

function checkId(id: unknown, caller: string): string {
  if (typeof id !== 'string' || id === '') throw new ResponseStoreError('invalid', `${caller}: the id must be a non-empty string (got ${JSON.stringify(id) ?? typeof id}): pass the id of aggregate()'s stream (stream.id) or of a responses.list() entry.`);
  return id;
}

/** The text and end facts of one chunk, whatever its shape. */
function readChunk(chunk: unknown): { text: string; finish?: string | null; metrics?: RequestMetrics; usage?: CompletionUsage; model?: string; completionId?: string; error?: Error } {
  if (typeof chunk === 'string') return { text: chunk };
  const c = chunk as Partial<Chunk & ChatCompletionChunk> | null;
  if (c && typeof c === 'object' && Array.isArray(c.choices)) {
    const choice = c.choices.find((x) => x?.index === 0);
    return {
      text: choice?.delta?.content ?? '',
      finish: choice?.finish_reason ?? null,
      usage: c.usage ?? undefined,
      model: typeof c.model === 'string' ? c.model : undefined,
      completionId: typeof c.id === 'string' ? c.id : undefined,
    };
  }
  if (c && typeof c === 'object' && typeof c.text === 'string') return { text: c.text, finish: c.finishReason ?? null, metrics: c.metrics, error: c.error };
  throw new ResponseStoreError('invalid', `aggregate: a chunk is neither an engine Chunk ({ text }), a ChatCompletionChunk ({ choices }) nor a string (got ${chunk === null ? 'null' : typeof chunk}): pipe engine.generate() or chat.completions.create() streams, or text, through it.`);
}

function reasonOf(reason: unknown): { name: string; message: string } {
  if (reason && typeof reason === 'object') {
    const { name, message } = reason as { name?: unknown; message?: unknown };
    return { name: typeof name === 'string' ? name : 'Error', message: typeof message === 'string' ? message : String(reason) };
  }
  return { name: 'Error', message: String(reason) };
}

// ---- the store ----

/** The recorder of one response, handed by a Responses to the AggregateStream writing into it. */
interface Recorder {
  begin(): Promise<void>;
  push(chunk: unknown): Promise<void>;
  /** The stream ended (flush). */
  end(): Promise<void>;
  /**
   * The reader cancelled (incomplete), or the source failed (failed; incomplete when the reason is an AbortError or
   * none: an aborted pipe). Never rejects: the record reads back as incomplete even if this last write fails.
   */
  stop(reason: unknown, by: 'reader' | 'source'): Promise<void>;
}

let recorderOf: (store: Responses, id: string, options: AggregateOptions) => Recorder;

/**
 * Responses stored by aggregate() in one IndexedDB database of this origin. The database opens on first use.
 * Without Web Locks (very old browsers) a response still streaming in another tab reads back as incomplete.
 * @example
 * const store = new Responses({ name: 'my-app-answers' });
 * for (const r of await store.list({ limit: 20 })) console.log(r.id, r.status, r.textLength);
 * const last = await store.get(id); // { ...header, text, complete }
 */
export class Responses {
  /** The IndexedDB database's name. */
  readonly name: string;
  #db: Promise<Db> | undefined;
  /** Ids this realm is writing right now. */
  readonly #live = new Set<string>();

  constructor(options: ResponsesOptions = {}) {
    const name = options.name ?? 'intab-responses';
    if (typeof name !== 'string' || name === '') throw new ResponseStoreError('invalid', `Responses: name must be a non-empty string (got ${JSON.stringify(name)}): it names the IndexedDB database.`);
    this.name = name;
  }

  static {
    recorderOf = (store, id, options) => store.#recorder(id, options);
  }

  /**
   * Stored responses, newest first, without their text.
   * @example
   * const page1 = await responses.list({ limit: 10 });
   * const page2 = await responses.list({ limit: 10, before: page1.at(-1)?.id });
   */
  async list(options: ListOptions = {}): Promise<ResponseHeader[]> {
    const { limit = Infinity, before } = options;
    if (!(limit === Infinity || (Number.isInteger(limit) && limit >= 0))) throw new ResponseStoreError('invalid', `responses.list: limit must be a whole number ≥ 0 (got ${limit}).`);
    if (before !== undefined) checkId(before, 'responses.list (before)');
    const live = await this.#liveIds();
    const db = await this.#open('responses.list');
    try {
      const tx = db.transaction(['responses', 'pieces'], 'readonly');
      return await committed(tx, async () => {
        let range: IDBKeyRange | undefined;
        if (before !== undefined) {
          const from = await tx.objectStore('responses').get(before);
          if (!from) throw new ResponseStoreError('invalid', `responses.list: no stored response ${JSON.stringify(before)} to list before: pass an id from the previous page of list().`, { responseId: before });
          range = IDBKeyRange.upperBound([from.createdAt, from.id], true);
        }
        const rows: HeaderRow[] = [];
        for (let cursor = limit > 0 ? await tx.objectStore('responses').index('byCreated').openCursor(range, 'prev') : null; cursor && rows.length < limit; cursor = await cursor.continue()) rows.push(cursor.value);
        const out: ResponseHeader[] = [];
        for (const row of rows) out.push(await this.#header(tx, row, live));
        return out;
      });
    } catch (err) {
      throw storeError(err, 'responses.list');
    }
  }

  /**
   * One stored response with its text, or undefined when there is none with this id.
   * @example
   * const r = await responses.get(stream.id);
   * if (r && !r.complete) show(r.text + ' …(interrupted)');
   */
  async get(id: string): Promise<StoredResponse | undefined> {
    checkId(id, 'responses.get');
    const live = await this.#liveIds();
    const db = await this.#open('responses.get');
    try {
      const tx = db.transaction(['responses', 'pieces'], 'readonly');
      return await committed(tx, async () => {
        const row = await tx.objectStore('responses').get(id);
        if (!row) return undefined;
        const pieces = await tx.objectStore('pieces').getAll(piecesOf(id));
        return { ...this.#derive(row, pieces, live), text: pieces.map((p) => p.text).join('') };
      });
    } catch (err) {
      throw storeError(err, `responses.get(${JSON.stringify(id)})`, { responseId: id });
    }
  }

  /**
   * Deletes a response, header and text at once; true when there was one. A response still streaming keeps streaming,
   * but nothing more of it is stored.
   * @example
   * await responses.delete(id);
   */
  async delete(id: string): Promise<boolean> {
    checkId(id, 'responses.delete');
    const db = await this.#open('responses.delete');
    try {
      const tx = db.transaction(['responses', 'pieces'], 'readwrite');
      return await committed(tx, async () => {
        const had = (await tx.objectStore('responses').count(id)) > 0;
        await Promise.all([tx.objectStore('responses').delete(id), tx.objectStore('pieces').delete(piecesOf(id))]);
        return had;
      });
    } catch (err) {
      throw storeError(err, `responses.delete(${JSON.stringify(id)})`, { responseId: id });
    }
  }

  /**
   * Deletes every stored response (streams still running stop being stored).
   * @example
   * await responses.clear();
   */
  async clear(): Promise<void> {
    const db = await this.#open('responses.clear');
    try {
      const tx = db.transaction(['responses', 'pieces'], 'readwrite');
      await committed(tx, () => Promise.all([tx.objectStore('responses').clear(), tx.objectStore('pieces').clear()]));
    } catch (err) {
      throw storeError(err, 'responses.clear');
    }
  }

  /** Closes the database connection (idempotent); the next call opens it again. */
  close(): void {
    const db = this.#db;
    this.#db = undefined;
    void db?.then((d) => d.close(), () => {});
  }

  // ---- internals ----

  #open(caller: string): Promise<Db> {
    if (typeof indexedDB === 'undefined') {
      return Promise.reject(new ResponseStoreError('unavailable', `${caller}: IndexedDB is not available in this context: use responses in a browser page, worker or service worker.`));
    }
    this.#db ??= openDB<Schema>(this.name, VERSION, {
      upgrade(db) {
        db.createObjectStore('responses', { keyPath: 'id' }).createIndex('byCreated', ['createdAt', 'id']);
        db.createObjectStore('pieces', { keyPath: ['id', 'index'] });
      },
      // Another tab wants to upgrade or delete the database: step aside (the next call reopens).
      blocking: () => this.close(),
      terminated: () => (this.#db = undefined),
    }).catch((err: unknown) => {
      this.#db = undefined;
      const e = storeError(err, `${caller}: opening the IndexedDB database ${JSON.stringify(this.name)}`);
      throw e.problem === 'failed' ? new ResponseStoreError('unavailable', e.message, { cause: err }) : e;
    });
    return this.#db;
  }

  get #lockPrefix(): string {
    return `intab-response:${this.name}:`;
  }

  /** Ids whose stream is running in some tab or worker of this origin (Web Locks), or in this realm. */
  async #liveIds(): Promise<Set<string>> {
    const ids = new Set(this.#live);
    const locks = globalThis.navigator?.locks;
    if (locks) {
      const prefix = this.#lockPrefix;
      for (const l of (await locks.query()).held ?? []) if (l.name?.startsWith(prefix)) ids.add(l.name.slice(prefix.length));
    }
    return ids;
  }

  async #header(tx: Tx, row: HeaderRow, live: Set<string>): Promise<ResponseHeader> {
    // Only an unfinished header lacks its length: its pieces have it.
    return this.#derive(row, row.textLength === undefined ? await tx.objectStore('pieces').getAll(piecesOf(row.id)) : [], live);
  }

  #derive(row: HeaderRow, pieces: PieceRow[], live: Set<string>): ResponseHeader {
    const status = row.status === 'in_progress' && !live.has(row.id) ? 'incomplete' : row.status;
    const { id, createdAt, ...rest } = row;
    return {
      id,
      createdAt,
      ...rest,
      updatedAt: row.textLength === undefined && pieces.length ? pieces[pieces.length - 1].at : row.updatedAt,
      status,
      complete: status === 'completed',
      textLength: row.textLength ?? pieces.reduce((n, p) => n + p.text.length, 0),
    };
  }

  #recorder(id: string, options: AggregateOptions): Recorder {
    const parts: string[] = [];
    let length = 0;
    let index = 0;
    let finish: string | null = null;
    let failure: { name: string; message: string } | undefined;
    let objects = false;
    const facts: Pick<HeaderRow, 'metrics' | 'usage' | 'model' | 'completionId'> = {};
    /** delete(id) or clear() removed the header mid-stream: stop storing. */
    let detached = false;
    let settled = false;
    let unlock: (() => void) | undefined;
    let chain: Promise<unknown> = Promise.resolve();
    /** Writes run one at a time, in call order (a cancel can arrive while a piece is being written). */
    const serial = <R>(fn: () => Promise<R>): Promise<R> => {
      const p = chain.then(fn);
      chain = p.catch(() => {});
      return p;
    };
    const release = () => {
      this.#live.delete(id);
      unlock?.();
      unlock = undefined;
    };
    const finalize = (status: ResponseStatus, error?: { name: string; message: string }): Promise<void> => {
      if (settled) return Promise.resolve();
      settled = true;
      return serial(async () => {
        if (detached) return;
        const db = await this.#open('aggregate');
        const tx = db.transaction('responses', 'readwrite');
        await committed(tx, async () => {
          const row = await tx.store.get(id);
          if (!row) return;
          await tx.store.put({ ...row, ...facts, model: options.model ?? facts.model ?? row.model, status, finishReason: finish, updatedAt: Date.now(), textLength: length, ...(error ? { error } : {}) });
        });
      }).finally(release);
    };
    const what = `aggregate (response ${JSON.stringify(id)})`;

    return {
      // In the write queue too: a cancel that comes before the header is written finalizes after it.
      begin: () =>
        serial(async () => {
          let owned = false;
          try {
            const busy = () => new ResponseStoreError('exists', `${what}: another stream is writing this id: leave the id out to get a fresh one.`, { responseId: id });
            if (this.#live.has(id)) throw busy();
            const locks = globalThis.navigator?.locks;
            if (locks) {
              // Held until the stream settles; the browser releases it when the page goes away.
              await new Promise<void>((resolve, reject) => {
                locks
                  .request(this.#lockPrefix + id, { ifAvailable: true }, (lock) => {
                    if (!lock) return reject(busy());
                    resolve();
                    return new Promise<void>((r) => (unlock = r));
                  })
                  .catch(reject);
              });
            }
            this.#live.add(id);
            owned = true;
            const db = await this.#open('aggregate');
            const now = Date.now();
            const row: HeaderRow = { id, createdAt: now, updatedAt: now, status: 'in_progress', finishReason: null };
            if (options.model !== undefined) row.model = options.model;
            if (options.request !== undefined) row.request = options.request;
            const tx = db.transaction('responses', 'readwrite');
            await committed(tx, () => tx.store.add(row));
          } catch (err) {
            // Nothing of this stream is stored: never finalize (the header may be another stream's).
            settled = true;
            if (owned) release();
            throw storeError(err, what, { responseId: id });
          }
        }),

      push: async (chunk) => {
        try {
          const c = readChunk(chunk);
          if (typeof chunk !== 'string') objects = true;
          if (c.finish) finish = c.finish;
          if (c.error) failure = { name: c.error.name, message: c.error.message }; // a failed generate() ends with its error
          if (c.metrics) facts.metrics = c.metrics;
          if (c.usage) facts.usage = c.usage;
          if (c.model) facts.model = c.model;
          if (c.completionId) facts.completionId = c.completionId;
          if (!c.text) return;
          parts.push(c.text);
          if (detached || settled) return;
          const piece: PieceRow = { id, index: index++, text: c.text, at: Date.now() };
          await serial(async () => {
            const db = await this.#open('aggregate');
            // Relaxed: committed once the browser has it (a reload keeps it); only an OS crash could lose the last ones.
            const tx = db.transaction(['responses', 'pieces'], 'readwrite', { durability: 'relaxed' });
            await committed(tx, async () => {
              if ((await tx.objectStore('responses').count(id)) === 0) detached = true;
              else await tx.objectStore('pieces').add(piece);
            });
          });
          length += c.text.length;
        } catch (err) {
          const e = storeError(err, what, { responseId: id, text: parts.join('') });
          await finalize('failed', { name: e.name, message: e.message }).catch(() => {});
          throw e;
        }
      },

      end: async () => {
        // OpenAI streams always end with a finish_reason; one that just ends was aborted (or cut off).
        const status: ResponseStatus = finish === 'error' ? 'failed' : finish === 'abort' || (objects && finish === null) ? 'incomplete' : 'completed';
        try {
          await finalize(status, status === 'failed' ? failure : undefined);
        } catch (err) {
          throw storeError(err, what, { responseId: id, text: parts.join('') });
        }
      },

      stop: async (reason, by) => {
        const aborted = reason === undefined || (reason as { name?: unknown } | null)?.name === 'AbortError';
        const failed = by === 'source' && !aborted;
        await finalize(failed ? 'failed' : 'incomplete', aborted ? undefined : reasonOf(reason)).catch(() => {});
      },
    };
  }
}

/** The default store (database 'intab-responses'), which aggregate() writes to unless given another. */
export const responses = new Responses();

// ---- the transform ----

/**
 * aggregate()'s stream: a pass-through transform (a { writable, readable } pair for pipeThrough) with the stored
 * response's id. Built from a WritableStream and a ReadableStream rather than a TransformStream so that a reader that
 * cancels and a source that fails are told apart (TransformStream's `cancel` hook is in no browser yet).
 */
export class AggregateStream<T extends AggregateChunk = AggregateChunk> implements ReadableWritablePair<T, T> {
  /** The stored response's id (responses.get(id)), known before the first chunk. */
  readonly id: string;
  readonly readable: ReadableStream<T>;
  readonly writable: WritableStream<T>;

  constructor(options: AggregateOptions = {}) {
    const id = options.id === undefined ? crypto.randomUUID() : checkId(options.id, 'aggregate');
    const store = options.store ?? responses;
    if (!(store instanceof Responses)) throw new ResponseStoreError('invalid', 'aggregate: store must be a Responses (new Responses({ name })) or left out for the default one.');
    const rec = recorderOf(store, id, options);
    this.id = id;

    let out!: ReadableStreamDefaultController<T>;
    let input!: WritableStreamDefaultController;
    /** The reader asked for a chunk that has not come yet; onDemand wakes a write waiting for that. */
    let demand = false;
    let onDemand: (() => void) | undefined;
    let cancelled = false;
    const fail = (err: unknown) => {
      if (!cancelled) out.error(err);
      throw err;
    };

    // High-water mark 0: a chunk is taken only when the reader asks (and, as a TransformStream's, the writable side
    // holds at most one), so backpressure reaches the source.
    this.readable = new ReadableStream<T>(
      {
        start: (c) => void (out = c),
        pull: () => {
          demand = true;
          onDemand?.();
          onDemand = undefined;
        },
        cancel: async (reason) => {
          cancelled = true;
          onDemand?.();
          onDemand = undefined;
          // Ends the pipe that feeds this stream now, which cancels its source (a generation stops).
          input.error(reason ?? new DOMException('The reader cancelled the stream.', 'AbortError'));
          await rec.stop(reason, 'reader');
        },
      },
      { highWaterMark: 0 },
    );
    this.writable = new WritableStream<T>({
      start: async (c) => {
        input = c;
        await rec.begin().catch(fail);
      },
      write: async (chunk) => {
        if (!demand && !cancelled) await new Promise<void>((resolve) => (onDemand = resolve));
        if (cancelled) return;
        // Stored before it is passed on: what a reader has shown survives a reload.
        await rec.push(chunk).catch(fail);
        if (cancelled) return;
        demand = false;
        out.enqueue(chunk);
      },
      close: async () => {
        await rec.end().catch(fail);
        if (!cancelled) out.close();
      },
      abort: async (reason) => {
        await rec.stop(reason, 'source');
        if (!cancelled) out.error(reason);
      },
    });
  }
}

/**
 * A pass-through transform (for pipeThrough) that stores the response in IndexedDB as it streams: each chunk's text is
 * stored before the chunk is passed on (in order, one small write per chunk), so a reload mid-answer leaves what had
 * been shown, read back as incomplete; a stream that ends leaves the whole text, complete. Takes engine Chunks,
 * ChatCompletionChunks (choice 0) or text. A reader that cancels (or a request aborted) leaves it incomplete, a failing
 * source leaves it failed, with what had arrived. If storing fails (storage full: ResponseStoreError 'quota'), the
 * stream errors with that error, whose `text` holds everything received; the chunk that could not be stored is not
 * passed on, and the source is cancelled.
 * @example
 * const stream = aggregate<Chunk>({ model: 'stories260K', request: { prompt } });
 * for await (const chunk of toReadableStream(engine.generate({ prompt })).pipeThrough(stream)) out.append(chunk.text);
 * const saved = await responses.get(stream.id); // { text, complete: true, status: 'completed', ... }
 */
export function aggregate<T extends AggregateChunk = AggregateChunk>(options: AggregateOptions = {}): AggregateStream<T> {
  return new AggregateStream<T>(options);
}
