// The device kit's driver: `intab-node.mjs kit-run`, which the kit's run.sh starts once it has unpacked Node and Dawn
// and chosen Dawn's backend (src/device-kit.ts writes the kit). Each step is this same file run again as a child (a
// fresh Dawn instance per step, a step that crashes or hangs costs only itself): `bench kernels` (every kernel against
// its CPU twin, then the kernel benchmark), `make-model` for each model shape and weight type (in parallel: CPU work),
// and `bench decode` on each model at batch 1 and 4. Every JSON line goes to stdout and to the results file as it
// comes, so a run cut short still leaves what it measured; the children's stderr goes to stderr and the log.

import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, hostname, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Flags } from '../src/args.ts';

/** The model shapes of the full run (make-model --like), smallest first. */
export const KIT_SHAPES = ['smollm2-135m', 'qwen3-0.6b', 'llama-3.2-1b'] as const;
/** The weight types; f16 runs only where the adapter has shader-f16. */
export const KIT_DTYPES = ['q4_0', 'q8_0', 'f16'] as const;
/** Batch sizes of every bench decode. */
export const KIT_BATCHES = '1,4';

type Line = Record<string, unknown>;

/** What one kit run does, from kit-run's flags. */
export interface KitPlan {
  quick: boolean;
  shapes: string[];
  dtypes: string[];
  /** make-model --layers in quick runs (the shapes' widths and vocabulary, fewer layers). */
  layers: number | undefined;
  promptTokens: number;
  maxTokens: number;
  filter: string | undefined;
  /** Seconds before a step is killed. */
  timeouts: { kernels: number; makeModel: number; decode: number };
}

function listFlag(flags: Flags, name: string, known: readonly string[], dflt: string[]): string[] {
  const v = flags[name];
  if (v === undefined) return dflt;
  const items = typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter(Boolean) : [];
  const bad = items.filter((s) => !known.includes(s));
  if (!items.length || bad.length) throw new Error(`--${name} takes a comma-separated subset of ${known.join(',')}${bad.length ? ` (not ${bad.join(', ')})` : ''}, e.g. --${name} ${known[0]}`);
  return items;
}

/** The plan for `flags` (checked before anything runs). */
export function kitPlan(flags: Flags): KitPlan {
  const quick = Boolean(flags.quick);
  return {
    quick,
    shapes: listFlag(flags, 'shapes', KIT_SHAPES, quick ? ['smollm2-135m'] : [...KIT_SHAPES]),
    dtypes: listFlag(flags, 'dtypes', KIT_DTYPES, [...KIT_DTYPES]),
    layers: quick ? 2 : undefined,
    promptTokens: quick ? 8 : 128,
    maxTokens: quick ? 8 : 128,
    filter: typeof flags.filter === 'string' ? flags.filter : undefined,
    timeouts: quick ? { kernels: 600, makeModel: 300, decode: 300 } : { kernels: 3600, makeModel: 1800, decode: 1800 },
  };
}

/** The adapter's name as the engine's records give it (vendor, architecture, description). */
function adapterName(device: Line): string {
  return [device.vendor, device.architecture, device.description].filter((s) => typeof s === 'string' && s).join(' ') || String(device.device ?? 'unknown');
}

// ---- children ----

const running = new Set<ChildProcess>();

/**
 * Runs this file again with `args`; every stdout line that is JSON goes to `onLine`, anything else and stderr to
 * `log`. Resolves with the exit code ('timeout' when it ran past `timeoutS` and was killed).
 */
function runChild(args: string[], onLine: (line: Line) => void, log: (text: string) => void, timeoutS: number): Promise<number | 'timeout'> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [process.argv[1], ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutS * 1000);
    let rest = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop()!;
      for (const text of parts) {
        let line: unknown;
        try {
          line = JSON.parse(text);
        } catch {
          line = undefined;
        }
        if (line && typeof line === 'object' && !Array.isArray(line)) onLine(line as Line);
        else if (text.trim()) log(`${text}\n`);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => log(chunk));
    child.on('error', (err) => {
      clearTimeout(timer);
      running.delete(child);
      fail(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      if (rest.trim()) log(`${rest}\n`);
      done(timedOut ? 'timeout' : (code ?? (signal ? 1 : 0)));
    });
  });
}

