// The CLI's argument parsing, on its own so the Node runtime's bundle (packages/cli/node) parses flags the same way
// without pulling in the browser driver (Vite, Playwright).

/** Parsed flags: `--name value`, `--name=value`, or `--name` alone (true). */
export type Flags = Record<string, string | boolean>;

const BOOLEAN = new Set(['json', 'quick', 'help', 'headed', 'ignore-eos', 'no-adaptive', 'json-object', 'lenient', 'no-decode', 'preload', 'persist', 'no-node', 'no-prefix-cache']);

/**
 * Positional words and flags of a command line.
 * @example
 * parseArgs(['bench', 'decode', '--model', 'm.gguf', '--json']); // { positional: ['bench', 'decode'], flags: { model: 'm.gguf', json: true } }
 */
export function parseArgs(argv: string[]): { positional: string[]; flags: Flags } {
  const positional: string[] = [];
  const flags: Flags = {};
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

/** A whole-number flag in [min, max], or `dflt` when it is absent; anything else is an error that shows an example. */
export function wholeFlag(flags: Flags, name: string, dflt: number, min: number, max: number, example: string | number = dflt): number {
  const v = flags[name];
  if (v === undefined) return dflt;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} needs a whole number from ${min} to ${max}, e.g. --${name} ${example}`);
  return n;
}

/** --prompt-ids as token ids, or `dflt` when it is absent; anything else is an error that shows an example. */
export function promptIdsFlag(flags: Flags, dflt: number[]): number[] {
  const raw = flags['prompt-ids'];
  if (raw === undefined) return dflt;
  const ids = typeof raw === 'string' ? raw.split(',').map((s) => Number(s.trim())) : [];
  if (!ids.length || ids.some((n) => !Number.isInteger(n) || n < 0)) throw new Error('--prompt-ids needs comma-separated token ids, e.g. --prompt-ids 1,403,261');
  return ids;
}

/**
 * --backend, one of `backends` [webgpu], and --quantize (q8_0 or q4_0), which re-quantizes for intab's kernels and so
 * goes with no ONNX backend.
 */
export function backendFlags<B extends string>(flags: Flags, backends: readonly B[]): { backend: B; quantize: 'q8_0' | 'q4_0' | undefined } {
  const backend = flags.backend ?? 'webgpu';
  if (typeof backend !== 'string' || !(backends as readonly string[]).includes(backend)) throw new Error(`--backend takes ${backends.join(', ')}`);
  const quantize = flags.quantize;
  if (quantize !== undefined && quantize !== 'q8_0' && quantize !== 'q4_0') throw new Error('--quantize takes q8_0 or q4_0');
  if (quantize !== undefined && backend.startsWith('onnx')) throw new Error(`--quantize requantizes for intab's kernels; it does not apply to --backend ${backend}`);
  return { backend: backend as B, quantize };
}
