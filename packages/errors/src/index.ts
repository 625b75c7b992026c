// The one base class of every error intab throws, from every package (gpu, model, engine, grammar, onnx, intab), and
// the one way to declare a subclass: errorClass(parent, name, code)<fields> puts a class's name, its code and its
// fields in one place. It sits in its own dependency-free package so that @intab/gpu, at the bottom of the import
// chain, can use it as well as the `intab` package at the top, its Service Worker entry and its Vite plugin. `code` is
// what programs switch on: a stable snake_case string, one per class, kept across releases (messages may be reworded,
// codes may not); `name` is the class's name, for people.

/**
 * Base class of every error intab throws. Each subclass declares its own `code` (with errorClass); every instance
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

// ---- declaring a subclass ----

/** What errorClass() extends: IntabError or one of its subclasses, whatever its constructor takes. */
// `any[]`: TypeScript's mixin rule (a class that extends a type parameter needs a constructor of `...args: any[]`).
export type IntabErrorClass = abstract new (...args: any[]) => IntabError;

/**
 * The class errorClass() returns, for a subclass to extend with its fields as the type argument: its constructor takes
 * the fields first, then the parent's own arguments. It keeps the parent's static members.
 */
export type DeclaredErrorClass<Parent extends IntabErrorClass> = {
  new <Fields extends object = Record<never, never>>(fields: Fields, ...parentArgs: ConstructorParameters<Parent>): InstanceType<Parent> & Readonly<Fields>;
  /** The class's stable code. */
  readonly code: string;
  readonly prototype: InstanceType<Parent>;
} & Omit<Parent, 'prototype'>;

/**
 * Declares an IntabError subclass in one place: its parent, its name, its stable code, and (as the type argument) the
 * fields its instances carry. The class that extends it passes the fields first, then what its parent's constructor
 * takes (usually the message). Every instance gets `name`, `code` and each field as own properties (what structured
 * cloning and serializeError carry; a field given as undefined is left out, as an optional field that was not set),
 * `instanceof` holds for the class and each parent, and `Class.code` is the code. Register the class in its package's
 * error list (`GPU_ERRORS`, `ENGINE_ERRORS`...) so that it crosses the worker as itself.
 * @example
 * export class ShapeError extends errorClass(IntabGpuError, 'ShapeError', 'invalid_shape')<{
 *   readonly kernel: string;
 * }> {
 *   constructor(kernel: string, expected: string, actual: string) {
 *     super({ kernel }, `${kernel}: should be ${expected} but is ${actual}. Fix the caller's shapes.`);
 *   }
 * }
 * new ShapeError('gemv', '(64)', '(32)'); // { name: 'ShapeError', code: 'invalid_shape', kernel: 'gemv', message: ... }
 */
export function errorClass<Parent extends IntabErrorClass>(parent: Parent, name: string, code: string): DeclaredErrorClass<Parent> {
  abstract class Declared extends parent {
    static readonly code: string = code;
    constructor(...args: any[]) {
      super(...args.slice(1));
      this.name = name;
      const fields = args[0] as Record<string, unknown>;
      for (const key of Object.keys(fields)) if (fields[key] !== undefined) (this as unknown as Record<string, unknown>)[key] = fields[key];
    }
  }
  // The name on the prototype too, so a class says its name without an instance (error lists, registries).
  Object.defineProperty(Declared.prototype, 'name', { value: name, writable: true, configurable: true, enumerable: false });
  return Declared as unknown as DeclaredErrorClass<Parent>;
}
