// The streaming reader of a reply with tool calls: text in (split anywhere), content text and ToolCallDeltas out.
// Text before the format's trigger is content; from the trigger on, the call syntax is read (the text around the list
// and each call, the call object's "name" and its arguments), and nothing of it reaches the content. A call streams as
// OpenAI's deltas: its first one (index, id, type, name, arguments '') once the name is read, then fragments of the
// arguments' JSON text as they come, each with its partial-JSON events. A call that breaks the syntax before anything
// of it was streamed goes back to the content as plain text; one that breaks it later is a ToolCallParseError.

import { PartialJsonParser } from '@intab/grammar';
import type { JsonEvent, ToolCallDelta } from '../contract.ts';
import { ToolCallParseError } from '../errors.ts';
import type { ToolFormat } from './formats.ts';

export interface ToolParseOutput {
  /** Content text (none of the call syntax). */
  text: string;
  /** Parts of calls, in order (a call's later parts within one output are merged into one delta). */
  calls: ToolCallDelta[];
}

export interface ToolCallParserOptions {
  /** The id of a new call ['call_' + a counter]. */
  newId?: (index: number) => string;
  /** Partial-JSON events of the arguments on each fragment [true]. */
  events?: boolean;
}

const isSpace = (c: string) => c === ' ' || c === '\n' || c === '\r' || c === '\t';

/** Thrown inside the reader when the text breaks the syntax (caught by push()). */
class Broken extends Error {}

/**
 * A literal of the call syntax, matched leniently: whitespace may be added or left out where the literal has
 * whitespace or at its ends, never inside a run of non-space characters (`<tool_call>` stays whole).
 */
class LiteralMatcher {
  private readonly runs: string[];
  private run = 0;
  private at = 0;
  constructor(text: string) {
    this.runs = text.split(/[ \n\r\t]+/).filter(Boolean);
  }
  get done(): boolean {
    return this.run === this.runs.length;
  }
  /** One character: true when consumed, false when the literal is done and the character belongs to what follows. */
  feed(c: string): boolean {
    if (this.done) return false;
    if (this.at === 0 && isSpace(c)) return true;
    if (this.runs[this.run][this.at] !== c) throw new Broken(`expected '${this.runs[this.run].slice(this.at)}'`);
    if (++this.at === this.runs[this.run].length) {
      this.run++;
      this.at = 0;
    }
    return true;
  }
}

/** Where a JSON value being skipped or streamed is: depth, strings and escapes, or a bare scalar. */
class ValueScanner {
  private depth = 0;
  private inString = false;
  private escape = false;
  private scalar = false;
  private started = false;
  done = false;
  /** One character; returns false when it is not part of the value (a scalar ended before it). */
  feed(c: string): boolean {
    if (!this.started) {
      this.started = true;
      if (c === '{' || c === '[') this.depth = 1;
      else if (c === '"') this.inString = true;
      else this.scalar = true;
      return true;
    }
    if (this.scalar) {
      if (c === ',' || c === '}' || c === ']' || isSpace(c)) {
        this.done = true;
        return false;
      }
      return true;
    }
    if (this.inString) {
      if (this.escape) this.escape = false;
      else if (c === '\\') this.escape = true;
      else if (c === '"') {
        this.inString = false;
        if (this.depth === 0) this.done = true;
      }
      return true;
    }
    if (c === '"') this.inString = true;
    else if (c === '{' || c === '[') this.depth++;
    else if (c === '}' || c === ']') {
      if (--this.depth === 0) this.done = true;
    }
    return true;
  }
}

type CallPhase = 'open' | 'keyOrEnd' | 'key' | 'colon' | 'value' | 'afterValue';

/** One call object `{"name": ..., "<arguments>": {...}}`, read character by character. */
class CallReader {
  phase: CallPhase = 'open';
  name?: string;
  /** Arguments text read before the name (held until the name is known). */
  held = '';
  /** Arguments text not yet handed out. */
  fresh = '';
  sawArguments = false;
  finished = false;
  private key = '';
  private keyRaw = '';
  private keyEscape = false;
  private value?: ValueScanner;
  private valueKind: 'name' | 'arguments' | 'other' = 'other';
  private nameRaw = '';

