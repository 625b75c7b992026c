// The erf twin against tabulated values, and the bound the GPU's erf approximation (lib/gelu-erf.wgsl: Abramowitz &
// Stegun 7.1.26) is documented with, evaluated here in float64 so that only the approximation's own error shows.
import { describe, expect, test } from 'vitest';
import { erf, geluErf } from './elementwise.ts';

// erf(x) to 16 digits (DLMF / Abramowitz & Stegun table 7.1).
const TABLE: [number, number][] = [
  [0, 0], [0.1, 0.1124629160182849], [0.5, 0.5204998778130465], [1, 0.8427007929497149],
  [1.5, 0.9661051464753108], [2, 0.9953222650189527], [3, 0.9999779095030014], [4, 0.9999999845827421],
];

/** lib/gelu-erf.wgsl's gelu, in float64. */
function geluAs(x: number): number {
  const z = Math.abs(x) * Math.SQRT1_2;
  const t = 1 / (1 + 0.3275911 * z);
  const c = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * Math.exp(-z * z);
  return 0.5 * x * (x >= 0 ? 2 - c : c);
}

describe('erf (CPU twin)', () => {
  test('matches the table to 1e-15, odd', () => {
    for (const [x, want] of TABLE) {
      expect(Math.abs(erf(x) - want), `erf(${x})`).toBeLessThan(1e-15);
      expect(erf(-x)).toBe(-erf(x));
    }
    expect(erf(7)).toBe(1);
    expect(erf(-1e9)).toBe(-1);
  });

  test('the GPU formula (A&S 7.1.26) is within 1.5e-7 of erf, so gelu within 0.75e-7 |x|', () => {
    let worst = 0;
    for (let i = -20000; i <= 20000; i++) {
      const x = i / 1000;
      const err = Math.abs(geluAs(x) - geluErf(x));
      worst = Math.max(worst, err / Math.max(1, Math.abs(x)));
      expect(err, `gelu(${x})`).toBeLessThanOrEqual(0.75e-7 * Math.abs(x) + 1e-15);
    }
    expect(worst).toBeGreaterThan(1e-8); // the bound is nearly reached: the formula is the one documented
  });
});
