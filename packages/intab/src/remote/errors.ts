// Errors of the remote backend (an OpenAI-compatible server behind createEngine({ remote })). They are raised on the
// main thread (the remote backend has no worker), so they never cross the worker boundary. Each says what to do, and
// is declared with errorClass (name, stable `code` and fields in one place); the server's own error code is
// RemoteHttpError's `serverCode`. REMOTE_ERRORS lists them.

import { IntabError, errorClass } from '@intab/errors';

/** Base class of every remote backend error: the server's URL, and its HTTP status when it answered. */
export class RemoteError extends errorClass(IntabError, 'RemoteError', 'remote_error')<{
  /** The URL that was asked. */
  readonly url: string;
  /** The HTTP status, when the server answered. */
  readonly status?: number;
}> {
  constructor(message: string, url: string, options: { status?: number; cause?: unknown } = {}) {
    super({ url, status: options.status }, message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** The server could not be reached (DNS, refused, reset, TLS, CORS) after every retry. */
export class RemoteConnectionError extends errorClass(RemoteError, 'RemoteConnectionError', 'remote_connection_failed')<{
  /** Attempts made (1 + retries). */
  readonly attempts: number;
}> {
  constructor(url: string, attempts: number, cause: unknown) {
    super(
      { attempts },
      `${url}: the server could not be reached after ${attempts} attempt${attempts === 1 ? '' : 's'} (${describe(cause)}). ` +
        "Check the remote baseURL, that the server runs, and (from a web page) that it allows this origin (CORS: Access-Control-Allow-Origin, and the Authorization header).",
      url,
      { cause },
    );
  }
}

/** The server answered with an error status (after retries for 408, 409, 429 and 5xx). */
export class RemoteHttpError extends errorClass(RemoteError, 'RemoteHttpError', 'remote_http_error')<{
  /** The server's own error message (an OpenAI-shaped body's error.message), when it sent one. */
  readonly serverMessage?: string;
  /** An OpenAI-shaped body's error.code (this error's own `code` is 'remote_http_error') and error.type. */
  readonly serverCode?: string;
  readonly type?: string;
  /** What Retry-After asked for (429, 503), in ms. */
  readonly retryAfterMs?: number;
  /** Attempts made. */
  readonly attempts: number;
}> {
  declare readonly status: number;
  constructor(url: string, status: number, body: { message?: string; code?: string; type?: string }, attempts: number, retryAfterMs?: number) {
    super(
      { serverMessage: body.message, serverCode: body.code, type: body.type, retryAfterMs, attempts },
      `${url}: HTTP ${status}${body.message ? ` (${body.message})` : ''}. ${adviceFor(status, retryAfterMs)}`,
      url,
      { status },
    );
  }
}

/** No answer in time: no response head (connect), no first token (first-byte), or no data between two chunks (idle). */
export class RemoteTimeoutError extends errorClass(RemoteError, 'RemoteTimeoutError', 'remote_timeout')<{
  readonly phase: 'connect' | 'first-byte' | 'idle';
  readonly ms: number;
}> {
  constructor(url: string, phase: 'connect' | 'first-byte' | 'idle', ms: number) {
    const what = phase === 'connect' ? 'no response' : phase === 'first-byte' ? 'no first token' : 'no data between two chunks';
    const option = phase === 'connect' ? 'connectMs' : phase === 'first-byte' ? 'firstByteMs' : 'idleMs';
    super({ phase, ms }, `${url}: ${what} within ${ms} ms. The server is overloaded or stuck: try again later, or raise remote.timeouts.${option}.`, url);
  }
}

/** The server answered 2xx with something that is not an OpenAI-compatible answer (an HTML page, malformed SSE, other JSON). */
export class RemoteProtocolError extends errorClass(RemoteError, 'RemoteProtocolError', 'remote_protocol_error')<{
  /** What came back (cut to 200 characters). */
  readonly received: string;
}> {
  constructor(url: string, problem: string, received: string, options: { status?: number; cause?: unknown } = {}) {
    const shown = received.length > 200 ? `${received.slice(0, 197)}...` : received;
    super({ received: shown }, `${url}: ${problem}: ${JSON.stringify(shown)}. Check the remote baseURL: it is the API's root, usually ending in /v1 (e.g. http://localhost:8000/v1).`, url, options);
  }
}

/**
 * A stream that broke after it started (the connection dropped, the server went quiet past the idle timeout, sent
 * malformed data or an error event): the stream's last chunk has finishReason 'error' and this error. Everything in
 * `text` and `ids` was delivered before; nothing is retried, so nothing is duplicated.
 */
export class RemoteStreamError extends errorClass(RemoteError, 'RemoteStreamError', 'remote_stream_broken')<{
  /** The text delivered before the break. */
  readonly text: string;
  /** The token ids delivered before the break (empty when the server does not report ids). */
  readonly ids: number[];
}> {
  constructor(url: string, received: { text: string; ids: number[] }, cause: unknown, status?: number) {
    super(
      { text: received.text, ids: received.ids },
      `${url}: the stream broke after ${received.text.length} characters (${describe(cause)}). The text so far was delivered and is in this error's text; ` +
        'send the request again to get a whole answer (a chat can continue from the partial answer as an assistant message).',
      url,
      { cause, ...(status !== undefined ? { status } : {}) },
    );
  }
}

/** A JSON response format (json_schema, json_object) whose finished document does not parse or does not validate. */
export class RemoteFormatError extends errorClass(RemoteError, 'RemoteFormatError', 'remote_format_mismatch')<{
  /** The document as received. */
  readonly text: string;
  /** What is wrong, each with its place in the document (JSON pointer) when known. */
  readonly problems: { path: string; message: string }[];
}> {
  constructor(url: string, text: string, problems: { path: string; message: string }[]) {
    const first = problems.slice(0, 3).map((p) => `${p.path || '/'}: ${p.message}`).join('; ');
    super(
      { text, problems },
      `${url}: the server's answer does not match the response format (${first}${problems.length > 3 ? `; ${problems.length - 3} more` : ''}). ` +
        'The server did not enforce the schema: use a server with structured outputs (vLLM, SGLang, llama.cpp, OpenAI), or run the model locally, where every token is sampled under the schema.',
      url,
    );
  }
}

/** Something the remote backend cannot do (it has no KV-cache of its own to pin, save or inspect). */
export class RemoteUnsupportedError extends errorClass(RemoteError, 'RemoteUnsupportedError', 'remote_unsupported')<{
  readonly feature: string;
}> {
  constructor(url: string, feature: string, advice: string) {
    super({ feature }, `${feature} is not available on a remote engine (${url}): ${advice}`, url);
  }
}

/** Every error class of this file, by name (packages/intab/src/error-list.ts puts them in the one list). */
export const REMOTE_ERRORS = {
  RemoteError,
  RemoteConnectionError,
  RemoteHttpError,
  RemoteTimeoutError,
  RemoteProtocolError,
  RemoteStreamError,
  RemoteFormatError,
  RemoteUnsupportedError,
} as const;

function adviceFor(status: number, retryAfterMs?: number): string {
  if (status === 401 || status === 403) return 'Check the remote apiKey (sent as Authorization: Bearer).';
  if (status === 404) return 'Check the remote baseURL (usually ending in /v1) and model name.';
  if (status === 400 || status === 422) return 'The server refused the request: fix what its message names.';
  if (status === 429) return `The server is rate limiting this key${retryAfterMs !== undefined ? ` (it asked to wait ${Math.ceil(retryAfterMs / 1000)} s)` : ''}: wait and try again, or raise remote.retries.`;
  if (status >= 500) return 'The server failed: try again later.';
  return 'The server refused the request.';
}

function describe(cause: unknown): string {
  if (cause instanceof Error) return cause.message || cause.name;
  return String(cause);
}
