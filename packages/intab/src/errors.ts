// Errors that only the main-thread package raises: a worker that failed to start or died, and a
// Server-Sent Events stream that is not what encodeSSE writes. Everything raised in the worker crosses as
// the engine's own classes (re-exported from index.ts), rebuilt by the transfer handlers.

/** The engine's worker failed to load or crashed; every pending call of that engine rejects with this. */
export class WorkerError extends Error {
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

/** A Server-Sent Events stream carried data that is not JSON (and not `[DONE]`). */
export class SseFormatError extends Error {
  /** The event's data (cut to 200 characters). */
  readonly data: string;
  constructor(data: string, problem: string) {
    const shown = data.length > 200 ? `${data.slice(0, 197)}...` : data;
    super(`An SSE event's data is not JSON (${problem}): ${JSON.stringify(shown)}. decodeSSE reads streams written by encodeSSE or an OpenAI-compatible server; check the URL and that the response is text/event-stream.`);
    this.name = 'SseFormatError';
    this.data = shown;
  }
}
