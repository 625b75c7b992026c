// JSON numbers as character machines: the JSON number syntax intersected with bounds and integer multipleOf, read
// digit by digit (an integer-part length counter plus "still equal to the bound's prefix" flags, and a residue for
// multipleOf). Bounds are doubles; exclusive ones become the neighbouring double first, and a bound is compared as
// its shortest decimal, so any accepted text parses to a double within the bound (rounding is monotonic).
// "-0" forms are never produced. Unbounded numbers keep to <= 300 integer digits (and exponents <= 99 with a
// <= 15-digit integer part) so that nothing parses to Infinity.

import { CharMachine, Interner, makeTrans, type Trans } from './machine.ts';

export interface NumberSpec {
  integer: boolean;
  /** Inclusive bounds (doubles); null = none. */
  min: number | null;
  max: number | null;
  /** Integer k >= 1: the value must be a multiple of k (integer outputs only). */
  multipleOf: number | null;
}

/** The largest double strictly below x. */
export function prevDouble(x: number): number {
  if (Number.isNaN(x) || x === -Infinity) return x;
  if (x === 0) return -Number.MIN_VALUE;
  const buf = new DataView(new ArrayBuffer(8));
  buf.setFloat64(0, x);
  let bits = buf.getBigUint64(0);
  bits = x > 0 ? bits - 1n : bits + 1n;
  buf.setBigUint64(0, bits);
  return buf.getFloat64(0);
}

export function nextDouble(x: number): number {
  return -prevDouble(-x);
}

interface Dec {
  int: string; // no leading zeros; "0" for zero
  frac: string; // no trailing zeros
}

/** The exact decimal digits of a nonnegative finite number's shortest representation. */
function decimal(x: number): Dec {
  let s = String(x);
  let exp = 0;
  const e = s.indexOf('e');
  if (e >= 0) {
    exp = Number(s.slice(e + 1));
    s = s.slice(0, e);
  }
  let [int, frac = ''] = s.split('.') as [string, string?];
  let digits = int + frac;
  let point = int.length + exp;
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += '0'.repeat(point - digits.length);
  int = digits.slice(0, point).replace(/^0+/, '') || '0';
  frac = digits.slice(point).replace(/0+$/, '');
  return { int, frac };
}

function bigDec(n: bigint): Dec {
  return { int: n.toString(), frac: '' };
}

/** Bounds on the magnitude of one sign's numbers. */
interface Side {
  lo: Dec; // inclusive unless loExclusive
  loExclusive: boolean;
  hi: Dec | null; // inclusive; null = unbounded
}

const MAX_DIGITS = 300;
const EXP_MANTISSA_DIGITS = 15;

// phases
const START = 0, NEG = 1, INT = 2, ZERO = 3, DOT = 4, FRAC = 5, E = 6, ESIGN = 7, EDIG = 8;

interface NState {
  phase: number;
  neg: boolean;
  k: number; // integer digits so far (capped)
  cLo: number; // integer prefix vs lo.int prefix: -1 / 0 / 1
  cHi: number;
  j: number; // fraction digits compared so far (capped)
  tLo: boolean; // fraction still equal to lo's prefix
  tHi: boolean;
  m: number; // residue for multipleOf
  e: number; // exponent digits
}

export class NumberMachine extends CharMachine {
  readonly start: number;
  private readonly states = new Interner<NState>();
  private readonly pos: Side | null;
  private readonly negSide: Side | null;
  private readonly integer: boolean;
  private readonly exponent: boolean;
  private readonly mod: number;

