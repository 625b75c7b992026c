// An incremental JSON parser: text in (split anywhere), partial-JSON events out, O(n) in the input length.
//
// One pass, one character at a time, no backtracking and no re-scanning: string and number runs are sliced out of
// each chunk in one piece, a string's characters are held only until the next event for it, and each event costs
// O(depth) for its path (plus the snapshot cost documented on JsonEvent.snapshot). Past 500 lines as one job: the
// parser is one state machine over one character loop, and its states share the pending string and number runs.

import type { JsonEvent, JsonEventKind, JsonPath, JsonType, PartialJsonOptions, SnapshotMode } from './events.ts';
import { errorClass } from '@intab/errors';
import { IntabGrammarError } from '../errors.ts';

/** Invalid JSON (or text that contradicts an announcement). `position` is the UTF-16 offset, counted over all the
 *  text pushed so far, of the first character that cannot continue a valid document (the input length when the
 *  document ended too early). */
export class PartialJsonError extends errorClass(IntabGrammarError, 'PartialJsonError', 'invalid_json')<{
  /** What was wrong, without the position. */
  readonly reason: string;
  readonly position: number;
  /** Where in the document the parser was. */
  readonly path: JsonPath;
}> {
  constructor(reason: string, position: number, path: JsonPath) {
    super({ reason, position, path }, `${reason} at position ${position}${path.length ? ` (in ${formatJsonPath(path)})` : ''}`);
  }
}

