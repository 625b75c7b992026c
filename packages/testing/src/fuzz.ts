// The fuzzers' loop: seeded cases, a case count and a time budget from the environment, the outcome of every case (a
// clean result or a typed error, by name), what counts as a crash (any other exception), and each case's time, so that
// a hang shows up as a case over the per-case bound. The fuzzers of @intab/grammar, @intab/model and intab
// (packages/*/src/fuzz) all run through this one loop.
//
//   INTAB_FUZZ_CASES=100000 npx vitest run --project node packages/grammar/src/fuzz packages/model/src/fuzz
//                              (default: 10,000 per target)
//   INTAB_FUZZ_SECONDS=600 …   a time budget per target (default 40 s, none when INTAB_FUZZ_CASES is given; a run it
//                              stops says so: stoppedByTime in its [fuzz] line)
//   INTAB_FUZZ_SEED=7 …        another seed (default: each target's own fixed seed)
//   INTAB_FUZZ_TRACE=/tmp/case …  writes each case to that file before running it (the last one is the hang)

import { mulberry32 } from './random.ts';

/** Helpers over one generator. */
export interface Random {
  readonly next: () => number;
  /** An integer in [0, n). */
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  chance(p: number): boolean;
}

export function random(seed: number): Random {
  const next = mulberry32(seed);
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)]!,
    chance: (p) => next() < p,
  };
}

export interface FuzzTarget<T> {
  /** For the report line and crash messages. */
  readonly name: string;
  readonly seed: number;
  /** Cases by default (INTAB_FUZZ_CASES overrides). */
  readonly cases?: number;
  /** Makes case i. The generator is shared by all cases of a run, so a run is one deterministic sequence. */
  generate(r: Random, i: number): T;
  /** Runs one case; returns its outcome label ('compiled', 'loaded', ...). Throwing is fine when `typed` says so. */
  run(input: T): string | Promise<string>;
  /** Whether an exception is one of the typed errors this target may end in (anything else is a crash). */
  typed(e: unknown): boolean;
  /** A short description of a case for a crash report. */
  show(input: T): string;
}

export interface FuzzReport {
  readonly target: string;
  readonly seed: number;
  readonly cases: number;
  /** True when the time budget ended the run before the case count. */
  readonly stoppedByTime: boolean;
  /** Outcomes by label: clean results and typed errors (by name). */
  readonly outcomes: Record<string, number>;
  /** Milliseconds spent per outcome label (where the run's time goes). */
  readonly msByOutcome: Record<string, number>;
  readonly crashes: string[];
  readonly totalMs: number;
  readonly slowestMs: number;
  readonly slowestCase: string;
}

const num = (v: string | undefined) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : undefined);

/**
 * The case count and time budget of a run: by default 10,000 cases within 40 s (a safety net for slow machines); a
 * count asked for (INTAB_FUZZ_CASES) runs in full unless INTAB_FUZZ_SECONDS bounds it too.
 */
export function fuzzSettings(defaultCases = 10_000): { cases: number; seconds: number; seed: number | undefined } {
  const cases = num(process.env.INTAB_FUZZ_CASES);
  return { cases: cases ?? defaultCases, seconds: num(process.env.INTAB_FUZZ_SECONDS) ?? (cases === undefined ? 40 : Infinity), seed: num(process.env.INTAB_FUZZ_SEED) };
}

/** The Vitest timeout of a fuzz test: its time budget and a minute more (none for a run of a count asked for). */
export function fuzzTestTimeout(): number {
  const { seconds } = fuzzSettings();
  return Number.isFinite(seconds) ? seconds * 1000 + 60_000 : 2 ** 31 - 1;
}

/** Runs a target's cases (up to the count or the time budget) and tallies them; never throws for a case. */
export async function fuzz<T>(target: FuzzTarget<T>): Promise<FuzzReport> {
  const settings = fuzzSettings(target.cases);
  const seed = settings.seed ?? target.seed;
  const r = random(seed);
  const outcomes: Record<string, number> = {};
  const msByOutcome: Record<string, number> = {};
  const crashes: string[] = [];
  let slowestMs = 0;
  let slowestCase = '';
  const t0 = performance.now();
  const deadline = t0 + settings.seconds * 1000;
  let i = 0;
  for (; i < settings.cases && performance.now() < deadline; i++) {
    const input = target.generate(r, i);
    const c0 = performance.now();
    if (process.env.INTAB_FUZZ_TRACE) (await import('node:fs')).writeFileSync(process.env.INTAB_FUZZ_TRACE, `case ${i}: ${target.show(input)}`);
    let outcome: string;
    try {
      outcome = await target.run(input);
    } catch (e) {
      if (target.typed(e)) outcome = (e as Error).name;
      else {
        outcome = 'crash';
        if (crashes.length < 20) crashes.push(`case ${i}: ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 300)}\n    input: ${target.show(input).slice(0, 400)}\n    ${String((e as Error)?.stack).split('\n').slice(1, 4).join('\n    ')}`);
      }
    }
    const ms = performance.now() - c0;
    if (ms > slowestMs) {
      slowestMs = ms;
      slowestCase = `case ${i} (${outcome}): ${target.show(input).slice(0, 200)}`;
    }
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    msByOutcome[outcome] = (msByOutcome[outcome] ?? 0) + ms;
  }
  for (const k of Object.keys(msByOutcome)) msByOutcome[k] = Math.round(msByOutcome[k]!);
  const report: FuzzReport = {
    target: target.name,
    seed,
    cases: i,
    stoppedByTime: i < settings.cases,
    outcomes,
    msByOutcome,
    crashes,
    totalMs: Math.round(performance.now() - t0),
    slowestMs: Math.round(slowestMs),
    slowestCase,
  };
  console.log(`[fuzz] ${JSON.stringify({ ...report, crashes: report.crashes.length, slowestCase: undefined })}`);
  return report;
}
