// @ts-check
// The CLI's argument parsing, on its own so the Node runtime's bundle (packages/cli/node) parses flags the same way
// without pulling in the browser driver (Vite, Playwright).

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

const BOOLEAN = new Set(['json', 'quick', 'help', 'headed', 'ignore-eos', 'no-adaptive', 'json-object', 'lenient', 'no-decode', 'preload', 'persist', 'no-node', 'no-prefix-cache']);

/**
 * A whole-number flag in [min, max], or `dflt` when it is absent; anything else is an error that shows an example.
 * @param {Record<string, string | boolean>} flags
 * @param {string} name
 * @param {number} dflt
 * @param {number} min
 * @param {number} max
 * @param {string | number} [example] [dflt]
 */
export function wholeFlag(flags, name, dflt, min, max, example = dflt) {
  const v = flags[name];
  if (v === undefined) return dflt;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} needs a whole number from ${min} to ${max}, e.g. --${name} ${example}`);
  return n;
}
