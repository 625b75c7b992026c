// Character-level mutations of grammar sources (test tooling for the GBNF and regex fuzzers): the edits a damaged or
// hostile text has — characters inserted from the language's own alphabet, dropped, replaced, spans duplicated
// (deep nesting, long repetitions) or moved.

import type { Random } from '@intab/testing/fuzz';

/** `text` with 1 to `edits` random edits, inserting from `alphabet` (strings: one edit may insert several characters). */
export function mutateText(r: Random, text: string, alphabet: readonly string[], edits = 4): string {
  let s = text;
  for (let m = 1 + r.int(edits); m > 0; m--) {
    const at = r.int(s.length + 1);
    switch (r.int(7)) {
      case 0:
      case 1:
        s = s.slice(0, at) + r.pick(alphabet) + s.slice(at);
        break;
      case 2:
        s = s.slice(0, at) + s.slice(at + 1 + r.int(3));
        break;
      case 3:
        s = s.slice(0, at) + r.pick(alphabet) + s.slice(at + 1);
        break;
      case 4: {
        // a span repeated: nesting, long repetitions, many alternatives
        const len = 1 + r.int(12);
        const span = s.slice(at, at + len);
        s = s.slice(0, at) + span.repeat(2 + r.int(r.chance(0.1) ? 200 : 6)) + s.slice(at + len);
        break;
      }
      case 5: {
        const from = r.int(s.length + 1);
        s = s.slice(0, at) + s.slice(from, from + 1 + r.int(20)) + s.slice(at);
        break;
      }
      default:
        s = s.slice(0, at) + s.slice(at, at + 40).split('').reverse().join('') + s.slice(at + 40);
    }
  }
  return s;
}
