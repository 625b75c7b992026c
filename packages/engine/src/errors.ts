// Typed errors of the engine (each declared with errorClass: name, stable `code` and fields in one place; each message
// says what the caller should do), and how any intab error crosses the worker boundary. Structured cloning keeps only
// an Error's message (and, in some browsers, its name), so the Comlink transfer handler sends serializeError(err) and
// the other side rebuilds it with deserializeError: same class (so `instanceof` works), same name, message, fields (an
// IntabError's `code` among them) and cause. WORKER_ERRORS, every class the worker can throw, is made of each package's
// own list (declared once, beside its classes) and registered here, on whichever side imports this file (both do).

import { GPU_ERRORS, formatBytes } from '@intab/gpu';
// The errors files alone (the packages' entries read WebGPU globals, which the main thread may lack).
import { GRAMMAR_ERRORS } from '@intab/grammar/errors';
import { PartialJsonError } from '@intab/grammar/partial';
import { MODEL_ERRORS } from '@intab/model/errors';
import { ONNX_ERRORS } from '@intab/onnx/errors';
import { IntabError, errorClass } from '@intab/errors';
import { ModelSourceError } from '@intab/model/errors';

// Where it was first declared (it is thrown below the engine too: a model URL that answers 404).
export { ModelSourceError };

/**
 * A model file could not be fetched although its URL may well be right: the network gave no answer (offline, a server
 * that is down or refuses the connection, or a cross-origin server without CORS), the server failed (HTTP 5xx, 429), or
 * the connection kept dropping mid-file. Load the model again later. The same class and message with the model store
 * or without it (model-fetch.ts makes them); a ModelSourceError, with `status` when a server answered.
 */
export class DownloadError extends errorClass(ModelSourceError, 'DownloadError', 'download_failed')<{
  /** The file (or listing) that could not be fetched. */
  readonly url: string;
}> {
  constructor(url: string, problem: string, options?: { status?: number; cause?: unknown }) {
    super({ url }, url, problem, options);
  }
}

/** Base class of every error thrown by @intab/engine. */
export class IntabEngineError extends errorClass(IntabError, 'IntabEngineError', 'engine_error') {
  constructor(message: string, options?: { cause?: unknown }) {
    super({}, message, options);
  }
}

/** A request option is out of range, of the wrong type, or contradicts another one. */
export class InvalidRequestError extends errorClass(IntabEngineError, 'InvalidRequestError', 'invalid_request')<{
  /** The request field at fault, e.g. 'maxTokens' or 'logitBias[70000]'. */
  readonly field: string;
  /** What was given, as text. */
  readonly value: string;
  /** What is accepted. */
  readonly expected: string;
}> {
  constructor(field: string, value: unknown, expected: string) {
    const shown = describeValue(value);
    super({ field, value: shown, expected }, `Invalid request: '${field}' should be ${expected} but is ${shown}. Fix the request and try again.`);
  }
}

/**
 * A request whose prompt does not fit: the prompt alone leaves no room for one new token in the model's context or in
 * the KV-cache pages this request can have (`reason: 'prompt'`), or, with `strictContext: true`, the prompt plus
 * `maxTokens` does not fit (`reason: 'max-tokens'`; without strictContext maxTokens is clamped to what is left, and
 * the stream ends with finishReason 'length' at the limit). Thrown by start() before any work; the OpenAI surface
 * answers it with a 400 whose code is 'context_length_exceeded'.
 */
