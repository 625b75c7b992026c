// Partial-JSON events: what a UI renders while a JSON document streams in.

/** A location in a JSON document: object keys as strings, array indices as numbers (`["items", 3, "name"]`). */
export type JsonPath = (string | number)[];

/** The JSON type of a value. */
export type JsonType = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';

/**
 * What happened at `path`:
 * - `type`  — type-ahead: the value at `path` will have type `event.type` (only from {@link PartialJsonParser.announce};
 *             the text parser never guesses a type before the value's first character).
 * - `key`   — an object member's key is known (`path` ends with it), before its value starts. The text parser emits it
 *             at the key's closing quote; a grammar-aware producer can announce it earlier (see `announce`).
 * - `open`  — an object or array started (`value` is an empty `{}` / `[]`).
 * - `value` — a scalar started, grew or finished: strings grow (`delta` holds the new characters), numbers show the
 *             value of the longest prefix that is itself a valid JSON number, `true`/`false`/`null` arrive complete.
 * - `close` — an object or array ended (`value` is the finished container, `complete` is true).
 */
export type JsonEventKind = 'type' | 'key' | 'open' | 'value' | 'close';

/** One partial-JSON event. Every field is a fresh value or a value that is never mutated afterwards. */
export interface JsonEvent {
  readonly kind: JsonEventKind;
  /** Where: a fresh array per event. For `key` events it ends with the key. */
  readonly path: JsonPath;
  /** The value's type; undefined for `key` events. */
  readonly type: JsonType | undefined;
  /**
   * The value at `path` so far: the string so far (a trailing lone high surrogate is held back until its pair
   * arrives), the number so far, the literal, an empty container for `open`, the finished container for `close`;
   * undefined for `key` and `type` events.
   */
  readonly value: unknown;
  /** True once the value at `path` is closed: the last event for that path has it (and only that one). */
  readonly complete: boolean;
  /** Strings only: the characters appended since the previous event for this value (the first event's delta
   *  starts the string, possibly empty). Concatenating the deltas gives the string. */
  readonly delta?: string;
  /**
   * The whole partial document at this event (undefined before the first value starts; undefined with
   * `snapshots: 'none'`). A member appears once its value has started. Snapshots are structurally shared:
   * finished containers are shared between snapshots and with the final document, and only the open containers
   * on the path from the root to the current position are copied, lazily, on the first change after a snapshot
   * was taken. Cost: O(1) to take; the next change afterwards pays O(total size of the open containers). Treat
   * snapshots as immutable.
   */
  readonly snapshot: unknown;
  /** How many UTF-16 code units of input had been consumed when the event was produced. */
  readonly offset: number;
}

/** When snapshots are taken: at every event (default), once per push (every event of a push shares the snapshot
 *  at the end of that push: one copy per push), or never. */
export type SnapshotMode = 'event' | 'push' | 'none';

export interface PartialJsonOptions {
  /** Default 'event'. */
  snapshots?: SnapshotMode;
}
