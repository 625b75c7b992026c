// Errors that only the main-thread package raises: a worker that failed to start or died, and a
// Server-Sent Events stream that is not what encodeSSE writes. Everything raised in the worker crosses as
// the engine's own classes (re-exported from index.ts), rebuilt by the transfer handlers. All are IntabErrors, each
// with its stable `code`.

import { IntabError } from '@intab/errors';

// Thrown on both sides of the worker (the engine's loader and the model store fetch model files the same way).
export { DownloadError } from '@intab/engine/errors';

/** The engine's worker failed to load or crashed; every pending call of that engine rejects with this. */
export class WorkerError extends IntabError {
  static override readonly code: string = 'worker_failed';
  /** What the worker reported (its error event's message), when it said anything. */
  readonly detail: string;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(
      `The intab worker failed (${detail || 'no message'}): check the browser console for the worker's own error; ` +
        'if the worker script did not load, make sure your bundler keeps `new Worker(new URL(..., import.meta.url), { type: "module" })` ' +
        '(Vite, webpack 5 and Parcel do), or pass { worker: false } to run the engine on this thread. Create a new engine to continue.',
      options,
    );
    this.name = 'WorkerError';
    this.detail = detail;
  }
}

/**
 * A function of the page-side API was called with an argument it cannot take (createEngine's options, remote options,
 * a transform's settings, a value encodeSSE cannot serialize): a mistake in the calling code, which the message says how
 * to fix. Request fields are checked by the engine instead (InvalidRequestError).
 */
export class InvalidArgumentError extends IntabError {
  static override readonly code: string = 'invalid_argument';
  /** The function that refused it, e.g. 'createEngine' or 'smoother'. */
  readonly caller: string;
  constructor(caller: string, message: string) {
    super(message);
    this.name = 'InvalidArgumentError';
    this.caller = caller;
  }
}

/** A Server-Sent Events stream carried data that is not JSON (and not `[DONE]`). */
export class SseFormatError extends IntabError {
  static override readonly code: string = 'invalid_sse';
  /** The event's data (cut to 200 characters). */
  readonly data: string;
  constructor(data: string, problem: string) {
    const shown = data.length > 200 ? `${data.slice(0, 197)}...` : data;
    super(`An SSE event's data is not JSON (${problem}): ${JSON.stringify(shown)}. decodeSSE reads streams written by encodeSSE or an OpenAI-compatible server; check the URL and that the response is text/event-stream.`);
    this.name = 'SseFormatError';
    this.data = shown;
  }
}

/** A stored model file's SHA-256 does not match what it must be (the hub's LFS hash, or what was recorded at its first download), even after downloading it again. */
export class IntegrityError extends IntabError {
  static override readonly code: string = 'integrity_mismatch';
  readonly url: string;
  readonly expected: string;
  readonly actual: string;
  constructor(url: string, expected: string, actual: string, recorded: boolean) {
    super(
      `${url}: its SHA-256 is ${actual}, not ${expected}${recorded ? ' (recorded when it was first downloaded)' : " (the hub's)"}, even after downloading it again. ` +
        (recorded
          ? 'The file on the server has changed since it was stored: delete the model from the store (modelStore.delete) and load it again.'
          : 'The server or a proxy sends other bytes than the hub lists: check the network (proxy, mirror) and try again later.'),
    );
    this.name = 'IntegrityError';
    this.url = url;
    this.expected = expected;
    this.actual = actual;
  }
}

/** The model cannot fit in this origin's storage: found before any byte is written. */
export class QuotaError extends IntabError {
  static override readonly code: string = 'storage_quota_exceeded';
  /** Bytes the model still needs, and bytes the origin has left. */
  readonly needed: number;
  readonly available: number;
  constructor(needed: number, available: number, what: string) {
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    super(
      `${what} needs ${mb(needed)} of storage but this site has ${mb(Math.max(0, available))} left: delete stored models you no longer need (modelStore.list() / delete(id)), free disk space, ` +
        'or load it with { cache: false } to stream it without keeping it.',
    );
    this.name = 'QuotaError';
    this.needed = needed;
    this.available = available;
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
export class ResponseStoreError extends IntabError {
  static override readonly code: string = 'response_store_failed';
  readonly problem: ResponseStoreProblem;
  /** The response concerned, when there is one. */
  readonly responseId?: string;
  /** An aggregate stream that stopped: everything it received, stored or not. */
  readonly text?: string;
  constructor(problem: ResponseStoreProblem, message: string, options?: { responseId?: string; text?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ResponseStoreError';
    this.problem = problem;
    if (options?.responseId !== undefined) this.responseId = options.responseId;
    if (options?.text !== undefined) this.text = options.text;
  }
}