  constructor(spec: NumberSpec) {
    super();
    this.integer = spec.integer || spec.multipleOf !== null;
    this.mod = spec.multipleOf ?? 0;
    let min = spec.min;
    let max = spec.max;
    const bounded = min !== null || max !== null;
    this.exponent = !bounded && !this.integer;
    if (this.integer) {
      // integers: exact integer bounds; multipleOf keeps to the exactly representable range
      const lim = this.mod ? Number.MAX_SAFE_INTEGER : null;
      let lo: bigint | null = min === null ? null : BigInt(Math.ceil(min));
      let hi: bigint | null = max === null ? null : BigInt(Math.floor(max));
      if (lim !== null) {
        lo = lo === null || lo < BigInt(-lim) ? BigInt(-lim) : lo;
        hi = hi === null || hi > BigInt(lim) ? BigInt(lim) : hi;
      }
      const cap = 10n ** BigInt(MAX_DIGITS) - 1n;
      if (lo === null || lo < -cap) lo = -cap;
      if (hi === null || hi > cap) hi = cap;
      this.pos = hi < 0n ? null : { lo: bigDec(lo > 0n ? lo : 0n), loExclusive: false, hi: bigDec(hi) };
      this.negSide = lo >= 0n ? null : { lo: bigDec(hi < 0n ? -hi : 0n), loExclusive: hi >= 0n, hi: bigDec(-lo) };
    } else {
      if (min !== null && !Number.isFinite(min)) min = min < 0 ? null : Infinity;
      if (max !== null && !Number.isFinite(max)) max = max > 0 ? null : -Infinity;
      const empty = (min !== null && max !== null && min > max) || min === Infinity || max === -Infinity;
      this.pos = empty || (max !== null && max < 0) ? null : { lo: decimal(min !== null && min > 0 ? min : 0), loExclusive: false, hi: max === null ? null : decimal(max) };
      this.negSide =
        empty || (min !== null && min >= 0)
          ? null
          : { lo: max !== null && max < 0 ? decimal(-max) : decimal(0), loExclusive: !(max !== null && max < 0), hi: min === null ? null : decimal(-min) };
    }
    this.start = this.id({ phase: START, neg: false, k: 0, cLo: 0, cHi: 0, j: 0, tLo: false, tHi: false, m: 0, e: 0 });
  }

  private id(s: NState): number {
    return this.states.id(`${s.phase},${+s.neg},${s.k},${s.cLo},${s.cHi},${s.j},${+s.tLo},${+s.tHi},${s.m},${s.e}`, () => s);
  }

  private side(s: NState): Side | null {
    return s.neg ? this.negSide : this.pos;
  }

  /** Integer part finished: null if out of bounds, else the fraction-phase flags. */
  private endInt(s: NState, side: Side): { tLo: boolean; tHi: boolean } | null {
    const lenLo = side.lo.int.length;
    const relLo = s.k < lenLo ? -1 : s.k > lenLo ? 1 : s.cLo;
    if (relLo < 0) return null;
    let relHi = -1;
    if (side.hi !== null) {
      const lenHi = side.hi.int.length;
      relHi = s.k < lenHi ? -1 : s.k > lenHi ? 1 : s.cHi;
      if (relHi > 0) return null;
    }
    return { tLo: relLo === 0, tHi: relHi === 0 };
  }

  /** The value may end here (bounds and residue). */
  private endOk(s: NState, side: Side, tLo: boolean, j: number): boolean {
    if (this.mod && s.m !== 0) return false;
    if (tLo) {
      // equal to lo's prefix so far; lo has more nonzero digits -> below lo
      if (j < side.lo.frac.length) return false;
      if (side.loExclusive) return false;
    }
    return true;
  }

  accepting(q: number): boolean {
    const s = this.states.items[q]!;
    const side = this.side(s);
    if (side === null) return false;
    if (s.phase === INT || s.phase === ZERO) {
      const f = this.endInt(s, side);
      return f !== null && this.endOk(s, side, f.tLo, 0);
    }
    if (s.phase === FRAC) return this.endOk(s, side, s.tLo, s.j);
    return s.phase === EDIG;
  }

