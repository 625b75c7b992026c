// Small pure helpers of the schema compiler: JSON types of values, canonical (key-sorted) serialization for value
// equality, oneOf disjointness signatures and the arithmetic behind multipleOf (json-depth.ts has the depth check every
// schema passes).


export const TYPES = ['null', 'boolean', 'object', 'array', 'string', 'number', 'integer'] as const;
export type TypeName = (typeof TYPES)[number];

export const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$schema', '$id', '$anchor', '$defs', 'definitions']);
export const ENUM_SIBLINGS_FREE = new Set([...ANNOTATIONS, 'enum', 'const', 'type', 'id', 'contentMediaType', 'contentEncoding', '$dynamicAnchor', '$vocabulary']);

export interface Signature {
  types: Set<TypeName>;
  values: string[] | null;
  discriminators: Map<string, string[]>;
  required: Set<string>;
  closed: Set<string> | null;
}

export function sigDisjoint(a: Signature, b: Signature): boolean {
  const shared = [...a.types].filter((t) => b.types.has(t));
  if (shared.length === 0) return true;
  if (a.values && b.values && !a.values.some((v) => b.values!.includes(v))) return true;
  if (shared.every((t) => t === 'object')) {
    for (const [k, va] of a.discriminators) {
      const vb = b.discriminators.get(k);
      if (vb && !va.some((v) => vb.includes(v))) return true;
    }
    // one requires a property the other (closed) cannot have
    for (const [x, y] of [[a, b], [b, a]] as const) {
      if (y.closed && [...x.required].some((n) => !y.closed!.has(n))) return true;
    }
  }
  return false;
}

export function jsonType(v: unknown): TypeName {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  return 'object';
}

/** A serialization equal for deep-equal JSON values (object keys sorted). */
export function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`;
}

export function dedupe(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const c = canonical(v);
    if (seen.has(c)) return false;
    seen.add(c);
    return true;
  });
}

/**
 * n when m is (the double nearest to) 1/n and x / m is exactly x * n for every integer x with |x * n| <= 2^53,
 * i.e. |m * n - 1| < 2^-55 (checked exactly with BigInt); else null.
 */
export function reciprocal(m: number): number | null {
  if (!(m > 0 && m < 1)) return null;
  const n = Math.round(1 / m);
  if (n > 2 ** 20) return null;
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, m);
  const bits = view.getBigUint64(0);
  const exp = Number((bits >> 52n) & 0x7ffn) - 1075; // m = mant * 2^exp
  const mant = (bits & ((1n << 52n) - 1n)) | (1n << 52n);
  if (exp >= 0) return null;
  // |mant * n * 2^exp - 1| < 2^-55  <=>  |mant * n - 2^-exp| * 2^55 < 2^-exp
  const diff = mant * BigInt(n) - (1n << BigInt(-exp));
  const abs = diff < 0n ? -diff : diff;
  return abs * (1n << 55n) < 1n << BigInt(-exp) ? n : null;
}

export function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export function lcm(a: number, b: number): number {
  return (a / gcd(a, b)) * b;
}
