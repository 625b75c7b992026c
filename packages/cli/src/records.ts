// How the CLI prints the records a run reports (tokens, done lines, bench lines, kernel cases), in one place for the
// browser runtime (generate.ts, bench-kernels.ts through browser.ts) and the Node runtime (packages/cli/node), so both
// print the same lines. `extra` fields (the Node runtime's "runtime" and "dawn_backend") go into every line but tokens.
import type { Flags } from './args.ts';
import type { JobMode } from './job.ts';

/** A record as a page or the Node runtime reports it: its `type` and its fields (printed as they are). */
export type PageRecord = Record<string, any>;

/** Columns of intab bench speculative without --json. */
const SPEC_COLUMNS = ['prompt', 'method', 'k', 'adaptive', 'acceptance_rate', 'tokens_per_target_step', 'verify_decode_cost_ratio', 'draft_ms_per_step', 'decode_tok_s', 'plain_decode_tok_s', 'speedup', 'identical_ids'];

/** Columns of intab bench kernels without --json. */
const KERNEL_COLUMNS = ['kernel', 'dtype', 'model', 'op', 'shape', 'median_ms', 'gbps', 'gflops', 'roofline_ratio', 'read_ratio'];

/**
 * The printer of a model job's records (intab generate, bench decode, bench speculative): progress and errors are
 * the runtime's to print.
 */
export function modelRecordPrinter(flags: Flags, mode: JobMode, extra: Record<string, unknown> = {}): (r: PageRecord) => void {
  let header = false;
  return (r) => {
    if (mode !== 'generate' && r.type === 'token') return;
    if (r.type !== 'token') r = { ...r, ...extra };
    if (flags.json) {
      const { type, ...rest } = r;
      process.stdout.write(`${JSON.stringify(mode === 'bench' && type === 'done' ? { bench: 'decode', ...rest } : rest)}\n`);
    } else if (r.type === 'token') {
      // Several streams interleave their tokens: plain text is only readable for one.
      if (r.stream === undefined) process.stdout.write(r.text ?? `${r.id} `);
    } else if (r.type === 'done') {
      process.stdout.write(r.stream === undefined ? `\n${JSON.stringify(r)}\n` : `stream ${r.stream}: ${JSON.stringify(r)}\n`);
    } else if (r.type === 'bench' && r.bench === 'speculative') {
      if (!header) {
        console.log(SPEC_COLUMNS.join('\t'));
        header = true;
      }
      // A method the backend cannot run: its line says why.
      console.log(r.skipped !== undefined ? `${r.prompt}\t${r.method}\tskipped: ${r.skipped}` : SPEC_COLUMNS.map((c) => r[c]).join('\t'));
    } else if (r.type === 'summary' || r.type === 'bench') {
      process.stdout.write(`${JSON.stringify(r)}\n`);
    }
  };
}

/**
 * The printer of intab bench kernels' records (examples/kernel-lab: device, check, baseline, case, error): JSON lines
 * with --json, else a table of the cases and key=value lines for the rest. `failed()` tells whether an error or a
 * failed check was reported.
 */
export function kernelRecordPrinter(flags: Flags, extra: Record<string, unknown> = {}): { onRecord: (r: PageRecord) => void; failed: () => boolean } {
  let failed = false;
  let header = false;
  return {
    failed: () => failed,
    onRecord(r) {
      if (r.type === 'error' || (r.type === 'check' && r.ok === false)) failed = true;
      if (r.type === 'finished') return;
      r = { ...r, ...extra };
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(r)}\n`);
      } else if (r.type === 'case') {
        if (!header) {
          console.log(KERNEL_COLUMNS.join('\t'));
          header = true;
        }
        console.log(KERNEL_COLUMNS.map((c) => r[c]).join('\t'));
      } else if (r.type !== 'done') {
        console.log(Object.entries(r).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' '));
      }
    },
  };
}

/** The stderr line of a loading progress record (stdout holds only the records). */
export function progressLine(r: { model?: string; loaded: number; total: number }): string {
  return `loading ${r.model === 'draft' ? 'draft ' : ''}${Math.round((100 * r.loaded) / r.total)}% of ${(r.total / 2 ** 20).toFixed(1)} MiB\n`;
}
