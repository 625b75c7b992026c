// Sets of Unicode scalar values as sorted, disjoint, non-adjacent ranges [lo0, hi0, lo1, hi1, ...].
// Surrogates (U+D800..U+DFFF) are never members: they cannot be encoded in UTF-8, and a JSON string escape that
// denotes a lone surrogate is not text. Used by the regex compiler, GBNF char classes and the JSON-string encoder.

export type CharSet = readonly number[];

export const MAX_CP = 0x10ffff;
const SUR_LO = 0xd800;
const SUR_HI = 0xdfff;

/** Normalizes any list of [lo, hi] pairs (possibly overlapping/unsorted) and removes surrogates. */
export function charSet(pairs: readonly number[]): CharSet {
  const items: [number, number][] = [];
  for (let i = 0; i < pairs.length; i += 2) {
    const lo = pairs[i]!;
    const hi = pairs[i + 1]!;
    if (lo > hi) continue;
    if (lo < SUR_LO && hi > SUR_HI) {
      items.push([lo, SUR_LO - 1], [SUR_HI + 1, hi]);
    } else if (lo >= SUR_LO && hi <= SUR_HI) {
      continue;
    } else if (lo >= SUR_LO && lo <= SUR_HI) {
      items.push([SUR_HI + 1, hi]);
    } else if (hi >= SUR_LO && hi <= SUR_HI) {
      items.push([lo, SUR_LO - 1]);
    } else items.push([lo, hi]);
  }
  items.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of items) {
    const n = out.length;
    // merge overlapping or adjacent ranges (never across the surrogate gap: ranges never contain surrogates)
    if (n > 0 && lo <= out[n - 1]! + 1) {
      if (hi > out[n - 1]!) out[n - 1] = hi;
    } else out.push(lo, hi);
  }
  return out;
}

export const ANY: CharSet = charSet([0, MAX_CP]);

export function single(cp: number): CharSet {
  return charSet([cp, cp]);
}

export function union(a: CharSet, b: CharSet): CharSet {
  return charSet([...a, ...b]);
}

export function complement(a: CharSet): CharSet {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < a.length; i += 2) {
    if (a[i]! > next) out.push(next, a[i]! - 1);
    next = a[i + 1]! + 1;
  }
  if (next <= MAX_CP) out.push(next, MAX_CP);
  return charSet(out);
}

export function intersect(a: CharSet, b: CharSet): CharSet {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const lo = Math.max(a[i]!, b[j]!);
    const hi = Math.min(a[i + 1]!, b[j + 1]!);
    if (lo <= hi) out.push(lo, hi);
    if (a[i + 1]! < b[j + 1]!) i += 2;
    else j += 2;
  }
  return out;
}

export function has(a: CharSet, cp: number): boolean {
  for (let i = 0; i < a.length; i += 2) if (cp >= a[i]! && cp <= a[i + 1]!) return true;
  return false;
}

export function isEmpty(a: CharSet): boolean {
  return a.length === 0;
}

export function size(a: CharSet): number {
  let n = 0;
  for (let i = 0; i < a.length; i += 2) n += a[i + 1]! - a[i]! + 1;
  return n;
}

/** Adds the other-case forms of ASCII letters (the regex `i` flag; ASCII only, as our format regexes need). */
export function caseFold(a: CharSet): CharSet {
  const extra: number[] = [];
  const upper = intersect(a, [0x41, 0x5a]);
  const lower = intersect(a, [0x61, 0x7a]);
  for (let i = 0; i < upper.length; i += 2) extra.push(upper[i]! + 32, upper[i + 1]! + 32);
  for (let i = 0; i < lower.length; i += 2) extra.push(lower[i]! - 32, lower[i + 1]! - 32);
  return extra.length ? charSet([...a, ...extra]) : a;
}

// ---- the classes of ECMAScript regexes (with the u flag) ----
export const DIGIT: CharSet = charSet([0x30, 0x39]);
export const WORD: CharSet = charSet([0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a]);
export const SPACE: CharSet = charSet([
  0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f,
  0x3000, 0x3000, 0xfeff, 0xfeff,
]);
/** `.` without the s flag: everything but line terminators. */
export const DOT: CharSet = complement(charSet([0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029]));
