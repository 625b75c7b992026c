// The pieces both request checkers share: the engine's (request-checks.ts, GenerateRequest fields) and the OpenAI
// surface's (intab's openai-checks.ts, a body's fields under their OpenAI names). It imports only the errors and the
// contract's REQUEST_LIMITS, so the page side can use it without the engine (and its grammar compiler).

import { REQUEST_LIMITS as L } from './contract.ts';
import { InvalidRequestError } from './errors.ts';

/** Whether a field was sent: undefined and null both mean "absent" (JSON bodies send null for "the default"). */
export function given(v: unknown): boolean {
  return v !== undefined && v !== null;
}

export function bad(field: string, value: unknown, expected: string): never {
  throw new InvalidRequestError(field, value, expected);
}

/** An object of fields (not an array, not a Map or other class instance, whose own keys would be invisible). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A token id as a JSON object key (logit bias): a whole number, no sign, no exponent, no leading zero. */
export const TOKEN_ID_KEY = /^(?:0|[1-9]\d{0,15})$/;

/**
 * Stop strings: at most REQUEST_LIMITS.stop of them (refused as 'stop'), each non-empty and at most stopLength long
 * (refused as `fieldOf(i)`). An index loop: a sparse array's holes are refused too.
 */
export function checkStopStrings(stop: readonly unknown[], fieldOf: (i: number) => string): void {
  if (stop.length > L.stop) bad('stop', `${stop.length} strings`, `at most ${L.stop} stop strings`);
  for (let i = 0; i < stop.length; i++) {
    const s: unknown = stop[i];
    if (typeof s !== 'string' || s.length === 0 || s.length > L.stopLength) bad(fieldOf(i), s, `a non-empty string of at most ${L.stopLength} characters`);
  }
}
