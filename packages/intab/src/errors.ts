// Errors that only the main-thread package raises: a worker that failed to start or died, a page-side call given an
// argument it cannot take, a Server-Sent Events stream that is not what encodeSSE writes, the model store's and the
// responses store's failures. Everything raised in the worker crosses as the engine's own classes (re-exported from
// index.ts), rebuilt by the transfer handlers. Each is declared with errorClass (name, stable `code` and fields in one
// place) and listed in PAGE_ERRORS.

import { IntabError, errorClass } from '@intab/errors';

// Thrown on both sides of the worker (the engine's loader and the model store fetch model files the same way).
export { DownloadError } from '@intab/engine/errors';

/** The engine's worker failed to load or crashed; every pending call of that engine rejects with this. */
export class WorkerError extends errorClass(IntabError, 'WorkerError', 'worker_failed')<{
  /** What the worker reported (its error event's message), when it said anything. */
  readonly detail: string;
}> {
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      { detail },
      `The intab worker failed (${detail || 'no message'}): check the browser console for the worker's own error; ` +
        'if the worker script did not load, make sure your bundler keeps `new Worker(new URL(..., import.meta.url), { type: "module" })` ' +
        '(Vite, webpack 5 and Parcel do), or pass { worker: false } to run the engine on this thread. Create a new engine to continue.',
      options,
    );
  }
}

/**
 * The tab that hosted the engine this tab shares (createEngine({ share: 'origin' }) where there is no SharedWorker)
 * closed, crashed or navigated away while this request ran: the text already delivered stands, the rest is lost.
 */
export class EngineHostLostError extends errorClass(IntabError, 'EngineHostLostError', 'engine_host_lost')<{
  /** The share key of the engine whose host tab went. */
  readonly key: string;
}> {
  constructor(key: string) {
    super(
      { key },
      "The tab that hosted this shared engine closed while this request ran: the text already delivered stands, the rest was not generated. Send the request again: another tab takes over as host (it loads the model from the model store) and answers it.",
    );
  }
}

/**
 * A function of the page-side API was called with an argument it cannot take (createEngine's options, remote options,
 * a transform's settings, a value encodeSSE cannot serialize): a mistake in the calling code, which the message says how
 * to fix. Request fields are checked by the engine instead (InvalidRequestError).
 */
export class InvalidArgumentError extends errorClass(IntabError, 'InvalidArgumentError', 'invalid_argument')<{
  /** The function that refused it, e.g. 'createEngine' or 'smoother'. */
  readonly caller: string;
}> {
  constructor(caller: string, message: string) {
    super({ caller }, message);
  }
}

/** A Server-Sent Events stream carried data that is not JSON (and not `[DONE]`). */
export class SseFormatError extends errorClass(IntabError, 'SseFormatError', 'invalid_sse')<{
  /** The event's data (cut to 200 characters). */
  readonly data: string;
}> {
  constructor(data: string, problem: string) {
    const shown = data.length > 200 ? `${data.slice(0, 197)}...` : data;
    super({ data: shown }, `An SSE event's data is not JSON (${problem}): ${JSON.stringify(shown)}. decodeSSE reads streams written by encodeSSE or an OpenAI-compatible server; check the URL and that the response is text/event-stream.`);
  }
}

/** A stored model file's SHA-256 does not match what it must be (the hub's LFS hash, or what was recorded at its first download), even after downloading it again. */
export class IntegrityError extends errorClass(IntabError, 'IntegrityError', 'integrity_mismatch')<{
  readonly url: string;
  readonly expected: string;
  readonly actual: string;
}> {
  constructor(url: string, expected: string, actual: string, recorded: boolean) {
    super(
      { url, expected, actual },
      `${url}: its SHA-256 is ${actual}, not ${expected}${recorded ? ' (recorded when it was first downloaded)' : " (the hub's)"}, even after downloading it again. ` +
        (recorded
          ? 'The file on the server has changed since it was stored: delete the model from the store (modelStore.delete) and load it again.'
          : 'The server or a proxy sends other bytes than the hub lists: check the network (proxy, mirror) and try again later.'),
    );
  }
}

/** The model cannot fit in this origin's storage: found before any byte is written. */
export class QuotaError extends errorClass(IntabError, 'QuotaError', 'storage_quota_exceeded')<{
  /** Bytes the model still needs, and bytes the origin has left. */
  readonly needed: number;
  readonly available: number;
}> {
  constructor(needed: number, available: number, what: string) {
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    super(
      { needed, available },
      `${what} needs ${mb(needed)} of storage but this site has ${mb(Math.max(0, available))} left: delete stored models you no longer need (modelStore.list() / delete(id)), free disk space, ` +
        'or load it with { cache: false } to stream it without keeping it.',
    );
  }
}

/** Why the responses store (aggregate, responses.get/list/delete) failed. */
export type ResponseStoreProblem = 'invalid' | 'exists' | 'quota' | 'unavailable' | 'failed';

/**
 * The stored responses (aggregate, responses.list/get/delete) could not do what was asked: bad input ('invalid'), an id
 * already taken ('exists'), storage full ('quota'), IndexedDB missing or blocked ('unavailable'), or another IndexedDB
 * failure ('failed', the DOMException as `cause`). When it ends an aggregate stream, `text` holds all the text the
 * stream had received, including the chunk that could not be stored (that chunk was not passed on).
 */
export class ResponseStoreError extends errorClass(IntabError, 'ResponseStoreError', 'response_store_failed')<{
  readonly problem: ResponseStoreProblem;
  /** The response concerned, when there is one. */
  readonly responseId?: string;
  /** An aggregate stream that stopped: everything it received, stored or not. */
  readonly text?: string;
}> {
  constructor(problem: ResponseStoreProblem, message: string, options?: { responseId?: string; text?: string; cause?: unknown }) {
    super({ problem, responseId: options?.responseId, text: options?.text }, message, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** Every error class of this file, by name (packages/intab/src/error-list.ts puts them in the one list). */
export const PAGE_ERRORS = { WorkerError, EngineHostLostError, InvalidArgumentError, SseFormatError, IntegrityError, QuotaError, ResponseStoreError } as const;