/** `$.items[3].name` */
export function formatJsonPath(path: readonly (string | number)[]): string {
  let s = '$';
  for (const seg of path) {
    s += typeof seg === 'number' ? `[${seg}]` : /^[A-Za-z_$][\w$]*$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`;
  }
  return s;
}

/** Sets an own enumerable property, "__proto__" included (as JSON.parse does). */
export function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

// Parser states.
const S_VALUE = 0; // a value must start (top level, after ':' or after ',' in an array)
const S_ARRAY_FIRST = 1; // after '[': a value or ']'
const S_OBJECT_FIRST = 2; // after '{': a key or '}'
const S_OBJECT_KEY = 3; // after ',' in an object: a key
const S_COLON = 4; // after a key
const S_AFTER = 5; // after a value inside a container: ',' or the closing bracket
const S_DONE = 6; // after the top-level value: whitespace only
const S_STRING = 7;
const S_ESCAPE = 8; // after '\'
const S_UNICODE = 9; // inside \uXXXX
const S_NUMBER = 10;
const S_LITERAL = 11; // inside true / false / null

// Number sub-states (those marked * may end the number).
const N_START = 0;
const N_MINUS = 1;
const N_ZERO = 2; // *
const N_INT = 3; // *
const N_DOT = 4;
const N_FRAC = 5; // *
const N_E = 6;
const N_ESIGN = 7;
const N_EXP = 8; // *
const numberMayEnd = (ns: number) => ns === N_ZERO || ns === N_INT || ns === N_FRAC || ns === N_EXP;

const ESCAPES: Record<number, string> = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' };

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}
function describeChar(c: number): string {
  return c < 0x20 || c === 0x7f ? `U+${c.toString(16).toUpperCase().padStart(4, '0')}` : `'${String.fromCharCode(c)}'`;
}

interface Frame {
  obj: boolean;
  node: Record<string, unknown> | unknown[];
  /** Objects: the key of the member being parsed. */
  key: string;
  /** Arrays: the index of the element being parsed (= elements finished). */
  index: number;
}

interface Announcement {
  path: JsonPath;
  kind: 'key' | JsonType;
}

const samePath = (a: JsonPath, b: JsonPath) => a.length === b.length && a.every((s, i) => s === b[i]);
const isStrictPrefix = (p: JsonPath, of: JsonPath) => p.length < of.length && p.every((s, i) => s === of[i]);

/**
 * Incremental JSON parser. `push(text)` accepts any split of the document (inside strings, escapes, surrogate pairs,
 * numbers, literals) and returns the events completed by that text; `end()` finishes the document. Invalid JSON
 * throws a {@link PartialJsonError}; after that the parser is dead and every call throws the same error.
 *
 * Events (see {@link JsonEvent}) arrive in document order: a member's `key` before its value, a container's `open`
 * before its contents and its `close` after them. Within one push, a value still in progress at the end of the text
 * gets one `value` event (strings: one delta per push, not per character).
 */
export class PartialJsonParser {
  readonly #snapshots: SnapshotMode;
  #state = S_VALUE;
  #frames: Frame[] = [];
  #path: JsonPath = [];
  #root: unknown = undefined;
  #hasRoot = false;
  /** False once a snapshot may reference the open containers: the next change copies them first. */
  #spineOwned = true;
  /** Offset of the current chunk's first character. */
  #pos = 0;
  #out: JsonEvent[] = [];
  #error: PartialJsonError | null = null;
  #ended = false;
  // strings
  #isKey = false;
  #strStart = 0;
  #pending = ''; // decoded characters not yet in an event (keys: the whole key)
  #committed = ''; // the string as of its last event
  #strEmitted = false;
  #uniCount = 0;
  #uniCode = 0;
  // numbers
  #numText = '';
  #numState = N_START;
  #numLen = 0;
  #numValidLen = 0;
  #numEmitted = false;
  #numLast = 0;
  // literals
  #litWord = '';
  #litIdx = 0;
  #litValue: boolean | null = null;
  // type-ahead
  #announced: Announcement[] = [];
  #announcedHead = 0;

  constructor(options: PartialJsonOptions = {}) {
    this.#snapshots = options.snapshots ?? 'event';
  }

  /** Characters consumed so far. */
  get offset(): number {
    return this.#pos;
  }

  /** True after a successful `end()`. */
  get done(): boolean {
    return this.#ended && !this.#error;
  }

  /** The partial document now (undefined before the first value starts); structurally shared, treat as immutable. */
  get snapshot(): unknown {
    return this.#takeSnapshot();
  }

  /** Feeds more text; returns the events it completed. */
  push(text: string): JsonEvent[] {
    this.#usable();
    const out: JsonEvent[] = (this.#out = []);
    try {
      this.#scan(text);
      this.#flushTip();
    } catch (e) {
      if (e instanceof PartialJsonError) this.#error = e;
      throw e;
    }
    if (this.#snapshots === 'push' && out.length) {
      const snap = this.#takeSnapshot();
      for (const ev of out) (ev as { snapshot: unknown }).snapshot = snap;
    }
    return out;
  }

  /** Ends the document: completes a top-level number, throws if the document is incomplete. */
  end(): JsonEvent[] {
    this.#usable();
    const out: JsonEvent[] = (this.#out = []);
    const at = this.#pos;
    try {
      switch (this.#state) {
        case S_DONE:
          break;
        case S_NUMBER:
          if (!numberMayEnd(this.#numState)) throw this.#err(this.#numberError(), at);
          if (this.#frames.length) throw this.#err(this.#unclosed(), at);
          this.#completeNumber(at);
          break;
        case S_STRING:
        case S_ESCAPE:
        case S_UNICODE:
          throw this.#err('Unexpected end of input: unterminated string', at);
        case S_LITERAL:
          throw this.#err(`Unexpected end of input inside '${this.#litWord}'`, at);
        default:
          throw this.#err(this.#hasRoot ? this.#unclosed() : 'Unexpected end of input: expected a JSON value', at);
      }
      const a = this.#announced[this.#announcedHead];
      if (a) throw this.#err(`Unexpected end of input: announced ${describeAnnouncement(a)} never appeared`, at);
    } catch (e) {
      if (e instanceof PartialJsonError) this.#error = e;
      throw e;
    }
    this.#ended = true;
    if (this.#snapshots === 'push' && out.length) {
      const snap = this.#takeSnapshot();
      for (const ev of out) (ev as { snapshot: unknown }).snapshot = snap;
    }
    return out;
  }

  /**
   * The path of the value that must start next — the document's value, a member's value after ':', an element
   * after '[' (where ']' may come instead) or after ',' in an array — or null when the parser is anywhere else or
   * that value is already announced. A grammar-aware producer that knows the value's type announces it here.
   */
  get valueAhead(): JsonPath | null {
    if (this.#error || this.#ended) return null;
    if (this.#state !== S_VALUE && this.#state !== S_ARRAY_FIRST) return null;
    const top = this.#frames[this.#frames.length - 1];
    const path = top && !top.obj ? [...this.#path, top.index] : this.#path.slice();
    for (let i = this.#announcedHead; i < this.#announced.length; i++) if (samePath(this.#announced[i].path, path)) return null;
    return path;
  }

  /**
   * Type-ahead for grammar-aware producers: announces that the next key (`kind: 'key'`, `path` ending with it) or the
   * next value's type at `path` is forced, before its text is generated. Returns the `key` / `type` event at once.
   * Announce in document order (a container's type before its first key); several announcements may be queued.
   * The text then has to agree: the parser does not repeat an announced key, and text that starts a different key or
   * value first, closes the container the announcement is in, or ends the document, throws a PartialJsonError.
   */
  announce(path: JsonPath, kind: 'key' | JsonType): JsonEvent[] {
    this.#usable();
    if (kind === 'key' && typeof path[path.length - 1] !== 'string') {
      throw new TypeError(`announce: a key path must end with a string, got ${formatJsonPath(path)}`);
    }
    const a: Announcement = { path: path.slice(), kind };
    this.#announced.push(a);
    this.#out = [];
    const ev = this.#event(kind === 'key' ? 'key' : 'type', a.path.slice(), kind === 'key' ? undefined : kind, undefined, false, undefined, this.#pos);
    if (this.#snapshots === 'push') (ev as { snapshot: unknown }).snapshot = this.#takeSnapshot();
    return [ev];
  }

  #usable(): void {
    if (this.#error) throw this.#error;
    if (this.#ended) throw new Error('PartialJsonParser: the document has ended');
  }

  #err(reason: string, position: number): PartialJsonError {
    return new PartialJsonError(reason, position, this.#path.slice());
  }

  #unclosed(): string {
    const n = this.#frames.length;
    return `Unexpected end of input: unclosed ${this.#frames[n - 1]?.obj ? 'object' : 'array'} (${n} container${n > 1 ? 's' : ''} open)`;
  }

  #numberError(): string {
    switch (this.#numState) {
      case N_MINUS:
        return 'No number after minus sign';
      case N_DOT:
        return 'Unterminated fractional number (expected a digit after the decimal point)';
      default:
        return 'Exponent part is missing a number';
    }
  }

  // ---- events and the live document ----

  #takeSnapshot(): unknown {
    this.#spineOwned = false;
    return this.#hasRoot ? this.#root : undefined;
  }

  #event(
    kind: JsonEventKind,
    path: JsonPath,
    type: JsonType | undefined,
    value: unknown,
    complete: boolean,
    delta: string | undefined,
    offset: number,
  ): JsonEvent {
    const snapshot = this.#snapshots === 'event' ? this.#takeSnapshot() : undefined;
    const ev: JsonEvent = { kind, path, type, value, complete, delta, snapshot, offset };
    this.#out.push(ev);
    return ev;
  }

  #emit(kind: JsonEventKind, type: JsonType | undefined, value: unknown, complete: boolean, delta: string | undefined, at: number): void {
    this.#event(kind, this.#path.slice(), type, value, complete, delta, at);
  }

  /** Copies the open containers (root first) after a snapshot was taken, so the snapshot stays as it was. */
  #ownSpine(): void {
    const frames = this.#frames;
    for (let d = 0; d < frames.length; d++) {
      const f = frames[d];
      f.node = f.obj ? { ...(f.node as Record<string, unknown>) } : (f.node as unknown[]).slice();
      if (d === 0) this.#root = f.node;
      else {
        const p = frames[d - 1];
        if (p.obj) setMember(p.node as Record<string, unknown>, p.key, f.node);
        else (p.node as unknown[])[p.index] = f.node;
      }
    }
    this.#spineOwned = true;
  }

  /** Sets the value being parsed (the innermost open container's current member, or the root). */
  #setTip(v: unknown): void {
    const frames = this.#frames;
    if (!frames.length) {
      this.#root = v;
      this.#hasRoot = true;
      return;
    }
    if (!this.#spineOwned) this.#ownSpine();
    const f = frames[frames.length - 1];
    if (f.obj) setMember(f.node as Record<string, unknown>, f.key, v);
    else (f.node as unknown[])[f.index] = v;
  }

  /** A value finished: back to its container (or to the end of the document). */
  #valueDone(): void {
    const frames = this.#frames;
    if (!frames.length) {
      this.#state = S_DONE;
      return;
    }
    const f = frames[frames.length - 1];
    if (!f.obj) f.index++;
    this.#path.pop();
    this.#state = S_AFTER;
  }

  /** At the end of a push: one event for the scalar still in progress, if it changed. */
  #flushTip(): void {
    const st = this.#state;
    const at = this.#pos;
    if ((st === S_STRING || st === S_ESCAPE || st === S_UNICODE) && !this.#isKey) {
      let delta = this.#pending;
      if (delta.length && isHighSurrogate(delta.charCodeAt(delta.length - 1))) {
        this.#pending = delta.slice(delta.length - 1);
        delta = delta.slice(0, delta.length - 1);
      } else this.#pending = '';
      if (delta.length || !this.#strEmitted) {
        this.#committed += delta;
        this.#strEmitted = true;
        this.#setTip(this.#committed);
        this.#emit('value', 'string', this.#committed, false, delta, at);
      }
    } else if (st === S_NUMBER && this.#numValidLen > 0) {
      const v = Number(this.#numText.slice(0, this.#numValidLen));
      if (!this.#numEmitted || !Object.is(v, this.#numLast)) {
        this.#numEmitted = true;
        this.#numLast = v;
        this.#setTip(v);
        this.#emit('value', 'number', v, false, undefined, at);
      }
    }
  }

  // ---- type-ahead checks ----

  /** A key was read; returns true when it was announced (its event already went out). */
  #keyStarts(at: number): boolean {
    const a = this.#announced[this.#announcedHead];
    if (!a) return false;
    const path = this.#path;
    if (a.kind === 'key' && samePath(a.path, path)) {
      this.#popAnnouncement();
      return true;
    }
    // Still ahead: the type of this member's value, or something inside it.
    if (samePath(a.path, path) || isStrictPrefix(path, a.path)) return false;
    throw this.#err(`Key ${JSON.stringify(path[path.length - 1])} contradicts the announced ${describeAnnouncement(a)}`, at);
  }

  #valueStarts(type: JsonType, at: number): void {
    const a = this.#announced[this.#announcedHead];
    if (!a) return;
    const path = this.#path;
    if (samePath(a.path, path)) {
      if (a.kind === type) {
        this.#popAnnouncement();
        return;
      }
    } else if (isStrictPrefix(path, a.path)) {
      // Something inside this container: fine if the container can hold it.
      const inner = typeof a.path[path.length];
      if ((type === 'object' && inner === 'string') || (type === 'array' && inner === 'number')) return;
    }
    throw this.#err(`A ${type} at ${formatJsonPath(path)} contradicts the announced ${describeAnnouncement(a)}`, at);
  }

  #popAnnouncement(): void {
    if (++this.#announcedHead === this.#announced.length) {
      this.#announced = [];
      this.#announcedHead = 0;
    }
  }

  // ---- scanning ----

  #scan(text: string): void {
    const n = text.length;
    let i = 0;
    while (i < n) {
      switch (this.#state) {
        case S_STRING:
          i = this.#scanString(text, i);
          break;
        case S_NUMBER:
          i = this.#scanNumber(text, i);
          break;
        default:
          i = this.#step(text.charCodeAt(i), i);
      }
    }
    this.#pos += n;
  }

  #scanString(text: string, i: number): number {
    const n = text.length;
    const run = i;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22 || c === 0x5c) {
        if (i > run) this.#pending += text.slice(run, i);
        if (c === 0x5c) this.#state = S_ESCAPE;
        else this.#endString(this.#pos + i + 1);
        return i + 1;
      }
      if (c < 0x20) throw this.#err(`Bad control character ${describeChar(c)} in string literal (control characters must be escaped)`, this.#pos + i);
    }
    if (i > run) this.#pending += text.slice(run, i);
    return n;
  }

  #endString(at: number): void {
    if (this.#isKey) {
      const key = this.#pending;
      this.#pending = '';
      this.#path.push(key);
      this.#frames[this.#frames.length - 1].key = key;
      this.#state = S_COLON;
      if (!this.#keyStarts(this.#strStart)) this.#emit('key', undefined, undefined, false, undefined, at);
      return;
    }
    const delta = this.#pending;
    const value = this.#committed + delta;
    this.#pending = this.#committed = '';
    this.#setTip(value);
    this.#emit('value', 'string', value, true, delta, at);
    this.#valueDone();
  }

  #scanNumber(text: string, i: number): number {
    const n = text.length;
    const run = i;
    let ns = this.#numState;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      let next = -1; // -1: the number ends before c
      switch (ns) {
        case N_START:
          next = c === 0x2d ? N_MINUS : c === 0x30 ? N_ZERO : N_INT; // startValue checked c
          break;
        case N_MINUS:
          if (c === 0x30) next = N_ZERO;
          else if (isDigit(c)) next = N_INT;
          else throw this.#err(`No number after minus sign (got ${describeChar(c)})`, this.#pos + i);
          break;
        case N_ZERO:
        case N_INT:
          if (ns === N_INT && isDigit(c)) next = N_INT;
          else if (c === 0x2e) next = N_DOT;
          else if (c === 0x65 || c === 0x45) next = N_E;
          break;
        case N_DOT:
          if (isDigit(c)) next = N_FRAC;
          else throw this.#err(`Unterminated fractional number: expected a digit after the decimal point, got ${describeChar(c)}`, this.#pos + i);
          break;
        case N_FRAC:
          if (isDigit(c)) next = N_FRAC;
          else if (c === 0x65 || c === 0x45) next = N_E;
          break;
        case N_E:
          if (c === 0x2b || c === 0x2d) next = N_ESIGN;
          else if (isDigit(c)) next = N_EXP;
          else throw this.#err(`Exponent part is missing a number (got ${describeChar(c)})`, this.#pos + i);
          break;
        case N_ESIGN:
          if (isDigit(c)) next = N_EXP;
          else throw this.#err(`Exponent part is missing a number (got ${describeChar(c)})`, this.#pos + i);
          break;
        case N_EXP:
          if (isDigit(c)) next = N_EXP;
          break;
      }
      if (next < 0) {
        if (i > run) this.#numText += text.slice(run, i);
        this.#numState = ns;
        this.#completeNumber(this.#pos + i);
        return i; // c is read again after the number
      }
      ns = next;
      this.#numLen++;
      if (numberMayEnd(ns)) this.#numValidLen = this.#numLen;
    }
    this.#numState = ns;
    if (i > run) this.#numText += text.slice(run, i);
    return n;
  }

  #completeNumber(at: number): void {
    const v = Number(this.#numText);
    this.#numText = '';
    this.#setTip(v);
    this.#emit('value', 'number', v, true, undefined, at);
    this.#valueDone();
  }

  /** One character outside strings and numbers; returns the next index. */
  #step(c: number, i: number): number {
    const at = this.#pos + i;
    switch (this.#state) {
      case S_ESCAPE: {
        const e = ESCAPES[c];
        if (e !== undefined) {
          this.#pending += e;
          this.#state = S_STRING;
        } else if (c === 0x75) {
          this.#uniCount = 0;
          this.#uniCode = 0;
          this.#state = S_UNICODE;
        } else throw this.#err(`Bad escaped character ${describeChar(c)} (expected one of " \\ / b f n r t u)`, at);
        return i + 1;
      }
      case S_UNICODE: {
        const h = hexValue(c);
        if (h < 0) throw this.#err(`Bad Unicode escape: ${describeChar(c)} is not a hex digit`, at);
        this.#uniCode = this.#uniCode * 16 + h;
        if (++this.#uniCount === 4) {
          this.#pending += String.fromCharCode(this.#uniCode);
          this.#state = S_STRING;
        }
        return i + 1;
      }
      case S_LITERAL: {
        if (c !== this.#litWord.charCodeAt(this.#litIdx)) throw this.#err(`Unexpected character ${describeChar(c)} in literal '${this.#litWord}'`, at);
        if (++this.#litIdx === this.#litWord.length) {
          this.#setTip(this.#litValue);
          this.#emit('value', this.#litValue === null ? 'null' : 'boolean', this.#litValue, true, undefined, at + 1);
          this.#valueDone();
        }
        return i + 1;
      }
    }
    if (isWs(c)) return i + 1;
    switch (this.#state) {
      case S_ARRAY_FIRST:
      case S_VALUE:
        if (c === 0x5d && this.#state === S_ARRAY_FIRST) {
          this.#close(at);
          return i + 1;
        }
        return this.#startValue(c, i, at);
      case S_OBJECT_FIRST:
        if (c === 0x7d) {
          this.#close(at);
          return i + 1;
        }
        if (c !== 0x22) throw this.#err(`Unexpected character ${describeChar(c)}: expected a property name or '}'`, at);
        return this.#startKey(i, at);
      case S_OBJECT_KEY:
        if (c !== 0x22) throw this.#err(`Unexpected character ${describeChar(c)}: expected a property name after ','`, at);
        return this.#startKey(i, at);
      case S_COLON:
        if (c !== 0x3a) throw this.#err(`Unexpected character ${describeChar(c)}: expected ':' after property name`, at);
        this.#state = S_VALUE;
        return i + 1;
      case S_AFTER: {
        const f = this.#frames[this.#frames.length - 1];
        if (c === 0x2c) this.#state = f.obj ? S_OBJECT_KEY : S_VALUE;
        else if (c === (f.obj ? 0x7d : 0x5d)) this.#close(at);
        else {
          const expected = f.obj ? "',' or '}' after property value" : "',' or ']' after array element";
          throw this.#err(`Unexpected character ${describeChar(c)}: expected ${expected}`, at);
        }
        return i + 1;
      }
      default: // S_DONE
        throw this.#err(`Unexpected non-whitespace character ${describeChar(c)} after the JSON value`, at);
    }
  }

  #startKey(i: number, at: number): number {
    this.#isKey = true;
    this.#strStart = at;
    this.#pending = '';
    this.#state = S_STRING;
    return i + 1;
  }

  #startValue(c: number, i: number, at: number): number {
    const frames = this.#frames;
    const top = frames[frames.length - 1];
    let type: JsonType;
    if (c === 0x22) type = 'string';
    else if (c === 0x2d || isDigit(c)) type = 'number';
    else if (c === 0x7b) type = 'object';
    else if (c === 0x5b) type = 'array';
    else if (c === 0x74 || c === 0x66) type = 'boolean';
    else if (c === 0x6e) type = 'null';
    else throw this.#err(`Unexpected character ${describeChar(c)}: expected a JSON value`, at);
    if (top && !top.obj) this.#path.push(top.index);
    this.#valueStarts(type, at);
    switch (type) {
      case 'string':
        this.#isKey = false;
        this.#strStart = at;
        this.#pending = this.#committed = '';
        this.#strEmitted = false;
        this.#state = S_STRING;
        return i + 1;
      case 'number':
        this.#numText = '';
        this.#numState = N_START;
        this.#numLen = this.#numValidLen = 0;
        this.#numEmitted = false;
        this.#state = S_NUMBER;
        return i; // scanNumber reads c
      case 'object':
      case 'array': {
        const obj = type === 'object';
        const node = obj ? {} : [];
        this.#setTip(node);
        frames.push({ obj, node, key: '', index: 0 });
        this.#state = obj ? S_OBJECT_FIRST : S_ARRAY_FIRST;
        this.#emit('open', type, obj ? {} : [], false, undefined, at + 1);
        return i + 1;
      }
      default:
        this.#litWord = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
        this.#litValue = c === 0x74 ? true : c === 0x66 ? false : null;
        this.#litIdx = 1;
        this.#state = S_LITERAL;
        return i + 1;
    }
  }

  #close(at: number): void {
    const f = this.#frames.pop()!;
    const a = this.#announced[this.#announcedHead];
    if (a && isStrictPrefix(this.#path, a.path)) {
      throw this.#err(`The ${f.obj ? 'object' : 'array'} closes before the announced ${describeAnnouncement(a)}`, at);
    }
    this.#emit('close', f.obj ? 'object' : 'array', f.node, true, undefined, at + 1);
    this.#valueDone();
  }
}

function describeAnnouncement(a: Announcement): string {
  return a.kind === 'key' ? `key ${formatJsonPath(a.path)}` : `${a.kind} at ${formatJsonPath(a.path)}`;
}

/** Parses a prefix of a JSON document: the partial value so far (what a snapshot shows) and whether it is complete.
 *  Throws PartialJsonError if the text cannot begin a JSON document. */
export function parsePartialJson(text: string): { value: unknown; complete: boolean } {
  const p = new PartialJsonParser({ snapshots: 'none' });
  p.push(text);
  let complete = false;
  try {
    p.end();
    complete = true;
  } catch (e) {
    if (!(e instanceof PartialJsonError) || e.position < text.length) throw e;
  }
  return { value: p.snapshot, complete };
}