export class ContextLengthExceededError extends errorClass(IntabEngineError, 'ContextLengthExceededError', 'context_length_exceeded')<{
  /** The prompt's tokens (with `truncate: 'oldest'`: after the oldest turns were dropped). */
  readonly promptTokens: number;
  /** The new tokens the request asked for (maxTokens, or its default). */
  readonly maxTokens: number;
  /** The most tokens (prompt + generated) one sequence can hold here. */
  readonly limit: number;
  /** What sets the limit: the model's context length or the KV-cache pages. */
  readonly limitedBy: 'context' | 'kv-cache';
  /** KV pages held by preloaded prefixes this request does not start with (they take room from it). */
  readonly pinnedPages: number;
  /**
   * 'prompt': the prompt alone does not fit; 'max-tokens': strictContext, and prompt + maxTokens does not fit;
   * 'input': an input of an embeddings request (EngineApi.embed) is longer than the context, and truncate is off;
   * 'document': a rerank pair (the query and document `input`) is, and truncate is off.
   */
  readonly reason: 'prompt' | 'max-tokens' | 'input' | 'document';
  /** With reason 'input' or 'document': which input or document (its index in the request's list; 0 for a single input). */
  readonly input?: number;
  /** With `truncate: 'oldest'`: the messages dropped before giving up (every turn but the system messages and the last). */
  readonly truncatedMessages: number;
}> {
  constructor(init: {
    promptTokens: number;
    maxTokens: number;
    limit: number;
    limitedBy: 'context' | 'kv-cache';
    reason: 'prompt' | 'max-tokens' | 'input' | 'document';
    input?: number;
    pinnedPages?: number;
    truncatedMessages?: number;
    /** The prompt is chat messages (so truncate: 'oldest' is worth suggesting). */
    chat?: boolean;
  }) {
    const { promptTokens: p, maxTokens: m, limit, limitedBy, reason } = init;
    const pinned = init.pinnedPages ?? 0;
    const dropped = init.truncatedMessages ?? 0;
    const what = limitedBy === 'context' ? "the model's context length" : pinned > 0 ? `the KV-cache (its pages less the ${pinned} pinned by preloaded prefixes)` : 'the KV-cache (all its pages)';
    // What to do, as a list: the fixes that apply to this refusal.
    const kv = limitedBy === 'context' ? [] : pinned > 0 ? ['release() preloaded prefixes', 'load the model with a larger kvBudgetBytes'] : ['load the model with a larger kvBudgetBytes'];
    const or = (fixes: string[]) => (fixes.length === 1 ? fixes[0] : `${fixes.slice(0, -1).join(', ')} or ${fixes[fixes.length - 1]}`);
    let message: string;
    if (reason === 'document') {
      message =
        `The query and document ${init.input ?? 0} of the rerank request are ${p} tokens as one pair, but ${what} holds at most ${limit}: ` +
        'leave truncate out (or send true) to score the document\'s beginning, or split the document into chunks and rerank those.';
    } else if (reason === 'input') {
      message =
        `Input ${init.input ?? 0} of the embeddings request is ${p} tokens, but ${what} holds at most ${limit}: ` +
        `send truncate: true to embed its first ${limit} tokens, or split the text into chunks of at most ${limit} tokens and embed each.`;
    } else if (reason === 'max-tokens') {
      message =
        `The request needs ${p} prompt + ${m} new tokens = ${p + m}, but ${what} holds at most ${limit} and strictContext: true refuses to clamp maxTokens: ` +
        `${or([`lower maxTokens to ${Math.max(0, limit - p)} or less`, 'shorten the prompt', ...kv, "leave strictContext out to have maxTokens clamped (the reply then ends with finishReason 'length' at the limit)"])}.`;
    } else if (dropped > 0) {
      message =
        `The prompt is still ${p} tokens with its ${dropped} oldest messages dropped (truncate: 'oldest' keeps the system messages and the last turn), ` +
        `but ${what} holds at most ${limit}, the reply included: ${or(['shorten the system message or the last message', ...kv])}.`;
    } else {
      message =
        `The prompt is ${p} tokens, but ${what} holds at most ${limit}, the reply included, so no room is left for a reply: ` +
        `${or(['shorten the prompt', ...(init.chat ? ["send truncate: 'oldest' to drop the oldest turns"] : []), ...kv])}.`;
    }
    super({ promptTokens: p, maxTokens: m, limit, limitedBy, pinnedPages: pinned, reason, truncatedMessages: dropped, ...(init.input !== undefined ? { input: init.input } : {}) }, message);
  }
}

/** The engine was destroyed (or never loaded a model) and cannot run requests. */
export class EngineClosedError extends errorClass(IntabEngineError, 'EngineClosedError', 'engine_closed')<{
  readonly reason: 'destroyed' | 'not-loaded';
}> {
  constructor(reason: 'destroyed' | 'not-loaded') {
    super(
      { reason },
      reason === 'destroyed'
        ? 'This engine was destroyed: create a new engine to run more requests.'
        : 'No model is loaded in this engine: call load(source, options) first and wait for it.',
    );
  }
}

/** The engine cannot do this in its state (load() on an engine that holds a model, preload with the prefix cache off...). */
export class EngineStateError extends errorClass(IntabEngineError, 'EngineStateError', 'invalid_engine_state') {
  constructor(message: string) {
    super({}, message);
  }
}

/**
 * A call the loaded model cannot answer by its kind: generating text (start, preload) with an embedding model, or
 * embedding (embed) with a model that generates text. The OpenAI surface answers it with a 400 whose code is
 * 'wrong_model_kind'.
 */
