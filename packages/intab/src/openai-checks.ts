// The checks of an OpenAI request body's fields (chat and legacy completions) on their way to a GenerateRequest: types
// and ranges as OpenAI states them, and where OpenAI states none (stop's count and length, logit_bias's size, top_k,
// min_p, repetition_penalty) the engine's REQUEST_LIMITS. A bad field is refused here, before the worker, as an
// InvalidRequestError whose field is the body's own spelling ('logit_bias["abc"]', 'messages[2].content'), which the
// HTTP surfaces send back as the 400's `param` (openai-server.ts's errorResponse).

import { REQUEST_LIMITS as L } from '@intab/engine/contract';
import { TOKEN_ID_KEY, bad, checkRole, checkStopStrings, given, isRecord, templateRole } from '@intab/engine/field-checks';
import { checkJsonDepth } from '@intab/grammar/json-depth';
import { GrammarBudgetError } from '@intab/grammar/errors';

/** A request body, as parsed JSON (or what a caller of chat.completions.create passed). */
export type Body = Record<string, unknown>;

/** Whether a field was sent: OpenAI's clients send null for "the default". */
export const present = given;
export { bad };
/** A message's role: one of the engine's CHAT_ROLES ('developer' among them), refused naming `messages[i].role`. */
export { checkRole, templateRole };

/** A JSON object (not an array, not null). */
export function isObject(v: unknown): v is Body {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An object of fields as JSON makes them (a Map or another class's instance would hide its entries from the checks). */
export const isPlainObject: (v: unknown) => v is Body = isRecord;

/** The body itself: a JSON object, else a refusal of the whole request (param null over HTTP). */
export function bodyOf(p: unknown, expected: string): Body {
  if (!isObject(p)) bad('request', p, expected);
  return p;
}

/** A number field in [lo, hi] (lo excluded when `open`; whole when `integer`); undefined when absent. */
export function numberField(b: Body, field: string, o: { lo: number; hi: number; expected: string; integer?: boolean; open?: boolean }): number | undefined {
  const v = b[field];
  if (!present(v)) return undefined;
  const ok = typeof v === 'number' && Number.isFinite(v) && (o.open ? v > o.lo : v >= o.lo) && v <= o.hi && (!o.integer || Number.isSafeInteger(v));
  if (!ok) bad(field, v, o.expected);
  return v as number;
}

export function booleanField(b: Body, field: string, what = ''): boolean | undefined {
  const v = b[field];
  if (!present(v)) return undefined;
  if (typeof v !== 'boolean') bad(field, v, `true or false${what ? ` (${what})` : ''}`);
  return v;
}

/** A key inside a field name, cut so that a hostile key cannot make the field or the message huge. */
function shownKey(k: string): string {
  return JSON.stringify(k.length > 24 ? `${k.slice(0, 21)}...` : k);
}

/** logit_bias: `{ "<token id>": bias }`, biases in [-100, 100], at most REQUEST_LIMITS.logitBiasEntries entries. */
export function logitBiasField(b: Body): Record<number, number> | undefined {
  const v = b.logit_bias;
  if (!present(v)) return undefined;
  if (!isPlainObject(v)) bad('logit_bias', v, 'an object { "<token id>": bias }');
  const entries = Object.entries(v);
  if (entries.length > L.logitBiasEntries) bad('logit_bias', `${entries.length} entries`, `an object of at most ${L.logitBiasEntries} { "<token id>": bias } entries`);
  const bias: Record<number, number> = {};
  for (const [k, x] of entries) {
    // Canonical ids only: Number() would read '1e2', ' 7' and '0x10' as ids too.
    if (!TOKEN_ID_KEY.test(k)) bad(`logit_bias[${shownKey(k)}]`, k, 'a key that is a token id (a non-negative integer, as digits)');
    if (typeof x !== 'number' || !(x >= -L.logitBias && x <= L.logitBias)) bad(`logit_bias[${shownKey(k)}]`, x, `a bias from -${L.logitBias} to ${L.logitBias}`);
    bias[Number(k)] = x;
  }
  return bias;
}

/** stop: a string or an array of at most REQUEST_LIMITS.stop non-empty strings, each at most stopLength long. */
export function stopField(b: Body): string[] | undefined {
  const v = b.stop;
  if (!present(v)) return undefined;
  const stop: unknown[] = typeof v === 'string' ? [v] : Array.isArray(v) ? v : bad('stop', v, `a string or an array of at most ${L.stop} strings`);
  checkStopStrings(stop, (i) => (typeof v === 'string' ? 'stop' : `stop[${i}]`));
  return [...stop] as string[]; // a copy: the body stays the caller's
}

/**
 * Refuses a schema nested deeper than the grammar compiler's nesting budget (objects and arrays), or one that contains
 * itself: it would be refused there anyway, and here it is refused before it is cloned to the worker (structured clone
 * recurses, and overflows long before JSON.parse does).
 */
export function checkDepth(field: string, value: unknown): void {
  try {
    checkJsonDepth(value, 'the schema nests objects and arrays');
  } catch (err) {
    if (!(err instanceof GrammarBudgetError)) throw err;
    bad(field, err.requested === Infinity ? 'a value that contains itself' : `a value nested over ${err.limit} levels deep`, `a JSON Schema nested at most ${err.limit} levels deep`);
  }
}
