// @ts-check
// Command dispatch and argument parsing for the intab CLI.
import { benchKernels } from './bench.mjs';

const USAGE = `usage:
  intab bench kernels [--json] [--quick] [--filter TEXT] [--timeout SECONDS]
      Runs the kernel benchmark in headless Chromium on WebGPU and prints one record per case
      (JSON lines with --json): baselines first, then kernel, dtype, shape, median_ms, gbps,
      gflops, roofline_ratio, read_ratio.`;

/**
 * @param {string[]} argv
 * @returns {{ positional: string[], flags: Record<string, string | boolean> }}
 */
export function parseArgs(argv) {
  const positional = [];
  /** @type {Record<string, string | boolean>} */
  const flags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) {
      const [k, v] = a.slice(2).split('=', 2);
      if (v !== undefined) flags[k] = v;
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--') && !BOOLEAN.has(k)) flags[k] = argv[++i];
      else flags[k] = true;
    } else positional.push(a);
  }
  return { positional, flags };
}

const BOOLEAN = new Set(['json', 'quick', 'help', 'headed']);

/** @param {string[]} argv */
export async function main(argv) {
  const { positional, flags } = parseArgs(argv);
  if (flags.help || positional.length === 0) {
    console.log(USAGE);
    return positional.length === 0 && !flags.help ? 2 : 0;
  }
  const [cmd, sub] = positional;
  if (cmd === 'bench' && sub === 'kernels') return benchKernels(flags);
  console.error(`intab: unknown command '${positional.join(' ')}'\n${USAGE}`);
  return 2;
}