  constructor(private readonly argumentsKeys: readonly string[]) {}

  /** One character: true when consumed; false when the object ended before it. */
  feed(c: string): boolean {
    switch (this.phase) {
      case 'open':
        if (isSpace(c)) return true;
        if (c !== '{') throw new Broken("expected '{'");
        this.phase = 'keyOrEnd';
        return true;
      case 'keyOrEnd':
        if (isSpace(c)) return true;
        if (c === '}') return this.end();
        if (c !== '"') throw new Broken('expected a key');
        this.phase = 'key';
        this.keyRaw = '';
        return true;
      case 'key':
        if (this.keyEscape) this.keyEscape = false;
        else if (c === '\\') this.keyEscape = true;
        else if (c === '"') {
          this.key = parseString(this.keyRaw);
          this.phase = 'colon';
          return true;
        }
        this.keyRaw += c;
        return true;
      case 'colon':
        if (isSpace(c)) return true;
        if (c !== ':') throw new Broken("expected ':'");
        this.phase = 'value';
        this.value = undefined;
        return true;
      case 'value':
        return this.feedValue(c);
      case 'afterValue':
        if (isSpace(c)) return true;
        if (c === ',') {
          this.phase = 'keyOrEnd';
          return true;
        }
        if (c === '}') return this.end();
        throw new Broken("expected ',' or '}'");
    }
  }

  private feedValue(c: string): boolean {
    const first = this.value === undefined;
    if (first) {
      if (isSpace(c)) return true;
      if (this.key === 'name') {
        if (c !== '"' || this.name !== undefined) throw new Broken('expected the name as a string');
        this.valueKind = 'name';
        this.nameRaw = '';
      } else if (this.argumentsKeys.includes(this.key)) {
        if (c !== '{' || this.sawArguments) throw new Broken('expected the arguments as an object');
        this.valueKind = 'arguments';
        this.sawArguments = true;
      } else this.valueKind = 'other';
      this.value = new ValueScanner();
    }
    const v = this.value!;
    if (!v.feed(c)) {
      // A bare scalar ended at this character, which belongs to what follows the value.
      this.phase = 'afterValue';
      return this.feed(c);
    }
    if (this.valueKind === 'name') {
      if (!first && !v.done) this.nameRaw += c; // between the quotes
    } else if (this.valueKind === 'arguments') {
      if (this.name === undefined) this.held += c;
      else this.fresh += c;
    }
    if (v.done) {
      if (this.valueKind === 'name') {
        const name = parseString(this.nameRaw);
        if (!name) throw new Broken('the name is empty');
        this.name = name;
      }
      this.phase = 'afterValue';
    }
    return true;
  }

  private end(): boolean {
    if (this.name === undefined) throw new Broken('the call has no "name"');
    this.finished = true;
    return true;
  }
}

/** A JSON string's raw inside (between the quotes) as its value. */
function parseString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    throw new Broken('a malformed string');
  }
}

type Mode = 'text' | 'open' | 'call' | 'close' | 'between' | 'listClose';

/**
 * Reads a reply's text as content and tool calls in one format (see the file's header).
 * @example
 * const p = new ToolCallParser(TOOL_FORMATS.hermes);
 * p.push('Let me look.\n<tool_call>\n{"name": "get_wea');  // { text: 'Let me look.\n', calls: [] }
 * p.push('ther", "arguments": {"city": "Oslo"}}\n</tool_call>'); // { text: '', calls: [{ index: 0, id, type, function: { name: 'get_weather', arguments: '' } }, { index: 0, function: { arguments: '{"city": "Oslo"}' } }] }
 * p.end();
 */