/** Runs `jobs` with at most `limit` at once, in order of start. */
async function pool<T>(items: T[], limit: number, job: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await job(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

// ---- the run ----

/**
 * `kit-run [--quick] --dawn FILE --dawn-backend B --work DIR --results FILE [--log FILE] [--kit-id ID] [--filter TEXT]
 * [--shapes LIST] [--dtypes LIST]`: every step of the kit; resolves with 0 when every check passed and every step ran.
 */
export async function runDeviceKit(flags: Flags): Promise<number> {
  const plan = kitPlan(flags);
  for (const f of ['dawn', 'dawn-backend', 'work', 'results']) {
    if (typeof flags[f] !== 'string') throw new Error(`kit-run needs --${f} (the kit's run.sh passes it: run run.sh rather than kit-run)`);
  }
  const dawn = resolve(String(flags.dawn));
  const backend = String(flags['dawn-backend']);
  const work = resolve(String(flags.work));
  const results = resolve(String(flags.results));
  const logFile = typeof flags.log === 'string' ? resolve(flags.log) : undefined;
  const kitId = typeof flags['kit-id'] === 'string' ? flags['kit-id'] : null;
  const models = join(work, 'models');
  mkdirSync(models, { recursive: true });
  writeFileSync(results, '');

  const started = Date.now();
  const emit = (line: Line) => {
    const text = `${JSON.stringify(line)}\n`;
    process.stdout.write(text);
    appendFileSync(results, text);
  };
  const log = (text: string) => {
    process.stderr.write(text);
    if (logFile) appendFileSync(logFile, text);
  };
  const stop = () => {
    for (const c of running) c.kill('SIGKILL');
    process.exit(130);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  const dawnArgs = ['--dawn', dawn, '--dawn-backend', backend];
  const failedSteps: Line[] = [];
  const stepFailed = (step: string, code: number | 'timeout', extra: Line = {}) => {
    const line = { kit: 'step-failed', step, ...extra, ...(code === 'timeout' ? { timed_out: true } : { exit_code: code }) };
    failedSteps.push(line);
    emit(line);
  };
  emit({ kit: 'start', kit_id: kitId, quick: plan.quick, dawn_backend: backend, shapes: plan.shapes, dtypes: plan.dtypes, batches: KIT_BATCHES, node: process.version, exec_path: process.execPath, host: hostname(), cpus: availableParallelism(), memory_bytes: totalmem(), started: new Date(started).toISOString() });

  // ---- kernels: the checks (each kernel against its CPU twin), then the benchmark ----
  let device: Line | undefined;
  let adapter: string | null = null;
  const checks: Line[] = [];
  const cases: Line[] = [];
  const kernelArgs = ['bench', 'kernels', '--json', ...dawnArgs, ...(plan.quick ? ['--quick'] : []), ...(plan.filter ? ['--filter', plan.filter] : [])];
  const kernelCode = await runChild(
    kernelArgs,
    (line) => {
      if (line.type === 'device') {
        device = line;
        adapter = adapterName(line);
      }
      if (line.type === 'check') checks.push(line);
      if (line.type === 'case') cases.push(line);
      emit(adapter && line.adapter === undefined ? { ...line, adapter } : line);
    },
    log,
    plan.timeouts.kernels,
  );
  if (kernelCode !== 0) stepFailed('bench kernels', kernelCode);
  const failedChecks = checks.filter((c) => c.ok !== true).map((c) => c.name);
  const features = (device?.features ?? {}) as { shaderF16?: boolean };
  const shaderF16 = features.shaderF16 === true;

  // ---- models: make-model per shape and type (CPU work, in parallel; kept for the next run of this kit) ----
  // Without an adapter every decode would fail as the kernels did: no models are made (the full run's take minutes).
  const dtypes = device ? plan.dtypes.filter((d) => d !== 'f16' || shaderF16) : [];
  if (!device) emit({ kit: 'skipped', step: 'make-model, bench decode', reason: 'bench kernels got no adapter (its error is in the log)' });
  else if (dtypes.length < plan.dtypes.length) emit({ kit: 'skipped', step: 'make-model, bench decode', dtype: 'f16', reason: 'the adapter has no shader-f16' });
  const wanted = plan.shapes.flatMap((like) => dtypes.map((dtype) => ({ like, dtype, file: join(models, `${like}-${dtype}${plan.layers ? `-L${plan.layers}` : ''}.gguf`) })));
  const made: typeof wanted = [];
  // f16 1B models take ~2.5 GB each while written: a few at a time, by cores and memory.
  const parallel = Math.max(1, Math.min(availableParallelism(), Math.floor(totalmem() / 8e9) || 1, 8));
  await pool(wanted, parallel, async (m) => {
    const sidecar = `${m.file}.json`;
    if (existsSync(m.file) && existsSync(sidecar)) {
      const before = JSON.parse(readFileSync(sidecar, 'utf8')) as Line;
      if (before.kit_id === kitId && before.bytes === statSync(m.file).size) {
        emit({ kit: 'model', ...before, reused: true });
        made.push(m);
        return;
      }
    }
    const t0 = Date.now();
    let written: Line | undefined;
    const args = ['make-model', '--like', m.like, '--dtype', m.dtype, '--out', m.file, ...(plan.layers ? ['--layers', String(plan.layers)] : [])];
    const code = await runChild(args, (line) => (written = line), log, plan.timeouts.makeModel);
    if (code !== 0 || !written) return stepFailed('make-model', code === 0 ? 1 : code, { like: m.like, dtype: m.dtype });
    const line = { ...written, kit_id: kitId, make_ms: Date.now() - t0 };
    writeFileSync(sidecar, JSON.stringify(line));
    emit({ kit: 'model', ...line, reused: false });
    made.push(m);
  });

  // ---- decode: one model at a time (the GPU is the thing measured), batch 1 and 4 ----
  const decodes: Line[] = [];
  for (const m of wanted.filter((w) => made.includes(w))) {
    const args = ['bench', 'decode', '--model', m.file, '--batch', KIT_BATCHES, '--prompt-tokens', String(plan.promptTokens), '--max-tokens', String(plan.maxTokens), '--json', ...dawnArgs];
    const code = await runChild(
      args,
      (line) => {
        const tagged = { ...line, like: m.like };
        if (line.bench === 'decode') decodes.push(tagged);
        emit(tagged);
      },
      log,
      plan.timeouts.decode,
    );
    if (code !== 0) stepFailed('bench decode', code, { like: m.like, dtype: m.dtype });
  }

  const ok = failedSteps.length === 0 && checks.length > 0 && failedChecks.length === 0;
  emit({
    kit: 'summary',
    ok,
    adapter,
    dawn_backend: backend,
    shader_f16: shaderF16,
    checks: checks.length,
    checks_failed: failedChecks,
    kernel_cases: cases.length,
    models: made.length,
    decode_lines: decodes.length,
    failed_steps: failedSteps.length,
    wall_s: Math.round((Date.now() - started) / 100) / 10,
  });
  return ok ? 0 : 1;
}