export class ModelKindError extends errorClass(IntabEngineError, 'ModelKindError', 'wrong_model_kind')<{
  /** What the loaded model is. */
  readonly kind: 'embedding' | 'generation' | 'rerank';
  /** The call it was asked, e.g. 'embed' or 'generate'. */
  readonly call: string;
  /** The model's architecture. */
  readonly arch: string;
}> {
  constructor(kind: 'embedding' | 'generation' | 'rerank', call: string, arch: string) {
    const cannot = call === 'preload' ? 'preload a prefix' : call === 'embed' ? 'embed' : call === 'rerank' ? 'rerank' : 'generate text';
    const ask =
      call === 'rerank'
        ? 'load a reranker (a cross-encoder such as bge-reranker or ms-marco-MiniLM, as a GGUF with pooling type rank) in an engine of its own and call rerank() there'
        : call === 'embed'
          ? 'load one that embeds (all-MiniLM-L6-v2, bge-small, nomic-embed-text-v1.5, as a GGUF or a sentence-transformers folder) in an engine of its own and call embed() there'
          : 'load a chat model in another engine to generate';
    super(
      { kind, call, arch },
      kind === 'embedding'
        ? `This model (${arch}) is an embedding model and cannot ${cannot}: call embed() (embeddings.create, POST /v1/embeddings) with it, and ${ask}.`
        : kind === 'rerank'
          ? `This model (${arch}) is a reranker (a cross-encoder) and cannot ${cannot}: call rerank() (POST /v1/rerank) with it, and ${ask}.`
          : `This model (${arch}) generates text and cannot ${cannot}: ${ask}.`,
    );
  }
}

/** next()/cancel() named a stream the engine does not know (never started, or already over). */
export class UnknownStreamError extends errorClass(IntabEngineError, 'UnknownStreamError', 'unknown_stream')<{
  readonly stream: number;
}> {
  constructor(stream: number) {
    super({ stream }, `Stream ${stream} does not exist or is already over (its last chunk was delivered): start a new request.`);
  }
}

/**
 * Text, chat messages or a response format were given to a model without a tokenizer. (Messages to a model that has
 * a tokenizer but no chat template are a ChatTemplateError with reason 'missing'.)
 */
export class TokenizerRequiredError extends errorClass(IntabEngineError, 'TokenizerRequiredError', 'tokenizer_required')<{
  /** Always 'tokenizer' (kept for code that reads it). */
  readonly needs: 'tokenizer';
}> {
  constructor(needs: 'tokenizer' = 'tokenizer') {
    super({ needs }, 'This model has no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): send promptIds instead of prompt or messages.');
  }
}

/** The draft model does not share the target's tokenizer: speculative decoding would verify garbage. */
export class DraftMismatchError extends errorClass(IntabEngineError, 'DraftMismatchError', 'draft_mismatch')<{
  readonly what: string;
  readonly target: string;
  readonly draft: string;
}> {
  constructor(what: string, target: string, draft: string) {
    super(
      { what, target, draft },
      `The draft model's ${what} (${draft}) differs from the target's (${target}): a draft must use the target's tokenizer. ` +
        'Pick a smaller model of the same family (e.g. the 135M sibling of a 1.7B model), or speculate without one (ngram or self).',
    );
  }
}

/**
 * A tool call the model began could not be read after part of it was already streamed (its name, some arguments): the
 * text broke the format's call syntax. Under tools with toolChoice 'auto', 'required' or a named function the grammar
 * makes this impossible; it reaches a caller only through parsing text written without it. Retry the request.
 */
export class ToolCallParseError extends errorClass(IntabEngineError, 'ToolCallParseError', 'tool_call_parse_failed')<{
  /** The format whose syntax was broken (ModelInfo.toolFormat). */
  readonly format: string;
  /** What was expected, and what came. */
  readonly problem: string;
}> {
  constructor(format: string, problem: string) {
    super({ format, problem }, `The model's tool call broke the ${format} call syntax after it had begun streaming (${problem}). Retry the request (with toolChoice 'required' or 'auto' the grammar holds calls to the syntax).`);
  }
}

/** Saving the prefix cache to the Origin Private File System failed (the storage quota, most often); the old save is kept. */
export class CacheStorageError extends errorClass(IntabEngineError, 'CacheStorageError', 'cache_storage_failed')<{
  /** The file, in the origin's private file system. */
  readonly file: string;
  /** The storage error's name (QuotaExceededError, NotAllowedError...). */
  readonly reason: string;
}> {
  constructor(file: string, reason: string, detail: string, options?: { cause?: unknown }) {
    const fix =
      reason === 'QuotaExceededError'
        ? "this origin's storage quota is full: save the pinned prefixes only (saveCache() without all), free space this origin uses, or ask for more with navigator.storage.persist()"
        : 'the storage refused it: the prefix cache stays in memory; retry later';
    super({ file, reason }, `Saving the prefix cache to ${file} failed (${reason}: ${detail}); the previous save, if any, is unchanged. ${fix[0].toUpperCase()}${fix.slice(1)}.`, options);
  }
}

