// The one base class of every error intab throws, from every package (gpu, model, engine, grammar, onnx, intab).
// It sits in its own dependency-free package so that @intab/gpu, at the bottom of the import chain, can extend it
// as well as the `intab` package at the top. `code` is what programs switch on: a stable snake_case string, one per
// class, kept across releases (messages may be reworded, codes may not); `name` is the class's name, for people.

/**
 * Base class of every error intab throws. Each subclass declares its own `static readonly code`; every instance
 * carries it as `err.code` (an own property, so it survives structured cloning and the worker boundary).
 * @example
 * try {
 *   await engine.chat.completions.create({ messages });
 * } catch (err) {
 *   if (!(err instanceof IntabError)) throw err;
 *   switch (err.code) {
 *     case 'context_length_exceeded': // shorten the conversation and retry
 *     case 'device_lost': // recreate the engine
 *   }
 * }
 */
export class IntabError extends Error {
  /** The class's stable code (snake_case). Subclasses override it; a subclass that does not shares its parent's. */
  static readonly code: string = 'intab_error';
  /** Stable, snake_case, one per error class: what to switch on (the message is for people and may change). */
  readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IntabError';
    // new.target: the class actually constructed, whose static code is the most specific one.
    this.code = (new.target as typeof IntabError).code;
  }
}

