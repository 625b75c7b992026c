// Type-ahead for structured output: at a grammar state where a JSON value must start, the schema may leave one type
// only (`"age":` in an object whose `age` is an integer). The bytes the grammar allows next tell which: a value's
// first byte fixes its type.

import type { Grammar, GrammarState } from './grammar.ts';
import type { JsonType } from './partial/events.ts';

/** The JSON type each byte starts, by byte (undefined: the byte starts no value). */
const STARTS: (JsonType | undefined)[] = (() => {
  const t: (JsonType | undefined)[] = new Array(256).fill(undefined);
  t[0x22] = 'string';
  t[0x2d] = 'number';
  for (let b = 0x30; b <= 0x39; b++) t[b] = 'number';
  t[0x7b] = 'object';
  t[0x5b] = 'array';
  t[0x74] = 'boolean';
  t[0x66] = 'boolean';
  t[0x6e] = 'null';
  return t;
})();

/**
 * The type of the JSON value that starts at `state`, when the grammar allows exactly one: every byte it allows
 * starts a value of that type. Undefined when several types (or whitespace, or anything that is not a value's first
 * byte, such as ']' or '}') may come next. Bytes cannot tell a key from a value — at a key's opening quote this says
 * 'string' — so the caller asks only where a value starts (PartialJsonParser's `valueAhead`).
 */
export function jsonValueType(grammar: Grammar, state: GrammarState): JsonType | undefined {
  let type: JsonType | undefined;
  for (let b = 0; b < 256; b++) {
    if (grammar.step(state, b) === null) continue;
    const t = STARTS[b];
    if (t === undefined || (type !== undefined && t !== type)) return undefined;
    type = t;
  }
  return type;
}