/**
 * The engine stopped recovering from lost GPU devices: the device was lost again within `windowMs` of the previous loss
 * (a GPU that keeps failing would reload the model in a loop), or no new device could be had after a loss. Requests fail
 * with it until engine.restart(). `cause` is the last DeviceLostError, or what refused the new device.
 */
export class DeviceRecoveryError extends errorClass(IntabEngineError, 'DeviceRecoveryError', 'device_recovery_failed')<{
  /** 'repeated': lost again within windowMs; 'reacquire': the new device or the reload failed. */
  readonly reason: 'repeated' | 'reacquire';
  /** Device losses since load. */
  readonly losses: number;
  readonly windowMs: number;
}> {
  constructor(reason: 'repeated' | 'reacquire', losses: number, windowMs: number, options?: { cause?: unknown }) {
    const what =
      reason === 'repeated'
        ? `The GPU device was lost again less than ${Math.round(windowMs / 1000)} s after the previous loss (${losses} losses since load), so the engine stopped reloading the model`
        : `The GPU device was lost and the engine could not get a new one or reload the model on it (${causeText(options?.cause)})`;
    super(
      { reason, losses, windowMs },
      `${what}. Close other tabs that use the GPU, update the graphics driver or browser, then call engine.restart() (or reload the page); backend 'onnx-wasm' runs without the GPU.`,
      options,
    );
  }
}

/**
 * A model could not be loaded in the engine host the origin's tabs share (createEngine({ share: 'origin' })) for lack of
 * GPU memory, while the host holds other models for other tabs: `held` names them, with the bytes each holds on the GPU
 * and how many tabs use it. `cause` is the GpuOutOfMemoryError (what was being allocated, the model's needs).
 */
export class SharedMemoryError extends errorClass(IntabEngineError, 'SharedMemoryError', 'shared_gpu_memory_full')<{
  /** The model that could not be loaded (its URL or Hugging Face id). */
  readonly model: string;
  /** The models the host holds for other tabs, largest first. */
  readonly held: readonly { model: string; bytes: number; tabs: number }[];
}> {
  constructor(model: string, held: readonly { model: string; bytes: number; tabs: number }[], options?: { cause?: unknown }) {
    const list = held.map((h) => `${h.model} (${formatBytes(h.bytes)}, ${h.tabs} tab${h.tabs === 1 ? '' : 's'})`).join(', ');
    super(
      { model, held: held.map((h) => ({ ...h })) },
      `Out of GPU memory loading ${model} beside the model${held.length === 1 ? '' : 's'} this site's other tabs hold in their shared engine: ${list}. ` +
        'Close the tabs that use them (a model is freed when its last tab goes), load a smaller or quantized model, or ask for the same model as those tabs, then load again.',
      options,
    );
  }
}

function causeText(cause: unknown): string {
  return cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
}

function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === undefined || v === null) return String(v);
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    return typeof v;
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (WORKER_ERRORS below). */
export const ENGINE_ERRORS = {
  IntabEngineError,
  InvalidRequestError,
  ContextLengthExceededError,
  EngineClosedError,
  EngineStateError,
  ModelKindError,
  UnknownStreamError,
  TokenizerRequiredError,
  DraftMismatchError,
  CacheStorageError,
  DeviceRecoveryError,
  SharedMemoryError,
  ToolCallParseError,
  DownloadError,
} as const;

// ---- crossing the worker ----

/** An error as plain data (structured-clone safe). */
export interface SerializedError {
  readonly __intabError: 1;
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  /** The class's own fields (plain data only); an IntabError's `code` is one of them. */
  readonly fields: Record<string, unknown>;
  readonly cause?: SerializedError | { value: unknown };
  /** Set when the error was an IntabError: one of a class this side does not know still comes back as an IntabError. */
  readonly intab?: 1;
}

// Constructors are never called on the way back (their signatures differ): the prototype is enough.
type AnyErrorClass = abstract new (...args: never[]) => Error;
const registry = new Map<string, AnyErrorClass>();

/** Make deserializeError rebuild errors named `name` as instances of `cls` (the built-in set is registered). */
export function registerErrorClass(name: string, cls: AnyErrorClass): void {
  registry.set(name, cls);
}

