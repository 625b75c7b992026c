// The seeded RNG: the engine draws each sequence's sampling uniforms from it (a request's seed gives the same ids
// on every run), and tests and benchmarks draw their inputs from it (reference/random.ts).

/**
 * mulberry32: a small, fast 32-bit PRNG returning floats in [0, 1).
 * @example
 * const rng = mulberry32(42);
 * const u = rng(); // the same first draw for seed 42, everywhere
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
