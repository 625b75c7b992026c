// `intab bench decode --compare REF`: this working tree's decode speed against a git ref's, in one sitting. REF is
// checked out into a temporary worktree (git worktree add --detach) and installed there (pnpm install
// --frozen-lockfile --offline, else a plain pnpm install; pnpm as pnpm.ts runs it); each tree's own CLI then runs the same
// `bench decode --json` (same flags, same model file), the trees alternating round by round (current first in even
// rounds, ref first in odd ones, so the machine's drift hits both alike), and the medians are compared. The worktree
// is removed before the summary is printed, and on failure or Ctrl-C too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Flags } from './args.ts';
import { jobFromFlags } from './job.ts';
import { resolveModel } from './model-files.ts';
import { pnpmCommand } from './pnpm.ts';
import { ROOT } from './repo.ts';

/** One line of a tree's `bench decode --json`. */
type DecodeLine = Record<string, any>;

/** Flags of the comparison itself; every other flag goes to both trees' bench decode. */
const OWN_FLAGS = ['compare', 'rounds', 'json'];

/**
 * The comparison's options from the flags of `intab bench decode --compare REF [--rounds N]`, and the argv both trees'
 * CLIs get: `bench decode`, the other flags as given (the model as an absolute path, since each CLI runs in its own
 * tree), then `--json`. The bench flags are checked here, before any worktree is made.
 */
export function compareOptions(flags: Flags): { ref: string; rounds: number; args: string[] } {
  const ref = flags.compare;
  if (typeof ref !== 'string' || ref === '') throw new Error('--compare needs a git ref to measure against, e.g. --compare HEAD~3 or --compare 6e2ddf2');
  const rounds = flags.rounds === undefined ? 3 : Number(flags.rounds);
  if (typeof flags.rounds === 'boolean' || !Number.isInteger(rounds) || rounds < 1 || rounds > 50) throw new Error('--rounds needs a whole number from 1 to 50 (runs of each tree), e.g. --rounds 5');
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
  const bench: Flags = Object.fromEntries(Object.entries(flags).filter(([k]) => !OWN_FLAGS.includes(k)));
  if (!/^https?:\/\//.test(flags.model)) bench.model = resolve(flags.model);
  jobFromFlags(bench, 'bench', resolveModel(bench.model as string));
  const args = ['bench', 'decode'];
  for (const [k, v] of Object.entries(bench)) {
    if (v === true) args.push(`--${k}`);
    else if (typeof v === 'string') args.push(...(v.startsWith('--') ? [`--${k}=${v}`] : [`--${k}`, v]));
  }
  return { ref, rounds, args: [...args, '--json'] };
}

/**
 * Runs the comparison; prints JSON lines (with or without --json): one {"type":"compare-run"} per run and bench line,
 * then one {"type":"compare"} summary (one per batch size with --batch). Resolves with the exit code.
 */
export async function benchCompare(flags: Flags): Promise<number> {
  const { ref, rounds, args } = compareOptions(flags);
  const refCommit = git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], `--compare ${ref}: not a commit of the repository at ${ROOT}`);
  const currentCommit = git(['rev-parse', 'HEAD'], 'this tree has no HEAD commit');
  const currentDirty = git(['status', '--porcelain'], 'git status failed') !== '';
  const dir = mkdtempSync(join(tmpdir(), 'intab-compare-'));
  let child: ChildProcess | undefined;
  let interrupted = false;
  let removed = false;
  const removeWorktree = () => {
    if (removed) return;
    removed = true;
    const r = spawnSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
    if (r.status === 0) return;
    // A worktree git could not remove (or one never made): its files, then git's record of it.
    rmSync(dir, { recursive: true, force: true });
    spawnSync('git', ['worktree', 'prune'], { cwd: ROOT, stdio: 'ignore' });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      // A second Ctrl-C: stop waiting for the child, clean up now.
      removeWorktree();
      process.exit(130);
    }
    interrupted = true;
    process.stderr.write(`[intab] ${signal}: stopping, removing the worktree of ${ref}\n`);
    child?.kill('SIGTERM');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', removeWorktree);

  /** Runs a command to its end, killed on Ctrl-C; its stdout is returned, its stderr goes to ours (but `quiet` lines). */
  const run = (what: string, cmd: string, argv: string[], o: { cwd: string; env?: NodeJS.ProcessEnv; quiet?: RegExp }) =>
    new Promise<string>((res, rej) => {
      if (interrupted) return rej(new Error('interrupted'));
      const p = spawn(cmd, argv, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
      child = p;
      let out = '';
      let err = '';
      p.stdout.setEncoding('utf8').on('data', (s) => (out += s));
      p.stderr.setEncoding('utf8').on('data', (s) => {
        err += s;
        for (const line of s.split('\n')) if (line && !o.quiet?.test(line)) process.stderr.write(`[${what}] ${line}\n`);
      });
      p.on('error', rej);
      p.on('close', (code, signal) => {
        child = undefined;
        if (interrupted) rej(new Error('interrupted'));
        else if (code === 0) res(out);
        else rej(new Error(`${what} failed (${signal ?? `exit ${code}`}): ${(err.trim() || out.trim()).split('\n').slice(-3).join(' | ')}`));
      });
    });

  try {
    process.stderr.write(`[intab] compare: ${ref} (${refCommit.slice(0, 9)}) checked out in ${dir}\n`);
    git(['worktree', 'add', '--detach', '--quiet', dir, refCommit], `git worktree add ${dir} ${refCommit} failed`);
    const clis = { current: cliOf(ROOT, 'this tree'), ref: cliOf(dir, `--compare ${ref} (${refCommit.slice(0, 9)})`) };
    const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };
    const pnpm = (a: string[]) => {
      // The ref's own pnpm (its package.json's packageManager), as every pnpm the repository runs.
      const { command, args: argv } = pnpmCommand(dir, a);
      return run('pnpm install', command, argv, { cwd: dir, env });
    };
    await pnpm(['install', '--frozen-lockfile', '--offline']).catch((e) => {
      if (interrupted) throw e;
      // An older ref's lockfile may not match its package.json (or the store lacks a package): a plain install.
      process.stderr.write('[intab] the offline install failed; installing from the registry\n');
      return pnpm(['install']);
    });

    const trees = { current: { root: ROOT, commit: currentCommit }, ref: { root: dir, commit: refCommit } };
    const runs: { tree: 'current' | 'ref'; round: number; line: DecodeLine }[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const tree of round % 2 === 0 ? (['current', 'ref'] as const) : (['ref', 'current'] as const)) {
        const { root, commit } = trees[tree];
        process.stderr.write(`[intab] round ${round + 1}/${rounds}: bench decode in the ${tree} tree\n`);
        const out = await run(`${tree} bench decode`, process.execPath, [clis[tree], ...args], { cwd: root, quiet: /^loading / });
        const lines = out.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l) as DecodeLine).filter((l) => l.bench === 'decode');
        if (!lines.length) throw new Error(`the ${tree} tree's bench decode (${commit.slice(0, 9)}) printed no decode line`);
        for (const line of lines) {
          runs.push({ tree, round, line });
          const f = figures(line);
          print({ type: 'compare-run', bench: 'decode', tree, ref, commit, round, ...('batch' in line ? { batch: line.batch } : {}), tok_s: f.tokS, prefill_tok_s: f.prefillTokS, ttft_ms: f.ttftMs, load_ms: line.load_ms ?? null });
        }
      }
    }
    removeWorktree();

    const batches = [...new Set(runs.map((r) => r.line.batch))];
    for (const batch of batches) {
      const of = (tree: 'current' | 'ref') => runs.filter((r) => r.tree === tree && r.line.batch === batch).map((r) => figures(r.line));
      const cur = of('current');
      const old = of('ref');
      const med = (xs: (number | null)[]) => median(xs.filter((x): x is number => typeof x === 'number'));
      const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? round(a / b) : null);
      const [curTok, refTok] = [med(cur.map((f) => f.tokS)), med(old.map((f) => f.tokS))];
      const [curPre, refPre] = [med(cur.map((f) => f.prefillTokS)), med(old.map((f) => f.prefillTokS))];
      const first: DecodeLine = runs.find((r) => r.tree === 'current' && r.line.batch === batch)?.line ?? {};
      print({
        type: 'compare',
        bench: 'decode',
        ref,
        ref_commit: refCommit,
        current_commit: currentCommit,
        current_dirty: currentDirty,
        rounds,
        ...(batch !== undefined ? { batch } : {}),
        tok_s_field: batch !== undefined ? 'aggregate_decode_tok_s' : 'decode_tok_s',
        current_tok_s: curTok,
        ref_tok_s: refTok,
        ratio: ratio(curTok, refTok),
        round_ratios: cur.map((c, i) => ratio(c.tokS, old[i]?.tokS ?? null)),
        current_prefill_tok_s: curPre,
        ref_prefill_tok_s: refPre,
        prefill_ratio: ratio(curPre, refPre),
        current_ttft_ms: med(cur.map((f) => f.ttftMs)),
        ref_ttft_ms: med(old.map((f) => f.ttftMs)),
        samples: { current_tok_s: cur.map((f) => f.tokS), ref_tok_s: old.map((f) => f.tokS), current_prefill_tok_s: cur.map((f) => f.prefillTokS), ref_prefill_tok_s: old.map((f) => f.prefillTokS) },
        model: first.model ?? null,
        adapter: first.adapter ?? null,
        worktree: dir,
      });
    }
    return 0;
  } catch (err) {
    if (interrupted) return 130;
    throw err;
  } finally {
    child?.kill('SIGTERM');
    removeWorktree();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', removeWorktree);
  }
}