export class ToolCallParser {
  private mode: Mode = 'text';
  /** Text not yet read (text mode: a held suffix that may begin a trigger). */
  private pending = '';
  /** The raw text of the calls section begun at the last trigger (given back to the content when it breaks early). */
  private raw = '';
  /** Whitespace after a finished call, dropped if another call follows or the reply ends. */
  private space = '';
  private holdSpace = false;
  /** The held whitespace when a trigger came (given back with the section's text if the section breaks early). */
  private spaceBefore = '';
  private literal?: LiteralMatcher;
  private call?: CallReader;
  private json?: PartialJsonParser;
  private index = -1;
  private emitted = false;
  /** Calls begun (their first delta streamed). */
  count = 0;
  private readonly triggers: string[];
  private readonly newId: (index: number) => string;
  private readonly events: boolean;
  private out: ToolParseOutput = { text: '', calls: [] };

  constructor(
    readonly format: ToolFormat,
    options: ToolCallParserOptions = {},
  ) {
    this.triggers = [format.trigger, ...(format.optionalPrefix ? [format.optionalPrefix] : [])];
    this.newId = options.newId ?? ((i) => `call_${i}`);
    this.events = options.events ?? true;
  }

  /** More text of the reply. */
  push(text: string): ToolParseOutput {
    this.pending += text;
    this.run(false);
    return this.take();
  }

  /** The end of the reply: held text goes to the content (a call cut short stays as streamed). */
  end(): ToolParseOutput {
    this.run(true);
    if (this.mode === 'text') {
      this.out.text += this.pending;
      this.pending = '';
    } else if (!this.emitted) {
      this.giveBack();
      this.out.text += this.pending;
      this.pending = '';
    }
    this.space = '';
    this.holdSpace = false;
    return this.take();
  }

  private take(): ToolParseOutput {
    const out = this.out;
    this.out = { text: '', calls: [] };
    return out;
  }

  private run(final: boolean): void {
    while (this.pending.length > 0) {
      if (this.mode === 'text') {
        if (!this.scanText(final)) return;
        continue;
      }
      const c = this.pending[0];
      let consumed: boolean;
      try {
        consumed = this.feed(c);
      } catch (e) {
        if (!(e instanceof Broken)) throw e;
        if (this.emitted) throw new ToolCallParseError(this.format.name, e.message);
        this.giveBack();
        continue; // the breaking character is read again as text
      }
      if (consumed) {
        this.raw += c;
        this.pending = this.pending.slice(1);
      }
    }
    this.flushArguments();
  }

  /** Text mode: content up to a trigger (then the calls begin), holding back what may be a trigger's start. */
  private scanText(final: boolean): boolean {
    const s = this.pending;
    let at = -1;
    let trigger = '';
    for (const t of this.triggers) {
      const i = s.indexOf(t);
      if (i >= 0 && (at < 0 || i < at)) [at, trigger] = [i, t];
    }
    if (at >= 0) {
      this.content(s.slice(0, at));
      this.spaceBefore = this.holdSpace ? this.space : '';
      this.space = '';
      this.holdSpace = false;
      this.pending = s.slice(at);
      this.beginCalls(trigger);
      return true;
    }
    let keep = 0;
    if (!final) {
      for (const t of this.triggers) {
        for (let n = Math.min(t.length - 1, s.length); n > keep; n--) if (s.endsWith(t.slice(0, n))) keep = n;
      }
    }
    this.content(s.slice(0, s.length - keep));
    this.pending = s.slice(s.length - keep);
    return false;
  }

  /** Content text; whitespace right after a call is held (dropped when another call follows or the reply ends). */
  private content(text: string): void {
    if (!text) return;
    if (this.holdSpace) {
      const lead = /^[ \n\r\t]*/.exec(text)![0];
      this.space += lead;
      if (lead.length === text.length) return;
      text = this.space + text.slice(lead.length);
      this.space = '';
      this.holdSpace = false;
    }
    this.out.text += text;
  }