  protected compute(q: number): Trans {
    const s = this.states.items[q]!;
    const out: number[] = [];
    const go = (lo: number, hi: number, n: NState): void => {
      out.push(lo, hi, this.id(n));
    };
    const digits = (fn: (d: number) => NState | null): void => {
      for (let d = 0; d <= 9; d++) {
        const n = fn(d);
        if (n) go(0x30 + d, 0x30 + d, n);
      }
    };
    switch (s.phase) {
      case START:
        if (this.negSide) go(0x2d, 0x2d, { ...s, phase: NEG, neg: true });
        if (this.pos) this.intDigits({ ...s, phase: NEG }, this.pos, digits);
        break;
      case NEG:
        this.intDigits(s, this.negSide!, digits);
        break;
      case INT:
      case ZERO: {
        const side = this.side(s)!;
        if (s.phase === INT) this.intDigits(s, side, digits);
        const f = this.endInt(s, side);
        if (f === null) break;
        if (!this.integer) {
          const jf = (tLo: boolean, tHi: boolean): NState => ({ ...s, phase: DOT, j: 0, tLo, tHi });
          go(0x2e, 0x2e, jf(f.tLo, f.tHi));
        }
        if (this.exponent && s.k <= EXP_MANTISSA_DIGITS && this.endOk(s, side, f.tLo, 0)) {
          go(0x45, 0x45, { ...s, phase: E, cLo: 0, cHi: 0 });
          go(0x65, 0x65, { ...s, phase: E, cLo: 0, cHi: 0 });
        }
        break;
      }
      case DOT:
      case FRAC: {
        const side = this.side(s)!;
        const cap = Math.max(side.lo.frac.length, side.hi?.frac.length ?? 0);
        digits((d) => {
          let tLo = s.tLo;
          let tHi = s.tHi;
          if (tHi) {
            const b = s.j < side.hi!.frac.length ? Number(side.hi!.frac[s.j]) : 0;
            if (d > b) return null;
            if (d < b) tHi = false;
          }
          if (tLo) {
            const a = s.j < side.lo.frac.length ? Number(side.lo.frac[s.j]) : 0;
            if (d < a) return null;
            if (d > a) tLo = false;
          }
          const j = tLo || tHi ? Math.min(s.j + 1, cap) : 0;
          return { ...s, phase: FRAC, j, tLo, tHi };
        });
        if (s.phase === FRAC && this.exponent && s.k <= EXP_MANTISSA_DIGITS && this.endOk(s, side, s.tLo, s.j)) {
          const e: NState = { ...s, phase: E, j: 0, tLo: false, tHi: false };
          go(0x45, 0x45, e);
          go(0x65, 0x65, e);
        }
        break;
      }
      case E:
      case ESIGN:
      case EDIG:
        if (s.phase === E) {
          go(0x2b, 0x2b, { ...s, phase: ESIGN });
          go(0x2d, 0x2d, { ...s, phase: ESIGN });
        }
        if (s.e < 2) digits(() => ({ ...s, phase: EDIG, e: s.e + 1 }));
        break;
    }
    return makeTrans(out);
  }

  /** Transitions on the next integer digit (from NEG = nothing read yet, or INT). */
  private intDigits(s: NState, side: Side, digits: (fn: (d: number) => NState | null) => void): void {
    const first = s.phase === NEG;
    const lenLo = side.lo.int.length;
    const lenHi = side.hi?.int.length ?? Infinity;
    const cap = Math.min(MAX_DIGITS, lenHi);
    digits((d) => {
      if (first && d === 0) {
        // "0" alone; compare with the bounds as a 1-digit integer part
        return { ...s, phase: ZERO, k: 1, cLo: cmp(0, side.lo.int, 0, 0), cHi: side.hi ? cmp(0, side.hi.int, 0, 0) : -1, m: 0 };
      }
      const k = s.k + 1;
      if (k > cap) return null;
      const cLo = first ? cmp(d, side.lo.int, 0, 0) : k <= lenLo ? cmp(d, side.lo.int, s.k, s.cLo) : 1;
      const cHi = side.hi === null ? -1 : first ? cmp(d, side.hi.int, 0, 0) : k <= lenHi ? cmp(d, side.hi.int, s.k, s.cHi) : 1;
      const m = this.mod ? (s.m * 10 + d) % this.mod : 0;
      return { ...s, phase: INT, k, cLo, cHi, m };
    });
  }
}

/** Lexicographic compare of a prefix extended by digit d against bound digits at position i (given prior result). */
function cmp(d: number, bound: string, i: number, prior: number): number {
  if (prior !== 0) return prior;
  if (i >= bound.length) return 1;
  const b = Number(bound[i]);
  return d < b ? -1 : d > b ? 1 : 0;
}
