// The one seeded RNG, for tests and benchmarks: mulberry32 is production's (@intab/gpu's random.ts, which the engine's
// samplers draw from), so a test draws exactly what a request's seed gives; randn and randomF32 are @intab/gpu's seeded
// inputs (its reference/). Re-exported here so that packages below @intab/gpu (grammar) reach them through tests'
// own package, and no second copy of the generator is ever written.
export { mulberry32 } from '@intab/gpu';
export { randn, randomF32 } from '@intab/gpu/reference';