  private beginCalls(trigger: string): void {
    this.raw = '';
    this.emitted = false;
    const f = this.format;
    if (trigger === f.optionalPrefix) {
      // Llama 3.1's <|python_tag|>: the call object follows.
      this.pending = this.pending.slice(trigger.length);
      this.raw = trigger;
      this.startCall();
      return;
    }
    this.literal = new LiteralMatcher(f.listOpen + f.callOpen);
    this.mode = 'open';
    if (this.literal.done) this.startCall();
  }

  private startCall(): void {
    this.call = new CallReader([this.format.argumentsKey, 'arguments', 'parameters']);
    this.mode = 'call';
  }

  /** One character of the calls section; false when it belongs to the next part. */
  private feed(c: string): boolean {
    const f = this.format;
    switch (this.mode) {
      case 'open':
        if (this.literal!.feed(c)) return true;
        this.startCall();
        return false;
      case 'call': {
        const call = this.call!;
        const had = call.name;
        const used = call.feed(c);
        if (had === undefined && call.name !== undefined) this.header(call.name);
        if (call.finished) {
          this.finishCall();
          this.literal = new LiteralMatcher(f.callClose);
          this.mode = 'close';
        }
        return used;
      }
      case 'close':
        if (this.literal!.feed(c)) return true;
        this.afterCall();
        return false;
      case 'between': {
        if (isSpace(c)) return true;
        const sep = f.separator.trim();
        if (sep && c === sep[0]) {
          this.literal = new LiteralMatcher(f.separator + f.callOpen);
          this.mode = 'open';
          this.emitted = false;
          this.raw = '';
          return false;
        }
        this.literal = new LiteralMatcher(f.listClose);
        this.mode = 'listClose';
        return false;
      }
      case 'listClose':
        if (this.literal!.feed(c)) return true;
        this.toText();
        return false;
      case 'text':
        return false;
    }
  }

  /** A call's object and its closing text are read: more calls in the list, or back to text. */
  private afterCall(): void {
    const f = this.format;
    if (f.listClose === '' && f.separator.trim() === '') this.toText();
    else this.mode = 'between';
  }

  private toText(): void {
    this.mode = 'text';
    this.emitted = false;
    this.raw = '';
    this.space = '';
    this.holdSpace = true;
  }

  /** The section broke before any of its call streamed: its raw text becomes content, and text mode reads on. */
  private giveBack(): void {
    this.out.text += this.spaceBefore + this.raw;
    this.spaceBefore = '';
    this.raw = '';
    this.mode = 'text';
    this.call = undefined;
  }

  private header(name: string): void {
    this.index++;
    this.count++;
    this.emitted = true;
    this.out.calls.push({ index: this.index, id: this.newId(this.index), type: 'function', function: { name, arguments: '' } });
    this.json = this.events ? new PartialJsonParser({ snapshots: 'none' }) : undefined;
    const call = this.call!;
    call.fresh = call.held + call.fresh;
    call.held = '';
  }

  /** The arguments read since the last output, as one fragment of the current call. */
  private flushArguments(): void {
    const call = this.call;
    if (!call || call.name === undefined || !call.fresh) return;
    this.fragment(call.fresh, false);
    call.fresh = '';
  }

  private finishCall(): void {
    const call = this.call!;
    let text = call.fresh;
    call.fresh = '';
    if (!call.sawArguments) text += '{}';
    this.fragment(text, true);
  }

  private fragment(text: string, last: boolean): void {
    const events: JsonEvent[] = [];
    if (this.json) {
      try {
        if (text) events.push(...this.json.push(text));
        if (last) events.push(...this.json.end());
      } catch {
        throw new ToolCallParseError(this.format.name, 'the arguments are not JSON');
      }
    }
    if (!text && events.length === 0) return;
    const prev = this.out.calls[this.out.calls.length - 1];
    if (prev && prev.index === this.index && prev.id === undefined) {
      prev.function.arguments += text;
      if (this.json) prev.json = [...(prev.json ?? []), ...events];
    } else {
      this.out.calls.push({ index: this.index, function: { arguments: text }, ...(this.json ? { json: events } : {}) });
    }
  }
}
