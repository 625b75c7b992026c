// Typed errors of the model layer, each declared with errorClass (its name, stable `code` and fields in one place).
// Each names the file and the field at fault and says what to do; they are plain data (name + fields) so they cross
// the worker boundary intact (MODEL_ERRORS lists them for the worker's error registry).

import { IntabError, errorClass } from '@intab/errors';

/** Base class of every error thrown by @intab/model. */
export class IntabModelError extends errorClass(IntabError, 'IntabModelError', 'model_error') {
  constructor(message: string, options?: { cause?: unknown }) {
    super({}, message, options);
  }
}

/** A rerank pair cannot be formed: a tokenizer without a pair template, or a query that leaves no room for a document. */
export class RerankInputError extends errorClass(IntabModelError, 'RerankInputError', 'rerank_input') {
  constructor(message: string) {
    super({}, message);
  }
}

/** A model file is malformed: truncated, wrong magic, absurd lengths, offsets out of range, bad JSON. */
export class ModelFormatError extends errorClass(IntabModelError, 'ModelFormatError', 'malformed_model')<{
  /** The file (name or URL) at fault. */
  readonly file: string;
  /** The field or structure at fault, e.g. 'header.tensor_count' or 'tensors[3].offset'. */
  readonly field: string;
}> {
  constructor(file: string, field: string, problem: string, options?: { cause?: unknown }) {
    super({ file, field }, `${file}: ${field}: ${problem}. The file is damaged or not a supported model file: download it again or convert it with a current llama.cpp / transformers.`, options);
  }
}

/** Well-formed, but uses something intab does not run: an architecture, a dtype, a rope type. */
export class UnsupportedModelError extends errorClass(IntabModelError, 'UnsupportedModelError', 'unsupported_model')<{
  readonly file: string;
  readonly field: string;
  readonly value: string;
}> {
  constructor(file: string, field: string, value: string, advice: string) {
    super({ file, field, value }, `${file}: ${field} = ${value} is not supported: ${advice}`);
  }
}

/** The files disagree with each other: a tensor missing, or a shape that contradicts the config. */
export class ModelMismatchError extends errorClass(IntabModelError, 'ModelMismatchError', 'model_mismatch')<{
  readonly file: string;
  readonly field: string;
  readonly expected: string;
  readonly actual: string;
}> {
  constructor(file: string, field: string, expected: string, actual: string) {
    super({ file, field, expected, actual }, `${file}: ${field} should be ${expected} but is ${actual}. The weights do not match the config: check that all files come from the same model.`);
  }
}

/** No page is free for a sequence that needs one: wait for others to finish, or shorten the context. */
export class KvCacheFullError extends errorClass(IntabModelError, 'KvCacheFullError', 'kv_cache_full')<{
  readonly needed: number;
  readonly free: number;
}> {
  /** `what`: the store that is short ('pages', or the sliding-window layers' 'window pages'). */
  constructor(needed: number, free: number, total: number, what = 'pages') {
    super({ needed, free }, `The KV-cache has ${free} free ${what} of ${total} but the step needs ${needed}: wait for running sequences to finish, or raise the KV budget.`);
  }
}

/**
 * Chat messages could not be turned into a prompt: the model has no chat template (`reason: 'missing'`, a base model:
 * send plain text), the template refused the conversation (its `raise_exception(...)`) or failed while rendering
 * (`'failed'`), or it ran past the render's time or size bounds (`'bounds'`).
 */
export class ChatTemplateError extends errorClass(IntabModelError, 'ChatTemplateError', 'chat_template_error')<{
  readonly file: string;
  readonly field: string;
  /** Which problem: no template, a render that failed (or that the template refused), or one past the bounds. */
  readonly reason: 'missing' | 'failed' | 'bounds';
}> {
  /** `fix` replaces the default advice (about the messages) where the template itself is at fault. */
  constructor(file: string, field: string, problem: string, options?: { cause?: unknown; fix?: string; reason?: ChatTemplateError['reason'] }) {
    super(
      { file, field, reason: options?.reason ?? 'failed' },
      `${file}: ${field}: ${problem}. ${options?.fix ?? "Check the messages (roles, order, content types) against what this model's chat template accepts."}`,
      options,
    );
  }

  /** The model (its tokenizer `file`) ships no chat template, and messages were given. */
  static missing(file: string): ChatTemplateError {
    return new ChatTemplateError(file, 'chat_template', 'this model ships no chat template (a base model?)', {
      reason: 'missing',
      fix: 'Send the prompt as plain text instead of messages, or give the model a chat template.',
    });
  }
}

/**
 * A model that cannot be fetched or opened from where it was asked for: a URL that answers 404 or an HTML page, a
 * server that cannot be reached or mishandles Range requests, a Hugging Face id the hub does not list (or no network),
 * files with no weights among them. Check `source` (and `status`, when a server answered).
 */
export class ModelSourceError extends errorClass(IntabModelError, 'ModelSourceError', 'model_source_unavailable')<{
  /** The source at fault: a URL, a path, a Hugging Face id, or what was given. */
  readonly source: string;
  /** The HTTP status, when a server answered. */
  readonly status?: number;
}> {
  constructor(source: string, problem: string, options?: { status?: number; cause?: unknown }) {
    super(
      { source, status: options?.status },
      `Cannot open the model from ${source}: ${problem}${/[.!?]$/.test(problem) ? '' : '.'}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const MODEL_ERRORS = { IntabModelError, ModelFormatError, UnsupportedModelError, ModelMismatchError, KvCacheFullError, ChatTemplateError, ModelSourceError, RerankInputError } as const;
