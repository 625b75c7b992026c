// Stop strings over streamed text. Text arrives in pieces that do not respect stop-string boundaries
// ("Hel" + "lo wor" + "ld" may hide "lo world"), and a stop string must never reach the user: so text is
// held back while its tail could still grow into a stop string, and on a match everything from the match
// on is dropped. The concatenation of all emitted text (and flush) is the full text cut before the first
// stop string, or the full text when none occurs.

export interface StopPush {
  /** Text that can no longer become part of a stop string. */
  text: string;
  /** A stop string was completed: `text` ends right before it and nothing more will be emitted. */
  stopped: boolean;
  /** Which stop string matched. */
  match?: string;
}

export class StopMatcher {
  private held = '';
  private done = false;
  private readonly stops: readonly string[];

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** Adds decoded text; returns what is safe to emit. */
  push(piece: string): StopPush {
    if (this.done) return { text: '', stopped: true };
    const buf = this.held + piece;
    if (this.stops.length === 0) {
      this.held = '';
      return { text: buf, stopped: false };
    }
    // Earliest occurrence of any stop string (the longest one on ties at the same index).
    let at = -1;
    let match: string | undefined;
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (at < 0 || i < at || (i === at && s.length > match!.length))) {
        at = i;
        match = s;
      }
    }
    if (at >= 0) {
      this.done = true;
      this.held = '';
      return { text: buf.slice(0, at), stopped: true, match };
    }
    // Hold the longest tail of buf that is a proper prefix of some stop string.
    let keep = 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, buf.length); n > keep; n--) {
        if (buf.endsWith(s.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.held = buf.slice(buf.length - keep);
    return { text: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** The generation ended without a stop string: what was held back is final text after all. */
  flush(): string {
    if (this.done) return '';
    const rest = this.held;
    this.held = '';
    this.done = true;
    return rest;
  }
}