/**
 * Every error class the worker can throw, by name: IntabError and the lists of the packages below `intab`. They cross
 * the worker as themselves; intab's list of every class (packages/intab/src/error-list.ts) adds the page's own.
 */
export const WORKER_ERRORS = { IntabError, ...GPU_ERRORS, ...MODEL_ERRORS, ...GRAMMAR_ERRORS, PartialJsonError, ...ONNX_ERRORS, ...ENGINE_ERRORS } as const;

// The one registration: those classes and the platform's own.
for (const [name, cls] of Object.entries({ ...WORKER_ERRORS, TypeError, RangeError, SyntaxError, Error } satisfies Record<string, AnyErrorClass>)) {
  registerErrorClass(name, cls);
}

const isPlain = (v: unknown, depth = 0): boolean => {
  if (v === null || v === undefined) return true;
  const t = typeof v;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'bigint') return true;
  if (t !== 'object' || depth > 4) return false;
  if (Array.isArray(v)) return v.every((x) => isPlain(x, depth + 1));
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && Object.values(v as object).every((x) => isPlain(x, depth + 1));
};

/**
 * Turns any thrown value into plain data that survives postMessage with its name, message, fields and cause.
 * @example
 * port.postMessage({ error: serializeError(err) }); // in the worker
 * throw deserializeError(data.error);                // on the main thread: same class, same fields
 */
export function serializeError(err: unknown, depth = 0): SerializedError {
  if (!(err instanceof Error) && !(typeof err === 'object' && err !== null && 'name' in err && 'message' in err)) {
    return { __intabError: 1, name: 'Error', message: String(err), fields: {} };
  }
  const e = err as Error & Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(e)) {
    if (key === 'name' || key === 'message' || key === 'stack' || key === 'cause') continue;
    if (isPlain(e[key])) fields[key] = e[key];
  }
  let cause: SerializedError['cause'];
  if (e.cause !== undefined && depth < 4) {
    cause = e.cause instanceof Error || (typeof e.cause === 'object' && e.cause !== null && 'message' in e.cause)
      ? serializeError(e.cause, depth + 1)
      : isPlain(e.cause) ? { value: e.cause } : { value: String(e.cause) };
  }
  return {
    __intabError: 1,
    name: String(e.name ?? 'Error'),
    message: String(e.message ?? ''),
    ...(typeof e.stack === 'string' ? { stack: e.stack } : {}),
    fields,
    ...(cause ? { cause } : {}),
    ...(err instanceof IntabError ? { intab: 1 as const } : {}),
  };
}

/** Whether `v` is what serializeError returns. */
export function isSerializedError(v: unknown): v is SerializedError {
  return typeof v === 'object' && v !== null && (v as { __intabError?: unknown }).__intabError === 1;
}

/**
 * Rebuilds an error from serializeError's data: an instance of the registered class of that name (else a
 * plain Error carrying that name, or an IntabError if it was one; registerErrorClass adds classes), with the same name, message,
 * fields (an IntabError's `code` among them) and cause. AbortError becomes a DOMException.
 * @example
 * const err = deserializeError(serializeError(new ContextLengthExceededError({ promptTokens: 600, maxTokens: 100, limit: 512, limitedBy: 'context', reason: 'prompt' })));
 * err instanceof ContextLengthExceededError; // true, err.limit === 512
 */
export function deserializeError(data: SerializedError): Error {
  let err: Error;
  if (data.name === 'AbortError' && typeof DOMException !== 'undefined') {
    err = new DOMException(data.message, 'AbortError');
  } else {
    // A class this side has not registered (a newer package on the other side) is still an IntabError, with its code.
    const cls = registry.get(data.name) ?? (data.intab === 1 ? IntabError : Error);
    err = Object.create(cls.prototype) as Error;
    Object.defineProperty(err, 'message', { value: data.message, writable: true, configurable: true, enumerable: false });
    Object.defineProperty(err, 'name', { value: data.name, writable: true, configurable: true, enumerable: false });
    Object.defineProperty(err, 'stack', { value: data.stack ?? `${data.name}: ${data.message}`, writable: true, configurable: true, enumerable: false });
    Object.assign(err, data.fields);
    // Data written without the code (by hand, as the CLI's bridge does) takes its class's.
    if (err instanceof IntabError && typeof err.code !== 'string') (err as { code: string }).code = (cls as typeof IntabError).code;
  }
  if (data.cause) {
    const cause = isSerializedError(data.cause) ? deserializeError(data.cause) : (data.cause as { value: unknown }).value;
    Object.defineProperty(err, 'cause', { value: cause, writable: true, configurable: true, enumerable: false });
  }
  return err;
}