/**
 * The figures compared, from one bench decode line: decode tok/s (the single stream's decode_tok_s; with --batch the
 * steady-state aggregate_decode_tok_s), prefill tok/s and TTFT.
 */
function figures(line: DecodeLine): { tokS: number | null; prefillTokS: number | null; ttftMs: number | null } {
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  return { tokS: num('batch' in line ? line.aggregate_decode_tok_s : line.decode_tok_s), prefillTokS: num(line.prefill_tok_s), ttftMs: num(line.ttft_ms) };
}

/** A tree's CLI entry: the `intab` bin of its packages/cli/package.json. */
function cliOf(root: string, name: string): string {
  const file = join(root, 'packages/cli/package.json');
  if (!existsSync(file)) throw new Error(`${name} has no intab CLI (no packages/cli/package.json): pick a later ref`);
  const pkg = JSON.parse(readFileSync(file, 'utf8'));
  return join(root, 'packages/cli', typeof pkg.bin === 'string' ? pkg.bin : (pkg.bin?.intab ?? 'bin/intab.mjs'));
}

/** Runs git in this repository; its trimmed stdout, or an Error with `message` and git's own words. */
function git(argv: string[], message: string): string {
  const r = spawnSync('git', argv, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${message}${r.stderr?.trim() ? ` (${r.stderr.trim()})` : ''}`);
  return r.stdout.trim();
}

function print(record: unknown): void {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

/** Median of the numbers, rounded; null for none. */
function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return round(s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2);
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}
