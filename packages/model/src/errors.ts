// Typed errors of the model layer. Each names the file and the field at fault and says what to do;
// they are plain data (name + fields) so they cross the worker boundary intact.

/** Base class of every error thrown by @intab/model. */
export class IntabModelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IntabModelError';
  }
}

/** A model file is malformed: truncated, wrong magic, absurd lengths, offsets out of range, bad JSON. */
export class ModelFormatError extends IntabModelError {
  /** The file (name or URL) at fault. */
  readonly file: string;
  /** The field or structure at fault, e.g. 'header.tensor_count' or 'tensors[3].offset'. */
  readonly field: string;
  constructor(file: string, field: string, problem: string, options?: { cause?: unknown }) {
    super(`${file}: ${field}: ${problem}. The file is damaged or not a supported model file: download it again or convert it with a current llama.cpp / transformers.`, options);
    this.name = 'ModelFormatError';
    this.file = file;
    this.field = field;
  }
}

/** Well-formed, but uses something intab does not run: an architecture, a dtype, a rope type. */
export class UnsupportedModelError extends IntabModelError {
  readonly file: string;
  readonly field: string;
  readonly value: string;
  constructor(file: string, field: string, value: string, advice: string) {
    super(`${file}: ${field} = ${value} is not supported: ${advice}`);
    this.name = 'UnsupportedModelError';
    this.file = file;
    this.field = field;
    this.value = value;
  }
}

/** The files disagree with each other: a tensor missing, or a shape that contradicts the config. */
export class ModelMismatchError extends IntabModelError {
  readonly file: string;
  readonly field: string;
  readonly expected: string;
  readonly actual: string;
  constructor(file: string, field: string, expected: string, actual: string) {
    super(`${file}: ${field} should be ${expected} but is ${actual}. The weights do not match the config: check that all files come from the same model.`);
    this.name = 'ModelMismatchError';
    this.file = file;
    this.field = field;
    this.expected = expected;
    this.actual = actual;
  }
}

/** No page is free for a sequence that needs one: wait for others to finish, or shorten the context. */
export class KvCacheFullError extends IntabModelError {
  readonly needed: number;
  readonly free: number;
  constructor(needed: number, free: number, total: number) {
    super(`The KV-cache has ${free} free pages of ${total} but the step needs ${needed}: wait for running sequences to finish, or raise the KV budget.`);
    this.name = 'KvCacheFullError';
    this.needed = needed;
    this.free = free;
  }
}

/** The template itself refused the conversation (its `raise_exception(...)`), or failed while rendering. */
export class ChatTemplateError extends IntabModelError {
  readonly file: string;
  readonly field: string;
  /** `fix` replaces the default advice (about the messages) where the template itself is at fault. */
  constructor(file: string, field: string, problem: string, options?: { cause?: unknown; fix?: string }) {
    super(`${file}: ${field}: ${problem}. ${options?.fix ?? "Check the messages (roles, order, content types) against what this model's chat template accepts."}`, options);
    this.name = 'ChatTemplateError';
    this.file = file;
    this.field = field;
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const MODEL_ERRORS = { IntabModelError, ModelFormatError, UnsupportedModelError, ModelMismatchError, KvCacheFullError, ChatTemplateError } as const;
